/* blas.h — the one entry to single-precision GEMM (row-major, cblas
 * conventions), deterministic for any thread count. */
#ifndef PARITY_BLAS_H
#define PARITY_BLAS_H

#include <stdint.h>

/* Makes OpenBLAS single-threaded for good (parity's pool does the
 * splitting): call once, before any thread of parity's own starts. */
void blas_single_thread(void);

void blas_sgemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc);

#endif
