/* fgemm_avx512.c — fgemm's kernels for AVX-512F (see fgemm_impl.h): an
 * 8 x 32 register tile of C (16 zmm accumulators), A read in place (8
 * broadcasts per step of k), B from the packed panel (strips of at most
 * 16 and 8 columns on 8 x 16 and 8 x 8 tiles of their own); the bias, the
 * activation and the FP16 storage rounding applied before the tile is
 * stored; and fconv_px's tiles, the
 * same accumulators with 8 pixels' inputs broadcast against packed weights,
 * and for at most 16 output channels 16 pixels' against one vector of
 * them (tile_px16); and fconv_px's row kernel (row_px: 16 pixels of a row
 * in the lanes, 16 channels' weights broadcast). Every element is
 * summed in fgemm_impl.h's blocked order, as fgemm_ref, so the bits are
 * those of the AVX2 and portable kernels. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include "ops/gemm/fgemm_impl.h"
#include "ops/gemm/transpose8x8.h"
#include "ops/elementwise/vmath_avx512.h"

#define KT __attribute__((target("avx512f")))

/* The activations other than Relu: the same formulas as the LeakyRelu and
 * Clip kernels (NaN passes through; -0 stays -0), and Sigmoid and SiLU as
 * vm_sigmoid_f32 and the Mul compute them (vmath_avx512.h: the scalar
 * function's bits), in registers rather than on the stored tile. */
KT static inline __attribute__((always_inline)) __m512 finish_act(__m512 x, const fgemm_epi_t *e)
{
    __m512 zero = _mm512_setzero_ps();
    switch (e->act) {
    case ACT_LEAKY:
        return _mm512_mask_mul_ps(x, _mm512_cmp_ps_mask(x, zero, _CMP_LT_OQ), x, _mm512_set1_ps(e->a));
    case ACT_CLIP: {
        __m512 lo = _mm512_set1_ps(e->a > e->b ? e->b : e->a), hi = _mm512_set1_ps(e->b);
        __mmask16 below = _mm512_cmp_ps_mask(x, _mm512_set1_ps(e->a), _CMP_LT_OQ);
        __mmask16 above = _mm512_cmp_ps_mask(x, hi, _CMP_GT_OQ);
        return _mm512_mask_mov_ps(_mm512_mask_mov_ps(x, above, hi), below, lo);
    }
    case ACT_SIGMOID:
        return v16_sigmoid(x);
    case ACT_SILU:
        return _mm512_mul_ps(x, v16_sigmoid(x));
    default:
        return x;
    }
}

/* The other activations, applied to a tile's n accumulators in one loop
 * after finish: their chains (Sigmoid's exp, a division) are independent
 * and overlap there. A call per accumulator instead spilled the other
 * accumulators around every call and ran the chains one after another. */
KT static __attribute__((noinline)) void act_block(__m512 *v, int n, const fgemm_epi_t *e)
{
    for (int i = 0; i < n; i++) v[i] = finish_act(v[i], e);
}

static inline int act_deferred(const fgemm_epi_t *e) { return e->act != ACT_NONE && e->act != ACT_RELU; }

/* Bias (row, then column), then the activation if it is none or Relu (the
 * Relu kernel's formula), the activations of most convolutions; any other
 * is left to act_block. */
KT static inline __attribute__((always_inline)) __m512 finish(__m512 x, __m512 bias, __m512 col_bias,
                                                              const fgemm_epi_t *e)
{
    if (e->bias) x = _mm512_add_ps(x, bias);
    if (e->col_bias) x = _mm512_add_ps(x, col_bias);
    __m512 zero = _mm512_setzero_ps();
    if (e->act == ACT_RELU) return _mm512_mask_mov_ps(x, _mm512_cmp_ps_mask(x, zero, _CMP_LT_OQ), zero);
    return x;
}

/* act_block over the 16 accumulators c00, c01, c10, ... (n of them, in
 * that order) where the activation is one it does. */
#define TILE_ACT(n)                                                                                \
    if (act_deferred(e)) {                                                                         \
        __m512 v[16] = {c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51, c60, c61, c70, c71}; \
        act_block(v, n, e);                                                                        \
        c00 = v[0], c01 = v[1], c10 = v[2], c11 = v[3], c20 = v[4], c21 = v[5], c30 = v[6];        \
        c31 = v[7], c40 = v[8], c41 = v[9], c50 = v[10], c51 = v[11], c60 = v[12], c61 = v[13];    \
        c70 = v[14], c71 = v[15];                                                                  \
    }

/* The 8 x 32 register tile, written once for both kernels: 16
 * accumulators (zero, or the partial sums in C when this is not the first
 * panel), one step of k per 32 floats of the panel (A's 8 values of the
 * step broadcast), and the store of rows [0, mr) under the column masks
 * s0/s1, finished (bias, activation) after the last panel only. A's rows
 * are read in place (rows past mr repeat the last one: computed, never
 * stored). */
