/* poolrow.h — the inside of a 2-D float32 pooling row (see poolrow.c). */
#ifndef PARITY_POOLROW_H
#define PARITY_POOLROW_H

#include <stdint.h>

/* For o < n: y[o] = the max (resp. the double sum / count, rounded to
 * float) of rows[r][start + o*s + q] over r < nrows, q < k, in that order.
 * Every tap must lie inside its row. */
void poolrow_max(float *y, const float *const *rows, int nrows, int k, int64_t s, int64_t start, int64_t n);
void poolrow_avg(float *y, const float *const *rows, int nrows, int k, int64_t s, int64_t start, int64_t n,
                 double count);

#endif
