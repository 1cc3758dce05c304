/* cases_binary.c — the ELEMENTWISE family's ops of several inputs
 * (arithmetic, comparisons, logic, variadic, Where, Pow, Mod, BitShift,
 * PRelu) against the loops of oc_ref_elementwise, with numpy broadcasting
 * over operands of every rank; the defined results of integer edge cases
 * (division by zero, INT_MIN / -1, shifts past the width, wrapping);
 * tensors of several 16K-element chunks on 3 threads; and shapes that do not
 * broadcast failing cleanly. Cast and CastLike are in cases_cast.c. */
#include <string.h>
#include "harness.h"

/* float32 operations, rounded once as the kernel's single instruction */
#define F2(name, expr) \
    static double name(const oc_inst_t *t, const double *x) { (void)t; double a = x[0], b = x[1]; return (expr); }
#define R32(v) ((double)(float)(v))

F2(e_add, R32(a + b))
F2(e_sub, R32(a - b))
F2(e_mul, R32(a * b))
F2(e_div, R32(a / b))
F2(e_ge, a >= b)
F2(e_gt, a > b)
F2(e_lt, a < b)
F2(e_le, a <= b)
F2(e_eq, a == b)
F2(e_and, a && b)
F2(e_or, a || b)
F2(e_xor, !a != !b)
F2(e_prelu, a < 0 ? R32(a * b) : a)
F2(e_fmod, fmod(a, b))
F2(e_pow, pow(a, b))
static double e_square(const oc_inst_t *t, const double *x) { (void)t; return R32(x[0] * x[0]); }

/* int32 results wrap: two's complement of the low 32 bits */
static double wrap32(int64_t v) { return (double)(int32_t)(uint32_t)(uint64_t)v; }
static double wrap8(int64_t v) { return (double)(((v + 128) % 256 + 256) % 256 - 128); }
/* truncating quotient; /0 gives 0 */
F2(e_idiv, b ? wrap32((int64_t)a / (int64_t)b) : 0)
/* Python's remainder, the sign of the divisor (floor-based), in int64 */
static double e_imod(const oc_inst_t *t, const double *x)
{
    (void)t;
    int64_t a = (int64_t)x[0], b = (int64_t)x[1];
    if (!b) return 0;
    int64_t fl = a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
    return wrap32(a - b * fl);
}
F2(e_ifmod, b ? wrap32((int64_t)a % (int64_t)b) : 0)
F2(e_add8, wrap8((int64_t)a + (int64_t)b))
F2(e_mul8, wrap8((int64_t)a * (int64_t)b))

/* int32^int32 by repeated multiplication modulo 2^32; a negative exponent
 * truncates 1/x^n: 1 for x = 1, +-1 for x = -1, else 0 */
static double e_ipow(const oc_inst_t *t, const double *x)
{
    (void)t;
    int64_t a = (int64_t)x[0], n = (int64_t)x[1];
    if (n < 0) return a == 1 ? 1 : a == -1 ? ((n & 1) ? -1 : 1) : 0;
    uint64_t r = 1;
    for (int64_t k = 0; k < n; k++) r = (uint32_t)(r * (uint64_t)a);
    return wrap32((int64_t)r);
}

static double e_shift(const oc_inst_t *t, const double *x)
{
    const oc_attr_t *d = oc_attr(t, "direction");
    unsigned v = (unsigned)x[0], s = (unsigned)x[1];
    if (s >= 8) return 0;
    return d->s[0] == 'L' ? (uint8_t)(v << s) : (uint8_t)(v >> s);
}

