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
 * tests/unit/vmath.c checks the two agree bit for bit. */
#include <math.h>
#include <string.h>
#include "ops/elementwise/vmath.h"
#include "util/isa.h"

#include "ops/elementwise/vmath_consts.h"

/* erf: |x| < ERF_A: x + x * PA(x^2), PA fitting erf(x)/x - 1; else
 * 1 - exp(-x^2) * PB(1/|x|), PB fitting erfc(x) * exp(x^2), with |x|
 * clamped to 4 (erf is 1 in float there). Least-squares fits on Chebyshev
 * nodes, Lawson-weighted toward minimax: relative errors 1.2e-9 and 2.2e-9
 * before the coefficients are rounded to float. */
#define ERF_A 1.0f
static const float ERF_PA[7] = {
    0x1.06eba8p-3f, -0x1.81273ep-2f, 0x1.ce2cf8p-4f, -0x1.b7f90ep-6f, 0x1.5405b2p-8f,
    -0x1.a3f7p-11f, 0x1.496a3p-14f
};
static const float ERF_PB[11] = {
    0x1.f5b576p-16f, 0x1.209548p-1f, 0x1.e9073cp-9f, -0x1.27cb3ep-2f, -0x1.d4b8dp-5f,
    0x1.bf06e4p-1f, -0x1.7c25f8p+0f, 0x1.629f5ep+0f, -0x1.926b16p-1f, 0x1.05b9bap-2f,
    -0x1.2d04bcp-5f
};

static inline uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
/* MINPS / MAXPS: the second operand when the comparison is false (NaN). */
static inline float min_ps1(float a, float b) { return a < b ? a : b; }
static inline float max_ps1(float a, float b) { return a > b ? a : b; }
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

/* ---- scalar array forms (fallback) ---- */

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

/* Max with the vector code's lane structure: lane l holds the MAXPS-style
 * maximum of elements i = l mod 8 (the tail padded with -inf), lanes folded
 * in order. A NaN anywhere: the first NaN. */
static float fold_max(const float lane[8])
{
    float m = lane[0];
    for (int l = 1; l < 8; l++) m = max_ps1(m, lane[l]);
    return m;
}
static float first_nan(const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (x[i] != x[i]) return x[i];
    return NAN;
}
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

static inline float max_acc1(float m, float x) { return m == m && (x > m || x != x) ? x : m; }
static void max_acc_scalar(float *m, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) m[i] = max_acc1(m[i], x[i]);
}

static double fold_sum(const double a[8])
{
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
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

/* y * s in double, rounded once. When both are NaN the product is y's
 * NaN, as MULPD's first operand: written out, because the compiler may
 * swap the operands of a plain product. */
static inline float scale1(float y, double s) { return y != y ? y : (float)((double)y * s); }

static void scale_scalar(float *y, int64_t n, double s)
{
    for (int64_t i = 0; i < n; i++) y[i] = scale1(y[i], s);
}

/* ---- AVX2 + FMA ---- */

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include "ops/elementwise/vmath_avx512.h"
#define VT __attribute__((target("avx2,fma")))

VT static inline __m256 v_nan_fix(__m256 x, __m256 y)
{
    __m256 q = _mm256_or_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(0x00400000)));
    return _mm256_blendv_ps(y, q, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

VT static inline __m256 v_reduce(__m256 xc, __m256i *k, __m256 *u)
{
    const __m256 sh = _mm256_set1_ps(SHIFTER);
    __m256 t = _mm256_fmadd_ps(xc, _mm256_set1_ps(LOG2E), sh);
    __m256 kf = _mm256_sub_ps(t, sh);
    *k = _mm256_sub_epi32(_mm256_castps_si256(t), _mm256_castps_si256(sh));
    __m256 r = _mm256_fmadd_ps(kf, _mm256_set1_ps(-LN2_HI), xc);
    r = _mm256_fmadd_ps(kf, _mm256_set1_ps(-LN2_LO), r);
    __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(C6), r, _mm256_set1_ps(C5));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(C4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(C3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(C2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(C1));
    *u = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    return r;
}

VT static inline __m256 v_pow2i(__m256i k)
{
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k, _mm256_set1_epi32(127)), 23));
}

