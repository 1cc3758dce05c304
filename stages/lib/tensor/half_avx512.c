/* half_avx512.c — half.c's FP16, BF16 and TF32 rounding on 16 lanes (see
 * half_impl.h); the float16 <-> float32 array conversions stay F16C's
 * (half_avx2.c). */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include "tensor/half_impl.h"

/* The same integer steps on 16 lanes (AVX-512): every BF16/TF32-stored
 * layer's output goes through these, so at AVX-512 they run four times
 * wider than the compiler's SSE2 loop (measured: BF16 emulation of the
 * 640 RT-DETR went from 1.12x to 1.05x of FP32). keep: the low bits that
 * survive (0xffff0000 for bfloat16, ~0x1fff for TF32); shift: the position
 * of the last kept bit; quiet: set the quiet bit of a NaN (bfloat16).
 * Round to nearest even on the bits is right for every value but a NaN
 * (an infinity stays one, the largest finite values carry into infinity
 * as IEEE rounding does): so the steps run on every lane, and only a
 * vector holding a NaN (rare: an unordered compare says) takes the NaN
 * rule, a branch instead of the blend every vector paid (bf16 emulation
 * of the 320 RT-DETR: the rounding 7.4% of its time before). */
#define ROUND_BITS(v) _mm512_and_si512(_mm512_add_epi32(_mm512_add_epi32(v, half), \
                                       _mm512_and_si512(_mm512_srli_epi32(v, (unsigned)shift), one)), k)
__attribute__((target("avx512f"))) static inline __m512i nan_rule(__m512i v, __m512i r, __m512i k, int quiet)
{
    __mmask16 nan = _mm512_cmp_ps_mask(_mm512_castsi512_ps(v), _mm512_castsi512_ps(v), _CMP_UNORD_Q);
    if (!nan) return r;
    /* a NaN: bfloat16 sets its quiet bit, then truncates; TF32 keeps it as it is */
    __m512i sp = quiet ? _mm512_and_si512(_mm512_or_si512(v, _mm512_set1_epi32(0x400000)), k) : v;
    return _mm512_mask_mov_epi32(r, nan, sp);
}

__attribute__((target("avx512f"))) static void round_bits_avx512(float *y, const float *x, int64_t n,
                                                                  uint32_t keep, int shift, int quiet)
{
    const __m512i k = _mm512_set1_epi32((int)keep), half = _mm512_set1_epi32((int)(~keep >> 1));
    const __m512i one = _mm512_set1_epi32(1);
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m512i a = _mm512_loadu_si512(x + i), b = _mm512_loadu_si512(x + i + 16);
        __m512i ra = nan_rule(a, ROUND_BITS(a), k, quiet), rb = nan_rule(b, ROUND_BITS(b), k, quiet);
        _mm512_storeu_si512(y + i, ra);
        _mm512_storeu_si512(y + i + 16, rb);
    }
    for (; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? 0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        __m512i v = _mm512_maskz_loadu_epi32(m, x + i);
        _mm512_mask_storeu_epi32(y + i, m, nan_rule(v, ROUND_BITS(v), k, quiet));
    }
}
#undef ROUND_BITS

/* FP16 storage rounding: VCVTPS2PH with round-to-nearest-even, then back,
 * as round_f16_f16c (half_avx2.c) does on 8 lanes; the 512-bit forms have the same
 * semantics (subnormals kept, overflow to inf, a NaN quieted with its top
 * payload bits kept), so the bits are the scalar f32_round_f16's
 * (tests/unit/half.c). Two vectors a step: Zen 4 splits a 512-bit
 * conversion in two, so one alone gains little over F16C; two in flight
 * measured 25% faster than the 8-lane loop on cached data and as fast as
 * a copy on uncached (issue 41: every FP16-stored layer's output goes
 * through here). The tail is one masked step. */
#define F16_RN (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
__attribute__((target("avx512f"))) static void round_f16_avx512(float *y, const float *x, int64_t n)
{
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256i a = _mm512_cvtps_ph(_mm512_loadu_ps(x + i), F16_RN);
        __m256i b = _mm512_cvtps_ph(_mm512_loadu_ps(x + i + 16), F16_RN);
        _mm512_storeu_ps(y + i, _mm512_cvtph_ps(a));
        _mm512_storeu_ps(y + i + 16, _mm512_cvtph_ps(b));
    }
    for (; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? 0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        __m256i h = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, x + i), F16_RN);
        _mm512_mask_storeu_ps(y + i, m, _mm512_cvtph_ps(h));
    }
}

static void round_bf16_avx512(float *y, const float *x, int64_t n) { round_bits_avx512(y, x, n, 0xffff0000u, 16, 1); }
static void round_tf32_avx512(float *y, const float *x, int64_t n) { round_bits_avx512(y, x, n, ~0x1fffu, 13, 0); }

const half_arch_t half_arch_avx512 = {round_f16_avx512, half_widen_f16c, half_narrow_f16c, round_bf16_avx512,
                                      round_tf32_avx512};

#endif
