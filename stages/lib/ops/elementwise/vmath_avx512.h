/* vmath_avx512.h — vmath.c's exp and sigmoid on 16 lanes, for vmath.c's
 * array forms and fgemm_avx512.c's tile epilogue (Sigmoid and SiLU applied
 * in registers). A transcription of the scalar code in vmath.c, as the AVX2
 * form is: fmaf for each vfmadd, MINPS/MAXPS operand order for the clamps,
 * the same integer bit tricks (but one VSCALEFPS for the scaling by 2^k:
 * see v16_exp_clamped), a NaN input returned quieted; so every lane has
 * the scalar function's bits (tests/unit/vmath.c). Include it from x86-64
 * code only. */
#ifndef PARITY_VMATH_AVX512_H
#define PARITY_VMATH_AVX512_H

#include <immintrin.h>
#include "ops/elementwise/vmath_consts.h"

#define V16 __attribute__((target("avx512f")))

V16 static inline __m512 v16_nan_fix(__m512 x, __m512 y)
{
    __m512 q = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x00400000)));
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), y, q);
}

/* exp of xc, already clamped to [EXP_LO, EXP_HI], NaN not fixed. The
 * scalar code scales p by 2^k as (p 2^k1) 2^k2 with k1 = k >> 1; p is in
 * [0.7, 1.5] and k1 >= -75, so p 2^k1 is a normal float, exact, and the
 * one rounding is that of p 2^k -- which VSCALEFPS does in one
 * instruction (no DAZ or FTZ is ever set): the same bits. */
V16 static inline __m512 v16_exp_clamped(__m512 xc)
{
    const __m512 sh = _mm512_set1_ps(SHIFTER);
    __m512 t = _mm512_fmadd_ps(xc, _mm512_set1_ps(LOG2E), sh);
    __m512 kf = _mm512_sub_ps(t, sh);
    __m512 r = _mm512_fmadd_ps(kf, _mm512_set1_ps(-LN2_HI), xc);
    r = _mm512_fmadd_ps(kf, _mm512_set1_ps(-LN2_LO), r);
    __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(C6), r, _mm512_set1_ps(C5));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(C4));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(C3));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(C2));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(C1));
    __m512 u = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(u, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, kf);
}

V16 static inline __m512 v16_exp(__m512 x)
{
    __m512 xc = _mm512_max_ps(_mm512_set1_ps(EXP_LO), _mm512_min_ps(_mm512_set1_ps(EXP_HI), x));
    return v16_nan_fix(x, v16_exp_clamped(xc));
}

/* exp(-|x|) needs no upper clamp (-|x| <= 0 < EXP_HI; MINPS would return
 * the NaN anyway), and no NaN fix of its own: the quotient's covers it. */
V16 static inline __m512 v16_sigmoid(__m512 x)
{
    const __m512 one = _mm512_set1_ps(1.0f);
    __m512 neg = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(x), _mm512_set1_epi32((int)SIGN)));
    __m512 e = v16_exp_clamped(_mm512_max_ps(_mm512_set1_ps(EXP_LO), neg));
    __m512 num = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ), one, e);
    return v16_nan_fix(x, _mm512_div_ps(num, _mm512_add_ps(one, e)));
}

#endif