VT static inline __m256 v_exp(__m256 x)
{
    __m256 xc = _mm256_max_ps(_mm256_set1_ps(EXP_LO), _mm256_min_ps(_mm256_set1_ps(EXP_HI), x));
    __m256i k;
    __m256 u, r = v_reduce(xc, &k, &u);
    __m256 p = _mm256_fmadd_ps(u, r, _mm256_set1_ps(1.0f));
    __m256i k1 = _mm256_srai_epi32(k, 1), k2 = _mm256_sub_epi32(k, k1);
    return v_nan_fix(x, _mm256_mul_ps(_mm256_mul_ps(p, v_pow2i(k1)), v_pow2i(k2)));
}

VT static inline __m256 v_expm1_neg(__m256 x)
{
    __m256 xc = _mm256_max_ps(_mm256_set1_ps(EXPM1_LO), x);
    __m256i k;
    __m256 u, r = v_reduce(xc, &k, &u);
    __m256 q = _mm256_mul_ps(u, r);
    __m256 s = v_pow2i(k);
    return _mm256_fmadd_ps(s, q, _mm256_sub_ps(s, _mm256_set1_ps(1.0f)));
}

VT static inline __m256 v_sigmoid(__m256 x)
{
    const __m256 sign = _mm256_castsi256_ps(_mm256_set1_epi32((int)SIGN));
    const __m256 one = _mm256_set1_ps(1.0f);
    __m256 e = v_exp(_mm256_or_ps(x, sign));
    __m256 neg = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
    __m256 num = _mm256_blendv_ps(one, e, neg);
    return v_nan_fix(x, _mm256_div_ps(num, _mm256_add_ps(one, e)));
}

VT static inline __m256 v_tanh(__m256 x)
{
    const __m256 sign = _mm256_castsi256_ps(_mm256_set1_epi32((int)SIGN));
    __m256 a = _mm256_andnot_ps(sign, x);
    __m256 t = v_expm1_neg(_mm256_mul_ps(a, _mm256_set1_ps(-2.0f)));
    __m256 y = _mm256_div_ps(_mm256_xor_ps(t, sign), _mm256_add_ps(_mm256_set1_ps(2.0f), t));
    return v_nan_fix(x, _mm256_or_ps(_mm256_andnot_ps(sign, y), _mm256_and_ps(sign, x)));
}

VT static inline __m256 v_erf(__m256 x)
{
    const __m256 sign = _mm256_castsi256_ps(_mm256_set1_epi32((int)SIGN));
    __m256 a = _mm256_andnot_ps(sign, x);
    __m256 t = _mm256_mul_ps(x, x);
    __m256 pa = _mm256_set1_ps(ERF_PA[6]);
    for (int k = 5; k >= 0; k--) pa = _mm256_fmadd_ps(pa, t, _mm256_set1_ps(ERF_PA[k]));
    __m256 ya = _mm256_fmadd_ps(x, pa, x);
    __m256 ac = _mm256_min_ps(_mm256_set1_ps(4.0f), a);
    __m256 h = _mm256_mul_ps(ac, ac), l = _mm256_fmsub_ps(ac, ac, h);
    __m256 e = v_exp(_mm256_xor_ps(h, sign));
    e = _mm256_fmadd_ps(_mm256_xor_ps(e, sign), l, e);     /* -e as the scalar code: NaN sign too */
    __m256 u = _mm256_div_ps(_mm256_set1_ps(1.0f), ac);
    __m256 pb = _mm256_set1_ps(ERF_PB[10]);
    for (int k = 9; k >= 0; k--) pb = _mm256_fmadd_ps(pb, u, _mm256_set1_ps(ERF_PB[k]));
    __m256 yb = _mm256_fmadd_ps(_mm256_xor_ps(e, sign), pb, _mm256_set1_ps(1.0f));
    yb = _mm256_or_ps(yb, _mm256_and_ps(sign, x));
    return v_nan_fix(x, _mm256_blendv_ps(yb, ya, _mm256_cmp_ps(a, _mm256_set1_ps(ERF_A), _CMP_LT_OQ)));
}

