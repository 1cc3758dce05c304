/* fgemm.c — parity's own float32 GEMM (see fgemm.h): an AVX-512 register
 * tile of 8 rows x 32 columns of C, A read in place (8 broadcasts per step
 * of k), B read in place one row of 32 floats per step, the bias and the
 * activation applied before the tile is stored.
 *
 * Why not OpenBLAS for these shapes: convolutions give GEMMs with 8-256
 * rows and thousands of columns, where OpenBLAS spends as long packing as
 * multiplying, and Debian's build picks its AVX2 kernels on this CPU. Here
 * nothing is packed: the rows of A and B are read where they lie. */
#include <math.h>
#include <stdatomic.h>
#include "ops/fgemm.h"
#include "graph/graph.h"
#include "util/pool.h"

/* A task is a tile of C this large: TILE_M rows of A stay in L2, a 32-wide
 * strip of B in L1 while the row panels go past it. */
#define TILE_M 64
#define TILE_N 256

static atomic_int enabled = 1;

void fgemm_set_enabled(int on) { atomic_store(&enabled, on != 0); }

int fgemm_epi_supported(int act)
{
    return act == ACT_NONE || act == ACT_RELU || act == ACT_CLIP || act == ACT_LEAKY;
}

/* The same computation in plain C, element by element (fmaf is the FMA the
 * kernel does): the path where the kernel cannot run, and the tests' oracle
 * for the kernel's bits. */
static float finish_one(float x, float bias, const fgemm_epi_t *e)
{
    if (e->bias) x += bias;
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
            c[i * ldc + j] = finish_one(acc, epi->bias ? epi->bias[i] : 0.0f, epi);
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

/* Bias, then the activation with the same formulas as the Relu, Clip and
 * LeakyRelu kernels (NaN passes through; -0 stays -0). */
KT static inline __m512 finish(__m512 x, __m512 bias, const fgemm_epi_t *e)
{
    if (e->bias) x = _mm512_add_ps(x, bias);
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

/* One 8 x 32 tile: rows [0, mr) and columns [0, nr) of it are stored.
 * Rows past mr repeat row mr-1 (computed, never stored); masked loads keep
 * columns past nr from being read. */
KT static void kernel_8x32(int64_t k, const float *a, int64_t lda, int mr, const float *b, int64_t ldb, int nr,
                           float *c, int64_t ldc, const float *bias, const fgemm_epi_t *e)
{
#define AROW(r) const float *a##r = a + (r < mr ? r : mr - 1) * lda
    AROW(0); AROW(1); AROW(2); AROW(3); AROW(4); AROW(5); AROW(6); AROW(7);
#undef AROW
    __mmask16 m0 = nr >= 16 ? 0xFFFF : (__mmask16)((1u << nr) - 1);
    __mmask16 m1 = nr >= 32 ? 0xFFFF : nr > 16 ? (__mmask16)((1u << (nr - 16)) - 1) : 0;
    __m512 c00 = _mm512_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
    __m512 c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00, c61 = c00, c70 = c00, c71 = c00;
    for (int64_t p = 0; p < k; p++) {
        const float *bp = b + p * ldb;
        __m512 b0 = _mm512_maskz_loadu_ps(m0, bp), b1 = _mm512_maskz_loadu_ps(m1, bp + 16), t;
#define STEP(r)                                  \
        t = _mm512_set1_ps(a##r[p]);             \
        c##r##0 = _mm512_fmadd_ps(t, b0, c##r##0); \
        c##r##1 = _mm512_fmadd_ps(t, b1, c##r##1);
        STEP(0) STEP(1) STEP(2) STEP(3) STEP(4) STEP(5) STEP(6) STEP(7)
#undef STEP
    }
#define STORE(r)                                                                     \
    if (r < mr) {                                                                    \
        __m512 bv = _mm512_set1_ps(bias ? bias[r] : 0.0f);                           \
        _mm512_mask_storeu_ps(c + r * ldc, m0, finish(c##r##0, bv, e));              \
        if (m1) _mm512_mask_storeu_ps(c + r * ldc + 16, m1, finish(c##r##1, bv, e)); \
    }
    STORE(0) STORE(1) STORE(2) STORE(3) STORE(4) STORE(5) STORE(6) STORE(7)
#undef STORE
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
        for (int64_t row = i0; row < i1; row += 8) {
            int mr = i1 - row < 8 ? (int)(i1 - row) : 8;
            kernel_8x32(j->k, j->a + row * j->lda, j->lda, mr, j->b + col, j->ldb, nr, j->c + row * j->ldc + col,
                        j->ldc, j->e.bias ? j->e.bias + row : NULL, &j->e);
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

#else /* no AVX-512 kernel on this compiler or architecture */

int fgemm_available(void) { return 0; }

void fgemm(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
           int64_t ldc, const fgemm_epi_t *epi)
{
    fgemm_ref(m, n, k, a, lda, b, ldb, c, ldc, epi);
}

#endif
