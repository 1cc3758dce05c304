/* cases_unary.c — the ELEMENTWISE family's one-input ops and activations:
 * each against its formula in double with libm (oc_ref_elementwise), over
 * 257 values of a range where the op is defined, with the bound from the
 * float32 steps of the kernel's formula; exact ops (Abs, Neg, Floor, Relu,
 * Round's ties to even, ...) bit for bit. Integer Abs/Neg wrap as two's
 * complement does (|-128| = -128 in int8). */
#include "harness.h"

#define F1(name, expr) \
    static double name(const oc_inst_t *t, const double *x) { (void)t; double a = x[0]; return (expr); }

F1(e_abs, fabs(a))
F1(e_acos, acos(a))
F1(e_acosh, acosh(a))
F1(e_asin, asin(a))
F1(e_asinh, asinh(a))
F1(e_atan, atan(a))
F1(e_atanh, atanh(a))
F1(e_ceil, ceil(a))
F1(e_cos, cos(a))
F1(e_cosh, cosh(a))
F1(e_erf, erf(a))
F1(e_exp, exp(a))
F1(e_floor, floor(a))
F1(e_log, log(a))
F1(e_neg, -a)
F1(e_reciprocal, 1 / a)
F1(e_sign, a > 0 ? 1 : a < 0 ? -1 : a)   /* 0, -0 and NaN stay */
F1(e_sin, sin(a))
F1(e_sinh, sinh(a))
F1(e_sqrt, sqrt(a))
F1(e_tan, tan(a))
F1(e_tanh, tanh(a))
F1(e_not, !a)
F1(e_isinf, isinf(a) ? 1 : 0)
F1(e_isnan, isnan(a) ? 1 : 0)
F1(e_relu, a > 0 ? a : 0)
F1(e_sigmoid, 1 / (1 + exp(-a)))
F1(e_softplus, log1p(exp(a)))
F1(e_softsign, a / (1 + fabs(a)))
F1(e_mish, a * tanh(log1p(exp(a))))
F1(e_hardswish, a * fmax(0, fmin(1, a / 6 + 0.5)))
F1(e_gelu, 0.5 * a * (1 + erf(a / sqrt(2.0))))
F1(e_gelu_tanh, 0.5 * a * (1 + tanh(sqrt(2 / M_PI) * (a + 0.044715 * a * a * a))))

/* x rounded half to even, by comparison with the floor (not rint). */
F1(e_round, a - floor(a) > 0.5 || (a - floor(a) == 0.5 && fmod(floor(a), 2) != 0) ? floor(a) + 1 : floor(a))

/* Two's complement of an int8: what wraps modulo 256. */
static double wrap8(int64_t v) { return (double)(((v + 128) % 256 + 256) % 256 - 128); }
F1(e_abs8, wrap8(a < 0 ? -(int64_t)a : (int64_t)a))
F1(e_neg8, wrap8(-(int64_t)a))

/* Activations with attributes (floats, as the kernel reads them). */
static double e_elu(const oc_inst_t *t, const double *x)
{
    double al = oc_float(t, "alpha", 1.0f);
    return x[0] < 0 ? al * expm1(x[0]) : x[0];
}
static double e_celu(const oc_inst_t *t, const double *x)
{
    double al = oc_float(t, "alpha", 1.0f);
    return x[0] > 0 ? x[0] : al * expm1(x[0] / al);
}
static double e_selu(const oc_inst_t *t, const double *x)
{
    double al = oc_float(t, "alpha", 1.67326319217681884765625f), g = oc_float(t, "gamma", 1.05070102214813232421875f);
    return x[0] > 0 ? g * x[0] : g * al * expm1(x[0]);
}
static double e_leaky(const oc_inst_t *t, const double *x) { return x[0] < 0 ? oc_float(t, "alpha", 0.01f) * x[0] : x[0]; }
static double e_thresholded(const oc_inst_t *t, const double *x) { return x[0] > oc_float(t, "alpha", 1.0f) ? x[0] : 0; }
static double e_hardsigmoid(const oc_inst_t *t, const double *x)
{
    return fmax(0, fmin(1, oc_float(t, "alpha", 0.2f) * x[0] + oc_float(t, "beta", 0.5f)));
}
static double e_shrink(const oc_inst_t *t, const double *x)
{
    double l = oc_float(t, "lambd", 0.5f), b = oc_float(t, "bias", 0.0f);
    return x[0] < -l ? x[0] + b : x[0] > l ? x[0] - b : 0;
}
/* Clip before opset 11: attributes; from 11: inputs 1, 2 (omitted: no bound). */
static double e_clip(const oc_inst_t *t, const double *x)
{
    double lo = t->node.opset < 11 ? oc_float(t, "min", -INFINITY) : isnan(x[1]) ? -INFINITY : x[1];
    double hi = t->node.opset < 11 ? oc_float(t, "max", INFINITY) : isnan(x[2]) ? INFINITY : x[2];
    if (isnan(x[0])) return x[0];
    return lo > hi ? hi : x[0] < lo ? lo : x[0] > hi ? hi : x[0];
}

