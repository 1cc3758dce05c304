/* norm_impl.h — what norm.c's float32 rows (Instance-, Layer- and
 * GroupNormalization, the statistics and the scaling of one row) take from
 * each instruction set: the generic set in norm.c, AVX2 in norm_avx2.c.
 * Both do the same IEEE operations in the same order (no fused
 * multiply-adds), so the CPU never changes a result. */
#ifndef PARITY_NORM_IMPL_H
#define PARITY_NORM_IMPL_H

#include <stdint.h>
#include "util/isa.h"

typedef struct norm_arch {
    /* The sum of x[0, n) (sq = 0) or of (x - m)^2 (sq = 1): eight double
     * lanes, lane k taking the elements i = k mod 8 of the whole blocks of
     * 8, the rest into lane 0 in order, then fold8. */
    double (*lanes_sum)(const float *x, int64_t n, double m, int sq);
    /* y = (x - m) * a * sc[i] + bi[i], or (x - m) * a + b when sc is NULL,
     * in double, rounded once to float. */
    void (*scale_row)(float *y, const float *x, int64_t n, double m, double a, const double *sc, const double *bi,
                      double b);
} norm_arch_t;

extern const norm_arch_t norm_arch_generic;
#if ISA_X86
extern const norm_arch_t norm_arch_avx2;
#endif

/* The eight lanes' sums folded pairwise, the order of every set. */
static inline double fold8(const double *a)
{
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

#endif
