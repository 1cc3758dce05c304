/* half.c — float16 / bfloat16 / TF32 rounding by integer arithmetic on the
 * IEEE bit patterns (no reliance on the compiler's _Float16). */
#include "tensor/half.h"
#include "util/isa.h"

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

/* Bulk rounding runs on every FP16/BF16 layer output, so it must be cheap.
 * FP16 uses the F16C instructions where the CPU has them (VCVTPS2PH with
 * round-to-nearest-even, then back: exact, subnormals and inf included);
 * the scalar path is the reference the tests compare it with. */
#if defined(__x86_64__)
#include <immintrin.h>

__attribute__((target("avx,f16c"))) static void round_f16_f16c(float *y, const float *x, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        /* a NaN stays NaN (quiet): the hardware keeps NaNs NaN */
        __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm256_storeu_ps(y + i, _mm256_cvtph_ps(h));
    }
    for (; i < n; i++) y[i] = f32_round_f16(x[i]);
}

/* F16C is part of the AVX2 level (util/isa.h), so PARITY_ISA=generic turns it off. */
static int have_f16c(void) { return isa_active() >= ISA_AVX2; }

/* float16 <-> float32 of whole tensors (the Casts of FP16-weight models and
 * the widening around every float16-typed layer): F16C, eight at a time,
 * with the scalar conversions' bits. Only a signalling NaN differs in
 * hardware (VCVTPH2PS sets its quiet bit, f16_to_f32 keeps the payload as
 * it is), so a block holding one is redone by the scalar path. */
__attribute__((target("avx,f16c"))) static void f16_widen_f16c(const uint16_t *s, float *d, int64_t n)
{
    int64_t i = 0;
    const __m128i expo = _mm_set1_epi16(0x7c00), quiet = _mm_set1_epi16(0x7e00);
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(s + i));
        /* a signalling NaN: exponent all ones, quiet bit clear, payload non-zero */
        __m128i sn = _mm_andnot_si128(_mm_cmpeq_epi16(_mm_and_si128(h, quiet), quiet),
                                      _mm_cmpeq_epi16(_mm_and_si128(h, expo), expo));
        sn = _mm_andnot_si128(_mm_cmpeq_epi16(_mm_and_si128(h, _mm_set1_epi16(0x3ff)), _mm_setzero_si128()), sn);
        if (_mm_movemask_epi8(sn)) {
            for (int k = 0; k < 8; k++) d[i + k] = f16_to_f32(s[i + k]);
            continue;
        }
        _mm256_storeu_ps(d + i, _mm256_cvtph_ps(h));
    }
    for (; i < n; i++) d[i] = f16_to_f32(s[i]);
}

__attribute__((target("avx,f16c"))) static void f16_narrow_f16c(const float *s, uint16_t *d, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm_storeu_si128((__m128i *)(d + i), h);
    }
    for (; i < n; i++) d[i] = f32_to_f16(s[i]);
}
#endif

void f16_widen(const uint16_t *s, float *d, int64_t n)
{
#if defined(__x86_64__)
    if (have_f16c()) {
        f16_widen_f16c(s, d, n);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++) d[i] = f16_to_f32(s[i]);
}

void f16_narrow(const float *s, uint16_t *d, int64_t n)
{
#if defined(__x86_64__)
    if (have_f16c()) {
        f16_narrow_f16c(s, d, n);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++) d[i] = f32_to_f16(s[i]);
}

void round_f16_copy(float *y, const float *x, int64_t n)
{
#if defined(__x86_64__)
    if (have_f16c()) {
        round_f16_f16c(y, x, n);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++) y[i] = f32_round_f16(x[i]);
}

/* Branch-free forms of f32_round_bf16 / f32_round_tf32 (the compiler
 * vectorises them); NaN and inf pass through unchanged. gcc vectorises
 * them at O3 only; clang has no optimize attribute and does it at O2. */
#if defined(__clang__)
#define OPT_O3
#else
#define OPT_O3 __attribute__((optimize("O3")))
#endif
#if defined(__x86_64__)
/* The same integer steps on 16 lanes (AVX-512): every BF16/TF32-stored
 * layer's output goes through these, so at AVX-512 they run four times
 * wider than the compiler's SSE2 loop (measured: BF16 emulation of the
 * 640 RT-DETR went from 1.12x to 1.05x of FP32). keep: the low bits that
 * survive (0xffff0000 for bfloat16, ~0x1fff for TF32); shift: the position
 * of the last kept bit; quiet: set the quiet bit of a NaN (bfloat16). */
__attribute__((target("avx512f"))) static void round_bits_avx512(float *y, const float *x, int64_t n,
                                                                  uint32_t keep, int shift, int quiet)
{
    const __m512i expo = _mm512_set1_epi32(0x7f800000), mant = _mm512_set1_epi32(0x7fffff);
    const __m512i k = _mm512_set1_epi32((int)keep), half = _mm512_set1_epi32((int)(~keep >> 1));
    const __m512i one = _mm512_set1_epi32(1), qbit = _mm512_set1_epi32(0x400000);
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? 0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        __m512i v = _mm512_maskz_loadu_epi32(m, x + i);
        __mmask16 special = _mm512_cmpeq_epi32_mask(_mm512_and_si512(v, expo), expo);
        __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(v, (unsigned)shift), one);
        __m512i r = _mm512_and_si512(_mm512_add_epi32(_mm512_add_epi32(v, half), lsb), k);
        __m512i sp = v;
        if (quiet) {   /* a NaN: quiet bit set, then truncated; an infinity stays */
            __mmask16 nan = _mm512_mask_test_epi32_mask(special, v, mant);
            sp = _mm512_mask_mov_epi32(v, nan, _mm512_and_si512(_mm512_or_si512(v, qbit), k));
        }
        _mm512_mask_storeu_epi32(y + i, m, _mm512_mask_mov_epi32(r, special, sp));
    }
}
static int have_avx512(void) { return isa_active() >= ISA_AVX512; }
#endif

OPT_O3 void round_bf16_copy(float *y, const float *x, int64_t n)
{
#if defined(__x86_64__)
    if (have_avx512()) {
        round_bits_avx512(y, x, n, 0xffff0000u, 16, 1);
        return;
    }
#endif
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

OPT_O3 void round_tf32_copy(float *y, const float *x, int64_t n)
{
#if defined(__x86_64__)
    if (have_avx512()) {
        round_bits_avx512(y, x, n, ~0x1fffu, 13, 0);
        return;
    }
#endif
    const uint32_t *u = (const uint32_t *)x;
    uint32_t *w = (uint32_t *)y;
    for (int64_t i = 0; i < n; i++) {
        uint32_t v = u[i];
        uint32_t special = (v & 0x7f800000u) == 0x7f800000u;
        uint32_t r = (v + 0xfffu + ((v >> 13) & 1u)) & ~0x1fffu;
        w[i] = special ? v : r;
    }
}

void round_f16_inplace(float *x, int64_t n) { round_f16_copy(x, x, n); }
void round_bf16_inplace(float *x, int64_t n) { round_bf16_copy(x, x, n); }
void round_tf32_inplace(float *x, int64_t n) { round_tf32_copy(x, x, n); }
