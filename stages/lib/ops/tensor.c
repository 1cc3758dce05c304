/* tensor.c — operator family (placeholder table until its kernels land). */
#include "ops/ops.h"

const op_def_t ops_tensor[] = {{0}};
const int ops_tensor_count = 0;
