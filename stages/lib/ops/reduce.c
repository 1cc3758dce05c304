/* reduce.c — operator family (placeholder table until its kernels land). */
#include "ops/ops.h"

const op_def_t ops_reduce[] = {{0}};
const int ops_reduce_count = 0;
