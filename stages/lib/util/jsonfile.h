/* jsonfile.h — the one way parity turns a JSON document into text and into a
 * file: jansson's serialiser with the caller's layout flags, a file always
 * ending in one newline, written atomically (util/fsutil.h), and a
 * serialiser failure reported instead of handed on as a NULL string. */
#ifndef PARITY_JSONFILE_H
#define PARITY_JSONFILE_H

#include <jansson.h>
#include "util/err.h"

/* The document's text without a trailing newline (for a stream or a line),
 * malloc'd; NULL when jansson cannot serialise it (out of memory). */
char *json_text(const json_t *j, size_t flags);
/* The text a JSON file holds: json_text and one "\n"; NULL as above. */
char *json_file_text(const json_t *j, size_t flags);
/* Writes json_file_text to PATH atomically (a temporary file in the same
 * folder, renamed into place). A write error names PATH and strerror (exit
 * 2); a document jansson cannot serialise is an internal error naming PATH. */
int write_json(const char *path, const json_t *j, size_t flags, perr_t *e);

#endif
