/* search.h — the three answers to "which layers stay in FP32": ours (greedy
 * by measured gain, then pruning), AutoCast's rules, Polygraphy's bisection. */
#ifndef PARITY_FIXP_SEARCH_H
#define PARITY_FIXP_SEARCH_H

#include "fixp.h"

typedef struct fp_result {
    int *units; int n_units;        /* ours */
    char **names; int n_layers;     /* layer names in FP32 (borrowed from the context) */
    double flops;
    fp_score_t search, hold;        /* on the search samples and on the held-out ones */
    int has_hold;
    const char **reason;            /* ours, per unit of the context: why it was chosen */
    double *gain;                   /* ours, per unit: measured gain when added */
    int evals;                      /* bisection: evaluations it took */
    char note[200];
} fp_result_t;

/* seed: a baseline's answer to eliminate from when greedy fails or is larger (or NULL). */
int fp_search(fp_ctx_t *c, int beam, const fp_result_t *seed, fp_result_t *r, perr_t *e);
int fp_autocast(fp_ctx_t *c, double data_max, double init_max, fp_result_t *r, perr_t *e);
int fp_prefix_suffix(fp_ctx_t *c, fp_result_t *r, perr_t *e);
/* Hands back baseline b's answer as ours (verified on both sample sets). */
int fp_adopt_baseline(fp_ctx_t *c, fp_result_t *r, const fp_result_t *b, const char *what, perr_t *e);
/* Scores r->names on the search and the held-out samples (not counted). */
int fp_score_result(fp_ctx_t *c, fp_result_t *r, perr_t *e);
void fp_result_free(fp_result_t *r);

/* emit.c: the deployable outputs and the report */
int fp_emit(fp_ctx_t *c, const char *outdir, const char *cfg_name, fp_result_t *ours, fp_result_t *autocast,
            fp_result_t *bisect, fp_result_t *all_low, perr_t *e);
/* onnx16.c: the strongly typed mixed-precision model */
typedef struct fp_typed {
    int written;                /* model.onnx written */
    int casts;                  /* Cast nodes added */
    int opset_from, opset_to;   /* the default domain's opset, before and after */
    int wrapped;                /* reduced nodes computing in FP32 between Casts (no reduced signature) */
    char wrapped_ops[240];      /* their op types, comma-separated */
    char why[600];              /* not written: why */
} fp_typed_t;
/* config: the searched precision config (its build's folded weights are
 * carried over). A model the upgrade cannot carry is not written: t->why. */
int fp_write_typed_onnx(const fp_ctx_t *c, char **fp32, int n, const char *config, const char *path, fp_typed_t *t,
                        perr_t *e);
void fp_add_initializer(Onnx__GraphProto *g, const char *name, int dtype, const int64_t *dims, int ndim,
                        const void *data, size_t nbytes);

/* opset.c: operator versions of the typed model */
int fp_first_signature(const char *op, int dtype);   /* first opset taking FLOAT16/BFLOAT16, 0 none */
int fp_needed_opset(const char *op, int dtype, int from);
int fp_model_opset(const Onnx__ModelProto *m);
int fp_upgrade_opset(Onnx__ModelProto *m, int to, perr_t *e);

#endif
