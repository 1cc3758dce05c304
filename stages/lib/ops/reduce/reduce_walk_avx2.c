/* reduce_walk_avx2.c — reduce_walk.c's float32 runs for AVX2 (see
 * reduce_walk_impl.h). */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include "ops/reduce/reduce_walk_impl.h"

/* SUM4 of n float32 runs of L terms (xs: the first run's first term) added
 * into acc[0, n): its four partial sums are the four lanes of a vector of
 * doubles (lane l takes the terms j = l mod 4, in order; the last L % 4
 * terms under a blend that leaves the other lanes untouched), folded as
 * (s0 + s1) + (s2 + s3): SUM4's operations in its order, so its bits. */
/* Four terms F(v) in double: F_ID, F_ABS or F_SQ (exact, as the macros). */
__attribute__((target("avx2"))) static inline __m256d terms4(__m128 v4, red_tr_t tr)
{
    __m256d v = _mm256_cvtps_pd(v4);
    if (tr == TR_ABS) return _mm256_andnot_pd(_mm256_set1_pd(-0.0), v);
    if (tr == TR_SQ) return _mm256_mul_pd(v, v);
    return v;
}

__attribute__((target("avx2"))) static void sum4_f32_avx2(const float *xs, int64_t L, red_tr_t tr, double *acc,
                                                          int64_t n)
{
    const int64_t L4 = L & ~(int64_t)3;
    const __m256d tail = _mm256_castsi256_pd(_mm256_cmpgt_epi64(_mm256_set1_epi64x(L - L4), _mm256_setr_epi64x(0, 1, 2, 3)));
    for (int64_t o = 0; o < n; o++, xs += L) {
        __m256d s = _mm256_setzero_pd();
        for (int64_t j = 0; j < L4; j += 4) s = _mm256_add_pd(s, terms4(_mm_loadu_ps(xs + j), tr));
        if (L4 < L) {   /* read one by one: nothing past the run */
            float part[4] = {0, 0, 0, 0};
            for (int64_t j = L4; j < L; j++) part[j - L4] = xs[j];
            s = _mm256_blendv_pd(s, _mm256_add_pd(s, terms4(_mm_loadu_ps(part), tr)), tail);
        }
        __m128d lo = _mm256_castpd256_pd128(s), hi = _mm256_extractf128_pd(s, 1);
        __m128d ab = _mm_add_sd(lo, _mm_unpackhi_pd(lo, lo)), cd = _mm_add_sd(hi, _mm_unpackhi_pd(hi, hi));
        acc[o] += _mm_cvtsd_f64(_mm_add_sd(ab, cd));
    }
}

const reduce_walk_arch_t reduce_walk_arch_avx2 = {sum4_f32_avx2};

#endif
