/* polygraphy.h — Polygraphy's JSON files (docs/design.md "Data formats"): RunResults
 * written by `polygraphy run --save-outputs` and the input lists written by
 * `--save-inputs` / read by `--load-inputs`; arrays inside are base64 images
 * of complete .npy files (older Polygraphy: .npz images, or latin-1 text).
 *
 * Reading keeps the parsed document and decodes one array when asked, so
 * only one decoded tensor at a time exists besides the text. Writing streams
 * one tensor at a time into the file (atomically). */
#ifndef PARITY_POLYGRAPHY_H
#define PARITY_POLYGRAPHY_H

#include <jansson.h>
#include "tensor/tensor.h"
#include "util/fsutil.h"

typedef struct poly_iter {
    int n;
    const char **names;       /* into the document */
    json_t **arrays;
} poly_iter_t;

typedef struct poly_doc {
    char *path;
    json_t *root;
    int is_inputs;            /* a --save-inputs list rather than RunResults */
    int nrunners;
    const char **runners;
    int runner;               /* the one read */
    int niters;
    poly_iter_t *it;
} poly_doc_t;

/* Whether a parsed JSON document looks like Polygraphy's. */
int poly_is_doc(const json_t *root);
/* Reads a document; `runner` picks one runner of a RunResults file (NULL:
 * the file must hold exactly one). Takes ownership of root when not NULL
 * (a document already parsed), else parses path. */
int poly_open(const char *path, json_t *root, const char *runner, poly_doc_t *d, perr_t *e);
int poly_load(const poly_doc_t *d, int iter, int k, tensor_t *t, perr_t *e);
/* Decodes one encoded array (ndarray, LazyArray, legacy forms). */
int poly_decode_array(const json_t *node, const char *what, tensor_t *t, perr_t *e);
void poly_close(poly_doc_t *d);

/* Base64 (RFC 4648, padded). decode returns the length or -1 on bad text. */
int64_t base64_decode(const char *s, size_t n, uint8_t *out);
size_t base64_encode(const uint8_t *in, size_t n, char *out);   /* out: 4*ceil(n/3) bytes */

/* Streaming writer. */
typedef enum { POLY_OUTPUTS, POLY_INPUTS } poly_kind_t;
typedef struct poly_writer {
    atomic_file_t af;
    poly_kind_t kind;
    char *runner;
    int iters, tensors;
} poly_writer_t;

int poly_writer_open(poly_writer_t *w, const char *path, poly_kind_t kind, const char *runner, perr_t *e);
void poly_writer_begin(poly_writer_t *w);              /* a new iteration */
int poly_writer_add(poly_writer_t *w, const char *name, const tensor_t *t, perr_t *e);
void poly_writer_end(poly_writer_t *w);
int poly_writer_close(poly_writer_t *w, perr_t *e);    /* commits the file */
void poly_writer_abort(poly_writer_t *w);

#endif
