/* blas.h — the one entry to GEMM (row-major, cblas conventions),
 * deterministic for any thread count; by default parity's own kernels
 * (the same bits on every CPU), OpenBLAS with --kernels blas. */
#ifndef PARITY_BLAS_H
#define PARITY_BLAS_H

#include <stdint.h>

/* Makes OpenBLAS single-threaded for good (parity's pool does the
 * splitting): call once, before any thread of parity's own starts. */
void blas_single_thread(void);

void blas_sgemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc);

/* Double precision in plain C: each element one fma chain over k in order,
 * then alpha, then + beta * C (the same bits on every CPU; slow, for the
 * rare float64 model). */
void blas_dgemm_own(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double *a,
                    int64_t lda, const double *b, int64_t ldb, double beta, double *c, int64_t ldc);

#endif