#define V257 DIMS(257)
/* op at opset on 257 float32 values in [lo, hi): formula f, steps s */
#define UF(op_, set, f, lo, hi, s) {.op = op_, .opset = set, .what = "float32 in [" #lo ", " #hi ")", .n_in = 1, \
        .in = {IN_U(DT_FLOAT, lo, hi, V257)}, .ref = oc_ref_elementwise, .elem = f, .steps = s}
#define UFA(op_, set, f, lo, hi, s, ...) {.op = op_, .opset = set, .what = "float32 in [" #lo ", " #hi "), " #__VA_ARGS__, \
        .n_in = 1, .in = {IN_U(DT_FLOAT, lo, hi, V257)}, .attr = {__VA_ARGS__}, .ref = oc_ref_elementwise, .elem = f, \
        .steps = s}
#define UV(op_, set, f, what_, T, OT, ...) {.op = op_, .opset = set, .what = what_, .n_in = 1, \
        .in = {IN_V(T, DIMS(OC_NARGS(double, __VA_ARGS__)), __VA_ARGS__)}, .ref = oc_ref_elementwise, .elem = f, \
        .out_dt = OT}

const op_case_t cases_unary[] = {
    /* libm in double, rounded once: one step */
    UF("Acos", 7, e_acos, -0.99, 0.99, 1), UF("Acosh", 9, e_acosh, 1.01, 10, 1), UF("Asin", 7, e_asin, -0.99, 0.99, 1),
    UF("Asinh", 9, e_asinh, -10, 10, 1), UF("Atan", 7, e_atan, -10, 10, 1), UF("Atanh", 9, e_atanh, -0.99, 0.99, 1),
    UF("Cos", 7, e_cos, -6, 6, 1), UF("Cosh", 9, e_cosh, -5, 5, 1), UF("Sin", 7, e_sin, -6, 6, 1),
    UF("Sinh", 9, e_sinh, -5, 5, 1), UF("Tan", 7, e_tan, -1.5, 1.5, 1), UF("Log", 13, e_log, 0.01, 100, 1),
    UF("Sqrt", 13, e_sqrt, 0, 100, 1), UF("Reciprocal", 13, e_reciprocal, 0.1, 10, 1),
    /* vmath: one approximation within STEP_ULPS */
    UF("Exp", 13, e_exp, -10, 10, 1), UF("Exp", 13, e_exp, -20, 12, 1),   /* past FP16's 65504, and below its subnormals */
    UF("Tanh", 13, e_tanh, -5, 5, 1), UF("Erf", 13, e_erf, -3, 3, 1),
    UF("Sigmoid", 13, e_sigmoid, -20, 20, 1),
    {.op = "Sigmoid", .opset = 13, .what = "100003 values on 1 and 3 threads", .n_in = 1, .threads = 3,
     .in = {IN_U(DT_FLOAT, -8, 8, DIMS(100003))}, .ref = oc_ref_elementwise, .elem = e_sigmoid, .steps = 1},
    /* formulas of a few steps: exp, log1p, an addition, a product, ... */
    UF("Softplus", 1, e_softplus, -20, 20, 3), UF("Softsign", 1, e_softsign, -5, 5, 2),
    UF("Mish", 18, e_mish, -5, 5, 5), UF("HardSwish", 14, e_hardswish, -5, 5, 3),
    UF("Gelu", 20, e_gelu, -5, 5, 4), UFA("Gelu", 20, e_gelu_tanh, -5, 5, 8, AS("approximate", "tanh")),
    UF("Selu", 6, e_selu, -4, 4, 3), UFA("Elu", 6, e_elu, -4, 4, 2, AF("alpha", 0.7f)),
    UFA("Celu", 12, e_celu, -4, 4, 3, AF("alpha", 1.3f)), UFA("LeakyRelu", 6, e_leaky, -4, 4, 1, AF("alpha", 0.1f)),
    UFA("HardSigmoid", 6, e_hardsigmoid, -6, 6, 2, AF("alpha", 0.3f), AF("beta", 0.4f)),
    UFA("ThresholdedRelu", 10, e_thresholded, -3, 3, 0, AF("alpha", 0.5f)),
    UFA("Shrink", 9, e_shrink, -3, 3, 1, AF("lambd", 0.7f), AF("bias", 0.25f)),
    UFA("Clip", 6, e_clip, -3, 3, 0, AF("min", -1.0f), AF("max", 0.5f)),
    /* exact */
    UF("Abs", 13, e_abs, -5, 5, 0), UF("Neg", 13, e_neg, -5, 5, 0), UF("Ceil", 13, e_ceil, -5, 5, 0),
    UF("Floor", 13, e_floor, -5, 5, 0), UF("Relu", 14, e_relu, -5, 5, 0), UF("Sign", 13, e_sign, -3, 3, 0),
    UF("Round", 11, e_round, -5, 5, 0),
    UV("Round", 11, e_round, "ties to even and chosen values", DT_FLOAT, 0, 2.5, -2.5, 3.5, 0.5, -0.5, 1.25, -7.75, 0,
       1e7 + 0.5, 4.5000005),
    UV("Sign", 13, e_sign, "zeros and NaN", DT_FLOAT, 0, 0, -0.0, NAN, 3, -2),
    UV("Abs", 13, e_abs8, "int8 wraps: |-128| = -128", DT_INT8, 0, -128, -127, -1, 0, 1, 127, -5),
    UV("Neg", 13, e_neg8, "int8 wraps: -(-128) = -128", DT_INT8, 0, -128, -127, -1, 0, 1, 127, -5),
    UV("Not", 1, e_not, "bool", DT_BOOL, 0, 0, 1, 1, 0),
    UV("IsInf", 10, e_isinf, "infinities, NaN and finite", DT_FLOAT, DT_BOOL, INFINITY, -INFINITY, NAN, 0, 3e38, -1),
    UV("IsNaN", 9, e_isnan, "NaN and others", DT_FLOAT, DT_BOOL, NAN, -NAN, INFINITY, 0, 1),
    /* Clip from opset 11: min and max are inputs, either may be omitted;
     * min > max gives max everywhere */
    {.op = "Clip", .opset = 13, .what = "int8, min 4 > max 2: max everywhere", .n_in = 3,
     .in = {IN_V(DT_INT8, DIMS(5), -128, -3, 0, 5, 127), IN_V(DT_INT8, SCALAR, 4), IN_V(DT_INT8, SCALAR, 2)},
     .ref = oc_ref_elementwise, .elem = e_clip},
    {.op = "Clip", .opset = 13, .what = "int8, min omitted: clips from above only", .n_in = 3,
     .in = {IN_V(DT_INT8, DIMS(5), -128, -3, 0, 5, 127), IN_NONE, IN_V(DT_INT8, SCALAR, 4)},
     .ref = oc_ref_elementwise, .elem = e_clip},
    {.op = "Clip", .opset = 6, .what = "attributes; NaN stays NaN", .n_in = 1,
     .in = {IN_V(DT_FLOAT, DIMS(5), -2, -0.5, NAN, 0.25, 9)}, .attr = {AF("min", -1), AF("max", 0.5)},
     .ref = oc_ref_elementwise, .elem = e_clip},
    {.op = "Clip", .opset = 13, .what = "float32 between scalar inputs", .n_in = 3,
     .in = {IN_U(DT_FLOAT, -3, 3, V257), IN_V(DT_FLOAT, SCALAR, -1), IN_V(DT_FLOAT, SCALAR, 1.5)},
     .ref = oc_ref_elementwise, .elem = e_clip},
};
const int cases_unary_n = sizeof cases_unary / sizeof cases_unary[0];
