/* nn_impl.h — private header of the NN operator family (nn.c holds the
 * table; conv.c, gemm.c, einsum.c, pool.c, norm.c, resize.c, gridsample.c
 * hold the kernels). Shared here: the window geometry of Conv and the pools,
 * and scratch memory that falls back to malloc outside the executor. */
#ifndef PARITY_OPS_NN_IMPL_H
#define PARITY_OPS_NN_IMPL_H

#include "ops/ops.h"

/* Spatial rank the window ops support (1-D, 2-D, 3-D). Geometry is kept in
 * 3-D form: lower ranks are padded at the front with size-1, stride-1 axes,
 * so one loop nest serves every rank. */
#define NN_SP 3

typedef struct nn_geom {
    int nsp;                       /* spatial rank of the node, 1..NN_SP */
    int64_t in[NN_SP], out[NN_SP]; /* spatial sizes (input side, output side) */
    int64_t k[NN_SP], s[NN_SP], d[NN_SP];
    int64_t pb[NN_SP], pe[NN_SP];  /* padding at the beginning / end */
} nn_geom_t;

/* Window geometry of Conv and the pools from the node's attributes
 * (strides, dilations, pads, auto_pad). kernel[] holds nsp sizes. ceil_mode
 * is the pools' rounding; dilations are read only if use_dil. */
int nn_geom_window(op_ctx_t *c, int nsp, const int64_t *in_sp, const int64_t *kernel,
                   int ceil_mode, int use_dil, nn_geom_t *g);
/* Reads an INTS attribute of exactly n values (or absent: fills dflt). */
int nn_attr_ints(op_ctx_t *c, const char *name, int n, int64_t dflt, int64_t *dst);
int64_t nn_prod(const int64_t *v, int n);

/* Scratch memory from the executor, or malloc when there is none (unit
 * tests): *owned receives what the caller must free() (NULL otherwise).
 * Call it once per kernel: a second call may move the first block. */
void *nn_scratch(op_ctx_t *c, size_t bytes, void **owned);

/* Runs fn(ctx, lo, hi) over [0, n) in pieces of `grain` items on parity's
 * thread pool. Pieces depend only on n and grain, never on the thread
 * count, and each output element belongs to one piece: results are the
 * same bits for any --threads. */
typedef void (*nn_range_fn)(void *ctx, int64_t lo, int64_t hi);
void nn_parallel(int64_t n, int64_t grain, nn_range_fn fn, void *ctx);

/* C = alpha * op(A) op(B) + beta * C, row-major, float32 (cblas_sgemm) or
 * float64 (cblas_dgemm) by dt. Returns -1 when a size does not fit BLAS's
 * int (the caller reports it). */
int nn_gemm(dtype_t dt, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
            double alpha, const void *a, int64_t lda, const void *b, int64_t ldb,
            double beta, void *cmat, int64_t ldc);

/* Shape functions and kernels. */
int conv_shape(op_ctx_t *c);
int conv_run(op_ctx_t *c);
int convtranspose_shape(op_ctx_t *c);
int convtranspose_run(op_ctx_t *c);
int matmul_shape(op_ctx_t *c);
int matmul_run(op_ctx_t *c);
int gemm_shape(op_ctx_t *c);
int gemm_run(op_ctx_t *c);
int einsum_shape(op_ctx_t *c);
int einsum_run(op_ctx_t *c);

int pool_shape(op_ctx_t *c);
int avgpool_run(op_ctx_t *c);
int maxpool_run(op_ctx_t *c);
int lppool_run(op_ctx_t *c);
int globalpool_shape(op_ctx_t *c);
int globalavgpool_run(op_ctx_t *c);
int globalmaxpool_run(op_ctx_t *c);
int globallppool_run(op_ctx_t *c);
int maxunpool_shape(op_ctx_t *c);
int maxunpool_run(op_ctx_t *c);

int batchnorm_shape(op_ctx_t *c);
int batchnorm_run(op_ctx_t *c);
int instancenorm_shape(op_ctx_t *c);
int instancenorm_run(op_ctx_t *c);
int layernorm_shape(op_ctx_t *c);
int layernorm_run(op_ctx_t *c);
int lpnorm_shape(op_ctx_t *c);
int lpnorm_run(op_ctx_t *c);
int mvn_shape(op_ctx_t *c);
int mvn_run(op_ctx_t *c);
int lrn_shape(op_ctx_t *c);
int lrn_run(op_ctx_t *c);

int resize_shape(op_ctx_t *c);
int resize_run(op_ctx_t *c);
int upsample_shape(op_ctx_t *c);
int upsample_run(op_ctx_t *c);

int gridsample_shape(op_ctx_t *c);
int gridsample_run(op_ctx_t *c);

#endif