#define TILE_ACC                                                                                   \
    __m512 c00 = _mm512_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;       \
    __m512 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00, c61 = c00; \
    __m512 c70 = c00, c71 = c00
/* C's blocks' sum + this block's (fgemm_impl.h's order). */
#define ROW_LOAD(r)                                                                   \
    if (r < mr) {                                                                     \
        c##r##0 = _mm512_add_ps(_mm512_maskz_loadu_ps(s0, c + r * ldc), c##r##0);      \
        c##r##1 = _mm512_add_ps(_mm512_maskz_loadu_ps(s1, c + r * ldc + 16), c##r##1); \
    }
#define TILE_LOAD ROW_LOAD(0) ROW_LOAD(1) ROW_LOAD(2) ROW_LOAD(3) ROW_LOAD(4) ROW_LOAD(5) ROW_LOAD(6) ROW_LOAD(7)
/* A(r) names row r's value of this step (A_INPLACE: a##r[p]; PX: pixel r's input). */
#define TILE_STEP(bp, A)                                                                           \
    do {                                                                                           \
        __m512 b0 = _mm512_load_ps(bp), b1 = _mm512_load_ps((bp) + 16), t;                         \
        ROW_FMA(0, A) ROW_FMA(1, A) ROW_FMA(2, A) ROW_FMA(3, A)                                    \
        ROW_FMA(4, A) ROW_FMA(5, A) ROW_FMA(6, A) ROW_FMA(7, A)                                    \
    } while (0)
#define ROW_FMA(r, A)                          \
    t = _mm512_set1_ps(A(r));                  \
    c##r##0 = _mm512_fmadd_ps(t, b0, c##r##0); \
    c##r##1 = _mm512_fmadd_ps(t, b1, c##r##1);
/* The rows of A read in place (GEMM): 8 row pointers, rows past mr repeat row mr-1. */
#define TILE_ROWS                                                                                  \
    const float *a0 = a, *a1 = a + (1 < mr ? 1 : mr - 1) * lda, *a2 = a + (2 < mr ? 2 : mr - 1) * lda; \
    const float *a3 = a + (3 < mr ? 3 : mr - 1) * lda, *a4 = a + (4 < mr ? 4 : mr - 1) * lda;      \
    const float *a5 = a + (5 < mr ? 5 : mr - 1) * lda, *a6 = a + (6 < mr ? 6 : mr - 1) * lda;      \
    const float *a7 = a + (7 < mr ? 7 : mr - 1) * lda
#define A_INPLACE(r) a##r[p]
#define PX(r) p##r[o]
/* Rows past mr are finished too (never stored; the bias of row mr-1). */
#define ROW_FINISH(r)                                                        \
    {                                                                        \
        __m512 bv = _mm512_set1_ps(bias ? bias[r < mr ? r : mr - 1] : 0.0f); \
        c##r##0 = finish(c##r##0, bv, cb0, e);                               \
        c##r##1 = finish(c##r##1, bv, cb1, e);                               \
    }
