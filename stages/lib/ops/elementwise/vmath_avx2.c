/* vmath_avx2.c — vmath.c's array functions for AVX2 + FMA (see
 * vmath_impl.h): eight lanes, each a line-by-line transcription of the
 * scalar code in vmath.c (vmath.c's opening comment says how), so every
 * lane has the scalar function's bits (tests/unit/vmath.c). */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <string.h>
#include "ops/elementwise/vmath_impl.h"
#include "ops/elementwise/vmath_consts.h"

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
VT void vmath_tanh_avx2(const float *x, float *y, int64_t n) { V_MAP(v_tanh, x, y, n); }
VT void vmath_erf_avx2(const float *x, float *y, int64_t n) { V_MAP(v_erf, x, y, n); }

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

VT void vmath_max_acc_avx2(float *m, const float *x, int64_t n)
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

/* vm_binary_f32 on 8 lanes: the operation, then b's NaN lanes and over
 * them a's replaced by the operand with its quiet bit set (vm_binop1's
 * rule, by the bits rather than operand order or the compiler's algebra);
 * the tail is vm_binop1's. */
VT static inline __m256 v8_nan_rule(__m256 r, __m256 x, __m256 y)
{
    const __m256 q = _mm256_castsi256_ps(_mm256_set1_epi32(0x400000));
    r = _mm256_blendv_ps(r, _mm256_or_ps(y, q), _mm256_cmp_ps(y, y, _CMP_UNORD_Q));
    return _mm256_blendv_ps(r, _mm256_or_ps(x, q), _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

#define BIN8(OPV) do {                                                          \
        for (; i + 8 <= n; i += 8) {                                            \
            __m256 x = sa ? _mm256_loadu_ps(a + i) : va, y = sb ? _mm256_loadu_ps(b + i) : vb; \
            _mm256_storeu_ps(o + i, v8_nan_rule(OPV(x, y), x, y));              \
        }                                                                       \
    } while (0)

VT static void binary_avx2(vm_binop_t op, const float *a, int sa, const float *b, int sb, float *o, int64_t n)
{
    const __m256 va = _mm256_set1_ps(a[0]), vb = _mm256_set1_ps(b[0]);
    int64_t i = 0;
    switch (op) {
    case VM_ADD: BIN8(_mm256_add_ps); break;
    case VM_SUB: BIN8(_mm256_sub_ps); break;
    case VM_MUL: BIN8(_mm256_mul_ps); break;
    case VM_DIV: BIN8(_mm256_div_ps); break;
    }
    vm_binary1_from(op, a, sa, b, sb, o, i, n);
}

const vmath_arch_t vmath_arch_avx2 = {
    .exp = exp_avx2, .sigmoid = sigmoid_avx2, .silu = silu_avx2, .tanh = vmath_tanh_avx2, .erf = vmath_erf_avx2,
    .max = max_avx2, .max_acc = vmath_max_acc_avx2, .exp_shift_sum = exp_shift_sum_avx2, .scale = scale_avx2,
    .binary = binary_avx2,
};

#endif
