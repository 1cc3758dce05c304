/* fixp.h — the fix-precision stage's shared state: the samples, the
 * acceptance criterion, the model's float layers grouped into units, and
 * evaluating one set of layers kept in FP32 (build in-process with per-layer
 * overrides, run, score). */
#ifndef PARITY_FIXP_H
#define PARITY_FIXP_H

#include <stdio.h>
#include "coco/coco.h"
#include "coco/decode.h"
#include "compare/run.h"
#include "graph/graph.h"
#include "io/tensorset.h"

typedef struct fp_sample {
    char *id;               /* sub-folder name, "" for a single set */
    tensor_set_t in, ref;   /* inputs and the FP32 reference outputs */
} fp_sample_t;

/* What "accurate enough" means; every given part must hold. */
typedef struct fp_criterion {
    int use_map;                           /* either mAP criterion: decode and evaluate */
    int use_drop; double max_map_drop;     /* AP points against the FP32 reference */
    int use_tol;  cmp_config_t tol;        /* compare's rules, per output */
    int use_snr;  double min_snr_db;
    int use_cos;  double min_cosine;
    double min_map;                        /* absolute AP floor (the reference must reach it), < 0 none */
    double margin;                         /* the search's own evaluations beat the criterion by this much
                                            * (AP points, dB); baselines and held-out checks use it as given */
} fp_criterion_t;

/* One unit of layers pinned together (a decomposed LayerNorm is one). */
typedef struct fp_unit {
    int *nodes; int n;      /* indices into fp_ctx_t.layers */
    char *name;             /* its first layer's name, or the LayerNorm's prefix */
    double flops;
    int overflow;           /* produces values beyond the target's range, or non-finite in local mode */
    int tail;               /* 2: the output tail (reaches no GEMM-class layer), 1: the output heads */
    double local_snr;       /* worst own-error SNR of its layers (dB) */
    char why[160];
} fp_unit_t;

typedef struct fp_layer {
    char *name, *op;
    int exec_index;         /* position among float layers in execution order */
    double flops;
    double absmax_io;       /* max |value| over its float inputs/outputs (calibration samples) */
    double absmax_init;     /* max |value| over its float initializers */
    int unit;
} fp_layer_t;

/* A split that keeps more than this share of the compute (FLOPs) in FP32
 * is no useful reduced-precision split: the speed and memory a reduced
 * precision is deployed for are mostly gone (docs/precision-repair.md). */
#define FP_USEFUL_MAX_FP32 0.5
#define FP_EXIT_NO_SPLIT 4
#define FP_DEFAULT_SNR_DB 30.0   /* noise power 1/1000 of the signal's */

typedef struct fp_score {
    int pass;
    double err;             /* the search's measure, lower is better (map drop, or -worst SNR) */
    double map, map_drop, worst_snr, worst_cos;
    int tol_failed;         /* (sample, output) pairs failing compare's rule */
    int skipped;            /* not run: --max-seconds would have been passed (pass 0, err inf) */
} fp_score_t;

typedef struct fp_ctx {
    const char *model;
    const char **shapes; int n_shapes;
    const char *low;        /* fp16 | bf16 | tf32 */
    int threads;
    fp_sample_t *s; int n_samples, n_search;   /* search: [0, n_search), holdout: the rest */
    fp_criterion_t crit;
    /* detection (mAP criterion) */
    coco_gt_t gt; coco_decode_opts_t dec; int has_gt;
    const char *meta_dir;   /* preprocessed samples' meta.json */
    double ref_map_search, ref_map_hold;
    const char *work;       /* scratch folder (eval config, decoded outputs) */
    /* layers */
    fp_layer_t *layers; int n_layers;
    fp_unit_t *units; int n_units;
    double total_flops;
    /* budget */
    int evals, max_evals;
    double t0, max_seconds;  /* t0: the search's start (its time budget) */
    double t_start;          /* the run's start (the report, and --max-seconds: a budget on the whole run) */
    double sample_s;         /* the longest seconds per sample of an evaluation so far (the budget's estimate) */
    int skipped_evals;       /* evaluations --max-seconds left out */
    int time_hit;            /* --max-seconds ended the search */
    const char *verdict;     /* met | not_met | no_useful_split (report.json) */
    int quiet;
} fp_ctx_t;

/* eval.c */
int fp_load_samples(fp_ctx_t *c, const char *dir, int n_search, int n_hold, perr_t *e);
int fp_reference(fp_ctx_t *c, perr_t *e);
/* Builds with the given layers (names) in FP32 and the rest at c->low,
 * runs samples [lo, hi) and scores them; counts against the budget when
 * counted is set. */
int fp_evaluate(fp_ctx_t *c, char **fp32, int n, int lo, int hi, int counted, fp_score_t *out, perr_t *e);
int fp_budget_left(const fp_ctx_t *c);
void fp_ctx_free(fp_ctx_t *c);
double fp_now(void);
/* Writes a precision config: global c->low, the names in FP32 (exact, glob-escaped). */
int fp_write_config(const fp_ctx_t *c, char **fp32, const char **why, int n, const char *path, perr_t *e);
char *fp_glob_escape(const char *name);
graph_t *fp_build(const fp_ctx_t *c, const char *precision, const char *config, int no_fusion, perr_t *e);

/* analyze.c */
int fp_analyze(fp_ctx_t *c, perr_t *e);
/* Layer names of a set of units (malloc'd array of borrowed names). */
char **fp_unit_names(const fp_ctx_t *c, const int *units, int nu, int *n);
/* Index of a layer by name (it must be one). */
int fp_layer_index(const fp_ctx_t *c, const char *name);
double fp_units_flops(const fp_ctx_t *c, const int *units, int nu);

#endif