#define TILE_FINISH ROW_FINISH(0) ROW_FINISH(1) ROW_FINISH(2) ROW_FINISH(3) ROW_FINISH(4) ROW_FINISH(5) ROW_FINISH(6) ROW_FINISH(7)
#define ROW_STORE(r)                                                                   \
    if (r < mr) {                                                                      \
        _mm512_mask_storeu_ps(c + r * ldc, s0, c##r##0);                               \
        if (s1) _mm512_mask_storeu_ps(c + r * ldc + 16, s1, c##r##1);                  \
    }
/* The column bias of the tile's 32 columns (cbias: at the tile's first
 * column, or NULL), zero past the edge. */
#define TILE_COL_BIAS                                                                           \
    __m512 cb0 = cbias ? _mm512_maskz_loadu_ps(s0, cbias) : _mm512_setzero_ps();                \
    __m512 cb1 = cbias && s1 ? _mm512_maskz_loadu_ps(s1, cbias + 16) : _mm512_setzero_ps()
#define TILE_STORE ROW_STORE(0) ROW_STORE(1) ROW_STORE(2) ROW_STORE(3) ROW_STORE(4) ROW_STORE(5) ROW_STORE(6) ROW_STORE(7)

/* The FP16 storage rounding of a finished accumulator (fgemm_epi_t.round),
 * last of the epilogue: VCVTPS2PH to nearest even and back, as
 * half_avx512.c's pass (the scalar f32_round_f16's bits). */
#define F16_RN (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define ROUND_F16(v) v = _mm512_cvtph_ps(_mm512_cvtps_ph(v, F16_RN));
#define TILE_ROUND_F16                                                                             \
    ROUND_F16(c00) ROUND_F16(c01) ROUND_F16(c10) ROUND_F16(c11) ROUND_F16(c20) ROUND_F16(c21)       \
    ROUND_F16(c30) ROUND_F16(c31) ROUND_F16(c40) ROUND_F16(c41) ROUND_F16(c50) ROUND_F16(c51)       \
    ROUND_F16(c60) ROUND_F16(c61) ROUND_F16(c70) ROUND_F16(c71)

static inline __mmask16 lanes_lo(int nr) { return nr >= 16 ? 0xFFFF : (__mmask16)((1u << nr) - 1); }
static inline __mmask16 lanes_hi(int nr) { return nr >= 32 ? 0xFFFF : nr > 16 ? (__mmask16)((1u << (nr - 16)) - 1) : 0; }

/* GEMM tile: kc steps from the panel, A's rows in place from column p0. */
KT static void kernel_8x32(int64_t kc, const float *a, int64_t lda, int mr, const float *bp, int nr, float *c,
                           int64_t ldc, int first, int last, const float *bias, const float *cbias,
                           const fgemm_epi_t *e)
{
    TILE_ROWS;
    TILE_ACC;
    __mmask16 s0 = lanes_lo(nr), s1 = lanes_hi(nr);
    for (int64_t p = 0; p < kc; p++, bp += 32) TILE_STEP(bp, A_INPLACE);
    if (!first) { TILE_LOAD }
    TILE_COL_BIAS;
    if (last) {
        TILE_FINISH
        TILE_ACT(2 * mr)
        if (e->round) { TILE_ROUND_F16 }
    }
    TILE_STORE
}

/* B's rows [p0, p0 + kc), columns [col, col + nr) into the panel, zero past nr. */
KT static void pack_b(const float *b, int64_t ldb, int64_t kc, int nr, float *dst)
{
    __mmask16 s0 = lanes_lo(nr), s1 = lanes_hi(nr);
    for (int64_t p = 0; p < kc; p++, b += ldb, dst += 32) {
        /* the same row two strips on (B's rows are planes apart: no
         * hardware prefetcher follows that many streams). A prefetch
         * past the row or the array reads nothing and never faults. */
        _mm_prefetch((const char *)(b + 64), _MM_HINT_T1);
        _mm_prefetch((const char *)(b + 80), _MM_HINT_T1);
        _mm512_store_ps(dst, _mm512_maskz_loadu_ps(s0, b));
        _mm512_store_ps(dst + 16, _mm512_maskz_loadu_ps(s1, b + 16));
    }
}

/* The 8 x 16 half of the tile, for a strip of at most 16 columns (the
 * last of 400 output pixels, say): the same chains on the panel's first
 * 16 lanes, half the FMAs of the full tile with its upper lanes masked. */
/* One step's FMAs of the 8 rows, A read in place. */
#define EACH_ROW(F) F(0, A_INPLACE) F(1, A_INPLACE) F(2, A_INPLACE) F(3, A_INPLACE) \
                    F(4, A_INPLACE) F(5, A_INPLACE) F(6, A_INPLACE) F(7, A_INPLACE)
#define ROW_FMA16(r, A)       \
    t = _mm512_set1_ps(A(r)); \
    c##r##0 = _mm512_fmadd_ps(t, b0, c##r##0);

/* The end of a tile of at most 16 columns, its 8 rows' accumulators in v:
 * C's blocks' sum + this block's, and when last the bias, the activation
 * and the rounding; rows [0, mr) stored under the column mask s0. The
 * same steps as the 8 x 32 tile's on each lane. */
KT static inline __attribute__((always_inline)) void end_x16(__m512 *v, int mr, __mmask16 s0, float *c, int64_t ldc,
                                                             int first, int last, const float *bias,
                                                             const float *cbias, const fgemm_epi_t *e)
{
    if (!first)
        for (int r = 0; r < 8; r++)
            if (r < mr) v[r] = _mm512_add_ps(_mm512_maskz_loadu_ps(s0, c + r * ldc), v[r]);
    if (last) {
        __m512 cb0 = cbias ? _mm512_maskz_loadu_ps(s0, cbias) : _mm512_setzero_ps();
        for (int r = 0; r < 8; r++)
            v[r] = finish(v[r], _mm512_set1_ps(bias ? bias[r < mr ? r : mr - 1] : 0.0f), cb0, e);
        if (act_deferred(e)) act_block(v, mr, e);
        if (e->round)
            for (int r = 0; r < 8; r++) ROUND_F16(v[r])
    }
    for (int r = 0; r < 8; r++)
        if (r < mr) _mm512_mask_storeu_ps(c + r * ldc, s0, v[r]);
}

KT static void kernel_8x16(int64_t kc, const float *a, int64_t lda, int mr, const float *bp, int nr, float *c,
                           int64_t ldc, int first, int last, const float *bias, const float *cbias,
                           const fgemm_epi_t *e)
{
    TILE_ROWS;
    __m512 c00 = _mm512_setzero_ps(), c10 = c00, c20 = c00, c30 = c00, c40 = c00, c50 = c00, c60 = c00, c70 = c00;
    for (int64_t p = 0; p < kc; p++, bp += 32) {
        __m512 b0 = _mm512_load_ps(bp), t;
        EACH_ROW(ROW_FMA16)
    }
    __m512 v[8] = {c00, c10, c20, c30, c40, c50, c60, c70};
    end_x16(v, mr, lanes_lo(nr), c, ldc, first, last, bias, cbias, e);
}

/* The 8 x 8 quarter, for a strip of at most 8 columns (a MatMul's 4 or 6
 * outputs, the last 4 of 100 output pixels): the chains in 256-bit
 * registers, which Zen 4 runs at twice the rate of its split 512-bit
 * FMAs (2100 x 128 x 6: 0.12 ms in 512 bits with 10 of 16 lanes idle),
 * then widened (upper lanes zero, never stored) for end_x16. Each lane's
 * FMA chain is the 16-lane tile's. */
#define ROW_FMA8(r, A)           \
    t8 = _mm256_set1_ps(A(r));   \
    y##r = _mm256_fmadd_ps(t8, b8, y##r);

/* FMA for the 256-bit forms (AVX-512F implies no FMA to the compiler;
 * every AVX-512 CPU has it, and util/isa's levels require it below) */
__attribute__((target("avx512f,fma"))) static void kernel_8x8(int64_t kc, const float *a, int64_t lda, int mr,
                                                               const float *bp, int nr, float *c, int64_t ldc,
                                                               int first, int last, const float *bias,
                                                               const float *cbias, const fgemm_epi_t *e)
{
    TILE_ROWS;
    __m256 y0 = _mm256_setzero_ps(), y1 = y0, y2 = y0, y3 = y0, y4 = y0, y5 = y0, y6 = y0, y7 = y0;
    for (int64_t p = 0; p < kc; p++, bp += 32) {
        __m256 b8 = _mm256_load_ps(bp), t8;
        EACH_ROW(ROW_FMA8)
    }
    __m512 v[8] = {_mm512_zextps256_ps512(y0), _mm512_zextps256_ps512(y1), _mm512_zextps256_ps512(y2),
                   _mm512_zextps256_ps512(y3), _mm512_zextps256_ps512(y4), _mm512_zextps256_ps512(y5),
                   _mm512_zextps256_ps512(y6), _mm512_zextps256_ps512(y7)};
    end_x16(v, mr, lanes_lo(nr), c, ldc, first, last, bias, cbias, e);
}

KT static void tile_avx512(int64_t kc, const float *a, int64_t lda, int mr, const float *bp, int nr, float *c,
                        int64_t ldc, int first, int last, const float *bias, const float *cbias, const fgemm_epi_t *e)
{
    if (nr <= 8) kernel_8x8(kc, a, lda, mr, bp, nr, c, ldc, first, last, bias, cbias, e);
    else if (nr <= 16) kernel_8x16(kc, a, lda, mr, bp, nr, c, ldc, first, last, bias, cbias, e);
    else kernel_8x32(kc, a, lda, mr, bp, nr, c, ldc, first, last, bias, cbias, e);
}

/* The column matrix's rows [p0, p0 + kc) for one strip (row p = ch * taps
 * + tap is input plane ch shifted by the tap's offset) into the panel,
 * under the strip's mask of each tap: zero where the tap reads the
 * padding. A strip of a stride-1 convolution whose output rows are as wide
 * as the input's reads consecutive elements (contiguous: masked loads at
 * x + base[0]); any other strip gathers through the lane offsets. Lanes
 * under a cleared mask bit are never read: their addresses may lie outside
 * the input, so they are formed as integers. */
KT static void pack_taps(const float *x, int64_t plane, int taps, const int64_t *tapoff, const uint32_t *mk,
                         const int32_t *base, int contiguous, int64_t p0, int64_t kc, float *dst)
{
    int64_t ch = p0 / taps;
    int t = (int)(p0 % taps);
    uintptr_t xc = (uintptr_t)(x + ch * plane);
    __m512i b0 = _mm512_loadu_si512(base), b1 = _mm512_loadu_si512(base + 16);
    for (int64_t p = 0; p < kc; p++, dst += 32) {
        if (contiguous) {
            const float *src = (const float *)(xc + (uintptr_t)(base[0] + tapoff[t]) * sizeof(float));
            _mm512_store_ps(dst, _mm512_maskz_loadu_ps((__mmask16)mk[t], src));
            _mm512_store_ps(dst + 16, _mm512_maskz_loadu_ps((__mmask16)(mk[t] >> 16), src + 16));
        } else {
            __m512i off = _mm512_set1_epi32((int32_t)tapoff[t]);
            const float *pl = (const float *)xc;
            _mm512_store_ps(dst, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), (__mmask16)mk[t],
                                                          _mm512_add_epi32(b0, off), pl, 4));
            _mm512_store_ps(dst + 16, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), (__mmask16)(mk[t] >> 16),
                                                               _mm512_add_epi32(b1, off), pl, 4));
        }
        if (++t == taps) {
            t = 0;
            xc += (uintptr_t)plane * sizeof(float);
        }
    }
}

