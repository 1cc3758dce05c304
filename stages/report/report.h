/* report.h — the results of a validation, gathered from the cells' JSON
 * (plan.json names every file), the checks and their verdicts, and the
 * writers for people (HTML), CI (JUnit, Markdown) and machines (JSON). */
#ifndef PARITY_REPORT_H
#define PARITY_REPORT_H

#include <jansson.h>
#include "util/err.h"

typedef struct check {
    char cell[256];
    char name[32];          /* compare | map_drop | min_map | finite */
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
    double max_abs, max_rel_p99, snr_db;  /* worst output tensor; -1 without compare */
    int nonfinite;          /* NaN/Inf values in the cell's outputs (from compare) */
    double median_ms;
    const char *expected;   /* expected_failure's reason, or NULL */
    outcome_t outcome;
    double dap;             /* AP points against the reference (negative: lost); NAN without */
    json_t *det;            /* compare's detection matching (borrowed), or NULL */
    double pre_snr;         /* lowest SNR (dB) of the pre-postprocessing tensors (layerwise); NAN without */
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
    char verdict[1024];     /* "PASS — 2 expected failures: letterbox-naive (−60.2 AP), ..." */
    char kernels[96];       /* the kernels the cells ran on (infer's stats: "avx2", "blas on avx512"), "" if unknown */
} report_t;

/* The model's variants and precisions in plan order (names borrowed). */
int report_axes(const report_t *r, const char ***variants, int *nv, const char ***precisions, int *np);
const cell_t *report_cell(const report_t *r, const char *variant, const char *precision);
/* One line per cause: failing checks grouped by variant and check, as HTML-free text. */
typedef struct reason_group { char text[2600]; int expected; const char *variant; } reason_group_t;
int report_reasons(const report_t *r, reason_group_t **out);
const char *outcome_name(outcome_t o);
/* The grid's text for a cell: "−0.1", "ref 65.3 AP", "outputs ok", with XFAIL/XPASS/FAIL. */
void grid_text(const cell_t *c, char *b, size_t n);

int report_load(report_t *r, const char *plan_path, const char *cells, perr_t *e);
void report_evaluate(report_t *r);
void report_free(report_t *r);

int write_results_json(const report_t *r, const char *path, perr_t *e);
int write_summary_md(const report_t *r, const char *path, perr_t *e);
int write_junit(const report_t *r, const char *path, perr_t *e);
int write_html(const report_t *r, const char *path, perr_t *e);

/* Prints the verdict of a results.json; returns 0 pass, 1 fail, 2 bad input. */
int print_verdict(const char *results_path);

#endif
