/* fgemm_avx2.c — fgemm's kernels for AVX2+FMA (see fgemm_impl.h). AVX2 has
 * 16 ymm registers, too few for the 8 x 32 tile at once, so the tile runs
 * as up to four passes of 4 rows x 16 columns (8 accumulators, two loads
 * of B and four broadcasts of A per step of k). Each element of C is the
 * same FMA chain over k in order as in the AVX-512 and portable kernels,
 * then the same epilogue, so the bits are theirs. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include "ops/fgemm_impl.h"
#include "graph/graph.h"

#define AT __attribute__((target("avx2,fma")))

/* The first n floats at p (n < 0 as 0, n > 8 as 8), zero past n, reading
 * nothing beyond them. Not VMASKMOVPS: hardware suppresses faults in its
 * masked-off lanes, but qemu 7.2's TCG (the CI's AVX2 machine) loads the
 * whole vector and faults at the end of a buffer. */
AT static inline __m256 load_part(const float *p, int n)
{
    if (n >= 8) return _mm256_loadu_ps(p);
    float t[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int i = 0; i < n; i++) t[i] = p[i];
    return _mm256_loadu_ps(t);
}

AT static inline void store_part(float *p, __m256 v, int n)
{
    if (n >= 8) {
        _mm256_storeu_ps(p, v);
        return;
    }
    float t[8];
    _mm256_storeu_ps(t, v);
    for (int i = 0; i < n; i++) p[i] = t[i];
}

/* The epilogue, as fgemm_finish_one and the AVX-512 kernel: bias (row,
 * then column), then Relu / LeakyRelu / Clip with ordered compares (NaN
 * passes through; -0 stays -0; Clip with min > max gives max). */
AT static inline __m256 finish(__m256 x, __m256 bias, __m256 col_bias, const fgemm_epi_t *e)
{
    if (e->bias) x = _mm256_add_ps(x, bias);
    if (e->col_bias) x = _mm256_add_ps(x, col_bias);
    __m256 zero = _mm256_setzero_ps();
    switch (e->act) {
    case ACT_RELU:
        return _mm256_blendv_ps(x, zero, _mm256_cmp_ps(x, zero, _CMP_LT_OQ));
    case ACT_LEAKY:
        return _mm256_blendv_ps(x, _mm256_mul_ps(x, _mm256_set1_ps(e->a)), _mm256_cmp_ps(x, zero, _CMP_LT_OQ));
    case ACT_CLIP: {
        __m256 lo = _mm256_set1_ps(e->a > e->b ? e->b : e->a), hi = _mm256_set1_ps(e->b);
        __m256 below = _mm256_cmp_ps(x, _mm256_set1_ps(e->a), _CMP_LT_OQ);
        __m256 above = _mm256_cmp_ps(x, hi, _CMP_GT_OQ);
        return _mm256_blendv_ps(_mm256_blendv_ps(x, hi, above), lo, below);
    }
    default:
        return x;
    }
}

/* One pass: rows [0, rn) (rn <= 4) and columns [0, cn) (cn <= 16) of the
 * tile, whose row r's A value at step p is A(r); bp at the pass's first
 * column, 32 floats a step. Rows past rn compute a copy of a live row and
 * are never stored. */
#define PASS_ACC __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00
#define PROW_LOAD(r)                                        \
    if (r < rn) {                                           \
        c##r##0 = load_part(c + r * ldc, cn);               \
        c##r##1 = load_part(c + r * ldc + 8, cn - 8);       \
    }
#define PROW_FMA(r, A)                         \
    t = _mm256_broadcast_ss(&A(r));            \
    c##r##0 = _mm256_fmadd_ps(t, b0, c##r##0); \
    c##r##1 = _mm256_fmadd_ps(t, b1, c##r##1);