/* Sum, Mean, Max, Min in the kernel's order: left to right, in float32 */
static double e_sum3(const oc_inst_t *t, const double *x) { (void)t; return R32(R32(x[0] + x[1]) + x[2]); }
static double e_mean3(const oc_inst_t *t, const double *x) { return R32(e_sum3(t, x) / 3); }
static double e_max3(const oc_inst_t *t, const double *x)
{
    (void)t;
    return isnan(x[0]) || isnan(x[1]) || isnan(x[2]) ? NAN : fmax(fmax(x[0], x[1]), x[2]);
}
static double e_min3(const oc_inst_t *t, const double *x)
{
    (void)t;
    return isnan(x[0]) || isnan(x[1]) || isnan(x[2]) ? NAN : fmin(fmin(x[0], x[1]), x[2]);
}
static double e_where(const oc_inst_t *t, const double *x) { (void)t; return x[0] ? x[1] : x[2]; }

/* Add before opset 7 with broadcast=1, axis=0: B (3) along A's (3x4) first
 * axis, which numpy's rule would not align. */
static int ref_legacy_add(const oc_inst_t *t, oc_want_t *w)
{
    const tensor_t *a = t->in[0], *b = t->in[1];
    oc_want_shape(w, DT_FLOAT, a->ndim, a->dims, 0);
    for (int64_t k = 0; k < tensor_numel(a); k++)
        w->val[k] = R32(tensor_get_f64(a, k) + tensor_get_f64(b, k / a->dims[1]));
    return 0;
}

/* Pow x^2: 4096 small values and the specials pow has (zeros, infinities,
 * NaN, a tiny and a huge value, the largest float), and an input where
 * glibc's powf is one ulp off; the exponent a float or int64 scalar 2. */
static void gen_square(oc_inst_t *t, int v)
{
    static const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-30f, -1e30f, 0x1.fffffep127f};
    static const uint32_t powf_miss = 0xba6291a8u;
    int64_t n = 4096;
    tensor_t *x = oc_tensor(DT_FLOAT, 1, &n);
    float *xv = x->data;
    for (int64_t i = 0; i < n; i++) xv[i] = (float)oc_uniform(-3e-3, 3e-3);
    memcpy(xv, specials, sizeof specials);
    memcpy(&xv[8], &powf_miss, 4);
    t->in[0] = x;
    *oc_input(t, 1) = (oc_input_t)IN_V(v ? DT_INT64 : DT_FLOAT, SCALAR, 2);
}

#define A234 IN_U(DT_FLOAT, -3, 3, DIMS(2, 3, 4))
#define ARITH(op_, f, shape, what_) {.op = op_, .opset = 14, .what = "2x3x4 with " what_, .n_in = 2, \
        .in = {A234, IN_U(DT_FLOAT, 0.5, 2, shape)}, .ref = oc_ref_elementwise, .elem = f}
#define ARITH4(op_, f) ARITH(op_, f, DIMS(3, 1), "3x1"), ARITH(op_, f, DIMS(4), "4"), ARITH(op_, f, SCALAR, "a scalar"), \
        ARITH(op_, f, DIMS(2, 1, 4), "2x1x4")
/* 5x3x4099 (rows across 16K-element chunks) and an operand, both orders, 3 threads */
#define CHUNK(shape, what_) \
    {.op = "Sub", .opset = 14, .what = "5x3x4099 - " what_ " on 3 threads", .n_in = 2, .threads = 3, \
     .in = {IN_U(DT_FLOAT, -3, 3, DIMS(5, 3, 4099)), IN_U(DT_FLOAT, -2, 2, shape)}, .ref = oc_ref_elementwise, \
     .elem = e_sub}, \
    {.op = "Sub", .opset = 14, .what = what_ " - 5x3x4099 on 3 threads", .n_in = 2, .threads = 3, \
     .in = {IN_U(DT_FLOAT, -2, 2, shape), IN_U(DT_FLOAT, -3, 3, DIMS(5, 3, 4099))}, .ref = oc_ref_elementwise, \
     .elem = e_sub}
/* rows shorter than a vector, one operand repeating its row over the axis
 * above (binary.c's f32_groups), both orders, across 16K-element chunks */
