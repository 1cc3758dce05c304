/* half_avx2.c — half.c's bulk conversions with F16C (see half_impl.h):
 * FP16 rounding is VCVTPS2PH with round-to-nearest-even, then back (exact,
 * subnormals and inf included), eight at a time (half_avx512.c has the
 * 16-lane form); BF16 and TF32 stay the generic set's. The scalar path is the reference the tests compare it with. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include "tensor/half_impl.h"

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

/* float16 <-> float32 of whole tensors (the Casts of FP16-weight models and
 * the widening around every float16-typed layer): F16C, eight at a time,
 * with the scalar conversions' bits. Only a signalling NaN differs in
 * hardware (VCVTPH2PS sets its quiet bit, f16_to_f32 keeps the payload as
 * it is), so a block holding one is redone by the scalar path. */
__attribute__((target("avx,f16c"))) void half_widen_f16c(const uint16_t *s, float *d, int64_t n)
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

__attribute__((target("avx,f16c"))) void half_narrow_f16c(const float *s, uint16_t *d, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm_storeu_si128((__m128i *)(d + i), h);
    }
    for (; i < n; i++) d[i] = f32_to_f16(s[i]);
}

const half_arch_t half_arch_avx2 = {round_f16_f16c, half_widen_f16c, half_narrow_f16c, half_round_bf16_generic,
                                    half_round_tf32_generic};

#endif
