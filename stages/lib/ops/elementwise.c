/* elementwise.c — operator family (placeholder table until its kernels land). */
#include "ops/ops.h"

const op_def_t ops_elementwise[] = {{0}};
const int ops_elementwise_count = 0;
