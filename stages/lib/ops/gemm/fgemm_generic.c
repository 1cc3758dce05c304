/* fgemm_generic.c — fgemm's kernels in portable C (see fgemm_impl.h): the
 * reference the vector kernels match bit for bit, and the path on CPUs
 * without AVX2+FMA. fmaf is the fused multiply-add (correctly rounded by
 * the C library whether or not the CPU has the instruction), in the order
 * of k within an accumulation block, exactly as the vector kernels' lanes
 * do it. */
#include <math.h>
#include <string.h>
#include "ops/gemm/fgemm_impl.h"

static void tile_generic(int64_t kc, const float *a, int64_t lda, int mr, const float *bp, int nr, float *c,
                         int64_t ldc, int first, int last, const float *bias, const float *cbias, const fgemm_epi_t *e)
{
    float acc[FG_MR][FG_NR] = {{0}};
    for (int64_t p = 0; p < kc; p++, bp += FG_NR)
        for (int r = 0; r < mr; r++) {
            float av = a[r * lda + p];
            for (int j = 0; j < nr; j++) acc[r][j] = fmaf(av, bp[j], acc[r][j]);
        }
    if (!first)   /* the blocks' sum so far, then this block's */
        for (int r = 0; r < mr; r++)
            for (int j = 0; j < nr; j++) acc[r][j] = c[r * ldc + j] + acc[r][j];
    for (int r = 0; r < mr; r++)
        for (int j = 0; j < nr; j++)
            c[r * ldc + j] = last ? fgemm_finish_one(acc[r][j], bias ? bias[r] : 0.0f, cbias ? cbias[j] : 0.0f, e)
                                  : acc[r][j];
}

static void pack_b_generic(const float *b, int64_t ldb, int64_t kc, int nr, float *dst)
{
    for (int64_t p = 0; p < kc; p++, b += ldb, dst += FG_NR) {
        memcpy(dst, b, (size_t)nr * sizeof *dst);
        for (int j = nr; j < FG_NR; j++) dst[j] = 0.0f;
    }
}

static void pack_taps_generic(const float *x, int64_t plane, int taps, const int64_t *tapoff, const uint32_t *mk,
                              const int32_t *base, int contiguous, int64_t p0, int64_t kc, float *dst)
{
    (void)contiguous;
    int64_t ch = p0 / taps;
    int t = (int)(p0 % taps);
    for (int64_t p = 0; p < kc; p++, dst += FG_NR) {
        const float *pl = x + ch * plane;
        for (int l = 0; l < FG_NR; l++) dst[l] = mk[t] >> l & 1u ? pl[base[l] + tapoff[t]] : 0.0f;
        if (++t == taps) {
            t = 0;
            ch++;
        }
    }
}

static void gather_even_generic(float *dst, const float *src, int64_t n)
{
    for (int64_t i = 0; i < n; i++) dst[i] = src[2 * i];
}

const fgemm_arch_t fgemm_arch_generic = {FG_MR, tile_generic, pack_b_generic, pack_taps_generic, gather_even_generic,
                                         NULL, 0, NULL, 0, NULL, NULL, 0};
