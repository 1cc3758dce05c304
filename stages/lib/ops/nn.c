/* nn.c — operator family (placeholder table until its kernels land). */
#include "ops/ops.h"

const op_def_t ops_nn[] = {{0}};
const int ops_nn_count = 0;
