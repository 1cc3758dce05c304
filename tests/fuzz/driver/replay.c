/* replay.c — the plain-build main of a reader harness (fuzz.h): replays
 * files through the same contract check as the fuzzer, one TAP line each.
 * With no arguments it replays the committed inputs, tests/fuzz/regress/NAME/
 * (crashes found once) and the seed corpus tests/fuzz/corpus/NAME/ (which
 * must exist); arguments may be files or folders. A crash or a sanitizer
 * report ends the program, which prove counts as a failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "fuzz/fuzz.h"
#include "util/fsutil.h"

static void replay_file(const char *path)
{
    char *buf;
    size_t n;
    perr_t e = {0};
    if (read_file(path, &buf, &n, &e)) { ok(0, "%s: %s", path, e.msg); return; }
    char why[1200] = "";
    int bad = fuzz_check((const uint8_t *)buf, n, why, sizeof why);
    ok(!bad, "%s: %s", fuzz_name, path);
    if (bad) diag("%s", why);
    free(buf);
}

/* A folder's files in name order; returns how many. */
static int replay_path(const char *path)
{
    if (!is_dir(path)) { replay_file(path); return 1; }
    char **files;
    perr_t e = {0};
    int n = list_dir(path, &files, &e);
    if (n < 0) { ok(0, "%s: %s", path, e.msg); return 0; }
    for (int i = 0; i < n; i++) {
        char *full = path_join(path, files[i]);
        replay_file(full);
        free(full);
    }
    free_list(files, n);
    return n;
}

int main(int argc, char **argv)
{
    if (argc > 1) {
        for (int i = 1; i < argc; i++) replay_path(argv[i]);
        return done_testing();
    }
    char dir[256];
    snprintf(dir, sizeof dir, "tests/fuzz/regress/%s", fuzz_name);
    if (is_dir(dir)) replay_path(dir);
    snprintf(dir, sizeof dir, "tests/fuzz/corpus/%s", fuzz_name);
    ok(is_dir(dir) && replay_path(dir) > 0, "%s: a seed corpus is committed (%s)", fuzz_name, dir);
    return done_testing();
}
