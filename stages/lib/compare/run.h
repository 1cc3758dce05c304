/* run.h — comparing two sides: samples matched by id (or by position when
 * a side is a Polygraphy file of iterations), tensors by name (then by the
 * name trtexec writes into file names), one pair loaded at a time. Every
 * missing or extra tensor and every shape mismatch is a result of its own,
 * never skipped. B is the reference. */
#ifndef PARITY_COMPARE_RUN_H
#define PARITY_COMPARE_RUN_H

#include "compare/metrics.h"
#include "compare/source.h"
#include "util/namesel.h"

/* --per-tensor NAME=atol,rtol (NAME may be a glob; the last match wins). */
typedef struct cmp_override {
    char *pattern;
    double atol, rtol;
} cmp_override_t;

typedef struct cmp_config {
    cmp_tol_t tol;            /* defaults: Polygraphy's */
    int n_over;
    cmp_override_t *over;
    double layer_snr_db;      /* layerwise: > 0 judges layers by SNR (dB) instead of tol */
    name_sel_t sel;           /* --judge / --ignore globs: which outputs count (cmp_config_judged) */
} cmp_config_t;

void cmp_config_init(cmp_config_t *c);
int cmp_config_add_override(cmp_config_t *c, const char *spec, perr_t *e);
cmp_tol_t cmp_config_tol(const cmp_config_t *c, const char *name);
/* --judge GLOB (the outputs the application reads) and --ignore GLOB: a
 * tensor is judged when it matches a --judge pattern (any, when none is
 * given) and no --ignore pattern. The others are compared and shown, never
 * counted in the verdict. */
void cmp_config_add_glob(cmp_config_t *c, int ignore, const char *glob);
int cmp_config_judged(const cmp_config_t *c, const char *name);
void cmp_config_free(cmp_config_t *c);

typedef enum {
    RES_PASS, RES_FAIL, RES_MISSING, RES_EXTRA, RES_SHAPE, RES_SAMPLE_MISSING, RES_SAMPLE_EXTRA
} res_status_t;

typedef struct cmp_result {
    char *sample;             /* id in B (or A for extras); "" for single sets */
    char *name;               /* tensor name in B (A for extras); NULL for samples */
    char *name_a;             /* A's name when matched through trtexec file names */
    res_status_t status;
    dtype_t dta, dtb;
    int nda, ndb;
    int64_t da[TENSOR_MAX_DIMS], db[TENSOR_MAX_DIMS];
    cmp_tol_t tol;
    cmp_stats_t st;           /* RES_PASS / RES_FAIL only */
    int unjudged;             /* shown, not counted (--judge / --ignore) */
} cmp_result_t;

typedef struct cmp_report {
    const cmp_side_t *a, *b;
    const cmp_config_t *cfg;
    int n, cap;
    cmp_result_t *r;
    int64_t bytes;            /* tensor bytes read (both sides) */
} cmp_report_t;

/* A --judge pattern that matches no tensor of the run, or a run that judges
 * nothing: a config error (a typo would otherwise judge nothing and pass). */
int cmp_check_judged(const cmp_config_t *c, const cmp_report_t *rep, perr_t *e);
int cmp_run(const cmp_side_t *a, const cmp_side_t *b, const cmp_config_t *cfg, cmp_report_t *rep, perr_t *e);
/* Loads and compares one pair into a result (status PASS/FAIL/SHAPE). */
int cmp_one(const cmp_set_t *sa, int ka, const cmp_set_t *sb, int kb, const cmp_config_t *cfg,
            cmp_work_t *w, cmp_result_t *r, int64_t *bytes, perr_t *e);
cmp_result_t *report_add(cmp_report_t *rep, const char *sample, const char *name, res_status_t st);
void cmp_report_free(cmp_report_t *rep);
/* Elements compared (results PASS or FAIL); 0: nothing was judged. */
int64_t cmp_report_elements(const cmp_report_t *rep);
/* 0 when every result passed over 0 elements (only empty tensors). */
int cmp_report_judged(const cmp_report_t *rep);
/* Exit status: 0 when every result passed and some element was compared, 1 otherwise. */
int cmp_report_status(const cmp_report_t *rep);

/* Pairs of sample indices (-1 for a sample on one side only). */
int match_samples(const cmp_side_t *a, const cmp_side_t *b, int **ia, int **ib, perr_t *e);

#endif
