/* norm_avx2.c — norm.c's float32 row kernels for AVX2 (see norm_impl.h):
 * four doubles a vector, the same operations in the same order as the
 * plain C forms in norm.c, so the bits are theirs. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include "ops/nn/norm_impl.h"

#define VT __attribute__((target("avx2")))

VT static double lanes_sum_avx2(const float *x, int64_t n, double m, int sq)
{
    __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd(), vm = _mm256_set1_pd(m);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        __m256d d0 = _mm256_cvtps_pd(_mm256_castps256_ps128(v)), d1 = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
        if (sq) {
            d0 = _mm256_sub_pd(d0, vm);
            d1 = _mm256_sub_pd(d1, vm);
            d0 = _mm256_mul_pd(d0, d0);
            d1 = _mm256_mul_pd(d1, d1);
        }
        lo = _mm256_add_pd(lo, d0);
        hi = _mm256_add_pd(hi, d1);
    }
    double a[8];
    _mm256_storeu_pd(a, lo);
    _mm256_storeu_pd(a + 4, hi);
    for (; i < n; i++) {
        double d = sq ? x[i] - m : x[i];
        a[0] += sq ? d * d : d;
    }
    return fold8(a);
}

VT static void scale_row_avx2(float *y, const float *x, int64_t n, double m, double a,
                              const double *sc, const double *bi, double b)
{
    const __m256d vm = _mm256_set1_pd(m), va = _mm256_set1_pd(a), vb = _mm256_set1_pd(b);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256d d = _mm256_mul_pd(_mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + i)), vm), va);
        d = sc ? _mm256_add_pd(_mm256_mul_pd(d, _mm256_loadu_pd(sc + i)), _mm256_loadu_pd(bi + i))
               : _mm256_add_pd(d, vb);
        _mm_storeu_ps(y + i, _mm256_cvtpd_ps(d));
    }
    for (; i < n; i++) y[i] = (float)(sc ? (x[i] - m) * a * sc[i] + bi[i] : (x[i] - m) * a + b);
}

const norm_arch_t norm_arch_avx2 = {lanes_sum_avx2, scale_row_avx2};

#endif
