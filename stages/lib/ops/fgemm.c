/* fgemm.c — parity's own float32 GEMM (see fgemm.h): an AVX-512 register
 * tile of 8 rows x 32 columns of C, A read in place (8 broadcasts per step
 * of k), B from a packed panel of 32 columns, the bias and the activation
 * applied before the tile is stored.
 *
 * Why not OpenBLAS for these shapes: convolutions give GEMMs with 8-256
 * rows and thousands of columns, where OpenBLAS spends as long packing as
 * multiplying, and Debian's build picks its AVX2 kernels on this CPU. Here
 * only a strip of B is packed, KC steps of k at a time, into a panel that
 * stays in L1 while every 8-row block of the task's rows goes past it: read
 * in place, B's rows lie a whole row of B apart (a new page every step or
 * two), and each block fetched them again from L2. The convolution packs
 * its panel straight from the input planes (the column matrix's strip,
 * padding zeroed), so it needs no column buffer either.
 *
 * Splitting k into blocks keeps every element one FMA chain in order: the
 * partial sums go to C as float32 and come back unchanged. */
#include <math.h>
#include <stdlib.h>
#include <stdatomic.h>
#include "ops/fgemm.h"
#include "graph/graph.h"
#include "util/pool.h"
#include "util/err.h"

/* A task is a tile of C this large: TILE_M rows of A stay in L2, a 32-wide
 * strip of B in L1 while the row panels go past it. */
#define TILE_M 64
#define TILE_N 256
/* Steps of k per packed panel: 256 x 32 floats = 32 KiB, in L1 (48 KiB here). */
#define KC 256

static atomic_int enabled = 1;

void fgemm_set_enabled(int on) { atomic_store(&enabled, on != 0); }

static int fgemm_epi_supported(int act)
{
    return act == ACT_NONE || act == ACT_RELU || act == ACT_CLIP || act == ACT_LEAKY;
}

int fgemm_epi_act(fgemm_epi_t *e, const node_t *n)
{
    if (!fgemm_epi_supported(n->act)) return 0;
    e->act = n->act;
    e->a = n->act_a;
    e->b = n->act_b;
    return 1;
}

/* The same computation in plain C, element by element (fmaf is the FMA the
 * kernel does): the path where the kernel cannot run, and the tests' oracle
 * for the kernel's bits. */
static float finish_one(float x, float bias, float col_bias, const fgemm_epi_t *e)
{
    if (e->bias) x += bias;
    if (e->col_bias) x += col_bias;
    switch (e->act) {
    case ACT_RELU: return x < 0 ? 0.0f : x;
    case ACT_LEAKY: return x < 0 ? e->a * x : x;
    case ACT_CLIP: return x < e->a ? (e->a > e->b ? e->b : e->a) : x > e->b ? e->b : x;
    default: return x;
    }
}

void fgemm_ref(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
               int64_t ldc, const fgemm_epi_t *epi)
{
    fgemm_epi_t none = {0};
    if (!epi) epi = &none;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            float acc = 0.0f;
            for (int64_t p = 0; p < k; p++) acc = fmaf(a[i * lda + p], b[p * ldb + j], acc);
            c[i * ldc + j] = finish_one(acc, epi->bias ? epi->bias[i] : 0.0f, epi->col_bias ? epi->col_bias[j] : 0.0f, epi);
        }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define KT __attribute__((target("avx512f")))

int fgemm_available(void)
{
    static atomic_int cpu = -1;
    int v = atomic_load(&cpu);
    if (v < 0) {
        __builtin_cpu_init();
        v = __builtin_cpu_supports("avx512f") ? 1 : 0;
        atomic_store(&cpu, v);
    }
    return v && atomic_load(&enabled);
}

/* Bias (row, then column), then the activation with the same formulas as the Relu, Clip and
 * LeakyRelu kernels (NaN passes through; -0 stays -0). */
