/* vmath_impl.h — what vmath.c's array functions take from each
 * instruction set (vmath_avx2.c, vmath_avx512.c; the portable forms are
 * vmath.c's own, the reference the others transcribe), and the pieces of
 * the lane structure every set shares (the order maxima and sums are
 * folded in, the NaN rules), so each set's result has the same bits. */
#ifndef PARITY_VMATH_IMPL_H
#define PARITY_VMATH_IMPL_H

#include <math.h>
#include <stdint.h>
#include "ops/elementwise/vmath.h"
#include "util/isa.h"

/* One set's forms of vmath.h's array functions (same arguments, same bits). */
typedef struct vmath_arch {
    void (*exp)(const float *x, float *y, int64_t n);
    void (*sigmoid)(const float *x, float *y, int64_t n);
    void (*silu)(const float *x, float *y, int64_t n);
    void (*tanh)(const float *x, float *y, int64_t n);
    void (*erf)(const float *x, float *y, int64_t n);
    float (*max)(const float *x, int64_t n);
    void (*max_acc)(float *m, const float *x, int64_t n);
    /* the sum before vm_exp_shift_sum_f32 makes a NaN the default one */
    double (*exp_shift_sum)(const float *x, float m, float *y, int64_t n);
    void (*scale)(float *y, int64_t n, double s);
    vm_binary_fn binary;
} vmath_arch_t;

extern const vmath_arch_t vmath_arch_generic;
#if ISA_X86
extern const vmath_arch_t vmath_arch_avx2, vmath_arch_avx512;
/* The AVX2 forms the AVX-512 set keeps (tanh, erf and the column maximum
 * have no 16-lane form: they are not the hot layers'). */
void vmath_tanh_avx2(const float *x, float *y, int64_t n);
void vmath_erf_avx2(const float *x, float *y, int64_t n);
void vmath_max_acc_avx2(float *m, const float *x, int64_t n);
#endif

/* The kernels of the level in use (util/isa.h's isa_pick). */
const vmath_arch_t *vmath_arch(void);

/* erf: |x| < ERF_A: x + x * PA(x^2), PA fitting erf(x)/x - 1; else
 * 1 - exp(-x^2) * PB(1/|x|), PB fitting erfc(x) * exp(x^2), with |x|
 * clamped to 4 (erf is 1 in float there). Least-squares fits on Chebyshev
 * nodes, Lawson-weighted toward minimax: relative errors 1.2e-9 and 2.2e-9
 * before the coefficients are rounded to float. In the header, not
 * extern, so the compiler folds them into each form's constants. */
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

/* MINPS / MAXPS: the second operand when the comparison is false (NaN). */
static inline float min_ps1(float a, float b) { return a < b ? a : b; }
static inline float max_ps1(float a, float b) { return a > b ? a : b; }

/* Max with the vector code's lane structure: lane l holds the MAXPS-style
 * maximum of elements i = l mod 8 (the tail padded with -inf), lanes folded
 * in order. A NaN anywhere: the first NaN. */
static inline float fold_max(const float lane[8])
{
    float m = lane[0];
    for (int l = 1; l < 8; l++) m = max_ps1(m, lane[l]);
    return m;
}
static inline float first_nan(const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (x[i] != x[i]) return x[i];
    return NAN;
}

/* The column maximum's step: NaN sticky in m, a NaN x taken. */
static inline float max_acc1(float m, float x) { return m == m && (x > m || x != x) ? x : m; }

/* The eight partial sums folded pairwise. */
static inline double fold_sum(const double a[8])
{
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

/* y * s in double, rounded once. When both are NaN the product is y's
 * NaN, as MULPD's first operand: written out, because the compiler may
 * swap the operands of a plain product. */
static inline float scale1(float y, double s) { return y != y ? y : (float)((double)y * s); }

#endif
