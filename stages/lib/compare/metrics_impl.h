/* metrics_impl.h — what metrics.c, its per-element kernels (pairkernel.h)
 * and the vectorised float32 path (fast32.c) share: the accumulators of the
 * two passes, the histogram bins and the scratch memory. Not a public API. */
#ifndef PARITY_COMPARE_METRICS_IMPL_H
#define PARITY_COMPARE_METRICS_IMPL_H

#include "compare/metrics.h"
#include "compare/select.h"

/* Below this many elements the keys are kept and quickselected: clearing
 * the radix histograms would cost more than the selection. */
#define SMALL_N 65536

typedef struct pass_cfg {
    double atol, rtol;
    cmp_rule_t rule;
    int nan_equal, inf_equal, ref_float;
} pass_cfg_t;

typedef struct dacc {
    double sum, min, max, fmin, fmax;
    int64_t argmin, argmax, nan, first_nan, inf;
} dacc_t;

typedef struct vacc {
    double sum, min, max;
    int64_t fin, nan, pinf, ninf;
} vacc_t;

typedef struct acc {
    vacc_t va, vb;
    dacc_t da, dr;
    double sab, saa, sbb, snoise;
    int64_t fpairs, beyond16, mism, first_mism;
    double aar, raa;          /* atol at rtol, rtol at atol */
    int aar_nan, raa_nan;
} acc_t;

typedef struct hbins {
    double lo, hi, norm, edges[CMP_HIST_BINS + 1];
} hbins_t;

typedef struct pass2 {
    double mean_abs, mean_rel;
    int want_std_abs, want_std_rel;
    double sq_abs, sq_rel;
    hbins_t bins;
    int64_t hist[CMP_HIST_BINS], hist_nonfinite;
    const int8_t *slot_a, *slot_r;
    uint32_t *h1a, *h1r;
    int nbins_a, nbins_r;     /* the bins (top 16 key bits) the slots stand for */
    int bins_a[SEL_MAX_RANKS], bins_r[SEL_MAX_RANKS];
} pass2_t;

typedef struct deep_slots {
    int n;
    uint64_t prefix[SEL_MAX_RANKS];
    uint32_t *hist;
} deep_slots_t;

/* Elements per block of the vectorised path (a multiple of 4). */
#define FAST_BLOCK 1024

struct cmp_work {
    uint32_t *h0[2], *h1[2];  /* [2][65536], [2][SEL_MAX_RANKS * 65536] */
    int8_t *slot[2];          /* [2][65536] */
    uint64_t *keys[2];        /* [2][SMALL_N] */
    float *blk[2];            /* [2][FAST_BLOCK]: a block's |a-b| and relative differences */
};

/* numpy.histogram's bins: edges from linspace, the index computed then
 * corrected against the edges, the last bin closed on the right. */
void hist_setup(hbins_t *h, double lo, double hi);

/* The estimate (x - lo) * norm, then moved until edges[i] <= x < edges[i+1]
 * (the last bin closed): numpy's correction, carried to the end. */
static inline int hist_bin(const hbins_t *h, double x)
{
    double f = (x - h->lo) * h->norm;
    int i = f >= CMP_HIST_BINS - 1 ? CMP_HIST_BINS - 1 : f > 0 ? (int)f : 0;
    while (i > 0 && x < h->edges[i]) i--;
    while (i < CMP_HIST_BINS - 1 && x >= h->edges[i + 1]) i++;
    return i;
}


/* The vectorised float32 path for the Polygraphy rule: each handles one
 * block [begin, begin + len) (len a multiple of 4) and returns 0 without
 * touching the accumulators when the block holds a non-finite value or
 * difference: the caller then runs the scalar kernel on it. */
int fast32_pass1(const float *A, const float *B, int64_t begin, int len, const pass_cfg_t *c, acc_t *s,
                 float *adb, float *rdb);
int fast32_pass2(const float *A, const float *B, int64_t begin, int len, const pass_cfg_t *c, pass2_t *p,
                 const float *thr, float *adb, float *rdb);
/* Float thresholds equivalent to the histogram's edges: for a float x,
 * x >= thr[k] exactly when (double)x >= edges[k]. */
void fast32_thresholds(const hbins_t *h, float *thr);

#endif
