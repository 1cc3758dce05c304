/* poolrow_avx2.c — poolrow.c's rows on 8 lanes (see poolrow_impl.h);
 * the outputs past the last whole vector go to poolrow.c's plain loop. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include "ops/nn/poolrow_impl.h"

#define AT __attribute__((target("avx2")))

/* Eight taps src[0], src[s], ..., src[7 s] for s = 1 or 2 (for 2: the even
 * elements of 15 floats, read as src[0..7] and src[7..14]; nothing past). */
AT static inline __m256 taps8(const float *src, int64_t s)
{
    if (s == 1) return _mm256_loadu_ps(src);
    __m256 lo = _mm256_permutevar8x32_ps(_mm256_loadu_ps(src), _mm256_setr_epi32(0, 2, 4, 6, 0, 0, 0, 0));
    __m256 hi = _mm256_permutevar8x32_ps(_mm256_loadu_ps(src + 7), _mm256_setr_epi32(1, 3, 5, 7, 1, 1, 1, 1));
    return _mm256_permute2f128_ps(lo, hi, 0x20);
}

AT static int64_t max_avx2(float *y, const float *const *rows, int nrows, int k, int64_t s, int64_t start, int64_t n)
{
    int64_t o = 0;
    for (; o + 8 <= n; o += 8) {
        int64_t c = start + o * s;
        __m256 best = taps8(rows[0] + c, s);
        for (int r = 0; r < nrows; r++)
            for (int q = 0; q < k; q++) {
                __m256 v = taps8(rows[r] + c + q, s);
                best = _mm256_blendv_ps(best, v, _mm256_cmp_ps(v, best, _CMP_GT_OQ));
            }
        _mm256_storeu_ps(y + o, best);
    }
    return o;
}

AT static int64_t avg_avx2(float *y, const float *const *rows, int nrows, int k, int64_t s, int64_t start, int64_t n,
                           double count)
{
    const __m256d cnt = _mm256_set1_pd(count);
    int64_t o = 0;
    for (; o + 8 <= n; o += 8) {
        int64_t c = start + o * s;
        __m256d lo = _mm256_setzero_pd(), hi = lo;
        for (int r = 0; r < nrows; r++)
            for (int q = 0; q < k; q++) {
                __m256 v = taps8(rows[r] + c + q, s);
                lo = _mm256_add_pd(lo, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
                hi = _mm256_add_pd(hi, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
            }
        _mm_storeu_ps(y + o, _mm256_cvtpd_ps(_mm256_div_pd(lo, cnt)));
        _mm_storeu_ps(y + o + 4, _mm256_cvtpd_ps(_mm256_div_pd(hi, cnt)));
    }
    return o;
}

const poolrow_arch_t poolrow_arch_avx2 = {max_avx2, avg_avx2};

#endif
