/* jsonfile.c — checks the one JSON file writer (util/jsonfile.c): the file
 * holds jansson's text for the caller's flags and exactly one trailing
 * newline, replaces an older, longer file whole and leaves no temporary file
 * beside it; a folder that does not exist is bad input naming the file and
 * strerror (exit 2) and creates nothing; a NULL document (what a failed
 * json_pack hands on) is an internal error naming the file, never a NULL
 * passed to strlen. The expected text is jansson's json_dumps called here. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tap.h"
#include "util/fsutil.h"
#include "util/jsonfile.h"

/* 1 when PATH holds exactly WANT. */
static int holds(const char *path, const char *want)
{
    char *got;
    size_t n;
    perr_t e = {0};
    if (read_file(path, &got, &n, &e)) return 0;
    int same = n == strlen(want) && !memcmp(got, want, n);
    free(got);
    return same;
}

static void check_writes(const char *dir)
{
    char *path = path_join(dir, "doc.json");
    json_t *j = json_pack("{s:f, s:[i,s], s:n}", "pi", 3.141592653589793, "list", 7, "x/y", "none");
    size_t flags = JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17);
    char *ref = json_dumps(j, flags);
    size_t n = strlen(ref);
    char *want = malloc(n + 2);
    memcpy(want, ref, n);
    memcpy(want + n, "\n", 2);

    char *text = json_file_text(j, flags);
    ok(text && !strcmp(text, want), "json_file_text is jansson's text and one newline");
    free(text);
    text = json_text(j, flags);
    ok(text && !strcmp(text, ref), "json_text is jansson's text, no newline");
    free(text);

    perr_t e = {0};
    ok(atomic_write(path, "0123456789012345678901234567890123456789"
                          "0123456789012345678901234567890123456789"
                          "0123456789012345678901234567890123456789\n", 121, &e) == 0, "an older, longer file");
    ok(write_json(path, j, flags, &e) == 0 && e.code == 0, "write_json succeeds");
    ok(holds(path, want), "the file is jansson's text and one newline, the older bytes gone");
    char **names;
    int k = list_dir(dir, &names, &e);
    ok(k == 1 && !strcmp(names[0], "doc.json"), "no temporary file left beside it (%d entries)", k);
    if (k >= 0) free_list(names, k);

    char *missing = path_join(dir, "no-such-folder/doc.json");
    perr_t bad = {0};
    ok(write_json(missing, j, flags, &bad) == -1 && bad.code == EXIT_BADINPUT, "a missing folder is bad input (exit 2)");
    ok(strstr(bad.msg, missing) && strstr(bad.msg, strerror(ENOENT)), "the message names the file and strerror: %s", bad.msg);

    char *nul = path_join(dir, "null.json");
    perr_t in = {0};
    ok(json_text(NULL, flags) == NULL && json_file_text(NULL, flags) == NULL, "no text for a NULL document");
    ok(write_json(nul, NULL, flags, &in) == -1 && in.code == EXIT_INTERNAL && strstr(in.msg, nul),
       "a NULL document is an internal error naming the file: %s", in.msg);
    ok(!file_exists(nul), "and writes nothing");

    unlink(path);
    free(nul); free(missing); free(want); free(ref); free(path);
    json_decref(j);
}

int main(void)
{
    char dir[] = "/tmp/parity-jsonfile-XXXXXX";
    if (!mkdtemp(dir)) { diag("mkdtemp: %s", strerror(errno)); return 1; }
    check_writes(dir);
    rmdir(dir);
    return done_testing();
}
