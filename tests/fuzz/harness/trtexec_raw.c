/* trtexec_raw.c — fuzz harness: trtexec's raw binding files (io/trtexec.c),
 * whose name carries the shape and type. Input: the file name on the first
 * line, then the file's bytes; a name the folder cannot hold is skipped.
 * The file goes once read: every name is a new file, and a long campaign
 * left a million in the scratch folder until its filesystem ran out of
 * inodes (then every harness after it failed to write its input). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz/fuzz.h"
#include "io/trtexec.h"

FUZZ_READER(trtexec_raw)
{
    char name[200];
    const uint8_t *body;
    size_t nb;
    fuzz_split_line(d, n, name, sizeof name, &body, &nb);
    if (!name[0] || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, "..")) return 0;
    tensor_t t;
    char *tname = NULL;
    const char *path = fuzz_file(name, body, nb);
    int rc = trtexec_read_raw(path, &t, &tname, e);
    remove(path);
    if (rc) return -1;
    tensor_free_data(&t);
    free(tname);
    return 0;
}
