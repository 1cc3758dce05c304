/* vmath.h — float32 exp, sigmoid, tanh and erf over arrays (and the
 * element-wise arithmetic of one broadcast row), vectorised
 * with AVX2+FMA where the CPU has them (exp and sigmoid with AVX-512 where
 * util/isa.h allows it; chosen at run time by the level util/isa.h sets,
 * which is also how tests force the scalar path) and giving the
 * same bits on every CPU: the scalar functions below are the reference, and
 * the vector code runs the very same operations (one polynomial, fused
 * multiply-adds where the scalar code calls fmaf, the same clamps), so an
 * output never depends on the machine or the thread count.
 *
 * Accuracy (tests/unit/vmath.c sweeps the inputs against double precision):
 * vm_expf within 1 ulp over the whole float range, including results that
 * are subnormal, overflow to inf or underflow to 0; NaN in gives NaN out.
 * vm_sigmoidf, vm_tanhf and vm_erff within a few ulp, relative accuracy
 * kept near 0.
 *
 * Array functions take x and y that are equal or do not overlap. */
#ifndef PARITY_VMATH_H
#define PARITY_VMATH_H

#include <stdint.h>
#include <string.h>

/* Scalar references (and the fallback on CPUs without AVX2+FMA). */
float vm_expf(float x);
float vm_sigmoidf(float x);
float vm_tanhf(float x);
float vm_erff(float x);

/* y[i] = f(x[i]) for i in [0, n). */
void vm_exp_f32(const float *x, float *y, int64_t n);
void vm_sigmoid_f32(const float *x, float *y, int64_t n);
void vm_tanh_f32(const float *x, float *y, int64_t n);
void vm_erf_f32(const float *x, float *y, int64_t n);
/* y[i] = x[i] * sigmoid(x[i]) (SiLU), the product rounded once after
 * vm_sigmoidf, as a Sigmoid layer followed by a Mul computes it. */
void vm_silu_f32(const float *x, float *y, int64_t n);

/* Softmax pieces over one row of n floats:
 * vm_max_f32: the maximum; the first NaN if the row has one; -inf if n = 0.
 * vm_exp_shift_sum_f32: y[i] = exp(x[i] - m) and returns the sum of the
 *   y[i] accumulated in double in a fixed order (element i into partial sum
 *   i % 8, the eight partials added pairwise), the same on every CPU (a NaN
 *   sum is returned as the default NaN). y may be NULL (sum only).
 * vm_scale_f32: y[i] = (float)((double)y[i] * s).
 * vm_max_acc_f32: m[i] = max(m[i], x[i]) column-wise, NaN sticky (a NaN m
 *   stays, a NaN x is taken; otherwise x replaces m only when greater). */
/* The float32 arithmetic of Add, Sub, Mul and Div over one row:
 * o[i] = a[i] OP b[i] for i in [0, n), with a[0] for every i when sa is 0
 * (a broadcast operand), likewise b and sb; o may be a or b. Each result
 * is IEEE's, one rounding; where a is NaN the result is a's NaN (quieted),
 * else a NaN b's, on every CPU and from every compiler (written out, by
 * the bits: a compiler may swap the operands of a plain sum or product,
 * and with them which NaN survives, or rewrite a - b as a + -b, which
 * flips a NaN b's sign; clang's vector code did). */
typedef enum vm_binop { VM_ADD, VM_SUB, VM_MUL, VM_DIV } vm_binop_t;
typedef void (*vm_binary_fn)(vm_binop_t op, const float *a, int sa, const float *b, int sb, float *o, int64_t n);
void vm_binary_f32(vm_binop_t op, const float *a, int sa, const float *b, int sb, float *o, int64_t n);
/* vm_binary_f32's form at the level in use, for a caller with many short
 * rows to look up once (a broadcast's rows may hold a few elements). */
vm_binary_fn vm_binary_f32_form(void);
/* x with its quiet bit set, by the bits (a NaN's payload and sign kept:
 * no arithmetic, which a compiler may rewrite, x - y as x + -y, flipping a
 * NaN's sign). */
static inline float vm_quiet1(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    u |= 0x400000u;
    memcpy(&x, &u, 4);
    return x;
}
/* One element of vm_binary_f32: its reference. */
static inline float vm_binop1(vm_binop_t op, float a, float b)
{
    if (a != a) return vm_quiet1(a);
    if (b != b) return vm_quiet1(b);
    return op == VM_ADD ? a + b : op == VM_SUB ? a - b : op == VM_MUL ? a * b : a / b;
}
/* vm_binary_f32 element by element from position i (the portable form,
 * a vector form's tail, and short rows). */
static inline void vm_binary1_from(vm_binop_t op, const float *a, int sa, const float *b, int sb, float *o,
                                   int64_t i, int64_t n)
{
    for (; i < n; i++) o[i] = vm_binop1(op, a[sa ? i : 0], b[sb ? i : 0]);
}

float vm_max_f32(const float *x, int64_t n);
void vm_max_acc_f32(float *m, const float *x, int64_t n);
double vm_exp_shift_sum_f32(const float *x, float m, float *y, int64_t n);
void vm_scale_f32(float *y, int64_t n, double s);

#endif