#define SHORT_ROWS(big, small, what_) \
    {.op = "Sub", .opset = 14, .what = what_ " on 3 threads", .n_in = 2, .threads = 3, \
     .in = {IN_U(DT_FLOAT, -3, 3, big), IN_U(DT_FLOAT, -2, 2, small)}, .ref = oc_ref_elementwise, .elem = e_sub}, \
    {.op = "Sub", .opset = 14, .what = what_ ", operands swapped, on 3 threads", .n_in = 2, .threads = 3, \
     .in = {IN_U(DT_FLOAT, -2, 2, small), IN_U(DT_FLOAT, -3, 3, big)}, .ref = oc_ref_elementwise, .elem = e_sub}
#define I32(...) IN_V(DT_INT32, DIMS(11), __VA_ARGS__)
#define DIVMOD_X I32(7, -7, 7, -7, INT32_MIN, INT32_MIN, 5, 0, 13, -13, INT32_MAX)
#define DIVMOD_Y I32(2, 2, -2, -2, -1, 0, 0, 3, 5, 5, -1)
#define B34 IN_U(DT_FLOAT, -1, 1, DIMS(3, 4))
#define B4N IN_V(DT_FLOAT, DIMS(4), 0.3, -0.7, NAN, 0.9)
#define VARIADIC(op_, f) {.op = op_, .opset = 13, .what = "3x4, 4 (a NaN), 3x1", .n_in = 3, \
        .in = {B34, B4N, IN_U(DT_FLOAT, -1, 1, DIMS(3, 1))}, .ref = oc_ref_elementwise, .elem = f}
#define BOOLS(op_, f) {.op = op_, .opset = 7, .what = "bool 2x4 with 4", .n_in = 2, \
        .in = {IN_V(DT_BOOL, DIMS(2, 4), 0, 0, 1, 1, 1, 0, 1, 0), IN_V(DT_BOOL, DIMS(4), 0, 1, 0, 1)}, \
        .ref = oc_ref_elementwise, .elem = f, .out_dt = DT_BOOL}
#define COMPARE(op_, set, f) {.op = op_, .opset = set, .what = "3x4 with 4 (a NaN, compares false)", .n_in = 2, \
        .in = {B34, B4N}, .ref = oc_ref_elementwise, .elem = f, .out_dt = DT_BOOL}

