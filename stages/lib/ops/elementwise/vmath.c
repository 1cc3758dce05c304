/* vmath.c — the vectorised float32 math of vmath.h: exp, sigmoid, tanh,
 * erf and the softmax row pieces, for the activation, unary, softmax and
 * Gelu kernels.
 *
 * exp(x): x is clamped to [-104, 89] (beyond them the result is 0 or inf
 * anyway), k = nearest integer to x*log2(e) (fused multiply-add onto a
 * 1.5*2^23 shifter, so the integer lands in the low mantissa bits),
 * r = x - k*ln2 in two fused steps (|r| <= ln2/2), e^r = 1 + r*u(r) with
 * Cephes' degree-6 minimax polynomial in Horner form (all fmaf), then scaled
 * by 2^k as two multiplications by 2^(k/2) and 2^(k - k/2): each factor is
 * a normal float, the first product is exact, and the second rounds once,
 * so results that overflow become inf and subnormal results are rounded
 * correctly with no special case. expm1 for x <= 0 reuses u: 2^k*(r*u) +
 * (2^k - 1), exact near 0, which keeps tanh's relative accuracy at small x.
 *
 * Same bits everywhere: the AVX2 code (and vmath_avx512.h's exp and
 * sigmoid) is a line-by-line transcription of
 * the scalar code (min/max written with the MINPS/MAXPS operand rule, fmaf
 * for each vfmadd, negations as sign-bit flips, the same integer bit
 * tricks, a NaN input returned quieted as it is), and the vector loops pad
 * a short tail into a full vector rather than finishing it with scalar code.
 * tests/unit/vmath.c checks the two agree bit for bit.
 *
 * This file holds the scalar reference and the generic set; the vector sets
 * are vmath_avx2.c and vmath_avx512.c, picked by vmath_arch (vmath_impl.h). */
#include <math.h>
#include <string.h>
#include "ops/elementwise/vmath_impl.h"
#include "ops/elementwise/vmath_consts.h"

static inline uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
/* A NaN input gives that NaN, quieted: set here rather than left to the
 * arithmetic, where the NaN an instruction passes on when several operands
 * are NaN depends on operand order the compiler is free to choose. */
static inline float nan_fix(float x, float y) { return x != x ? u2f(f2u(x) | 0x00400000u) : y; }
/* 2^k for -126 <= k <= 127 */
static inline float pow2i(int32_t k) { return u2f((uint32_t)(k + 127) << 23); }

/* Reduction shared by exp and expm1: returns r, sets *k and *u. */
static inline float exp_reduce(float xc, int32_t *k, float *u)
{
    float t = fmaf(xc, LOG2E, SHIFTER);
    float kf = t - SHIFTER;
    *k = (int32_t)(f2u(t) - f2u(SHIFTER));
    float r = fmaf(kf, -LN2_HI, xc);
    r = fmaf(kf, -LN2_LO, r);
    float p = fmaf(C6, r, C5);
    p = fmaf(p, r, C4);
    p = fmaf(p, r, C3);
    p = fmaf(p, r, C2);
    p = fmaf(p, r, C1);
    *u = fmaf(p, r, 1.0f);
    return r;
}

float vm_expf(float x)
{
    float xc = max_ps1(EXP_LO, min_ps1(EXP_HI, x));
    int32_t k;
    float u, r = exp_reduce(xc, &k, &u);
    float p = fmaf(u, r, 1.0f);
    int32_t k1 = k >> 1, k2 = k - k1;
    return nan_fix(x, (p * pow2i(k1)) * pow2i(k2));
}

/* expm1 for x <= 0 (or NaN). */
static inline float expm1_neg(float x)
{
    float xc = max_ps1(EXPM1_LO, x);
    int32_t k;
    float u, r = exp_reduce(xc, &k, &u);
    float q = u * r;
    float s = pow2i(k);
    return fmaf(s, q, s - 1.0f);
}

float vm_sigmoidf(float x)
{
    float e = vm_expf(u2f(f2u(x) | SIGN));      /* exp(-|x|) */
    float num = x < 0.0f ? e : 1.0f;
    return nan_fix(x, num / (1.0f + e));
}

float vm_tanhf(float x)
{
    float a = u2f(f2u(x) & ~SIGN);
    float t = expm1_neg(a * -2.0f);               /* in (-1, 0] */
    float y = -t / (2.0f + t);
    return nan_fix(x, u2f((f2u(y) & ~SIGN) | (f2u(x) & SIGN)));
}

/* Both regions as the vector code has them; in the outer one a*a = h + l
 * exactly, and exp(-a*a) = exp(-h) * (1 - l) to float precision. */