/* Applies F to x[0, n) into y, the tail through a padded vector. */
#define V_MAP(F, x, y, n) do {                                                  \
        int64_t i_ = 0;                                                         \
        for (; i_ + 8 <= (n); i_ += 8)                                          \
            _mm256_storeu_ps((y) + i_, F(_mm256_loadu_ps((x) + i_)));           \
        if (i_ < (n)) {                                                         \
            float b_[8] = {0, 0, 0, 0, 0, 0, 0, 0};                             \
            memcpy(b_, (x) + i_, (size_t)((n) - i_) * sizeof(float));           \
            _mm256_storeu_ps(b_, F(_mm256_loadu_ps(b_)));                       \
            memcpy((y) + i_, b_, (size_t)((n) - i_) * sizeof(float));           \
        }                                                                       \
    } while (0)

VT static void exp_avx2(const float *x, float *y, int64_t n) { V_MAP(v_exp, x, y, n); }
VT static void sigmoid_avx2(const float *x, float *y, int64_t n) { V_MAP(v_sigmoid, x, y, n); }
VT static inline __m256 v_silu(__m256 x) { return _mm256_mul_ps(x, v_sigmoid(x)); }
VT static void silu_avx2(const float *x, float *y, int64_t n) { V_MAP(v_silu, x, y, n); }
VT static void tanh_avx2(const float *x, float *y, int64_t n) { V_MAP(v_tanh, x, y, n); }
VT static void erf_avx2(const float *x, float *y, int64_t n) { V_MAP(v_erf, x, y, n); }

/* The first 8*floor(n/8) elements in vectors, then a padded vector. */
VT static float max_avx2(const float *x, int64_t n)
{
    __m256 m = _mm256_set1_ps(-INFINITY), nan = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
        m = _mm256_max_ps(m, v);
    }
    if (i < n) {
        float b[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
        memcpy(b, x + i, (size_t)(n - i) * sizeof(float));
        __m256 v = _mm256_loadu_ps(b);
        nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
        m = _mm256_max_ps(m, v);
    }
    if (_mm256_movemask_ps(nan)) return first_nan(x, n);
    float lane[8];
    _mm256_storeu_ps(lane, m);
    return fold_max(lane);
}

VT static void max_acc_avx2(float *m, const float *x, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 vm = _mm256_loadu_ps(m + i), vx = _mm256_loadu_ps(x + i);
        __m256 take = _mm256_or_ps(_mm256_cmp_ps(vx, vm, _CMP_GT_OQ), _mm256_cmp_ps(vx, vx, _CMP_UNORD_Q));
        take = _mm256_andnot_ps(_mm256_cmp_ps(vm, vm, _CMP_UNORD_Q), take);
        _mm256_storeu_ps(m + i, _mm256_blendv_ps(vm, vx, take));
    }
    for (; i < n; i++) m[i] = max_acc1(m[i], x[i]);   /* a selection: same bits */
}