/* dst[i] = src[2i]: two loads, one permute per 16 values. Nothing past
 * src[2n - 2] is read (the upper load is masked to the 15 floats a vector
 * needs), so the last values go under masks too instead of one by one. */
KT static void gather_even_avx512(float *dst, const float *src, int64_t n)
{
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 lo = _mm512_loadu_ps(src + 2 * i), hi = _mm512_maskz_loadu_ps(0x7FFF, src + 2 * i + 16);
        _mm512_storeu_ps(dst + i, _mm512_permutex2var_ps(lo, even, hi));
    }
    if (i < n) {
        int span = (int)(2 * (n - i) - 1);   /* floats from src[2i] to src[2n - 2] */
        __mmask16 lo_m = (__mmask16)(span >= 16 ? 0xFFFF : (1u << span) - 1);
        __mmask16 hi_m = (__mmask16)(span > 16 ? (1u << (span - 16)) - 1 : 0);
        __m512 lo = _mm512_maskz_loadu_ps(lo_m, src + 2 * i), hi = _mm512_maskz_loadu_ps(hi_m, src + 2 * i + 16);
        _mm512_mask_storeu_ps(dst + i, (__mmask16)((1u << (n - i)) - 1), _mm512_permutex2var_ps(lo, even, hi));
    }
}