const op_case_t cases_binary[] = {
    ARITH4("Add", e_add), ARITH4("Sub", e_sub), ARITH4("Mul", e_mul), ARITH4("Div", e_div),
    SHORT_ROWS(DIMS(300, 8, 3, 4, 2), DIMS(300, 1, 1, 1, 2), "300x8x3x4x2 - 300x1x1x1x2 (rows of 2)"),
    SHORT_ROWS(DIMS(5, 7, 3), DIMS(5, 1, 3), "5x7x3 - 5x1x3 (groups of 21)"),
    SHORT_ROWS(DIMS(2, 1500, 11), DIMS(1, 1, 11), "2x1500x11 - 11 (one row for all)"),
    SHORT_ROWS(DIMS(3, 0, 2), DIMS(3, 1, 2), "3x0x2 - 3x1x2 (an empty axis above the rows)"),
    /* the storage types' ranges (storage.c): FP16 overflows past 65504 (to inf from 65520), BF16 past
     * 3.3961e38 (float32 at 3.4028e38), FP16 subnormals below 6.1e-5 (flushed under 3e-8) */
    {.op = "Add", .opset = 14, .what = "sums around FP16's largest (64000 to 67600)", .n_in = 2,
     .in = {IN_U(DT_FLOAT, 32000, 33800, DIMS(4099)), IN_U(DT_FLOAT, 32000, 33800, DIMS(4099))},
     .ref = oc_ref_elementwise, .elem = e_add},
    {.op = "Add", .opset = 14, .what = "sums around BF16's and float32's largest (3.2e38 to 3.42e38)", .n_in = 2,
     .in = {IN_U(DT_FLOAT, 1.6e38, 1.71e38, DIMS(4099)), IN_U(DT_FLOAT, 1.6e38, 1.71e38, DIMS(4099))},
     .ref = oc_ref_elementwise, .elem = e_add},
    {.op = "Mul", .opset = 14, .what = "products below 4e-4 (FP16 subnormals and underflow)", .n_in = 2,
     .in = {IN_U(DT_FLOAT, -0.02, 0.02, DIMS(4099)), IN_U(DT_FLOAT, -0.02, 0.02, DIMS(4099))},
     .ref = oc_ref_elementwise, .elem = e_mul},
    {.op = "Div", .opset = 14, .what = "int32: truncation, /0 -> 0, INT_MIN / -1 wraps", .n_in = 2,
     .in = {DIVMOD_X, DIVMOD_Y}, .ref = oc_ref_elementwise, .elem = e_idiv},
    {.op = "Mod", .opset = 13, .what = "int32: Python's sign rule, %0 -> 0", .n_in = 2, .in = {DIVMOD_X, DIVMOD_Y},
     .ref = oc_ref_elementwise, .elem = e_imod},
    {.op = "Mod", .opset = 13, .what = "int32 fmod=1: C's sign rule, %0 -> 0", .n_in = 2, .in = {DIVMOD_X, DIVMOD_Y},
     .attr = {AI("fmod", 1)}, .ref = oc_ref_elementwise, .elem = e_ifmod},
    {.op = "Mod", .opset = 13, .what = "float32 fmod=1", .n_in = 2, .attr = {AI("fmod", 1)},
     .in = {IN_U(DT_FLOAT, -10, 10, DIMS(64)), IN_U(DT_FLOAT, 0.5, 3, DIMS(64))}, .ref = oc_ref_elementwise,
     .elem = e_fmod},
    {.op = "Add", .opset = 14, .what = "int8 wraps modulo 256", .n_in = 2,
     .in = {IN_I(DT_INT8, -128, 127, DIMS(64)), IN_I(DT_INT8, -128, 127, DIMS(64))}, .ref = oc_ref_elementwise,
     .elem = e_add8},
    {.op = "Mul", .opset = 14, .what = "int8 wraps modulo 256", .n_in = 2,
     .in = {IN_I(DT_INT8, -128, 127, DIMS(64)), IN_I(DT_INT8, -128, 127, DIMS(64))}, .ref = oc_ref_elementwise,
     .elem = e_mul8},
    {.op = "Pow", .opset = 15, .what = "float base, int64 exponents (negative too)", .n_in = 2,
     .in = {IN_U(DT_FLOAT, 0.1, 3, DIMS(40)), IN_I(DT_INT64, -4, 4, DIMS(40))}, .ref = oc_ref_elementwise,
     .elem = e_pow, .steps = 1},
    {.op = "Pow", .opset = 15, .what = "int32^int32 exact, wrapping; negative exponents truncate", .n_in = 2,
     .in = {IN_I(DT_INT32, -10, 10, DIMS(40)), IN_I(DT_INT32, -3, 21, DIMS(40))}, .ref = oc_ref_elementwise,
     .elem = e_ipow},
    {.op = "Pow", .opset = 15, .what = "x^2 (float, then int64 exponent): the correctly rounded square, specials",
     .n_in = 2, .in = {IN_GEN, IN_GEN}, .gen = gen_square, .variants = 2, .ref = oc_ref_elementwise,
     .elem = e_square},
    {.op = "BitShift", .opset = 11, .what = "uint8 LEFT: shifts of >= 8 give 0", .n_in = 2, .attr = {AS("direction", "LEFT")},
     .in = {IN_V(DT_UINT8, DIMS(5), 0x81, 0xff, 1, 16, 3), IN_V(DT_UINT8, DIMS(5), 1, 8, 7, 200, 0)},
     .ref = oc_ref_elementwise, .elem = e_shift},
    {.op = "BitShift", .opset = 11, .what = "uint8 RIGHT: shifts of >= 8 give 0", .n_in = 2,
     .attr = {AS("direction", "RIGHT")},
     .in = {IN_V(DT_UINT8, DIMS(5), 0x81, 0xff, 1, 16, 3), IN_V(DT_UINT8, DIMS(5), 1, 8, 7, 200, 0)},
     .ref = oc_ref_elementwise, .elem = e_shift},
    {.op = "BitShift", .opset = 11, .what = "a bad direction", .n_in = 2, .attr = {AS("direction", "UP")},
     .in = {IN_V(DT_UINT8, DIMS(2), 1, 2), IN_V(DT_UINT8, DIMS(2), 1, 1)}, .fail = "direction"},
    VARIADIC("Sum", e_sum3), VARIADIC("Mean", e_mean3), VARIADIC("Max", e_max3), VARIADIC("Min", e_min3),
    {.op = "Where", .opset = 16, .what = "3-way broadcasting: bool 3x1, int64 4, int64 3x4", .n_in = 3,
     .in = {IN_V(DT_BOOL, DIMS(3, 1), 1, 0, 1), IN_V(DT_INT64, DIMS(4), 100, 101, 102, 103),
            IN_V(DT_INT64, DIMS(3, 4), 0, -1, -2, -3, -4, -5, -6, -7, -8, -9, -10, -11)},
     .ref = oc_ref_elementwise, .elem = e_where, .out_dt = DT_INT64},
    COMPARE("GreaterOrEqual", 16, e_ge), COMPARE("Greater", 13, e_gt), COMPARE("Less", 13, e_lt),
    COMPARE("LessOrEqual", 16, e_le), COMPARE("Equal", 13, e_eq),
    {.op = "Equal", .opset = 13, .what = "int64 with equal elements", .n_in = 2, .out_dt = DT_BOOL,
     .in = {IN_I(DT_INT64, -2, 2, DIMS(64)), IN_I(DT_INT64, -2, 2, DIMS(64))}, .ref = oc_ref_elementwise, .elem = e_eq},
    BOOLS("And", e_and), BOOLS("Or", e_or), BOOLS("Xor", e_xor),
    {.op = "PRelu", .opset = 16, .what = "1x3x5x5 with a slope per channel (3x1x1)", .n_in = 2,
     .in = {IN_U(DT_FLOAT, -3, 3, DIMS(1, 3, 5, 5)), IN_U(DT_FLOAT, 0, 0.5, DIMS(3, 1, 1))},
     .ref = oc_ref_elementwise, .elem = e_prelu},
    {.op = "Add", .opset = 6, .what = "broadcast=1 axis=0 aligns B with A's first axis", .n_in = 2,
     .in = {B34, IN_U(DT_FLOAT, -1, 1, DIMS(3))}, .attr = {AI("broadcast", 1), AI("axis", 0)}, .ref = ref_legacy_add},
    {.op = "Mul", .opset = 14, .what = "3x4 * 5 does not broadcast", .n_in = 2,
     .in = {B34, IN_U(DT_FLOAT, 0, 1, DIMS(5))}, .fail = "broadcast"},
    CHUNK(DIMS(3, 1), "3x1"), CHUNK(DIMS(4099), "4099"), CHUNK(DIMS(5, 1, 4099), "5x1x4099"), CHUNK(SCALAR, "a scalar"),
    {.op = "Where", .opset = 16, .what = "bool 5x1x4099, 3x1, a scalar on 3 threads", .n_in = 3, .threads = 3,
     .in = {IN_I(DT_BOOL, 0, 1, DIMS(5, 1, 4099)), IN_U(DT_FLOAT, 1, 2, DIMS(3, 1)), IN_U(DT_FLOAT, -2, -1, SCALAR)},
     .ref = oc_ref_elementwise, .elem = e_where, .out_dt = DT_FLOAT},
};
const int cases_binary_n = sizeof cases_binary / sizeof cases_binary[0];
