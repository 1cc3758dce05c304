#include "harness.h"
const op_case_t cases_rows[] = {{0}};
const int cases_rows_n = 0;