/* Eight rows of eight floats transposed in registers: r0..r7 hold pixels
 * 0..7's eight channels; channel j's eight pixels are stored at y + j *
 * ldy, those pix selects. */
KT static inline void store_8x8(__m256 r0, __m256 r1, __m256 r2, __m256 r3, __m256 r4, __m256 r5, __m256 r6,
                                __m256 r7, float *y, int64_t ldy, int nch, __mmask16 pix)
{
    __m256 col[8] = {r0, r1, r2, r3, r4, r5, r6, r7};
    transpose8x8_ps(col);
    /* plain stores for whole rows of 8 pixels; an AVX-512 mask for fewer
     * (AVX's VMASKMOVPS store is slow on AMD cores) */
    if (pix == 0xFF)
        for (int j = 0; j < nch; j++) _mm256_storeu_ps(y + j * ldy, col[j]);
    else
        for (int j = 0; j < nch; j++) _mm512_mask_storeu_ps(y + j * ldy, pix, _mm512_castps256_ps512(col[j]));
}

#define LO8(v) _mm512_castps512_ps256(v)
#define HI8(v) _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))

/* The pixel tile's block boundary: the finished block's 16 sums go to
 * sum[] (the first block) or are added to it, and the accumulators start
 * the next block from zero; PX_ADD_SUM adds the last block to sum[]. */
#define PX_ACCS(X) X(0, c00) X(1, c01) X(2, c10) X(3, c11) X(4, c20) X(5, c21) X(6, c30) X(7, c31) \
                   X(8, c40) X(9, c41) X(10, c50) X(11, c51) X(12, c60) X(13, c61) X(14, c70) X(15, c71)
#define PX_SUM_SET(i, v) sum[i] = v; v = _mm512_setzero_ps();
#define PX_SUM_ADD(i, v) sum[i] = _mm512_add_ps(sum[i], v); v = _mm512_setzero_ps();
#define PX_SUM_BACK(i, v) v = _mm512_add_ps(sum[i], v);
#define PX_BLOCK_END(first)          \
    if (first) { PX_ACCS(PX_SUM_SET) } \
    else { PX_ACCS(PX_SUM_ADD) }
#define PX_ADD_SUM PX_ACCS(PX_SUM_BACK)

/* fconv_px's tile (fgemm_impl.h): 8 pixels' values broadcast against 32
 * output channels' weights, 16 accumulators, each element summed in the
 * blocked order of every other tile; then bias and activation (finish:
 * the same formulas) and a transposed store, channel rows of pixels. */
