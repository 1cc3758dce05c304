/* transpose_impl.h — what transpose.c's tiled path takes from an
 * instruction set's block transposer (transpose_avx2.c). */
#ifndef PARITY_TRANSPOSE_IMPL_H
#define PARITY_TRANSPOSE_IMPL_H

#include <stdint.h>

/* For 4-byte elements: dst[a * dld + b] = src[a + b * sld] over the whole
 * blocks of a < na, b < nb that the CPU's set moves in registers. Returns
 * the block size B (the caller copies a >= na - na % B and b >= nb - nb % B
 * itself), or 0 where it moved nothing. */
int64_t transpose_blocks_f32(float *dst, int64_t dld, const float *src, int64_t sld, int64_t na, int64_t nb);

#endif