KT static inline __m512 finish(__m512 x, __m512 bias, __m512 col_bias, const fgemm_epi_t *e)
{
    if (e->bias) x = _mm512_add_ps(x, bias);
    if (e->col_bias) x = _mm512_add_ps(x, col_bias);
    __m512 zero = _mm512_setzero_ps();
    switch (e->act) {
    case ACT_RELU:
        return _mm512_mask_mov_ps(x, _mm512_cmp_ps_mask(x, zero, _CMP_LT_OQ), zero);
    case ACT_LEAKY:
        return _mm512_mask_mul_ps(x, _mm512_cmp_ps_mask(x, zero, _CMP_LT_OQ), x, _mm512_set1_ps(e->a));
    case ACT_CLIP: {
        __m512 lo = _mm512_set1_ps(e->a > e->b ? e->b : e->a), hi = _mm512_set1_ps(e->b);
        __mmask16 below = _mm512_cmp_ps_mask(x, _mm512_set1_ps(e->a), _CMP_LT_OQ);
        __mmask16 above = _mm512_cmp_ps_mask(x, hi, _CMP_GT_OQ);
        return _mm512_mask_mov_ps(_mm512_mask_mov_ps(x, above, hi), below, lo);
    }
    default:
        return x;
    }
}

/* The 8 x 32 register tile, written once for both kernels: 16
 * accumulators (zero, or the partial sums in C when this is not the first
 * panel), one step of k per 32 floats of the panel (A's 8 values of the
 * step broadcast), and the store of rows [0, mr) under the column masks
 * s0/s1, finished (bias, activation) after the last panel only. The GEMM
 * reads A's rows in place; the convolution reads A packed 8 rows to a
 * panel (rows past m zero: computed, never stored). */
#define TILE_ACC                                                                                   \
    __m512 c00 = _mm512_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;       \
    __m512 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00, c61 = c00; \
    __m512 c70 = c00, c71 = c00
#define ROW_LOAD(r)                                                 \
    if (r < mr) {                                                   \
        c##r##0 = _mm512_maskz_loadu_ps(s0, c + r * ldc);           \
        c##r##1 = _mm512_maskz_loadu_ps(s1, c + r * ldc + 16);      \
    }