KT static void tile_px_avx512(int64_t k, const float *const *px, const int32_t *koff, const float *wp, float *y,
                              int64_t ldy, int npix, int noc, const float *bias, const fgemm_epi_t *e)
{
    const float *p0 = px[0], *p1 = px[1], *p2 = px[2], *p3 = px[3], *p4 = px[4], *p5 = px[5], *p6 = px[6];
    const float *p7 = px[7];
    TILE_ACC;
    __m512 sum[16];   /* the blocks' sum before the current block (fgemm_impl.h's order) */
    for (int64_t pb = 0; pb < k; pb += FG_KB) {
        int64_t pe = k - pb < FG_KB ? k : pb + FG_KB;
        if (pb > 0) { PX_BLOCK_END(pb == FG_KB) }
        for (int64_t p = pb; p < pe; p++, wp += 32) {
            int32_t o = koff[p];
            __m512 b0 = _mm512_load_ps(wp), b1 = _mm512_load_ps(wp + 16), t;
            ROW_FMA(0, PX) ROW_FMA(1, PX) ROW_FMA(2, PX) ROW_FMA(3, PX)
            ROW_FMA(4, PX) ROW_FMA(5, PX) ROW_FMA(6, PX) ROW_FMA(7, PX)
        }
    }
    if (k > FG_KB) { PX_ADD_SUM }
    __mmask16 s0 = lanes_lo(noc), s1 = lanes_hi(noc);
    __m512 bv0 = bias ? _mm512_maskz_loadu_ps(s0, bias) : _mm512_setzero_ps();
    __m512 bv1 = bias && s1 ? _mm512_maskz_loadu_ps(s1, bias + 16) : _mm512_setzero_ps();
    __m512 zero = _mm512_setzero_ps();
    c00 = finish(c00, bv0, zero, e); c01 = finish(c01, bv1, zero, e);
    c10 = finish(c10, bv0, zero, e); c11 = finish(c11, bv1, zero, e);
    c20 = finish(c20, bv0, zero, e); c21 = finish(c21, bv1, zero, e);
    c30 = finish(c30, bv0, zero, e); c31 = finish(c31, bv1, zero, e);
    c40 = finish(c40, bv0, zero, e); c41 = finish(c41, bv1, zero, e);
    c50 = finish(c50, bv0, zero, e); c51 = finish(c51, bv1, zero, e);
    c60 = finish(c60, bv0, zero, e); c61 = finish(c61, bv1, zero, e);
    c70 = finish(c70, bv0, zero, e); c71 = finish(c71, bv1, zero, e);
    TILE_ACT(16)
    __mmask16 pix = (__mmask16)((1u << npix) - 1);
    int n0 = noc < 8 ? noc : 8, n1 = noc - 8 < 8 ? noc - 8 : 8, n2 = noc - 16 < 8 ? noc - 16 : 8;
    int n3 = noc - 24 < 8 ? noc - 24 : 8;
    store_8x8(LO8(c00), LO8(c10), LO8(c20), LO8(c30), LO8(c40), LO8(c50), LO8(c60), LO8(c70), y, ldy, n0, pix);
    if (n1 > 0)
        store_8x8(HI8(c00), HI8(c10), HI8(c20), HI8(c30), HI8(c40), HI8(c50), HI8(c60), HI8(c70), y + 8 * ldy, ldy,
                  n1, pix);
    if (n2 > 0)
        store_8x8(LO8(c01), LO8(c11), LO8(c21), LO8(c31), LO8(c41), LO8(c51), LO8(c61), LO8(c71), y + 16 * ldy, ldy,
                  n2, pix);
    if (n3 > 0)
        store_8x8(HI8(c01), HI8(c11), HI8(c21), HI8(c31), HI8(c41), HI8(c51), HI8(c61), HI8(c71), y + 24 * ldy, ldy,
                  n3, pix);
}

/* The 16 x 16 pixel tile's accumulators: pixel i's 16 channels in a##i. */
#define P16(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)
#define P16_ZERO(i) __m512 a##i = _mm512_setzero_ps();
#define P16_FMA(i) a##i = _mm512_fmadd_ps(_mm512_set1_ps(px[i][o]), wv, a##i);
#define P16_SET(i) sum[i] = a##i, a##i = _mm512_setzero_ps();
#define P16_ADD(i) sum[i] = _mm512_add_ps(sum[i], a##i), a##i = _mm512_setzero_ps();
#define P16_BACK(i) a##i = _mm512_add_ps(sum[i], a##i);
#define P16_FINISH(i) a##i = finish(a##i, bv, zero, e);
#define P16_TO(i) v[i] = a##i;
#define P16_FROM(i) a##i = v[i];
/* The activation the finish left (act_deferred) on the 16 accumulators. */
#define P16_ACT_DEFERRED              \
    if (act_deferred(e)) {            \
        __m512 v[16];                 \
        P16(P16_TO)                   \
        act_block(v, 16, e);          \
        P16(P16_FROM)                 \
    }

/* fconv_px's tile for at most 16 output channels (fgemm_impl.h): 16
 * pixels' values broadcast against one vector of 16 channels' weights (16
 * floats a step), 16 accumulators, where the 8 x 32 tile would spend half
 * its FMAs on the zero weights past m. Each element is summed in the
 * blocked order of every other tile, then finish, act_block, and a
 * transposed store as tile_px_avx512's, the same bits. Each input is read
 * through its pixel's pointer (px[i][o]): the spilled pointers cost ~1%
 * against a strip's one pointer plus constant displacements (measured), so
 * strips need not be regular (fconv_px's strips may span rows). */
