/* blas.c — deterministic parallel GEMM. By default every product goes to
 * parity's own kernel (fgemm.c: the same bits on every CPU); transposed
 * operands are copied untransposed first, and alpha and beta are applied
 * afterwards element by element (alpha * AB, then + beta * C, in float).
 * With --kernels blas (util/isa.h) products go to OpenBLAS instead, whose
 * kernels differ between CPUs, and whose own threading is not
 * bit-reproducible across thread counts (its single-thread path may use a
 * different kernel), so parity runs OpenBLAS single-threaded and splits C
 * into tiles whose size depends only on the problem shape; the pool hands
 * tiles to threads. Same tiles, same sums, whatever --threads is. */
#include <cblas.h>
#include "ops/gemm/blas.h"
#include "ops/gemm/fgemm.h"
#include "util/isa.h"
#include "util/pool.h"
#include "util/err.h"
#include <math.h>
#include <stdlib.h>

/* OpenBLAS's pthread build starts its worker threads when it is loaded
 * and lets them spin (sched_yield) for about 2^28 cycles before they
 * sleep: a tenth of a second of a second core taken at the start of every
 * process, under parity's own workers. Setting one thread does not stop
 * them; its thread shutdown does. Weak: other OpenBLAS builds (serial,
 * OpenMP) do not have it, and need nothing. */
extern int blas_thread_shutdown_(void) __attribute__((weak));

void blas_single_thread(void)
{
    openblas_set_num_threads(1);
    if (blas_thread_shutdown_) blas_thread_shutdown_();
}

/* Problems smaller than this many multiply-adds run as one call. */
#define SPLIT_MIN_MACS ((int64_t)1 << 21)
#define TILE 128

typedef struct gemm_job {
    int ta, tb, split_n;
    int64_t m, n, k, lda, ldb, ldc, tile;
    float alpha, beta;
    const float *a, *b;
    float *c;
} gemm_job_t;

static void gemm_tile(void *ctx, int64_t t)
{
    const gemm_job_t *j = ctx;
    int64_t lo = t * j->tile;
    enum CBLAS_TRANSPOSE ta = j->ta ? CblasTrans : CblasNoTrans, tb = j->tb ? CblasTrans : CblasNoTrans;
    if (j->split_n) {
        int64_t w = j->n - lo < j->tile ? j->n - lo : j->tile;
        const float *b = j->tb ? j->b + lo * j->ldb : j->b + lo;
        cblas_sgemm(CblasRowMajor, ta, tb, (int)j->m, (int)w, (int)j->k, j->alpha, j->a, (int)j->lda,
                    b, (int)j->ldb, j->beta, j->c + lo, (int)j->ldc);
    } else {
        int64_t h = j->m - lo < j->tile ? j->m - lo : j->tile;
        const float *a = j->ta ? j->a + lo : j->a + lo * j->lda;
        cblas_sgemm(CblasRowMajor, ta, tb, (int)h, (int)j->n, (int)j->k, j->alpha, a, (int)j->lda,
                    j->b, (int)j->ldb, j->beta, j->c + lo * j->ldc, (int)j->ldc);
    }
}

/* op(X) [rows x cols] of a stored matrix (transposed: X is cols x rows,
 * row stride ld) as a new untransposed rows x cols copy. */
static float *untranspose(const float *x, int64_t rows, int64_t cols, int64_t ld)
{
    float *t = xmalloc((size_t)(rows * cols > 0 ? rows * cols : 1) * sizeof *t);
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) t[i * cols + j] = x[j * ld + i];
    return t;
}

static void own_sgemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                      int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc)
{
    float *at = trans_a ? untranspose(a, m, k, lda) : NULL, *bt = trans_b ? untranspose(b, k, n, ldb) : NULL;
    if (at) a = at, lda = k;
    if (bt) b = bt, ldb = n;
    if (alpha == 1.0f && beta == 0.0f) {
        fgemm(m, n, k, a, lda, b, ldb, c, ldc, NULL);
    } else {
        float *t = xmalloc((size_t)(m * n > 0 ? m * n : 1) * sizeof *t);
        fgemm(m, n, k, a, lda, b, ldb, t, n, NULL);
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                float v = alpha == 1.0f ? t[i * n + j] : alpha * t[i * n + j];
                c[i * ldc + j] = beta == 0.0f ? v : v + beta * c[i * ldc + j];
            }
        free(t);
    }
    free(at);
    free(bt);
}

void blas_dgemm_own(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double *a,
                    int64_t lda, const double *b, int64_t ldb, double beta, double *c, int64_t ldc)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double acc = 0.0;
            for (int64_t p = 0; p < k; p++)
                acc = fma(trans_a ? a[p * lda + i] : a[i * lda + p], trans_b ? b[j * ldb + p] : b[p * ldb + j], acc);
            double v = alpha == 1.0 ? acc : alpha * acc;
            c[i * ldc + j] = beta == 0.0 ? v : v + beta * c[i * ldc + j];
        }
}

void blas_sgemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc)
{
    if (kernels_mode() == KERNELS_OWN) {
        own_sgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    gemm_job_t j = {trans_a, trans_b, 0, m, n, k, lda, ldb, ldc, 0, alpha, beta, a, b, c};
    if (m * n * k < SPLIT_MIN_MACS || (m <= TILE && n <= TILE)) {
        j.tile = n;
        j.split_n = 1;
        gemm_tile(&j, 0);
        return;
    }
    /* split the longer side of C into fixed tiles */
    j.split_n = n >= m;
    j.tile = TILE;
    int64_t tiles = ((j.split_n ? n : m) + TILE - 1) / TILE;
    pool_for(tiles, gemm_tile, &j);
}
