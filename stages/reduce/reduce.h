/* reduce.h — the reduce stage's shared state: the model indexed for cutting,
 * the failing sample's inputs and every tensor's reference value, the cell's
 * precision and compare rule, and the search's answer (the kept nodes, the
 * cut, the measured error, the per-layer profile). */
#ifndef PARITY_REDUCE_H
#define PARITY_REDUCE_H

#include "compare/run.h"
#include "io/tensorset.h"
#include "onnx/subgraph.h"

/* The cell being reduced (from the command line or plan.json). */
typedef struct rd_cell {
    char *model, *inputs, *dump;  /* the ONNX, the failing sample's inputs, the reference dump (NULL: none) */
    char *config, *precision;     /* precision config (or NULL) and/or precision name */
    char *name;                   /* the cell's name for the report ("" outside a plan) */
    cmp_config_t rule;            /* compare's tolerances; rule.layer_snr_db for tensors not outputs */
    char *rule_args;              /* the rule as compare's flags, for repro.md */
} rd_cell_t;

/* One check of a tensor against its reference by the cell's rule. */
typedef struct rd_check {
    int fail, nonfinite;          /* fails the rule; holds NaN/Inf the reference does not */
    double max_abs, max_rel, snr_db;
    int64_t n, mismatches, extra_nonfinite;
    char why[160];
} rd_check_t;

typedef struct rd_row {           /* the per-layer profile of the answer */
    int node;
    rd_check_t own, acc;          /* fed the reference's inputs / inside the reduced model */
    int has_own, has_acc;
} rd_row_t;

typedef struct rd_ctx {
    rd_cell_t *cell;
    sg_model_t sg;
    tensor_set_t inputs, ref;     /* ref owns the values; refv[v] borrows them */
    tensor_t **refv;
    unsigned char *have;          /* per value: refv[v] set */
    const char *work;
    const char *global;           /* the cell's global precision policy (the build's) */
    int threads, quiet, evals;
    /* diagnosis */
    int target;                   /* value the reduced model outputs */
    const char *start_reason;     /* "first non-finite" | "first failing" */
    rd_check_t target_full;       /* the target in the whole model */
    /* answer */
    unsigned char *keep;
    int n_keep, *cut, n_cut;
    int accumulating;             /* no kept layer fails on its own */
    int *guilty, n_guilty;        /* kept layers failing on their own */
    rd_check_t measured;
    rd_row_t *rows; int n_rows;
    int window_nodes;             /* kept nodes after the bisection, before trimming */
    int trimmed;                  /* the window was small enough to trim (RD_MAX_TRIM) */
} rd_ctx_t;

#define RD_MAX_TRIM 512

/* check.c */
void rd_check_tensor(const rd_cell_t *cell, const char *name, int is_output, const tensor_t *a, const tensor_t *b,
                     rd_check_t *r, perr_t *e);

/* search.c */
int rd_reference(rd_ctx_t *c, perr_t *e);
/* 1: found a failing tensor (c->target set), 0: the cell passes. */
int rd_diagnose(rd_ctx_t *c, perr_t *e);
int rd_search(rd_ctx_t *c, perr_t *e);
/* Builds and runs the kept nodes at the cell's precision with output out;
 * fills r. dump (or NULL) receives every tensor of the run. */
int rd_eval(rd_ctx_t *c, unsigned char *keep, int out, rd_check_t *r, tensor_set_t *dump, perr_t *e);
void rd_ctx_free(rd_ctx_t *c);

/* emit.c */
int rd_emit(rd_ctx_t *c, const char *dir, perr_t *e);

/* plan.c */
int rd_cell_from_plan(const char *plan, const char *cell, rd_cell_t *out, perr_t *e);
void rd_cell_free(rd_cell_t *c);
/* The first sample of an input folder: its first sub-folder, or the folder. */
char *rd_first_sample(const char *dir, perr_t *e);

#endif