#define TILE_LOAD ROW_LOAD(0) ROW_LOAD(1) ROW_LOAD(2) ROW_LOAD(3) ROW_LOAD(4) ROW_LOAD(5) ROW_LOAD(6) ROW_LOAD(7)
/* A(r) names row r's value of this step: a##r[p] in place, ap[r] packed. */
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
#define A_PACKED(r) ap[r]
#define ROW_STORE(r)                                                                   \
    if (r < mr) {                                                                      \
        if (last) {                                                                    \
            __m512 bv = _mm512_set1_ps(bias ? bias[r] : 0.0f);                         \
            c##r##0 = finish(c##r##0, bv, cb0, e);                                     \
            c##r##1 = finish(c##r##1, bv, cb1, e);                                     \
        }                                                                              \
        _mm512_mask_storeu_ps(c + r * ldc, s0, c##r##0);                               \
        if (s1) _mm512_mask_storeu_ps(c + r * ldc + 16, s1, c##r##1);                  \
    }
/* The column bias of the tile's 32 columns (cbias: at the tile's first
 * column, or NULL), zero past the edge. */
#define TILE_COL_BIAS                                                                           \
    __m512 cb0 = cbias ? _mm512_maskz_loadu_ps(s0, cbias) : _mm512_setzero_ps();                \
    __m512 cb1 = cbias && s1 ? _mm512_maskz_loadu_ps(s1, cbias + 16) : _mm512_setzero_ps()
#define TILE_STORE ROW_STORE(0) ROW_STORE(1) ROW_STORE(2) ROW_STORE(3) ROW_STORE(4) ROW_STORE(5) ROW_STORE(6) ROW_STORE(7)

/* A [m x k] (row stride lda) into panels of 8 rows: panel q holds
 * a[8q + r][p] at [q][p][r], rows past m zero. Written in order, read
 * from 8 rows at once. */
static float *pack_a(int64_t m, int64_t k, const float *a, int64_t lda)
{
    int64_t panels = (m + 7) / 8;
    float *pa = xmalloc((size_t)(panels * k * 8 > 0 ? panels * k * 8 : 1) * sizeof *pa);
    for (int64_t q = 0; q < panels; q++) {
        float *dst = pa + q * k * 8;
        const float *rows[8];
        int live = m - q * 8 < 8 ? (int)(m - q * 8) : 8;
        for (int r = 0; r < live; r++) rows[r] = a + (q * 8 + r) * lda;
        for (int64_t p = 0; p < k; p++, dst += 8) {
            for (int r = 0; r < live; r++) dst[r] = rows[r][p];
            for (int r = live; r < 8; r++) dst[r] = 0.0f;
        }
    }
    return pa;
}

static inline __mmask16 lanes_lo(int nr) { return nr >= 16 ? 0xFFFF : (__mmask16)((1u << nr) - 1); }
static inline __mmask16 lanes_hi(int nr) { return nr >= 32 ? 0xFFFF : nr > 16 ? (__mmask16)((1u << (nr - 16)) - 1) : 0; }

/* Each thread's panel: KC steps of 32 floats, 64-byte aligned. */
static _Thread_local float panel[KC * 32] __attribute__((aligned(64)));

/* GEMM tile: kc steps from the panel, A's rows in place from column p0. */
KT static void kernel_8x32(int64_t kc, const float *a, int64_t lda, int mr, const float *bp, int nr, float *c,
                           int64_t ldc, int first, int last, const float *bias, const float *cbias,
                           const fgemm_epi_t *e)
{
    TILE_ROWS;
    TILE_ACC;
    __mmask16 s0 = lanes_lo(nr), s1 = lanes_hi(nr);
    if (!first) { TILE_LOAD }
    for (int64_t p = 0; p < kc; p++, bp += 32) TILE_STEP(bp, A_INPLACE);
    TILE_COL_BIAS;
    TILE_STORE
}

/* B's rows [p0, p0 + kc), columns [col, col + nr) into the panel, zero past nr. */
KT static void pack_b(const float *b, int64_t ldb, int64_t kc, int nr, float *dst)
{
    __mmask16 s0 = lanes_lo(nr), s1 = lanes_hi(nr);
    for (int64_t p = 0; p < kc; p++, b += ldb, dst += 32) {
        _mm512_store_ps(dst, _mm512_maskz_loadu_ps(s0, b));
        _mm512_store_ps(dst + 16, _mm512_maskz_loadu_ps(s1, b + 16));
    }
}

typedef struct fgemm_job {
    int64_t m, n, k, lda, ldb, ldc, tiles_n;
    const float *a, *b;
    float *c;
    fgemm_epi_t e;
} fgemm_job_t;

KT static void fgemm_tile(void *ctx, int64_t t)
{
    const fgemm_job_t *j = ctx;
    int64_t i0 = t / j->tiles_n * TILE_M, j0 = t % j->tiles_n * TILE_N;
    int64_t i1 = i0 + TILE_M < j->m ? i0 + TILE_M : j->m, j1 = j0 + TILE_N < j->n ? j0 + TILE_N : j->n;
    for (int64_t col = j0; col < j1; col += 32) {
        int nr = j1 - col < 32 ? (int)(j1 - col) : 32;
        for (int64_t p0 = 0; p0 < j->k || p0 == 0; p0 += KC) {
            int64_t kc = j->k - p0 < KC ? j->k - p0 : KC;
            pack_b(j->b + p0 * j->ldb + col, j->ldb, kc, nr, panel);
            for (int64_t row = i0; row < i1; row += 8) {
                int mr = i1 - row < 8 ? (int)(i1 - row) : 8;
                kernel_8x32(kc, j->a + row * j->lda + p0, j->lda, mr, panel, nr, j->c + row * j->ldc + col, j->ldc,
                            p0 == 0, p0 + KC >= j->k, j->e.bias ? j->e.bias + row : NULL,
                            j->e.col_bias ? j->e.col_bias + col : NULL, &j->e);
            }
        }
    }
}

void fgemm(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
           int64_t ldc, const fgemm_epi_t *epi)
{
    if (m <= 0 || n <= 0) return;
    if (!fgemm_available()) {
        fgemm_ref(m, n, k, a, lda, b, ldb, c, ldc, epi);
        return;
    }
    fgemm_job_t j = {m, n, k, lda, ldb, ldc, (n + TILE_N - 1) / TILE_N, a, b, c, {0}};
    if (epi) j.e = *epi;
    pool_for((m + TILE_M - 1) / TILE_M * j.tiles_n, fgemm_tile, &j);
}

/* Convolution tile: kc steps from the panel, A packed (8 values a step). */
KT static void kernel_conv_8x32(int64_t kc, const float *ap, int mr, const float *bp, int nr, float *c, int64_t ldc,
                                int first, int last, const float *bias, const fgemm_epi_t *e)
{
    TILE_ACC;
    __mmask16 s0 = lanes_lo(nr), s1 = lanes_hi(nr);
    const float *cbias = NULL;   /* a convolution's bias is per row */
    if (!first) { TILE_LOAD }
    for (int64_t p = 0; p < kc; p++, ap += 8, bp += 32) TILE_STEP(bp, A_PACKED);
    TILE_COL_BIAS;
    TILE_STORE
}

typedef struct fconv_job {
    int64_t m, n, tiles_n;
    const fconv_geom_t *g;
    const float *w, *x;
    float *y;
    fgemm_epi_t e;
} fconv_job_t;

/* One 32-wide strip of output positions [j0, j0 + nr): each lane's input
 * offset before the tap's shift, (r*sh)*w + o*sw for (r, o) = divmod(j0 +
 * l, ow), and the masks of each tap: lane l of tap (i, j) is set where
 * the tap reads inside the input, (r*sh + dh[i], o*sw + dw[j]) in h x w.
 * Lanes past nr stay clear. */
static void strip_setup(const fconv_geom_t *g, int64_t j0, int nr, int32_t *base, __mmask16 *mk)
{
    uint32_t rows[FCONV_MAX_K] = {0}, cols[FCONV_MAX_K] = {0};
    int64_t r = j0 / g->ow, o = j0 % g->ow;
    for (int l = 0; l < 32; l++) base[l] = 0;
    for (int l = 0; l < nr; l++) {
        int64_t ir = r * g->sh, ic = o * g->sw;
        base[l] = (int32_t)(ir * g->w + ic);
        for (int i = 0; i < g->kh; i++)
            if (ir + g->dh[i] >= 0 && ir + g->dh[i] < g->h) rows[i] |= 1u << l;
        for (int j = 0; j < g->kw; j++)
            if (ic + g->dw[j] >= 0 && ic + g->dw[j] < g->w) cols[j] |= 1u << l;
        if (++o == g->ow) { o = 0; r++; }
    }
    for (int i = 0; i < g->kh; i++)
        for (int j = 0; j < g->kw; j++) {
            uint32_t v = rows[i] & cols[j];
            mk[2 * (i * g->kw + j)] = (__mmask16)(v & 0xFFFF);
            mk[2 * (i * g->kw + j) + 1] = (__mmask16)(v >> 16);
        }
}

/* The column matrix's rows [p0, p0 + kc) for one strip (row p = ch * taps
 * + tap is input plane ch shifted by the tap's offset) into the panel,
 * under the strip's mask of each tap: zero where the tap reads the
 * padding. A strip of a stride-1 convolution whose output rows are as wide
 * as the input's reads consecutive elements (contiguous: masked loads at
 * x + base[0]); any other strip gathers through the lane offsets. Lanes
 * under a cleared mask bit are never read: their addresses may lie outside
 * the input, so they are formed as integers. */
KT static void pack_taps(const float *x, int64_t plane, int taps, const int64_t *tapoff, const __mmask16 *mk,
                         const int32_t *base, int contiguous, int64_t p0, int64_t kc, float *dst)
{
    int64_t ch = p0 / taps;
    int t = (int)(p0 % taps);
    uintptr_t xc = (uintptr_t)(x + ch * plane);
    __m512i b0 = _mm512_loadu_si512(base), b1 = _mm512_loadu_si512(base + 16);
    for (int64_t p = 0; p < kc; p++, dst += 32) {
        if (contiguous) {
            const float *src = (const float *)(xc + (uintptr_t)(base[0] + tapoff[t]) * sizeof(float));
            _mm512_store_ps(dst, _mm512_maskz_loadu_ps(mk[2 * t], src));
            _mm512_store_ps(dst + 16, _mm512_maskz_loadu_ps(mk[2 * t + 1], src + 16));
        } else {
            __m512i off = _mm512_set1_epi32((int32_t)tapoff[t]);
            const float *pl = (const float *)xc;
            _mm512_store_ps(dst, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), mk[2 * t],
                                                          _mm512_add_epi32(b0, off), pl, 4));
            _mm512_store_ps(dst + 16, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), mk[2 * t + 1],
                                                               _mm512_add_epi32(b1, off), pl, 4));
        }
        if (++t == taps) {
            t = 0;
            xc += (uintptr_t)plane * sizeof(float);
        }
    }
}