float vm_erff(float x)
{
    float a = u2f(f2u(x) & ~SIGN);
    float t = x * x;
    float pa = ERF_PA[6];
    for (int k = 5; k >= 0; k--) pa = fmaf(pa, t, ERF_PA[k]);
    if (a < ERF_A) return fmaf(x, pa, x);
    float ac = min_ps1(4.0f, a);
    float h = ac * ac, l = fmaf(ac, ac, -h);
    float e = vm_expf(-h);
    e = fmaf(-e, l, e);
    float u = 1.0f / ac;
    float pb = ERF_PB[10];
    for (int k = 9; k >= 0; k--) pb = fmaf(pb, u, ERF_PB[k]);
    float y = fmaf(-e, pb, 1.0f);
    return nan_fix(x, u2f(f2u(y) | (f2u(x) & SIGN)));
}

/* ---- scalar array forms: the generic set (vmath_impl.h) ---- */

static void exp_scalar(const float *x, float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++) y[i] = vm_expf(x[i]);
}
static void sigmoid_scalar(const float *x, float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++) y[i] = vm_sigmoidf(x[i]);
}
static void silu_scalar(const float *x, float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++) y[i] = x[i] * vm_sigmoidf(x[i]);
}
static void tanh_scalar(const float *x, float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++) y[i] = vm_tanhf(x[i]);
}
static void erf_scalar(const float *x, float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++) y[i] = vm_erff(x[i]);
}

/* Max with the vector code's lane structure (vmath_impl.h's fold_max). */
static float max_scalar(const float *x, int64_t n)
{
    float lane[8];
    int nan = 0;
    for (int l = 0; l < 8; l++) lane[l] = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        nan |= x[i] != x[i];
        lane[i & 7] = max_ps1(lane[i & 7], x[i]);
    }
    return nan ? first_nan(x, n) : fold_max(lane);
}

static void max_acc_scalar(float *m, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) m[i] = max_acc1(m[i], x[i]);
}

static double exp_shift_sum_scalar(const float *x, float m, float *y, int64_t n)
{
    double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    for (; i < n; i++) {
        float e = vm_expf(x[i] - m);
        if (y) y[i] = e;
        acc[i & 7] += e;
    }
    if (n & 7) {
        /* the vector code's padding: -inf - m, whose exp is 0 or NaN */
        float pad = vm_expf(-INFINITY - m);
        for (; i & 7; i++) acc[i & 7] += pad;
    }
    return fold_sum(acc);
}

static void scale_scalar(float *y, int64_t n, double s)
{
    for (int64_t i = 0; i < n; i++) y[i] = scale1(y[i], s);
}

static void binary_scalar(vm_binop_t op, const float *a, int sa, const float *b, int sb, float *o, int64_t n)
{
    vm_binary1_from(op, a, sa, b, sb, o, 0, n);
}

const vmath_arch_t vmath_arch_generic = {
    .exp = exp_scalar, .sigmoid = sigmoid_scalar, .silu = silu_scalar, .tanh = tanh_scalar, .erf = erf_scalar,
    .max = max_scalar, .max_acc = max_acc_scalar, .exp_shift_sum = exp_shift_sum_scalar, .scale = scale_scalar,
    .binary = binary_scalar,
};

/* The one selection point of vmath (docs/design.md, "ISA dispatch"). */
const vmath_arch_t *vmath_arch(void)
{
    return isa_pick(&vmath_arch_generic, ISA_TABLE(&vmath_arch_avx2), ISA_TABLE(&vmath_arch_avx512));
}

void vm_exp_f32(const float *x, float *y, int64_t n) { vmath_arch()->exp(x, y, n); }
void vm_sigmoid_f32(const float *x, float *y, int64_t n) { vmath_arch()->sigmoid(x, y, n); }
void vm_silu_f32(const float *x, float *y, int64_t n) { vmath_arch()->silu(x, y, n); }
void vm_tanh_f32(const float *x, float *y, int64_t n) { vmath_arch()->tanh(x, y, n); }
void vm_erf_f32(const float *x, float *y, int64_t n) { vmath_arch()->erf(x, y, n); }
float vm_max_f32(const float *x, int64_t n) { return vmath_arch()->max(x, n); }
double vm_exp_shift_sum_f32(const float *x, float m, float *y, int64_t n)
{
    double s = vmath_arch()->exp_shift_sum(x, m, y, n);
    return s == s ? s : NAN;     /* which NaN the adds pass on is the compiler's choice */
}
void vm_scale_f32(float *y, int64_t n, double s) { vmath_arch()->scale(y, n, s); }
void vm_max_acc_f32(float *m, const float *x, int64_t n) { vmath_arch()->max_acc(m, x, n); }
void vm_binary_f32(vm_binop_t op, const float *a, int sa, const float *b, int sb, float *o, int64_t n)
{
    vmath_arch()->binary(op, a, sa, b, sb, o, n);
}
vm_binary_fn vm_binary_f32_form(void) { return vmath_arch()->binary; }
