/* poolrow_avx512.c — poolrow.c's rows on 16 lanes (see poolrow_impl.h):
 * MaxPool with four vectors of outputs at once and a masked tail,
 * AveragePool's sums in double, 8 lanes each half. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include "ops/nn/poolrow_impl.h"

#define KT __attribute__((target("avx512f")))

/* Sixteen taps src[0], src[s], ..., src[15 s] for s = 1 or 2 (for 2: the
 * even elements of 31 floats; the 32nd is never read). */
KT static inline __m512 taps16(const float *src, int64_t s, __m512i even)
{
    if (s == 1) return _mm512_loadu_ps(src);
    __m512 lo = _mm512_loadu_ps(src), hi = _mm512_maskz_loadu_ps(0x7FFF, src + 16);
    return _mm512_permutex2var_ps(lo, even, hi);
}

/* The first nt < 16 of those taps; lanes past nt are zero, and nothing
 * past the last tap (src[(nt - 1) s]) is read. */
KT static inline __m512 taps_part(const float *src, int64_t s, __m512i even, int nt)
{
    int span = (int)((nt - 1) * s + 1);   /* floats from src[0] to the last tap */
    __mmask16 lo_m = (__mmask16)(span >= 16 ? 0xFFFF : (1u << span) - 1);
    if (s == 1) return _mm512_maskz_loadu_ps(lo_m, src);
    __mmask16 hi_m = (__mmask16)(span > 16 ? (1u << (span - 16)) - 1 : 0);
    __m512 lo = _mm512_maskz_loadu_ps(lo_m, src), hi = _mm512_maskz_loadu_ps(hi_m, src + 16);
    return _mm512_permutex2var_ps(lo, even, hi);
}

/* best = v where v > best: the first of equal values stays, a NaN only
 * where it came first. */
#define MAX_TAKE(best, v) best = _mm512_mask_mov_ps(best, _mm512_cmp_ps_mask(v, best, _CMP_GT_OQ), v)

KT static int64_t max_avx512(float *y, const float *const *rows, int nrows, int k, int64_t s, int64_t start, int64_t n)
{
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    int64_t o = 0;
    /* four vectors of outputs at once: each is a chain of compare-and-take
     * through its taps, and four chains keep the core busy where one waits */
    for (; o + 64 <= n; o += 64) {
        int64_t c = start + o * s, d = 16 * s;
        __m512 b0 = taps16(rows[0] + c, s, even), b1 = taps16(rows[0] + c + d, s, even);
        __m512 b2 = taps16(rows[0] + c + 2 * d, s, even), b3 = taps16(rows[0] + c + 3 * d, s, even);
        for (int r = 0; r < nrows; r++)
            for (int q = 0; q < k; q++) {
                const float *src = rows[r] + c + q;
                __m512 v0 = taps16(src, s, even), v1 = taps16(src + d, s, even);
                __m512 v2 = taps16(src + 2 * d, s, even), v3 = taps16(src + 3 * d, s, even);
                MAX_TAKE(b0, v0);
                MAX_TAKE(b1, v1);
                MAX_TAKE(b2, v2);
                MAX_TAKE(b3, v3);
            }
        _mm512_storeu_ps(y + o, b0);
        _mm512_storeu_ps(y + o + 16, b1);
        _mm512_storeu_ps(y + o + 32, b2);
        _mm512_storeu_ps(y + o + 48, b3);
    }
    for (; o + 16 <= n; o += 16) {
        int64_t c = start + o * s;
        __m512 best = taps16(rows[0] + c, s, even);
        for (int r = 0; r < nrows; r++)
            for (int q = 0; q < k; q++) {
                __m512 v = taps16(rows[r] + c + q, s, even);
                MAX_TAKE(best, v);
            }
        _mm512_storeu_ps(y + o, best);
    }
    if (o < n) {   /* the last outputs under a mask: lanes are independent, the zero lanes are never stored */
        int nt = (int)(n - o);
        int64_t c = start + o * s;
        __m512 best = taps_part(rows[0] + c, s, even, nt);
        for (int r = 0; r < nrows; r++)
            for (int q = 0; q < k; q++) {
                __m512 v = taps_part(rows[r] + c + q, s, even, nt);
                MAX_TAKE(best, v);
            }
        _mm512_mask_storeu_ps(y + o, (__mmask16)((1u << nt) - 1), best);
        o = n;
    }
    return o;
}

KT static int64_t avg_avx512(float *y, const float *const *rows, int nrows, int k, int64_t s, int64_t start,
                             int64_t n, double count)
{
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512d cnt = _mm512_set1_pd(count);
    int64_t o = 0;
    for (; o + 16 <= n; o += 16) {
        int64_t c = start + o * s;
        __m512d lo = _mm512_setzero_pd(), hi = lo;
        for (int r = 0; r < nrows; r++)
            for (int q = 0; q < k; q++) {
                __m512 v = taps16(rows[r] + c + q, s, even);
                lo = _mm512_add_pd(lo, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
                hi = _mm512_add_pd(hi, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
            }
        __m256 ylo = _mm512_cvtpd_ps(_mm512_div_pd(lo, cnt)), yhi = _mm512_cvtpd_ps(_mm512_div_pd(hi, cnt));
        _mm256_storeu_ps(y + o, ylo);
        _mm256_storeu_ps(y + o + 8, yhi);
    }
    return o;
}

const poolrow_arch_t poolrow_arch_avx512 = {max_avx512, avg_avx512};

#endif
