/* jsonpar.h — big JSON arrays parsed by jansson on several threads.
 *
 * A COCO results file is one array of 500k small objects; jansson parses
 * about 30 MB/s on one core, too slow for the "well under a second" goal.
 * jsonpar finds the top-level element boundaries with a string-aware bracket
 * scan, then hands chunks of whole elements ("[" elements "]") to jansson on
 * worker threads. jansson still parses and validates every byte; the scan
 * only decides where to cut, and a chunk can only parse if its elements are
 * valid JSON, so the file is accepted exactly when jansson would accept it.
 * Errors name the file, line and column in the original text, and the first
 * error in file order is reported whatever the thread count.
 */
#ifndef PARITY_COCO_JSONPAR_H
#define PARITY_COCO_JSONPAR_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "util/err.h"

/* Called once per element, in any order across threads (never twice for one
 * index); must not keep elem. */
typedef int (*jsonpar_elem_fn)(json_t *elem, int64_t index, void *ctx, perr_t *e);

typedef struct jsonpar_array {
    const char *buf;         /* the whole file (for error positions) */
    size_t len;
    const char *what;        /* file name for errors */
    int64_t n;               /* elements */
    int64_t nchunks;
    size_t *cbeg, *cend;     /* chunk text [cbeg, cend): whole elements and separators */
    int64_t *cfirst;         /* index of each chunk's first element */
} jsonpar_array_t;

/* Scans the array whose '[' is at buf[begin]; *after gets the position just
 * past its ']'. A big array of objects is scanned in segments on up to
 * nthreads threads (the chunks do not depend on nthreads). On failure
 * nothing is left to free. */
int jsonpar_scan(const char *buf, size_t len, size_t begin, const char *what, int nthreads,
                 jsonpar_array_t *a, size_t *after, perr_t *e);
/* Parses every chunk and calls fn for each element. */
int jsonpar_parse(const jsonpar_array_t *a, int nthreads, jsonpar_elem_fn fn, void *ctx,
                  perr_t *e);
/* A reader for a whole chunk without a DOM: text[0, n) holds elements
 * first .. first+count-1 and their separators (no brackets). 0 when it
 * took every element; anything else, and the chunk goes through the DOM
 * and fn as in jsonpar_parse (which must then set all it wrote again and
 * give the verdict). Called from worker threads, like fn. */
typedef int (*jsonpar_chunk_fn)(const char *text, size_t n, int64_t first, int64_t count,
                                void *ctx);
/* jsonpar_parse with direct tried first on each chunk. */
int jsonpar_parse_direct(const jsonpar_array_t *a, int nthreads, jsonpar_chunk_fn direct,
                         jsonpar_elem_fn fn, void *ctx, perr_t *e);
void jsonpar_free(jsonpar_array_t *a);

/* Position of the first non-whitespace byte at or after p (len if none). */
size_t jsonpar_skip_ws(const char *buf, size_t len, size_t p);
/* Finds the value of the last top-level member named key (raw, unescaped
 * spelling) of the object starting at buf[begin]; 1 found, 0 not, -1 error. */
int jsonpar_find_member(const char *buf, size_t len, size_t begin, const char *key,
                        size_t *vbeg, size_t *vend, const char *what, perr_t *e);
/* Parses text with jansson; errors as "what: line L column C: message",
 * with positions mapped back through map_pos when given. */
json_t *jsonpar_load(const char *text, size_t n, const char *what, const char *orig,
                     size_t orig_len, size_t (*map_pos)(size_t pos, const void *ctx),
                     const void *map_ctx, perr_t *e);
/* jsonfast.c: an array or object text (a chunk: "[" elements "]") parsed by a quick lexer
 * for plain JSON (ASCII strings without escapes, numbers, literals), with
 * the values jansson would build; NULL for anything else, which the caller
 * then hands to jansson for the verdict. */
json_t *jsonpar_fast(const char *text, size_t n);
/* "line L column C" of a byte position. */
void jsonpar_where(const char *buf, size_t len, size_t pos, char *out, size_t n);

/* Worker threads to use: PARITY_THREADS if set, else the online CPUs (max 16). */
int jsonpar_default_threads(void);

#endif
