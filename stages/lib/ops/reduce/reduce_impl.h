/* reduce_impl.h — private to the REDUCE family: the shape functions and
 * kernels that reduce.c lists in ops_reduce[], and the few helpers the
 * family's files share (type checks, axis layouts, the log-softmax core that
 * SoftmaxCrossEntropyLoss reuses). Nothing outside ops/ includes this. */
#ifndef PARITY_REDUCE_IMPL_H
#define PARITY_REDUCE_IMPL_H

#include "ops/ops.h"

/* reduce.c / reduce_walk.c: ReduceMax ... ReduceSumSquare */
int reduce_shape(op_ctx_t *c);
int reduce_run(op_ctx_t *c);

/* argmax.c: ArgMax, ArgMin */
int argmax_shape(op_ctx_t *c);
int argmax_run(op_ctx_t *c);

/* softmax.c: Softmax, LogSoftmax, Hardmax */
int softmax_shape(op_ctx_t *c);
int softmax_run(op_ctx_t *c);

/* topk.c: TopK */
int topk_shape(op_ctx_t *c);
int topk_run(op_ctx_t *c);

/* cumsum.c: CumSum, Det */
int cumsum_shape(op_ctx_t *c);
int cumsum_run(op_ctx_t *c);
int det_shape(op_ctx_t *c);
int det_run(op_ctx_t *c);

/* loss.c: NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss */
int nllloss_shape(op_ctx_t *c);
int nllloss_run(op_ctx_t *c);
int sce_shape(op_ctx_t *c);
int sce_run(op_ctx_t *c);

/* Fails unless dt is float32/float64 (allow_int = 0) or any numeric type
 * (allow_int = 1); half types arrive widened to float32 (ops.h). */
int red_check_type(op_ctx_t *c, int input, dtype_t dt, int allow_int);

/* Splits dims around axis into outer (before), n (the axis), inner (after). */
void red_split_axis(const tensor_t *t, int axis, int64_t *outer, int64_t *n, int64_t *inner);

/* Softmax-style kernels along one axis of an [outer, n, inner] layout. */
enum { SM_SOFTMAX = 0, SM_LOGSOFTMAX, SM_HARDMAX };
/* x and y are float32 or float64 (dt); col is scratch of inner doubles and
 * inner elements of dt (only used when inner > 1). */
void softmax_axis(int kind, dtype_t dt, const void *x, void *y,
                  int64_t outer, int64_t n, int64_t inner, void *col);
/* Bytes of scratch softmax_axis needs for this inner size. */
size_t softmax_scratch_bytes(int64_t inner);

#endif
