#include "harness.h"
const op_case_t cases_binary[] = {{0}};
const int cases_binary_n = 0;