KT static void tile_px16_avx512(int64_t k, const float *const *px, const int32_t *koff, const float *wp, float *y,
                                int64_t ldy, int npix, int noc, const float *bias, const fgemm_epi_t *e)
{
    P16(P16_ZERO)
    /* the blocks' sum before the current block (fgemm_impl.h's order); set
     * at the first block's end before any use (zeroed for gcc's sake) */
    __m512 sum[16] = {0};
    for (int64_t pb = 0; pb < k; pb += FG_KB) {
        int64_t pe = k - pb < FG_KB ? k : pb + FG_KB;
        if (pb == FG_KB) { P16(P16_SET) }
        else if (pb > 0) { P16(P16_ADD) }
        for (int64_t p = pb; p < pe; p++, wp += 16) {
            int32_t o = koff[p];
            __m512 wv = _mm512_load_ps(wp);
            P16(P16_FMA)
        }
    }
    if (k > FG_KB) { P16(P16_BACK) }
    __mmask16 chans = lanes_lo(noc);
    __m512 bv = bias ? _mm512_maskz_loadu_ps(chans, bias) : _mm512_setzero_ps(), zero = _mm512_setzero_ps();
    P16(P16_FINISH)
    P16_ACT_DEFERRED
    /* pixels 0..7 then 8..15, channels 0..7 then 8..15: four 8 x 8 transposes */
    int lo = npix < 8 ? npix : 8, n0 = noc < 8 ? noc : 8;
    __mmask16 pix_lo = (__mmask16)((1u << lo) - 1), pix_hi = (__mmask16)((1u << (npix - lo)) - 1);
    store_8x8(LO8(a0), LO8(a1), LO8(a2), LO8(a3), LO8(a4), LO8(a5), LO8(a6), LO8(a7), y, ldy, n0, pix_lo);
    if (noc > 8)
        store_8x8(HI8(a0), HI8(a1), HI8(a2), HI8(a3), HI8(a4), HI8(a5), HI8(a6), HI8(a7), y + 8 * ldy, ldy, noc - 8,
                  pix_lo);
    if (npix <= 8) return;
    store_8x8(LO8(a8), LO8(a9), LO8(a10), LO8(a11), LO8(a12), LO8(a13), LO8(a14), LO8(a15), y + 8, ldy, n0, pix_hi);
    if (noc > 8)
        store_8x8(HI8(a8), HI8(a9), HI8(a10), HI8(a11), HI8(a12), HI8(a13), HI8(a14), HI8(a15), y + 8 * ldy + 8, ldy,
                  noc - 8, pix_hi);
}

/* Lanes [lo, hi) of a vector of 16 (clamped to it). */
static inline __mmask16 lanes_between(int64_t lo, int64_t hi)
{
    lo = lo < 0 ? 0 : lo;
    hi = hi > 16 ? 16 : hi;
    return hi <= lo ? 0 : (__mmask16)(((1u << hi) - 1) & ~((1u << lo) - 1));
}

/* The 16 floats of input row xr (an address formed as an integer: it may
 * lie before the row) at columns [c, c + 16) under mask m: the lanes
 * inside [0, w), lanes_between(-c, w - c). */
KT static inline __m512 row16(uintptr_t xr, int64_t c, __mmask16 m)
{
    return _mm512_maskz_loadu_ps(m, (const void *)(xr + (uintptr_t)c * sizeof(float)));
}

#define ROWPX_FMA(i) a##i = _mm512_fmadd_ps(t, _mm512_set1_ps(wv[i]), a##i);
#define ROWPX_STEP(tap, wq)         \
    do {                            \
        __m512 t = (tap);           \
        const float *wv = (wq);     \
        P16(ROWPX_FMA)              \
    } while (0)
