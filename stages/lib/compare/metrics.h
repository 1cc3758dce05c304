/* metrics.h — everything compare says about one tensor pair (A under test,
 * B the reference), computed in two streaming passes over the data.
 *
 * The differences are Polygraphy's (docs/design.md "Compare semantics"): both sides cast up
 * (fp16/bf16 -> fp32, integers and mixed types -> fp64), absdiff = |a - b|,
 * reldiff = absdiff / |b| with 2.220446049250313e-16 added to exact zeros of
 * a floating-point reference. Statistics follow numpy's definitions (max and
 * argmax take the first occurrence, any NaN makes max/mean/median/quantiles
 * NaN, quantiles interpolate linearly), accumulated in double. Medians and
 * quantiles come from exact selection (radix histograms on the float bit
 * patterns, quickselect for small tensors), never a sort.
 */
#ifndef PARITY_COMPARE_METRICS_H
#define PARITY_COMPARE_METRICS_H

#include <stdint.h>
#include "tensor/tensor.h"

#define CMP_HIST_BINS 10
#define CMP_EPSILON 2.220446049250313e-16
#define CMP_FP16_MAX 65504.0

typedef enum { CMP_RULE_POLYGRAPHY, CMP_RULE_ALLCLOSE } cmp_rule_t;
typedef enum {
    CMP_STAT_ELEMWISE, CMP_STAT_MAX, CMP_STAT_MEAN, CMP_STAT_MEDIAN, CMP_STAT_QUANTILE
} cmp_stat_t;

/* The check applied to one tensor. */
typedef struct cmp_tol {
    double atol, rtol;
    double quantile;          /* for CMP_STAT_QUANTILE, in [0, 1] */
    cmp_rule_t rule;
    cmp_stat_t stat;
    int nan_equal;            /* NaN in both A and B counts as equal */
    int inf_equal;            /* equal infinities count as equal */
} cmp_tol_t;

/* The distribution of one difference array (absolute or relative). */
typedef struct cmp_dist {
    double min, max, mean, std, median, p90, p95, p99, q;
    int64_t argmin, argmax;   /* flat indices (first occurrence; first NaN if any) */
    int64_t nan;              /* elements whose difference is NaN */
    int64_t inf;              /* elements whose difference is +inf */
    double fmin, fmax;        /* over finite differences only (histogram range) */
} cmp_dist_t;

/* Values of one side. */
typedef struct cmp_values {
    int64_t nan, posinf, neginf;
    double min, max, mean;    /* over finite values (NaN when there are none) */
} cmp_values_t;

typedef struct cmp_stats {
    int64_t n;
    dtype_t compute;          /* DT_FLOAT or DT_DOUBLE: the type differences are taken in */
    cmp_dist_t abs, rel;
    cmp_values_t a, b;
    int64_t beyond_fp16;      /* finite reference values with |b| > 65504 */
    int64_t finite_pairs;     /* elements where both sides are finite */
    double cosine;            /* over finite pairs; 1 when both are all zero */
    double snr_db;            /* 10 log10(sum b^2 / sum (a-b)^2) over finite pairs */
    int64_t mismatches;       /* elements failing the element rule of the tolerance */
    int64_t first_mismatch;   /* flat index, -1 when none */
    /* Histogram of the finite absolute differences over [hist_lo, hist_hi]
     * (numpy.histogram's bins); non-finite differences are counted apart. */
    double hist_lo, hist_hi;
    int64_t hist[CMP_HIST_BINS];
    int64_t hist_nonfinite;
    /* Smallest tolerance that passes with the other one as given (element
     * rules only; NaN when some element fails whatever the tolerance). */
    double atol_at_rtol, rtol_at_atol;
    double a_at_absmax, b_at_absmax, a_at_relmax, b_at_relmax;
} cmp_stats_t;

/* Scratch reused from one pair to the next (no allocation per element). */
typedef struct cmp_work cmp_work_t;
cmp_work_t *cmp_work_new(void);
void cmp_work_free(cmp_work_t *w);

/* Computes the statistics of A against reference B (same shape, checked by
 * the caller); BAD for types that cannot be compared (strings). */
int cmp_pair(const tensor_t *a, const tensor_t *b, const cmp_tol_t *tol, cmp_work_t *w,
             cmp_stats_t *st, perr_t *e);

/* The value of the error statistic the tolerance checks, for |a-b| and for
 * the relative difference: Polygraphy's "minimum required tolerance". */
double cmp_stat_value(const cmp_dist_t *d, const cmp_tol_t *tol);
/* Whether the pair passes the tolerance. */
int cmp_passed(const cmp_stats_t *st, const cmp_tol_t *tol);

const char *cmp_stat_name(cmp_stat_t s);
const char *cmp_rule_name(cmp_rule_t r);
int cmp_stat_parse(const char *s, cmp_stat_t *out);
int cmp_rule_parse(const char *s, cmp_rule_t *out);

#endif
