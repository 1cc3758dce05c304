/* poolrow.c — the inside of a 2-D float32 MaxPool / AveragePool row, where
 * every window lies wholly in the input: pool.c hands over the window's
 * input rows and the row's range of such outputs, and keeps the edges.
 * Sixteen outputs at a time at AVX-512, eight at AVX2 (stride 1 or 2;
 * util/isa.h picks), else one at a time. Either way each output sees its taps in the
 * order of the plain loop (rows, then columns; max keeps the first of
 * equal values and a NaN only where it comes first; sums in double), so
 * the bits are those of pool.c's general loop. */
#include "ops/nn/poolrow.h"
#include "util/isa.h"

static void max_scalar(float *y, const float *const *rows, int nrows, int k, int64_t s, int64_t start, int64_t n)
{
    for (int64_t o = 0; o < n; o++) {
        int64_t c = start + o * s;
        float best = rows[0][c];
        for (int r = 0; r < nrows; r++)
            for (int q = 0; q < k; q++) {
                float v = rows[r][c + q];
                best = v > best ? v : best;
            }
        y[o] = best;
    }
}

static void avg_scalar(float *y, const float *const *rows, int nrows, int k, int64_t s, int64_t start, int64_t n,
                       double count)
{
    for (int64_t o = 0; o < n; o++) {
        int64_t c = start + o * s;
        double acc = 0;
        for (int r = 0; r < nrows; r++)
            for (int q = 0; q < k; q++) acc += rows[r][c + q];
        y[o] = (float)(acc / count);
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
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
#endif

void poolrow_max(float *y, const float *const *rows, int nrows, int k, int64_t s, int64_t start, int64_t n)
{
    int64_t done = 0;
#if defined(__x86_64__) && defined(__GNUC__)
    if ((s == 1 || s == 2) && isa_active() >= ISA_AVX512) done = max_avx512(y, rows, nrows, k, s, start, n);
    else if ((s == 1 || s == 2) && isa_active() == ISA_AVX2) done = max_avx2(y, rows, nrows, k, s, start, n);
#endif
    max_scalar(y + done, rows, nrows, k, s, start + done * s, n - done);
}

void poolrow_avg(float *y, const float *const *rows, int nrows, int k, int64_t s, int64_t start, int64_t n,
                 double count)
{
    int64_t done = 0;
#if defined(__x86_64__) && defined(__GNUC__)
    if ((s == 1 || s == 2) && isa_active() >= ISA_AVX512) done = avg_avx512(y, rows, nrows, k, s, start, n, count);
    else if ((s == 1 || s == 2) && isa_active() == ISA_AVX2) done = avg_avx2(y, rows, nrows, k, s, start, n, count);
#endif
    avg_scalar(y + done, rows, nrows, k, s, start + done * s, n - done, count);
}
