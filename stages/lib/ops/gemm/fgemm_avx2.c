/* fgemm_avx2.c — fgemm's kernels for AVX2+FMA (see fgemm_impl.h). AVX2 has
 * 16 ymm registers, too few for an 8 x 32 tile at once: the GEMM tile is 6
 * rows (the driver's blocks at this set) run as two passes of 16 columns
 * (12 accumulators, two loads of B and six broadcasts of A per step of k),
 * the pixel tile four passes of 4 pixels x 16 channels. Each element of C
 * is summed in the same blocked order (fgemm_impl.h) as in the AVX-512 and
 * portable kernels, then the same epilogue, so the bits are theirs. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include "ops/gemm/fgemm_impl.h"
#include "ops/gemm/transpose8x8.h"
#include "ops/elementwise/vmath.h"

/* F16C too: util/isa's AVX2 level requires it (the FP16 storage rounding) */
#define AT __attribute__((target("avx2,fma,f16c")))

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

/* The FP16 storage rounding (fgemm_epi_t.round), last of the epilogue:
 * F16C's VCVTPS2PH to nearest even and back, as half_avx2.c's pass. */
AT static inline __m256 round_f16(__m256 x)
{
    return _mm256_cvtph_ps(_mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

/* A pass's pieces: rows [0, rn) and columns [0, cn) (cn <= 16) of the
 * tile, whose row r's A value at step p is A(r); bp at the pass's first
 * column, 32 floats a step. Rows past rn compute a copy of a live row and
 * are never stored. */
#define PASS_ACC __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00
/* C's blocks' sum + this block's (fgemm_impl.h's order). */
#define PROW_LOAD(r)                                                          \
    if (r < rn) {                                                             \
        c##r##0 = _mm256_add_ps(load_part(c + r * ldc, cn), c##r##0);         \
        c##r##1 = _mm256_add_ps(load_part(c + r * ldc + 8, cn - 8), c##r##1); \
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
            if (e->round) {                                             \
                c##r##0 = round_f16(c##r##0);                           \
                c##r##1 = round_f16(c##r##1);                           \
            }                                                           \
        }                                                               \
        store_part(c + r * ldc, c##r##0, cn);                           \
        store_part(c + r * ldc + 8, c##r##1, cn - 8);                   \
    }
#define A_INPLACE(r) a##r[p]
#define PIX(r) p##r[o]

/* One pass of the GEMM tile, A read in place: up to 6 rows lda apart
 * (rows past rn repeat the last live one), 12 accumulators. Two FMA pipes
 * of 4 cycles' latency need 8 chains in flight; the 4-row passes had just
 * 8 and no slack (3x3 with 256 and 512 channels alone 90-97 GFLOP/s, with
 * 6 rows 102-105; 1x1 with k = 128..512 +7..10%). */
AT static void pass_inplace(int64_t kc, const float *a, int64_t lda, int rn, const float *bp, int cn, float *c,
                            int64_t ldc, int first, int last, const float *bias, const float *cbias,
                            const fgemm_epi_t *e)
{
    const float *a0 = a, *a1 = a + (1 < rn ? 1 : rn - 1) * lda, *a2 = a + (2 < rn ? 2 : rn - 1) * lda;
    const float *a3 = a + (3 < rn ? 3 : rn - 1) * lda, *a4 = a + (4 < rn ? 4 : rn - 1) * lda;
    const float *a5 = a + (5 < rn ? 5 : rn - 1) * lda;
    PASS_ACC;
    __m256 c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    for (int64_t p = 0; p < kc; p++, bp += FG_NR) {
        __m256 b0 = _mm256_load_ps(bp), b1 = _mm256_load_ps(bp + 8), t;
        PROW_FMA(0, A_INPLACE) PROW_FMA(1, A_INPLACE) PROW_FMA(2, A_INPLACE)
        PROW_FMA(3, A_INPLACE) PROW_FMA(4, A_INPLACE) PROW_FMA(5, A_INPLACE)
    }
    if (!first) { PROW_LOAD(0) PROW_LOAD(1) PROW_LOAD(2) PROW_LOAD(3) PROW_LOAD(4) PROW_LOAD(5) }
    __m256 cb0 = cbias ? load_part(cbias, cn) : _mm256_setzero_ps();
    __m256 cb1 = cbias ? load_part(cbias + 8, cn - 8) : _mm256_setzero_ps();
    PROW_STORE(0) PROW_STORE(1) PROW_STORE(2) PROW_STORE(3) PROW_STORE(4) PROW_STORE(5)
}

/* The tile: AVX2_MR rows (the driver's blocks) by up to 32 columns, as
 * passes of 6 rows x 16 columns. */
#define AVX2_MR 6
AT static void tile_avx2(int64_t kc, const float *a, int64_t lda, int mr, const float *bp, int nr, float *c,
                         int64_t ldc, int first, int last, const float *bias, const float *cbias, const fgemm_epi_t *e)
{
    for (int c0 = 0; c0 < nr; c0 += 16) {
        int cn = nr - c0 < 16 ? nr - c0 : 16;
        pass_inplace(kc, a, lda, mr, bp + c0, cn, c + c0, ldc, first, last, bias, cbias ? cbias + c0 : NULL, e);
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

/* The channel rows of 4 pixels x 8 channels (a[r]: pixel r's 8
 * channels): channel j's values of the pixels go to y + j * ldy, the
 * first npix of them, for the first nch channels. */
AT static inline void store_4x8(__m256 a0, __m256 a1, __m256 a2, __m256 a3, float *y, int64_t ldy, int nch, int npix)
{
    __m256 t0 = _mm256_unpacklo_ps(a0, a1), t1 = _mm256_unpackhi_ps(a0, a1);
    __m256 t2 = _mm256_unpacklo_ps(a2, a3), t3 = _mm256_unpackhi_ps(a2, a3);
    /* u[i]: channel i in the low half, channel i + 4 in the high half */
    __m256 u[4] = {_mm256_shuffle_ps(t0, t2, 0x44), _mm256_shuffle_ps(t0, t2, 0xEE), _mm256_shuffle_ps(t1, t3, 0x44),
                   _mm256_shuffle_ps(t1, t3, 0xEE)};
    for (int j = 0; j < nch; j++) {
        __m128 v = j < 4 ? _mm256_castps256_ps128(u[j]) : _mm256_extractf128_ps(u[j - 4], 1);
        if (npix == 4) {
            _mm_storeu_ps(y + j * ldy, v);
            continue;
        }
        float t[4];
        _mm_storeu_ps(t, v);
        for (int i = 0; i < npix; i++) y[j * ldy + i] = t[i];
    }
}

/* Steps of k per round of the pixel tile's passes: their weights (16 KiB)
 * and the inputs they read stay in L1 while the four passes go over them;
 * each pass over all of k instead read both from L2 four times (3x3 with
 * 256 input channels: 11% slower than the packed path). */
#define PX_KC 128
_Static_assert(FG_KB % PX_KC == 0, "an accumulation block is whole rounds");

/* Where a round of the pixel tile stands in its accumulation block (fgemm_impl.h). */
enum {
    PX_CONT = 1,     /* the block began in an earlier round: its partial sums come from acc */
    PX_ADD = 2,      /* the block ends here and blocks came before: add it to their sum */
    PX_PARK = 4,     /* the block ends here, more follow: its sum (with the earlier ones') goes to sum */
    PX_LAST = 8,     /* the last round: finish and store */
};
#define PX_LD(buf) \
    _mm256_load_ps(buf), _mm256_load_ps(buf + 8), _mm256_load_ps(buf + 16), _mm256_load_ps(buf + 24), \
    _mm256_load_ps(buf + 32), _mm256_load_ps(buf + 40), _mm256_load_ps(buf + 48), _mm256_load_ps(buf + 56)
#define PX_ST(buf)                                                                                     \
    _mm256_store_ps(buf, c00), _mm256_store_ps(buf + 8, c01), _mm256_store_ps(buf + 16, c10);         \
    _mm256_store_ps(buf + 24, c11), _mm256_store_ps(buf + 32, c20), _mm256_store_ps(buf + 40, c21);   \
    _mm256_store_ps(buf + 48, c30), _mm256_store_ps(buf + 56, c31)

/* One pass of the pixel tile over kc steps: pixels px[0..3] (their window
 * anchors, koff at the round's first step) by the 16 channels at wp's lane
 * 0 (32 floats a step). acc holds a block's partial sums between its
 * rounds, sum the sum of the blocks before (4 x 16 floats each: pixel r's
 * 16 channels at 16 r); how a round uses them is its flags (PX_*). After
 * the last round the sums are finished instead -- bias (bias[c] of channel
 * c, or NULL) and finish's activation -- and channels c < noc, pixels i <
 * npix are stored at y[c * ldy + i]. */
AT static void px_pass(int64_t kc, const float *const *px, const int32_t *koff, const float *wp, float *acc,
                       float *sum, int flags, float *y, int64_t ldy, int npix, int noc, const float *bias,
                       const fgemm_epi_t *e)
{
    const float *p0 = px[0], *p1 = px[1], *p2 = px[2], *p3 = px[3];
    PASS_ACC;
    if (flags & PX_CONT) {
        __m256 v[8] = {PX_LD(acc)};
        c00 = v[0], c01 = v[1], c10 = v[2], c11 = v[3], c20 = v[4], c21 = v[5], c30 = v[6], c31 = v[7];
    }
    for (int64_t p = 0; p < kc; p++, wp += FG_NR) {
        int32_t o = koff[p];
        __m256 b0 = _mm256_load_ps(wp), b1 = _mm256_load_ps(wp + 8), t;
        PROW_FMA(0, PIX) PROW_FMA(1, PIX) PROW_FMA(2, PIX) PROW_FMA(3, PIX)
    }
    if (!(flags & (PX_PARK | PX_LAST))) {   /* the block goes on in the next round */
        PX_ST(acc);
        return;
    }
    if (flags & PX_ADD) {
        __m256 v[8] = {PX_LD(sum)};
        c00 = _mm256_add_ps(v[0], c00), c01 = _mm256_add_ps(v[1], c01), c10 = _mm256_add_ps(v[2], c10);
        c11 = _mm256_add_ps(v[3], c11), c20 = _mm256_add_ps(v[4], c20), c21 = _mm256_add_ps(v[5], c21);
        c30 = _mm256_add_ps(v[6], c30), c31 = _mm256_add_ps(v[7], c31);
    }
    if (!(flags & PX_LAST)) {
        PX_ST(sum);
        return;
    }
    __m256 bv0 = bias ? load_part(bias, noc) : _mm256_setzero_ps();
    __m256 bv1 = bias ? load_part(bias + 8, noc - 8) : _mm256_setzero_ps(), zero = _mm256_setzero_ps();
    c00 = finish(c00, bv0, zero, e), c10 = finish(c10, bv0, zero, e);
    c20 = finish(c20, bv0, zero, e), c30 = finish(c30, bv0, zero, e);
    c01 = finish(c01, bv1, zero, e), c11 = finish(c11, bv1, zero, e);
    c21 = finish(c21, bv1, zero, e), c31 = finish(c31, bv1, zero, e);
    store_4x8(c00, c10, c20, c30, y, ldy, noc < 8 ? noc : 8, npix);
    if (noc > 8) store_4x8(c01, c11, c21, c31, y + 8 * ldy, ldy, noc - 8 < 8 ? noc - 8 : 8, npix);
}

/* fconv_px's tile (fgemm_impl.h): 8 pixels by 32 channels as up to four
 * passes of 4 pixels by 16 channels, as the GEMM tile above, PX_KC steps
 * of k at a time: each element summed in the blocked order (a partial
 * sum parked in acc or sum is the same float), then finish, so the bits are those
 * of every other tile. Sigmoid and SiLU follow on the stored tile
 * (tile_sigmoid is 0 here), as for the GEMM tile. */
AT static void tile_px_avx2(int64_t k, const float *const *px, const int32_t *koff, const float *wp, float *y,
                            int64_t ldy, int npix, int noc, const float *bias, const fgemm_epi_t *e)
{
    _Alignas(32) float acc[4][64], sum[4][64];   /* per pass: 4 pixels x 16 channels */
    for (int64_t p0 = 0; p0 < k || p0 == 0; p0 += PX_KC) {
        int64_t kc = k - p0 < PX_KC ? k - p0 : PX_KC;
        int last = p0 + PX_KC >= k, ends = last || (p0 + PX_KC) % FG_KB == 0;
        int flags = (p0 % FG_KB ? PX_CONT : 0) | (ends && p0 >= FG_KB ? PX_ADD : 0) | (ends && !last ? PX_PARK : 0) |
                    (last ? PX_LAST : 0);
        for (int i0 = 0; i0 < npix; i0 += 4)
            for (int c0 = 0; c0 < noc; c0 += 16) {
                int q = i0 / 2 + c0 / 16;
                px_pass(kc, px + i0, koff + p0, wp + p0 * FG_NR + c0, acc[q], sum[q], flags, y + c0 * ldy + i0, ldy,
                        npix - i0 < 4 ? npix - i0 : 4, noc - c0 < 16 ? noc - c0 : 16, bias ? bias + c0 : NULL, e);
            }
    }
}

/* fconv_px's weights of output channels [oc0, oc0 + 32), all m of them
 * present (w: row oc0, k floats per row), as k steps of 32: dst[32 p + c]
 * = w[c k + p]. Eight by eight register transposes; the last k % 8 steps
 * one by one. Moves bits only. AVX registers: the AVX-512 and AVX2 sets
 * share it. */
AT void fgemm_pack_px_avx(const float *w, int64_t k, float *dst)
{
    int64_t p = 0;
    for (; p + 8 <= k; p += 8)
        for (int c = 0; c < 32; c += 8) {
            __m256 r[8];
            for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(w + (c + i) * k + p);
            transpose8x8_ps(r);
            for (int i = 0; i < 8; i++) _mm256_storeu_ps(dst + (p + i) * 32 + c, r[i]);
        }
    for (; p < k; p++)
        for (int c = 0; c < 32; c++) dst[p * 32 + c] = w[c * k + p];
}

/* The pixel tile up to 64 input channels in a 3x3 window: there it skips
 * the packing that is a tenth to a fifth of the packed path's work (640
 * RT-DETR at AVX2, one thread, against the packed path's 4-row passes: the
 * 640x640 stem -56%, 32 channels at 320x320 -14..-18%, 64 at 160x160
 * -6..-9%). Its passes keep 8 accumulators; against the 6-row passes the
 * packed path wins from 128 channels on (alone: 80x80 +1.4%, 40x40 +7.5%,
 * stride 2 +6%; 32 and 64 channels: -7..-15%). */
/* The residual on a finished tile (fgemm_impl.h): a row 8 columns at a
 * time, the sum (c + r: one IEEE addition, the Add's bits), then finish's
 * Relu / LeakyRelu / Clip; Sigmoid and SiLU over the row after it as the
 * standalone kernels compute them (vmath.h: the same bits at every set). */
AT static void residual_avx2(float *c, int64_t ldc, int mr, int nr, const float *res, const fgemm_epi_t *e)
{
    const fgemm_epi_t act = {.act = e->act, .a = e->a, .b = e->b};
    __m256 zero = _mm256_setzero_ps();
    for (int r = 0; r < mr; r++, c += ldc, res += ldc) {
        for (int j = 0; j < nr; j += 8) {
            __m256 x = _mm256_add_ps(load_part(c + j, nr - j), load_part(res + j, nr - j));
            store_part(c + j, finish(x, zero, zero, &act), nr - j);
        }
        if (act.act == ACT_SIGMOID) vm_sigmoid_f32(c, c, nr);
        else if (act.act == ACT_SILU) vm_silu_f32(c, c, nr);
    }
}

const fgemm_arch_t fgemm_arch_avx2 = {AVX2_MR, tile_avx2, pack_b, pack_taps, gather_even_avx2, tile_px_avx2, 0,
                                      fgemm_pack_px_avx, 64 * 9, residual_avx2, NULL, 1};

#endif
