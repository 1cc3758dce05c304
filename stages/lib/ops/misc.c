/* misc.c — operator family (placeholder table until its kernels land). */
#include "ops/ops.h"

const op_def_t ops_misc[] = {{0}};
const int ops_misc_count = 0;
