/* vmath_avx512.c — vmath.c's array functions for AVX-512F (see
 * vmath_impl.h): exp, sigmoid and SiLU on 16 lanes (vmath_avx512.h, shared
 * with fgemm_avx512.c's tile epilogue), and the softmax row pieces with
 * the AVX2 forms' lane structure; tanh, erf and the column maximum are the
 * AVX2 forms. Every lane has the scalar function's bits (tests/unit/vmath.c). */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include "ops/elementwise/vmath_impl.h"
#include "ops/elementwise/vmath_avx512.h"

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

/* vm_binary_f32 on 16 lanes, the tail under a mask: the operation, then
 * b's NaN lanes and over them a's replaced by the operand with its quiet
 * bit set (vm_binop1's rule, by the bits rather than operand order or the
 * compiler's algebra). Issue 41: the float Add/Mul/Sub/Div kernels' rows
 * ran scalar (gcc -O2 does not vectorise BIN_RANGE's loops), about four
 * times slower on RT-DETR's bias Adds. */
V16 static inline __m512 v16_nan_rule(__m512 r, __m512 x, __m512 y)
{
    const __m512i q = _mm512_set1_epi32(0x400000);
    r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(y, y, _CMP_UNORD_Q),
                           _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(y), q)));
    return _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q),
                              _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(x), q)));
}

#define BIN16(OPV) do {                                                         \
        for (; i + 16 <= n; i += 16) {                                          \
            __m512 x = sa ? _mm512_loadu_ps(a + i) : va;                        \
            __m512 y = sb ? _mm512_loadu_ps(b + i) : vb;                        \
            _mm512_storeu_ps(o + i, v16_nan_rule(OPV(x, y), x, y));             \
        }                                                                       \
        if (i < n) {                                                            \
            __mmask16 m = (__mmask16)((1u << (n - i)) - 1);                     \
            __m512 x = sa ? _mm512_maskz_loadu_ps(m, a + i) : va;               \
            __m512 y = sb ? _mm512_maskz_loadu_ps(m, b + i) : vb;               \
            _mm512_mask_storeu_ps(o + i, m, v16_nan_rule(OPV(x, y), x, y));     \
        }                                                                       \
    } while (0)

V16 static void binary_avx512(vm_binop_t op, const float *a, int sa, const float *b, int sb, float *o, int64_t n)
{
    const __m512 va = _mm512_set1_ps(a[0]), vb = _mm512_set1_ps(b[0]);
    int64_t i = 0;
    switch (op) {
    case VM_ADD: BIN16(_mm512_add_ps); break;
    case VM_SUB: BIN16(_mm512_sub_ps); break;
    case VM_MUL: BIN16(_mm512_mul_ps); break;
    case VM_DIV: BIN16(_mm512_div_ps); break;
    }
}

const vmath_arch_t vmath_arch_avx512 = {
    .exp = exp_avx512, .sigmoid = sigmoid_avx512, .silu = silu_avx512, .tanh = vmath_tanh_avx2,
    .erf = vmath_erf_avx2, .max = max_avx512, .max_acc = vmath_max_acc_avx2,
    .exp_shift_sum = exp_shift_sum_avx512, .scale = scale_avx512, .binary = binary_avx512,
};

#endif
