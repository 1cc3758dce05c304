/* misc_impl.h — the MISC family's kernels, shared between misc.c (the rows)
 * and the files that implement them (nms.c, quant.c, qlinear.c, unique.c,
 * roialign.c, rnn.c). */
#ifndef PARITY_MISC_IMPL_H
#define PARITY_MISC_IMPL_H

#include "ops/ops.h"

/* Quantization helpers (quant.c). */
/* Rounded value v clamped to the range of int8/uint8 dt (NaN gives 0). */
int32_t q_saturate(float v, dtype_t dt);
/* Element i of an int8, uint8 or int32 tensor. */
int32_t q_load(const tensor_t *t, int64_t i);
/* Stores v (already saturated) into an int8/uint8 tensor. */
void q_store(tensor_t *t, int64_t i, int32_t v);
/* Fails unless input i (when present) is int8 or uint8. */
int q_check_8bit(op_ctx_t *c, int i);

int nms_shape(op_ctx_t *c);
int nms_run(op_ctx_t *c);
int quantize_shape(op_ctx_t *c);
int quantize_run(op_ctx_t *c);
int dequantize_shape(op_ctx_t *c);
int dequantize_run(op_ctx_t *c);
int dynquant_shape(op_ctx_t *c);
int dynquant_run(op_ctx_t *c);
int matmulint_shape(op_ctx_t *c);
int matmulint_run(op_ctx_t *c);
int qlinearmatmul_shape(op_ctx_t *c);
int qlinearmatmul_run(op_ctx_t *c);
int convint_shape(op_ctx_t *c);
int convint_run(op_ctx_t *c);
int qlinearconv_shape(op_ctx_t *c);
int qlinearconv_run(op_ctx_t *c);
int unique_shape(op_ctx_t *c);
int unique_run(op_ctx_t *c);
int roialign_shape(op_ctx_t *c);
int roialign_run(op_ctx_t *c);
int rnn_shape(op_ctx_t *c);
int rnn_run(op_ctx_t *c);

#endif
