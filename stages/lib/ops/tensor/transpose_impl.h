/* transpose_impl.h — what transpose.c's tiled path takes from an
 * instruction set's block transposer: none in the generic set
 * (transpose.c), 8 x 8 blocks in registers at AVX2 and above
 * (transpose_avx2.c). A transposer moves bits, computes nothing, so every
 * set gives the same bytes. */
#ifndef PARITY_TRANSPOSE_IMPL_H
#define PARITY_TRANSPOSE_IMPL_H

#include <stdint.h>
#include "util/isa.h"

typedef struct transpose_arch {
    /* For 4-byte elements: dst[a * dld + b] = src[a + b * sld] over the
     * whole blocks of a < na, b < nb that the set moves in registers.
     * Returns the block size B (the caller copies a >= na - na % B and
     * b >= nb - nb % B itself), or 0 where it moved nothing. */
    int64_t (*blocks_f32)(float *dst, int64_t dld, const float *src, int64_t sld, int64_t na, int64_t nb);
} transpose_arch_t;

extern const transpose_arch_t transpose_arch_generic;
#if ISA_X86
extern const transpose_arch_t transpose_arch_avx2;
#endif

#endif