KT static void fconv_tile(void *ctx, int64_t t)
{
    const fconv_job_t *j = ctx;
    const fconv_geom_t *g = j->g;
    int taps = g->kh * g->kw;
    int contiguous = g->sh == 1 && g->sw == 1 && g->ow == g->w;
    int64_t k = g->cin * taps, plane = g->h * g->w, tapoff[FCONV_MAX_K * FCONV_MAX_K];
    __mmask16 mk[2 * FCONV_MAX_K * FCONV_MAX_K];
    int32_t base[32];
    for (int i = 0; i < g->kh; i++)
        for (int q = 0; q < g->kw; q++) tapoff[i * g->kw + q] = g->dh[i] * g->w + g->dw[q];
    int64_t i0 = t / j->tiles_n * TILE_M, j0 = t % j->tiles_n * TILE_N;
    int64_t i1 = i0 + TILE_M < j->m ? i0 + TILE_M : j->m, j1 = j0 + TILE_N < j->n ? j0 + TILE_N : j->n;
    for (int64_t col = j0; col < j1; col += 32) {
        int nr = j1 - col < 32 ? (int)(j1 - col) : 32;
        strip_setup(g, col, nr, base, mk);
        for (int64_t p0 = 0; p0 < k || p0 == 0; p0 += KC) {
            int64_t kc = k - p0 < KC ? k - p0 : KC;
            pack_taps(j->x, plane, taps, tapoff, mk, base, contiguous, p0, kc, panel);
            for (int64_t row = i0; row < i1; row += 8) {
                int mr = i1 - row < 8 ? (int)(i1 - row) : 8;
                kernel_conv_8x32(kc, j->w + row * k + p0 * 8, mr, panel, nr, j->y + row * j->n + col, j->n, p0 == 0,
                                 p0 + KC >= k, j->e.bias ? j->e.bias + row : NULL, &j->e);
            }
        }
    }
}