VT static inline void v_acc(__m256 e, __m256d *lo, __m256d *hi)
{
    *lo = _mm256_add_pd(*lo, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
    *hi = _mm256_add_pd(*hi, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
}

VT static double exp_shift_sum_avx2(const float *x, float m, float *y, int64_t n)
{
    __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
    const __m256 vm = _mm256_set1_ps(m);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 e = v_exp(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
        if (y) _mm256_storeu_ps(y + i, e);
        v_acc(e, &lo, &hi);
    }
    if (i < n) {
        float b[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
        memcpy(b, x + i, (size_t)(n - i) * sizeof(float));
        __m256 e = v_exp(_mm256_sub_ps(_mm256_loadu_ps(b), vm));
        _mm256_storeu_ps(b, e);
        if (y) memcpy(y + i, b, (size_t)(n - i) * sizeof(float));
        v_acc(e, &lo, &hi);
    }
    double a[8];
    _mm256_storeu_pd(a, lo);
    _mm256_storeu_pd(a + 4, hi);
    return fold_sum(a);
}

VT static void scale_avx2(float *y, int64_t n, double s)
{
    const __m256d vs = _mm256_set1_pd(s);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256d v = _mm256_cvtps_pd(_mm_loadu_ps(y + i));
        /* NaN lanes keep y's NaN (scale1): the blend, not operand order, decides */
        __m256d p = _mm256_blendv_pd(_mm256_mul_pd(v, vs), v, _mm256_cmp_pd(v, v, _CMP_UNORD_Q));
        _mm_storeu_ps(y + i, _mm256_cvtpd_ps(p));
    }
    for (; i < n; i++) y[i] = scale1(y[i], s);   /* same bits as the vector lanes */
}

/* ---- AVX-512 (exp and sigmoid: the softmax and SiLU layers' share) ---- */

#define V16_MAP(F, x, y, n) do {                                                \
        int64_t i_ = 0;                                                         \
        for (; i_ + 16 <= (n); i_ += 16)                                        \
            _mm512_storeu_ps((y) + i_, F(_mm512_loadu_ps((x) + i_)));           \
        if (i_ < (n)) {                                                         \
            __mmask16 m_ = (__mmask16)((1u << ((n) - i_)) - 1);                 \
            _mm512_mask_storeu_ps((y) + i_, m_, F(_mm512_maskz_loadu_ps(m_, (x) + i_))); \
        }                                                                       \
    } while (0)

V16 static void exp_avx512(const float *x, float *y, int64_t n) { V16_MAP(v16_exp, x, y, n); }
V16 static void sigmoid_avx512(const float *x, float *y, int64_t n) { V16_MAP(v16_sigmoid, x, y, n); }
V16 static inline __m512 v16_silu(__m512 x) { return _mm512_mul_ps(x, v16_sigmoid(x)); }
V16 static void silu_avx512(const float *x, float *y, int64_t n) { V16_MAP(v16_silu, x, y, n); }

/* The softmax row pieces with the AVX2 forms' lane structure (eight
 * partial maxima and sums, element i in partial i % 8): each 16-lane
 * vector is two such groups of 8, folded in the order the AVX2 loop
 * takes them, so the bits are the scalar forms'. */
V16 static float max_avx512(const float *x, int64_t n)
{
    __m256 m = _mm256_set1_ps(-INFINITY);
    __mmask16 nan = 0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
        m = _mm256_max_ps(m, _mm512_castps512_ps256(v));
        m = _mm256_max_ps(m, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    }
    if (i < n) {   /* the tail under a mask, -inf past it: max_ps1(m, -inf) is m, so each lane takes max_scalar's steps */
        __mmask16 mk = (__mmask16)((1u << (n - i)) - 1);
        __m512 v = _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), mk, x + i);
        nan |= _mm512_mask_cmp_ps_mask(mk, v, v, _CMP_UNORD_Q);
        m = _mm256_max_ps(m, _mm512_castps512_ps256(v));
        m = _mm256_max_ps(m, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    }
    if (nan) return first_nan(x, n);
    float lane[8];
    _mm256_storeu_ps(lane, m);
    return fold_max(lane);
}

