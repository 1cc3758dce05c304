/* source.h — one side of a comparison, in any format compare reads:
 *   a tensor-set folder (.npy, ONNX .pb, trtexec raw binding files),
 *   a folder of samples (sub-folders, .npz or Polygraphy/trtexec .json files),
 *   one .npz, one Polygraphy JSON (FILE.json or FILE.json:RUNNER; several
 *   iterations are samples by position), one trtexec --exportOutput JSON,
 *   one .npy, .pb or .raw file.
 * Opening a side lists its samples; opening a sample lists its tensors;
 * tensors are loaded one at a time, so a side is never held in memory whole
 * (Polygraphy and trtexec JSON are text documents and are read whole). */
#ifndef PARITY_COMPARE_SOURCE_H
#define PARITY_COMPARE_SOURCE_H

#include "io/npz.h"
#include "io/polygraphy.h"
#include "io/tensorset.h"

typedef enum {
    SRC_SETDIR, SRC_NPZ, SRC_POLY, SRC_TRTJSON, SRC_NPY, SRC_PB, SRC_RAW
} src_kind_t;

typedef struct cmp_sample_ref {
    char *id;                 /* "" for a single set */
    src_kind_t kind;
    char *path;
    int iter;                 /* SRC_POLY: the iteration */
} cmp_sample_ref_t;

typedef struct cmp_side {
    char *path;
    const char *format;       /* for reports */
    int tree;                 /* samples are named (a folder of samples) */
    int positional;           /* samples are iterations, matched by position */
    int n;
    cmp_sample_ref_t *s;
    poly_doc_t *doc;          /* a single Polygraphy file, shared by its samples */
    char *runner;             /* FILE.json:RUNNER */
} cmp_side_t;

typedef enum { ENT_NPY, ENT_PB, ENT_RAW, ENT_NPZ, ENT_POLY, ENT_MEM } ent_kind_t;

typedef struct cmp_entry {
    char *name;
    ent_kind_t kind;
    char *path;
    int index;                /* npz member, Polygraphy array or preloaded tensor */
} cmp_entry_t;

/* One sample, opened: its tensors by name. */
typedef struct cmp_set {
    const cmp_side_t *side;
    int n;
    cmp_entry_t *ent;
    npz_t z;
    int has_z;
    poly_doc_t *doc;
    int own_doc, iter;
    tensor_set_t mem;         /* trtexec JSON values, read whole */
} cmp_set_t;

int side_open(const char *path, cmp_side_t *s, perr_t *e);
void side_free(cmp_side_t *s);

int set_open(const cmp_side_t *s, int sample, cmp_set_t *set, perr_t *e);
/* Index of a tensor by name, or -1. */
int set_find(const cmp_set_t *set, const char *name);
/* Loads tensor k into t; t owns its data (free with tensor_free_data). */
int set_load(const cmp_set_t *set, int k, tensor_t *t, perr_t *e);
void set_close(cmp_set_t *set);

#endif
