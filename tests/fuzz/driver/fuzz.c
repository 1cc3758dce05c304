/* fuzz.c — what every reader harness shares (fuzz.h): the scratch folder
 * path-taking readers read from, the contract check, and libFuzzer's entry
 * point, which turns a broken contract into an abort libFuzzer records. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fuzz/fuzz.h"
#include "util/fsutil.h"

static char scratch[64];

static void remove_scratch(void)
{
    if (scratch[0]) remove_tree(scratch);
}

const char *fuzz_dir(void)
{
    if (!scratch[0]) {
        /* in memory where there is a tmpfs: a disk-backed /tmp costs path-
         * taking harnesses 10x in executions per second */
        const char *tmp = getenv("FUZZ_TMPDIR") ? getenv("FUZZ_TMPDIR")
                        : access("/dev/shm", W_OK) == 0 ? "/dev/shm"
                        : getenv("TMPDIR") && getenv("TMPDIR")[0] ? getenv("TMPDIR") : "/tmp";
        snprintf(scratch, sizeof scratch, "%.40s/parity-fuzz-XXXXXX", tmp);
        if (!mkdtemp(scratch)) { perror("fuzz: mkdtemp"); abort(); }
        atexit(remove_scratch);
    }
    return scratch;
}

const char *fuzz_file(const char *file, const uint8_t *d, size_t n)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", fuzz_dir(), file);
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(d, 1, n, f) != n) || fclose(f)) { perror(path); abort(); }
    return path;
}

void fuzz_split_line(const uint8_t *d, size_t n, char *line, size_t max, const uint8_t **rest, size_t *nrest)
{
    const uint8_t *nl = memchr(d, '\n', n);
    size_t len = nl ? (size_t)(nl - d) : n;
    size_t k = len < max - 1 ? len : max - 1;
    memcpy(line, d, k);
    line[k] = 0;
    *rest = nl ? nl + 1 : d + n;
    *nrest = nl ? n - len - 1 : 0;
}

int fuzz_check(const uint8_t *d, size_t n, char *why, size_t nwhy)
{
    perr_t e = {0};
    int rc = fuzz_read(d, n, &e);
    if (rc == 0) return 0;
    if (e.code == EXIT_BADINPUT && e.msg[0]) return 0;
    snprintf(why, nwhy, "%s: failed with code %d (bad input must be code 2 with a message): %s",
             fuzz_name, e.code, e.msg[0] ? e.msg : "(no message)");
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    char why[1200];
    if (fuzz_check(d, n, why, sizeof why)) {
        fprintf(stderr, "%s\n", why);
        abort();
    }
    return 0;
}
