/* jsonfile.c — JSON documents to text and to files (see jsonfile.h): every
 * JSON file parity writes goes through write_json or json_file_text, so they
 * all end the same way and none can pass a NULL from jansson to strlen. */
#include <stdlib.h>
#include <string.h>
#include "util/fsutil.h"
#include "util/jsonfile.h"

char *json_text(const json_t *j, size_t flags)
{
    return j ? json_dumps(j, flags) : NULL;
}

char *json_file_text(const json_t *j, size_t flags)
{
    char *s = json_text(j, flags);
    if (!s) return NULL;
    size_t n = strlen(s);
    s = xrealloc(s, n + 2);
    memcpy(s + n, "\n", 2);
    return s;
}

int write_json(const char *path, const json_t *j, size_t flags, perr_t *e)
{
    char *s = json_file_text(j, flags);
    if (!s) return INTERNAL(e, "%s: cannot serialise JSON", path);
    int rc = atomic_write(path, s, strlen(s), e);
    free(s);
    return rc;
}