int fconv_rows(int64_t m, const fconv_geom_t *g, const float *w, const float *x, float *y, const fgemm_epi_t *epi)
{
    if (!fgemm_available() || g->kh < 1 || g->kw < 1 || g->kh > FCONV_MAX_K || g->kw > FCONV_MAX_K) return -1;
    if (g->sh < 1 || g->sw < 1 || g->h * g->w > INT32_MAX / 2) return -1;   /* gather offsets are int32 */
    int64_t n = g->oh * g->ow;
    if (m <= 0 || n <= 0) return 0;
    float *pw = pack_a(m, g->cin * g->kh * g->kw, w, g->cin * g->kh * g->kw);
    fconv_job_t j = {m, n, (n + TILE_N - 1) / TILE_N, g, pw, x, y, {0}};
    if (epi) j.e = *epi;
    pool_for((m + TILE_M - 1) / TILE_M * j.tiles_n, fconv_tile, &j);
    free(pw);
    return 0;
}

/* dst[i] = src[2i]: two loads, one permute per 16 values. A vector reads
 * src up to 2i + 31, so it runs while that stays within src[0, 2n-1). */
KT static void gather_even_avx512(float *dst, const float *src, int64_t n)
{
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    int64_t i = 0;
    for (; i + 17 <= n; i += 16) {
        __m512 lo = _mm512_loadu_ps(src + 2 * i), hi = _mm512_loadu_ps(src + 2 * i + 16);
        _mm512_storeu_ps(dst + i, _mm512_permutex2var_ps(lo, even, hi));
    }
    for (; i < n; i++) dst[i] = src[2 * i];
}

void fgemm_gather_even(float *dst, const float *src, int64_t n)
{
    if (fgemm_available()) {
        gather_even_avx512(dst, src, n);
        return;
    }
    for (int64_t i = 0; i < n; i++) dst[i] = src[2 * i];
}

#else /* no AVX-512 kernel on this compiler or architecture */

int fgemm_available(void) { return 0; }

void fgemm_gather_even(float *dst, const float *src, int64_t n)
{
    for (int64_t i = 0; i < n; i++) dst[i] = src[2 * i];
}

int fconv_rows(int64_t m, const fconv_geom_t *g, const float *w, const float *x, float *y, const fgemm_epi_t *epi)
{
    (void)m; (void)g; (void)w; (void)x; (void)y; (void)epi;
    return -1;
}

void fgemm(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
           int64_t ldc, const fgemm_epi_t *epi)
{
    fgemm_ref(m, n, k, a, lda, b, ldb, c, ldc, epi);
}

#endif