V16 static double exp_shift_sum_avx512(const float *x, float m, float *y, int64_t n)
{
    __m512d acc = _mm512_setzero_pd();
    const __m512 vm = _mm512_set1_ps(m);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 e = v16_exp(_mm512_sub_ps(_mm512_loadu_ps(x + i), vm));
        if (y) _mm512_storeu_ps(y + i, e);
        acc = _mm512_add_pd(acc, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
        acc = _mm512_add_pd(acc, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
    }
    if (i < n) {   /* the tail padded with -inf, as the AVX2 form's last vector(s) */
        __mmask16 mk = (__mmask16)((1u << (n - i)) - 1);
        __m512 e = v16_exp(_mm512_sub_ps(_mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), mk, x + i), vm));
        if (y) _mm512_mask_storeu_ps(y + i, mk, e);
        acc = _mm512_add_pd(acc, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
        if (n - i > 8)
            acc = _mm512_add_pd(acc, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
    }
    double a[8];
    _mm512_storeu_pd(a, acc);
    return fold_sum(a);
}

V16 static void scale_avx512(float *y, int64_t n, double s)
{
    const __m512d vs = _mm512_set1_pd(s);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m512d v = _mm512_cvtps_pd(_mm256_loadu_ps(y + i));
        __m512d p = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(v, v, _CMP_UNORD_Q), _mm512_mul_pd(v, vs), v);
        _mm256_storeu_ps(y + i, _mm512_cvtpd_ps(p));
    }
    if (i < n) {   /* the last lanes under a mask: each lane is scale1's */
        __mmask16 mk = (__mmask16)((1u << (n - i)) - 1);
        __m512d v = _mm512_cvtps_pd(_mm512_castps512_ps256(_mm512_maskz_loadu_ps(mk, y + i)));
        __m512d p = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(v, v, _CMP_UNORD_Q), _mm512_mul_pd(v, vs), v);
        _mm512_mask_storeu_ps(y + i, mk, _mm512_castps256_ps512(_mm512_cvtpd_ps(p)));
    }
}

static int simd_state = -1;     /* -1 as util/isa says, 0 scalar (tests) */

/* The AVX2+FMA code runs at PARITY_ISA avx2 and above (util/isa.h). */
static int cpu_has_simd(void) { return isa_active() >= ISA_AVX2; }

int vm_have_simd(void)
{
    return simd_state < 0 ? cpu_has_simd() : simd_state;
}

void vm_set_simd(int on) { simd_state = on ? -1 : 0; }
#define PICK(v, s) (vm_have_simd() ? (v) : (s))
/* exp and sigmoid at AVX-512 where util/isa says so: the same operations
 * lane by lane as the AVX2 and scalar forms (vmath_avx512.h). */
#define PICK3(w, v, s) (simd_state < 0 && isa_active() >= ISA_AVX512 ? (w) : PICK(v, s))
#else
#define PICK3(w, v, s) (s)
int vm_have_simd(void) { return 0; }
void vm_set_simd(int on) { (void)on; }
#define PICK(v, s) (s)
#endif

void vm_exp_f32(const float *x, float *y, int64_t n) { PICK3(exp_avx512, exp_avx2, exp_scalar)(x, y, n); }
void vm_sigmoid_f32(const float *x, float *y, int64_t n)
{
    PICK3(sigmoid_avx512, sigmoid_avx2, sigmoid_scalar)(x, y, n);
}
void vm_silu_f32(const float *x, float *y, int64_t n) { PICK3(silu_avx512, silu_avx2, silu_scalar)(x, y, n); }
void vm_tanh_f32(const float *x, float *y, int64_t n) { PICK(tanh_avx2, tanh_scalar)(x, y, n); }
void vm_erf_f32(const float *x, float *y, int64_t n) { PICK(erf_avx2, erf_scalar)(x, y, n); }
float vm_max_f32(const float *x, int64_t n) { return PICK3(max_avx512, max_avx2, max_scalar)(x, n); }
double vm_exp_shift_sum_f32(const float *x, float m, float *y, int64_t n)
{
    double s = PICK3(exp_shift_sum_avx512, exp_shift_sum_avx2, exp_shift_sum_scalar)(x, m, y, n);
    return s == s ? s : NAN;     /* which NaN the adds pass on is the compiler's choice */
}
void vm_scale_f32(float *y, int64_t n, double s) { PICK3(scale_avx512, scale_avx2, scale_scalar)(y, n, s); }
void vm_max_acc_f32(float *m, const float *x, int64_t n) { PICK(max_acc_avx2, max_acc_scalar)(m, x, n); }