#define PROW_STORE(r)                                                   \
    if (r < rn) {                                                       \
        if (last) {                                                     \
            __m256 bv = _mm256_set1_ps(bias ? bias[r] : 0.0f);          \
            c##r##0 = finish(c##r##0, bv, cb0, e);                      \
            c##r##1 = finish(c##r##1, bv, cb1, e);                      \
        }                                                               \
        store_part(c + r * ldc, c##r##0, cn);                           \
        store_part(c + r * ldc + 8, c##r##1, cn - 8);                   \
    }
#define PASS_BODY(A, STEP)                                                                         \
    PASS_ACC;                                                                                      \
    if (!first) { PROW_LOAD(0) PROW_LOAD(1) PROW_LOAD(2) PROW_LOAD(3) }                            \
    for (int64_t p = 0; p < kc; p++, bp += FG_NR) {                                                \
        __m256 b0 = _mm256_load_ps(bp), b1 = _mm256_load_ps(bp + 8), t;                            \
        PROW_FMA(0, A) PROW_FMA(1, A) PROW_FMA(2, A) PROW_FMA(3, A)                                \
        STEP;                                                                                      \
    }                                                                                              \
    __m256 cb0 = cbias ? load_part(cbias, cn) : _mm256_setzero_ps();                               \
    __m256 cb1 = cbias ? load_part(cbias + 8, cn - 8) : _mm256_setzero_ps();                       \
    PROW_STORE(0) PROW_STORE(1) PROW_STORE(2) PROW_STORE(3)

#define A_INPLACE(r) a##r[p]

/* A read in place: rows lda apart (rows past rn repeat the last live one). */
AT static void pass_inplace(int64_t kc, const float *a, int64_t lda, int rn, const float *bp, int cn, float *c,
                            int64_t ldc, int first, int last, const float *bias, const float *cbias,
                            const fgemm_epi_t *e)
{
    const float *a0 = a, *a1 = a + (1 < rn ? 1 : rn - 1) * lda, *a2 = a + (2 < rn ? 2 : rn - 1) * lda;
    const float *a3 = a + (3 < rn ? 3 : rn - 1) * lda;
    PASS_BODY(A_INPLACE, (void)0);
}

AT static void tile_avx2(int64_t kc, const float *a, int64_t lda, int mr, const float *bp, int nr, float *c,
                         int64_t ldc, int first, int last, const float *bias, const float *cbias, const fgemm_epi_t *e)
{
    for (int r0 = 0; r0 < mr; r0 += 4)
        for (int c0 = 0; c0 < nr; c0 += 16) {
            int rn = mr - r0 < 4 ? mr - r0 : 4, cn = nr - c0 < 16 ? nr - c0 : 16;
            const float *rb = bias ? bias + r0 : NULL, *cbp = cbias ? cbias + c0 : NULL;
            pass_inplace(kc, a + r0 * lda, lda, rn, bp + c0, cn, c + r0 * ldc + c0, ldc, first, last, rb, cbp, e);
        }
}

AT static void pack_b(const float *b, int64_t ldb, int64_t kc, int nr, float *dst)
{
    for (int64_t p = 0; p < kc; p++, b += ldb, dst += FG_NR) {
        _mm_prefetch((const char *)(b + 64), _MM_HINT_T1);   /* as the AVX-512 pack: two strips on */
        _mm_prefetch((const char *)(b + 80), _MM_HINT_T1);
        for (int q = 0; q < 4; q++) _mm256_store_ps(dst + 8 * q, load_part(b + 8 * q, nr - 8 * q));
    }
}

/* Lanes whose bit is set in bits (8 bits) as a vector mask. */
AT static inline __m256i bits_mask(uint32_t bits)
{
    const __m256i one = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    return _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32((int32_t)bits), one), one);
}

/* 8 consecutive floats at p where all 8 bits are set, none where none
 * is, else lane by lane (lanes under a cleared bit are never read: their
 * addresses may lie outside the input, so p is an integer). */
AT static inline __m256 load_bits(uintptr_t p, uint32_t bits)
{
    if (bits == 0xFFu) return _mm256_loadu_ps((const float *)p);
    float t[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int i = 0; i < 8; i++)
        if (bits >> i & 1u) t[i] = ((const float *)p)[i];
    return _mm256_loadu_ps(t);
}

/* As fgemm_avx512.c's pack_taps: plain loads where the strip reads
 * consecutive elements, gathers through the lane offsets otherwise; lanes
 * under a cleared bit are never read. */
AT static void pack_taps(const float *x, int64_t plane, int taps, const int64_t *tapoff, const uint32_t *mk,
                         const int32_t *base, int contiguous, int64_t p0, int64_t kc, float *dst)
{
    int64_t ch = p0 / taps;
    int t = (int)(p0 % taps);
    uintptr_t xc = (uintptr_t)(x + ch * plane);
    __m256i b[4];
    for (int q = 0; q < 4; q++) b[q] = _mm256_loadu_si256((const __m256i *)(base + 8 * q));
    for (int64_t p = 0; p < kc; p++, dst += FG_NR) {
        for (int q = 0; q < 4; q++) {
            uint32_t bits = mk[t] >> (8 * q) & 0xFFu;
            if (contiguous) {
                uintptr_t src = xc + (uintptr_t)(base[0] + tapoff[t] + 8 * q) * sizeof(float);
                _mm256_store_ps(dst + 8 * q, bits ? load_bits(src, bits) : _mm256_setzero_ps());
            } else {
                __m256i m = bits_mask(bits);
                __m256i off = _mm256_add_epi32(b[q], _mm256_set1_epi32((int32_t)tapoff[t]));
                _mm256_store_ps(dst + 8 * q, _mm256_mask_i32gather_ps(_mm256_setzero_ps(), (const float *)xc, off,
                                                                      _mm256_castsi256_ps(m), 4));
            }
        }
        if (++t == taps) {
            t = 0;
            xc += (uintptr_t)plane * sizeof(float);
        }
    }
}

/* dst[i] = src[2i], eight at a time while the loads stay within src[0, 2n-1). */
AT static void gather_even_avx2(float *dst, const float *src, int64_t n)
{
    const __m256i idx = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
    int64_t i = 0;
    for (; i + 9 <= n; i += 8) {
        __m256 lo = _mm256_permutevar8x32_ps(_mm256_loadu_ps(src + 2 * i), idx);
        __m256 hi = _mm256_permutevar8x32_ps(_mm256_loadu_ps(src + 2 * i + 8), idx);
        _mm256_storeu_ps(dst + i, _mm256_permute2f128_ps(lo, hi, 0x20));
    }
    for (; i < n; i++) dst[i] = src[2 * i];
}

const fgemm_arch_t fgemm_arch_avx2 = {tile_avx2, pack_b, pack_taps, gather_even_avx2, NULL, 0, NULL};

#endif
