#include "harness.h"
const op_case_t cases_unary[] = {{0}};
const int cases_unary_n = 0;
