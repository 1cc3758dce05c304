/* poolrow_impl.h — what poolrow.c's rows take from each instruction set
 * (poolrow_avx512.c, poolrow_avx2.c; the generic set, in poolrow.c, has
 * none). Every set takes each output's taps in the plain loop's order, so
 * the bits are poolrow.c's. */
#ifndef PARITY_POOLROW_IMPL_H
#define PARITY_POOLROW_IMPL_H

#include <stdint.h>
#include "util/isa.h"

typedef struct poolrow_arch {
    /* poolrow_max / poolrow_avg (poolrow.h) for stride s = 1 or 2, on the
     * first outputs the set's vectors take: returns how many (o < returned
     * are stored; poolrow.c's plain loop does the rest). */
    int64_t (*max)(float *y, const float *const *rows, int nrows, int k, int64_t s, int64_t start, int64_t n);
    int64_t (*avg)(float *y, const float *const *rows, int nrows, int k, int64_t s, int64_t start, int64_t n,
                   double count);
} poolrow_arch_t;

extern const poolrow_arch_t poolrow_arch_generic;
#if ISA_X86
extern const poolrow_arch_t poolrow_arch_avx2, poolrow_arch_avx512;
#endif

#endif
