/* half.c — float16 / bfloat16 / TF32 rounding by integer arithmetic on the
 * IEEE bit patterns (no reliance on the compiler's _Float16), and the bulk
 * forms over arrays: the portable set here, F16C in half_avx2.c, AVX-512
 * in half_avx512.c, picked by half_arch (half_impl.h). */
#include "tensor/half_impl.h"

uint16_t f32_to_f16(float f)
{
    uint32_t x = f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t exp = (x >> 23) & 0xffu;
    uint32_t man = x & 0x7fffffu;
    if (exp == 0xff) {                         /* inf or NaN: keep NaN quiet and non-zero */
        if (man) return (uint16_t)(sign | 0x7e00u | (man >> 13));
        return (uint16_t)(sign | 0x7c00u);
    }
    int e = (int)exp - 127 + 15;
    if (e >= 31) return (uint16_t)(sign | 0x7c00u);        /* overflow -> inf */
    if (e <= 0) {                                           /* subnormal or zero */
        if (e < -10) return (uint16_t)sign;                 /* below half the smallest subnormal */
        uint32_t m = man | 0x800000u;
        int shift = 14 - e;                                 /* 14..24 */
        uint32_t q = m >> shift;
        uint32_t rem = m & ((1u << shift) - 1);
        uint32_t halfway = 1u << (shift - 1);
        if (rem > halfway || (rem == halfway && (q & 1))) q++;
        return (uint16_t)(sign | q);                        /* q may carry into the exponent: correct */
    }
    uint32_t q = ((uint32_t)e << 10) | (man >> 13);
    uint32_t rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (q & 1))) q++; /* carry may reach inf: correct */
    return (uint16_t)(sign | q);
}

float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1f) return bits_f32(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        if (!man) return bits_f32(sign);
        int e = -1;                                 /* normalise the subnormal */
        do { man <<= 1; e++; } while (!(man & 0x400u));
        man &= 0x3ffu;
        return bits_f32(sign | ((uint32_t)(127 - 15 - e) << 23) | (man << 13));
    }
    return bits_f32(sign | ((exp + 127 - 15) << 23) | (man << 13));
}

uint16_t f32_to_bf16(float f)
{
    uint32_t x = f32_bits(f);
    if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu))
        return (uint16_t)((x >> 16) | 0x40u);       /* NaN stays NaN (quiet) */
    uint32_t lsb = (x >> 16) & 1u;
    x += 0x7fffu + lsb;                             /* RNE; overflow rounds to inf */
    return (uint16_t)(x >> 16);
}

float f32_round_tf32(float f)
{
    uint32_t x = f32_bits(f);
    if ((x & 0x7f800000u) == 0x7f800000u) return f;  /* inf, NaN unchanged */
    uint32_t lsb = (x >> 13) & 1u;
    x += 0xfffu + lsb;
    x &= ~0x1fffu;
    return bits_f32(x);
}

/* ---- the generic set: the reference every other set's bits follow ---- */

static void round_f16_scalar(float *y, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) y[i] = f32_round_f16(x[i]);
}

static void widen_scalar(const uint16_t *s, float *d, int64_t n)
{
    for (int64_t i = 0; i < n; i++) d[i] = f16_to_f32(s[i]);
}

static void narrow_scalar(const float *s, uint16_t *d, int64_t n)
{
    for (int64_t i = 0; i < n; i++) d[i] = f32_to_f16(s[i]);
}

/* Branch-free forms of f32_round_bf16 / f32_round_tf32 (the compiler
 * vectorises them); NaN and inf pass through unchanged. gcc vectorises
 * them at O3 only; clang has no optimize attribute and does it at O2. */
#if defined(__clang__)
#define OPT_O3
#else
#define OPT_O3 __attribute__((optimize("O3")))
#endif
OPT_O3 void half_round_bf16_generic(float *y, const float *x, int64_t n)
{
    const uint32_t *u = (const uint32_t *)x;
    uint32_t *w = (uint32_t *)y;
    for (int64_t i = 0; i < n; i++) {
        uint32_t v = u[i];
        uint32_t special = (v & 0x7f800000u) == 0x7f800000u;
        uint32_t r = (v + 0x7fffu + ((v >> 16) & 1u)) & 0xffff0000u;
        uint32_t nan = special && (v & 0x7fffffu) ? ((v | 0x400000u) & 0xffff0000u) : v;
        w[i] = special ? nan : r;
    }
}

OPT_O3 void half_round_tf32_generic(float *y, const float *x, int64_t n)
{
    const uint32_t *u = (const uint32_t *)x;
    uint32_t *w = (uint32_t *)y;
    for (int64_t i = 0; i < n; i++) {
        uint32_t v = u[i];
        uint32_t special = (v & 0x7f800000u) == 0x7f800000u;
        uint32_t r = (v + 0xfffu + ((v >> 13) & 1u)) & ~0x1fffu;
        w[i] = special ? v : r;
    }
}

const half_arch_t half_arch_generic = {round_f16_scalar, widen_scalar, narrow_scalar, half_round_bf16_generic,
                                       half_round_tf32_generic};

/* The one selection point of the bulk conversions (docs/design.md, "ISA dispatch"). */
static const half_arch_t *half_arch(void)
{
    return isa_pick(&half_arch_generic, ISA_TABLE(&half_arch_avx2), ISA_TABLE(&half_arch_avx512));
}

void f16_widen(const uint16_t *s, float *d, int64_t n) { half_arch()->widen(s, d, n); }
void f16_narrow(const float *s, uint16_t *d, int64_t n) { half_arch()->narrow(s, d, n); }
void round_f16_copy(float *y, const float *x, int64_t n) { half_arch()->round_f16(y, x, n); }
void round_bf16_copy(float *y, const float *x, int64_t n) { half_arch()->round_bf16(y, x, n); }
void round_tf32_copy(float *y, const float *x, int64_t n) { half_arch()->round_tf32(y, x, n); }
void round_f16_inplace(float *x, int64_t n) { round_f16_copy(x, x, n); }
void round_bf16_inplace(float *x, int64_t n) { round_bf16_copy(x, x, n); }
void round_tf32_inplace(float *x, int64_t n) { round_tf32_copy(x, x, n); }
