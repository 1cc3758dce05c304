/* half.h — exact conversions between float32 and the narrow float formats.
 * All rounding is to nearest, ties to even; subnormals, infinities and NaN
 * are handled exactly (tests check all 65,536 half values). */
#ifndef PARITY_HALF_H
#define PARITY_HALF_H

#include <stdint.h>
#include <string.h>

static inline uint32_t f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

uint16_t f32_to_f16(float f);
float f16_to_f32(uint16_t h);
uint16_t f32_to_bf16(float f);
static inline float bf16_to_f32(uint16_t b) { return bits_f32((uint32_t)b << 16); }
/* Rounds to TF32 (10 explicit mantissa bits, FP32 range), kept in a float. */
float f32_round_tf32(float f);
/* Round-trips through the narrow type (the value a GPU would store). */
static inline float f32_round_f16(float f) { return f16_to_f32(f32_to_f16(f)); }
static inline float f32_round_bf16(float f) { return bf16_to_f32(f32_to_bf16(f)); }
/* Bulk versions for kernels: y[i] = the rounded x[i] (y may be x). */
void round_f16_copy(float *y, const float *x, int64_t n);
void round_bf16_copy(float *y, const float *x, int64_t n);
void round_tf32_copy(float *y, const float *x, int64_t n);
void round_f16_inplace(float *x, int64_t n);
/* Whole arrays float16 <-> float32, the bits of f16_to_f32 / f32_to_f16. */
void f16_widen(const uint16_t *s, float *d, int64_t n);
void f16_narrow(const float *s, uint16_t *d, int64_t n);
void round_bf16_inplace(float *x, int64_t n);
void round_tf32_inplace(float *x, int64_t n);

#endif
