/* report.h — the results of a validation, gathered from the cells' JSON
 * (plan.json names every file), the checks and their verdicts, and the
 * writers for people (HTML), CI (JUnit, Markdown) and machines (JSON). */
#ifndef PARITY_REPORT_H
#define PARITY_REPORT_H

#include <stdio.h>
#include <jansson.h>
#include "util/err.h"
#include "util/timing.h"

typedef struct check {
    char cell[256];
    char name[32];          /* compare | map_drop | min_map | metric_drop | min_metric | finite */
    int passed;
    int judged;             /* 0: nothing to judge (no input, nothing above the floor): failed, never PASS */
    int expected;           /* failed in a cell expected to fail (xfail): not a failure */
    char reason[2048];      /* why, in words */
} check_t;

/* A cell's outcome, pytest's words. */
typedef enum { OUT_PASS, OUT_FAIL, OUT_XFAIL, OUT_XPASS } outcome_t;

typedef struct cell {
    json_t *plan;           /* the cell's entry in plan.json (borrowed) */
    const char *name, *variant, *precision;
    int is_reference;
    json_t *compare, *map, *layerwise, *local, *stats;   /* owned, NULL if absent */
    double ap, ap50;        /* -1 without map-eval */
    double max_abs, max_rel_p99, snr_db;  /* worst judged output tensor; -1 without compare */
    char failing[768];      /* the judged outputs that fail, worst figures each: "d1 (max |a-b| 0.53, SNR 0.0 dB)" */
    int n_failing, n_unjudged;   /* outputs (names over the samples) */
    int nonfinite;          /* NaN/Inf values in the cell's outputs (from compare) */
    double median_ms;
    const char *expected;   /* expected_failure's reason, or NULL */
    outcome_t outcome;
    double dap;             /* AP points against the reference (negative: lost); NAN without */
    json_t *det;            /* compare's detection matching (borrowed), or NULL */
    double pre_snr;         /* lowest SNR (dB) of the pre-postprocessing tensors (layerwise); NAN without */
    json_t *task;           /* task-eval's task.json (owned), or NULL */
    double metric, dmetric; /* the headline task metric (AP in points for detection) and its change
                               against the reference (negative: worse for a higher-is-better metric); NAN without */
    char mtext[96];         /* the grid's words for it: "ref 32.21 dB PSNR", "−6.10 dB PSNR"; "" for detection
                               and element-wise models (their own words) */
} cell_t;

typedef struct report {
    json_t *plan;
    const char *model;
    cell_t *cells;
    int n_cells;
    check_t *checks;
    int n_checks;
    int failed;             /* unexpected failures and unexpected passes */
    int n_unjudged;         /* checks that judged nothing (counted in failed) */
    int n_xfail, n_xpass;   /* cells */
    int reference_only;     /* no check, and every cell given is the reference (PRECISIONS=fp32): nothing to
                               compare it with: a failure all the same, said why (judge_cells) */
    char verdict[1024];     /* "PASS — 2 expected failures: letterbox-naive (−60.2 AP), ..." */
    char kernels[96];       /* the kernels the cells ran on (infer's stats: "avx2", "blas on avx512"), "" if unknown */
    const char *task, *task_metric;   /* plan.json's task and headline metric, or NULL */
    const char *ap_name;     /* what map-eval's AP measures: "AP" (boxes), "mask AP", "keypoint AP" */
    timing_t timing;        /* the run's stages (report --timing), n == 0 without */
} report_t;

/* The headline metric's change in words: "−6.1 dB PSNR", "−0.5 % top1", "−60.2 AP". */
void metric_delta_text(const report_t *r, double d, char *b, size_t n);
/* Its unit and whether higher is better (from the cells' task.json). */
const char *metric_unit(const report_t *r, const char *metric);
/* "PSNR", "mIoU", "top-1": a metric's name as people write it. */
const char *metric_label(const char *metric);

/* The model's variants and precisions in plan order (names borrowed). */
int report_axes(const report_t *r, const char ***variants, int *nv, const char ***precisions, int *np);
const cell_t *report_cell(const report_t *r, const char *variant, const char *precision);
/* One line per cause: failing checks grouped by variant and check, as HTML-free text. */
typedef struct reason_group { char text[2600]; int expected; const char *variant; } reason_group_t;
int report_reasons(const report_t *r, reason_group_t **out);
const char *outcome_name(outcome_t o);
/* The grid's text for a cell: "−0.1", "ref 65.3 AP", "outputs ok", with XFAIL/XPASS/FAIL. */
void grid_text(const cell_t *c, char *b, size_t n);

/* load.c: a check of a cell (its reason empty), appended to r->checks. */
check_t *add_check(report_t *r, const cell_t *c, const char *name, int passed);
/* The check judged nothing (its input is missing or empty): it fails, whatever the cell's expectation. */
void not_judged(check_t *k, const char *why);
/* task.c: every cell's metric and dmetric; the metric_drop and min_metric checks. */
void task_set_metrics(report_t *r, const cell_t *ref);
void task_check(report_t *r, const cell_t *c, const cell_t *ref, const char *name);

int report_load(report_t *r, const char *plan_path, const char *cells, perr_t *e);
void report_evaluate(report_t *r);
void report_free(report_t *r);

int write_results_json(const report_t *r, const char *path, perr_t *e);
int write_summary_md(const report_t *r, const char *path, perr_t *e);
int write_junit(const report_t *r, const char *path, perr_t *e);
int write_html(const report_t *r, const char *path, perr_t *e);
/* The time-by-stage table as text (what `make validate` prints at its end). */
void print_timing(FILE *f, const timing_t *t);

/* Prints the verdict of a results.json; returns 0 pass, 1 fail, 2 bad input. */
int print_verdict(const char *results_path);

#endif
