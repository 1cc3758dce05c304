/* misc_impl.h — the MISC family's kernels, shared between misc.c (the rows)
 * and the files that implement them (nms.c, quant.c, unique.c, roialign.c, rnn.c). */
#ifndef PARITY_MISC_IMPL_H
#define PARITY_MISC_IMPL_H

#include "ops/ops.h"

int nms_shape(op_ctx_t *c);
int nms_run(op_ctx_t *c);

#endif
