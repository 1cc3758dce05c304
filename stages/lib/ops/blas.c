/* blas.c — deterministic parallel GEMM. Plain products (C = A B, neither
 * transposed, alpha 1, beta 0: MatMul) go to parity's own kernel (fgemm.c)
 * where the CPU has it. The rest go to OpenBLAS, whose own threading is
 * not bit-reproducible across thread counts (its single-thread path may
 * use a different kernel), so parity runs OpenBLAS single-threaded and
 * splits C into tiles whose size depends only on the problem shape; the
 * pool hands tiles to threads. Same tiles, same sums, whatever --threads is. */
#include <cblas.h>
#include "ops/blas.h"
#include "ops/fgemm.h"
#include "util/pool.h"

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

void blas_sgemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc)
{
    if (!trans_a && !trans_b && alpha == 1.0f && beta == 0.0f && fgemm_available()) {
        fgemm(m, n, k, a, lda, b, ldb, c, ldc, NULL);   /* parity's own kernel: no packing */
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
