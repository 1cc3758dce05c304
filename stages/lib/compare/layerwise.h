/* layerwise.h — where two runs start to disagree. Given two dumps of every
 * tensor (infer --dump all) and the engine's layer report (build-engine
 * --layers-out, layers in execution order), walk the layers in order and
 * compare each layer's outputs: the first tensor that fails the tolerance,
 * the first that holds NaN/Inf where the reference does not, and the error
 * layer by layer. Graph inputs found in both dumps are compared first (a
 * preprocessing difference shows there).
 *
 * Local mode: when A was produced by `infer --reference B` (each layer fed
 * the reference's inputs), each row is that layer's own error; the layers are
 * then ranked by it, worst first: the list to pin to FP32 first. */
#ifndef PARITY_COMPARE_LAYERWISE_H
#define PARITY_COMPARE_LAYERWISE_H

#include <stdio.h>
#include <jansson.h>
#include "compare/run.h"

typedef struct lw_layer {
    int index;
    char *name, *op, *precision, *storage, *reason;
    char *prec;               /* shown: "fp16", or "fp32/fp16" for fp32 compute, fp16 storage */
    int half;                 /* computes or stores in fp16 (1) or bf16 (2) */
    int reduced;              /* anything but fp32 compute and storage */
    int n_in, n_out;
    char **ins, **outs;
    char *graph_out;          /* per output: a graph output (the layer report's "graph_output") */
    char *out_of_range;       /* the layer report's "out_of_range": constants beyond its precision, or NULL */
} lw_layer_t;

typedef struct lw_layers {
    char *path, *source, *precision;
    int marks_outputs;        /* the report says which tensors are graph outputs (else: tensors no layer reads) */
    char *cell, *cell_config; /* a validation's precision entry (build/MODEL/engines/CELL.layers.json) and where its
                                 config is written, for the fix line (lw_cell_config); NULL when unknown */
    int n;
    lw_layer_t *l;
} lw_layers_t;

int lw_layers_read(const char *path, lw_layers_t *L, perr_t *e);
void lw_layers_free(lw_layers_t *L);

typedef struct lw_row {
    int layer;                /* index into L->l, -1 for a graph input */
    const char *a_only_input; /* an input of the layer dumped in A but absent from B */
    int ordered;              /* computed from a TopK's result: near-ties reorder it, so with
                                 a scale-free threshold it is shown but never a first failure */
    int shown_only;           /* feeds no judged output (--judge / --ignore: side outputs the application
                                 never reads): shown, labelled, never a finding, cause or headline */
    cmp_result_t res;         /* PASS, FAIL, SHAPE or MISSING (not dumped in A) */
} lw_row_t;

typedef struct lw_sample {
    char *sample;
    int n;
    lw_row_t *rows;
    int first_fail;           /* row, -1 when none: the first failing tensor in execution order */
    int worst;                /* row, -1 when none: the failure ranked first by severity (lwdiag.c) */
    int blame;                /* the layer worst's cause is in: its own, or one before it the reference lacks */
    const char *severity;     /* of worst: "non-finite", "range" or "snr drop" */
    double snr_drop;          /* of worst: dB lost between its inputs and its output */
    int worst_output;         /* row of the judged graph output with the lowest SNR, -1 when none was dumped */
    int worst_shown;          /* the same among shown-only (unjudged) graph outputs, -1 when none */
    char *cause, *evidence, *fix;   /* the diagnosis in three parts (lwdiag.c) */
    int first_nonfinite;      /* first row where A holds NaN/Inf the reference does not */
    int ref_nonfinite;        /* first row where the reference itself holds NaN/Inf */
    int n_unlisted;           /* dumped tensors the layer report does not name */
    int *rank;                /* local mode: rows by own error, worst first */
    int n_rank;
    char *diagnosis;
} lw_sample_t;

typedef struct lw_result {
    const lw_layers_t *L;
    int local;
    int n;
    lw_sample_t *s;
} lw_result_t;

int lw_run(const cmp_side_t *a, const cmp_side_t *b, const lw_layers_t *L, const cmp_config_t *cfg, int local,
           lw_result_t *out, perr_t *e);
void lw_result_free(lw_result_t *r);
/* 0 when no row failed, 1 otherwise. */
int lw_status(const lw_result_t *r);

/* lwdiag.c: ranks the failures by severity and writes the diagnosis
 * (cause, evidence, fix, and the sentence joining them) into s. */
void lw_diagnose(lw_sample_t *s, const lw_layers_t *L, int local);
/* Marks the rows whose layers feed no judged graph output (lw_row_t.shown_only);
 * nothing when every output is judged or no judged output was dumped. */
void lw_mark_shown_only(lw_sample_t *s, const lw_layers_t *L, const cmp_config_t *cfg);
int lw_new_nonfinite(const lw_row_t *r);
int lw_compared(const lw_row_t *r);

void lw_text(FILE *f, const lw_result_t *r, const cmp_report_t *hdr);
json_t *lw_json(const lw_result_t *r);

#endif
