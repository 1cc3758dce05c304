/* vmath_consts.h — the constants of vmath.c's exp (range, reduction,
 * polynomial), shared with vmath_avx512.h so the scalar, AVX2 and AVX-512
 * forms read the very same numbers. */
#ifndef PARITY_VMATH_CONSTS_H
#define PARITY_VMATH_CONSTS_H

#define EXP_HI 89.0f
#define EXP_LO -104.0f
#define EXPM1_LO -30.0f               /* expm1(-30) = -1 in float */
#define LOG2E 0x1.715476p+0f
#define SHIFTER 0x1.8p23f
#define LN2_HI 0x1.62e430p-1f
#define LN2_LO -0x1.05c610p-29f
/* e^r = 1 + r*u(r), u = 1 + r*(1/2 + r*(C3 + r*(C4 + r*(C5 + r*C6)))) */
#define C6 1.9875691500e-4f
#define C5 1.3981999507e-3f
#define C4 8.3334519073e-3f
#define C3 4.1665795894e-2f
#define C2 1.6666665459e-1f
#define C1 5.0000001201e-1f
#define SIGN 0x80000000u

#endif
