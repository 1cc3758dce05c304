/* half_impl.h — what half.c's bulk conversions (float16 <-> float32 of
 * whole arrays, and the FP16/BF16/TF32 rounding of every reduced-precision
 * layer's output) take from each instruction set: the portable set in
 * half.c, F16C in half_avx2.c (F16C is part of util/isa.h's AVX2 level, so
 * PARITY_ISA=generic turns it off), AVX-512 in half_avx512.c. Every set
 * gives the scalar conversions' bits (tests/unit/half.c). */
#ifndef PARITY_HALF_IMPL_H
#define PARITY_HALF_IMPL_H

#include <stdint.h>
#include "tensor/half.h"
#include "util/isa.h"

/* half.h's array functions of the same names, in one set's instructions. */
typedef struct half_arch {
    void (*round_f16)(float *y, const float *x, int64_t n);
    void (*widen)(const uint16_t *s, float *d, int64_t n);
    void (*narrow)(const float *s, uint16_t *d, int64_t n);
    void (*round_bf16)(float *y, const float *x, int64_t n);
    void (*round_tf32)(float *y, const float *x, int64_t n);
} half_arch_t;

extern const half_arch_t half_arch_generic;
/* The generic BF16 and TF32 rounding, which the AVX2 set keeps (the
 * compiler vectorises it; F16C has nothing for them). */
void half_round_bf16_generic(float *y, const float *x, int64_t n);
void half_round_tf32_generic(float *y, const float *x, int64_t n);
#if ISA_X86
extern const half_arch_t half_arch_avx2, half_arch_avx512;
/* The F16C array conversions, which the AVX-512 set keeps. */
void half_widen_f16c(const uint16_t *s, float *d, int64_t n);
void half_narrow_f16c(const float *s, uint16_t *d, int64_t n);
#endif

#endif