#define ROWPX_FINISH(i) a##i = finish(a##i, _mm512_set1_ps(bias && i < noc ? bias[i] : 0.0f), zero, e);
#define ROWPX_STORE(i) \
    if (i < noc) _mm512_mask_storeu_ps(y + i * ldy + o0, pix, a##i);

/* fconv_px's row kernel (fgemm_impl.h): 16 output pixels of a row in the
 * lanes against 16 channels' weights broadcast -- the other way round
 * from the tiles, whose store is a transpose and whose steps load 8 or 16
 * pixels' inputs through as many pointers (at k = 27, the stem, a third
 * of tile_px16's time): a step here loads one vector of the input, the
 * weights broadcast from one pointer, and each channel's pixels are
 * stored as they lie. The input is read in place under masks (no copy of
 * it): a kernel row's three taps are three loads at stride 1, and at
 * stride 2 two pairs of loads split into even and odd columns. Each
 * element is summed over k in the order of the weights from zero,
 * padding zeros included, then finished as the tiles do: the same bits. */
KT static void row_px_avx512(const float *x, int64_t cin, int64_t h, int64_t w, int sd, int64_t r, int64_t ow,
                             const float *wp, int wstep, float *y, int64_t ldy, int noc, const float *bias,
                             const fgemm_epi_t *e)
{
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    __m512 zero = _mm512_setzero_ps();
    for (int64_t o0 = 0; o0 < ow; o0 += 16) {
        __mmask16 pix = lanes_lo((int)(ow - o0 < 16 ? ow - o0 : 16));
        int64_t c0 = sd * o0 - 1;   /* pixel o0's first tap's column */
        /* lanes inside the row of the loads at c0 + d, d = 0, 1, 2 (stride
         * 1), d = 0, 16, 2, 18 (stride 2) */
        int64_t d1 = sd == 1 ? 1 : 16, d3 = 18;
        __mmask16 m0 = lanes_between(-c0, w - c0), m1 = lanes_between(-c0 - d1, w - c0 - d1);
        __mmask16 m2 = lanes_between(-c0 - 2, w - c0 - 2), m3 = lanes_between(-c0 - d3, w - c0 - d3);
        P16(P16_ZERO)
        if (sd == 2)   /* the next output row's two new input rows, where this strip reads (the stem's input
                        * arrives cold: in the model 0.535 -> 0.296 ms) */
            for (int64_t ch = 0; ch < cin; ch++)
                for (int64_t row = 2 * r + 2; row <= 2 * r + 3 && row < h; row++) {
                    uintptr_t at = (uintptr_t)(x + (ch * h + row) * w) + (uintptr_t)(c0 + 1) * sizeof(float);
                    _mm_prefetch((const char *)at, _MM_HINT_T0);
                    _mm_prefetch((const char *)(at + 64), _MM_HINT_T0);
                }
        const float *wq = wp;
        for (int64_t ch = 0; ch < cin; ch++)
            for (int64_t row = sd * r - 1; row <= sd * r + 1; row++, wq += 3 * wstep) {
                if (row < 0 || row >= h) {   /* a row of the padding: its zeros, in order */
                    ROWPX_STEP(zero, wq);
                    ROWPX_STEP(zero, wq + wstep);
                    ROWPX_STEP(zero, wq + 2 * wstep);
                    continue;
                }
                uintptr_t xr = (uintptr_t)(x + (ch * h + row) * w);
                if (sd == 1) {   /* tap j at lane i: column c0 + i + j */
                    ROWPX_STEP(row16(xr, c0, m0), wq);
                    ROWPX_STEP(row16(xr, c0 + 1, m1), wq + wstep);
                    ROWPX_STEP(row16(xr, c0 + 2, m2), wq + 2 * wstep);
                    continue;
                }
                /* tap j at lane i: column c0 + 2i + j, the even and odd
                 * lanes of [c0, c0 + 32), the even ones of [c0 + 2, c0 + 34) */
                __m512 lo = row16(xr, c0, m0), hi = row16(xr, c0 + 16, m1);
                ROWPX_STEP(_mm512_permutex2var_ps(lo, even, hi), wq);
                ROWPX_STEP(_mm512_permutex2var_ps(lo, odd, hi), wq + wstep);
                ROWPX_STEP(_mm512_permutex2var_ps(row16(xr, c0 + 2, m2), even, row16(xr, c0 + 18, m3)), wq + 2 * wstep);
            }
        P16(ROWPX_FINISH)
        P16_ACT_DEFERRED
        P16(ROWPX_STORE)
    }
}

/* The residual on a finished tile (fgemm_impl.h): a row 16 columns at a
 * time, the sum (r + c: one IEEE addition, the Add's bits), then finish's
 * Relu and finish_act's other activations (the standalone kernels' bits,
 * as in the tiles). */
KT static void residual_avx512(float *c, int64_t ldc, int mr, int nr, const float *res, const fgemm_epi_t *e)
{
    const fgemm_epi_t act = {.act = e->act, .a = e->a, .b = e->b};
    __m512 zero = _mm512_setzero_ps();
    for (int r = 0; r < mr; r++, c += ldc, res += ldc)
        for (int j = 0; j < nr; j += 16) {
            __mmask16 m = lanes_lo(nr - j);
            __m512 x = _mm512_add_ps(_mm512_maskz_loadu_ps(m, c + j), _mm512_maskz_loadu_ps(m, res + j));
            x = finish(x, zero, zero, &act);
            if (act_deferred(&act)) x = finish_act(x, &act);
            _mm512_mask_storeu_ps(c + j, m, x);
        }
}

const fgemm_arch_t fgemm_arch_avx512 = {FG_MR, tile_avx512, pack_b, pack_taps, gather_even_avx512,
                                        tile_px_avx512, 1, fgemm_pack_px_avx, 0, residual_avx512, tile_px16_avx512, 1,
                                        row_px_avx512};

#endif
