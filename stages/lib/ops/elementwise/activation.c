/* activation.c — activation functions of the elementwise family: Relu,
 * Sigmoid, Softplus, Softsign, Elu, Selu, Celu, LeakyRelu, HardSigmoid,
 * HardSwish, Mish, Gelu, ThresholdedRelu, Shrink, PRelu (broadcast slope)
 * and Clip (attributes before opset 11, optional inputs from 11).
 *
 * Formulas follow the ONNX spec text literally (e.g. Elu is alpha*(exp(x)-1),
 * as the reference computes it), in the tensor's own type; Sigmoid and
 * Softplus use the overflow-free forms, float32 Sigmoid vmath.h's. NaN passes through every op here
 * (comparisons are written so a NaN input selects the x branch). */
#include <tgmath.h>
#include "ops/elementwise/elementwise_impl.h"
#include "ops/elementwise/vmath.h"

/* ---- shape functions ---- */

int ew_shape_relu(op_ctx_t *c)
{
    /* opset 14 added the signed integer types */
    return ew_shape_unary(c, c->node->opset >= 14 ? TM_FLOAT | TM_SINT : TM_FLOAT, 0);
}

int ew_shape_shrink(op_ctx_t *c) { return ew_shape_unary(c, TM_NUMERIC, 0); }

/* Gelu's approximate: 0 = "none" (erf), 1 = "tanh", -1 = invalid (failed). */
static int gelu_tanh(op_ctx_t *c) { return ew_attr_choice(c, "approximate", "none", "none", "tanh"); }

int ew_shape_gelu(op_ctx_t *c)
{
    if (gelu_tanh(c) < 0) return OP_ERROR;
    return ew_shape_unary(c, TM_FLOAT, 0);
}

/* PRelu: slope broadcasts to X (unidirectionally); Y has X's shape. */
int ew_shape_prelu(op_ctx_t *c)
{
    const unsigned mask = TM_FLOAT | TM_INT;
    if (op_check_inputs(c, 2, 2) || ew_check_input(c, 0, mask) || ew_same_types(c, 0, 1) ||
        ew_set_broadcast(c, 0, 2, c->in[0]->dtype))
        return OP_ERROR;
    const tensor_t *x = c->in[0], *s = c->in[1], *y = c->out[0];
    if (y && !tensor_same_shape(x, y)) {
        char a[160], b[160];
        return op_fail(c, "slope of shape %s does not broadcast to X of shape %s",
                       shape_str(s->ndim, s->dims, b, sizeof b), shape_str(x->ndim, x->dims, a, sizeof a));
    }
    return 0;
}

int ew_shape_clip(op_ctx_t *c)
{
    if (c->node->opset < 11) {
        if (op_check_inputs(c, 1, 1) || ew_check_input(c, 0, TM_FLOAT)) return OP_ERROR;
    } else {
        unsigned mask = c->node->opset >= 12 ? TM_NUMERIC : TM_FLOAT;
        if (op_check_inputs(c, 1, 3) || ew_check_input(c, 0, mask)) return OP_ERROR;
        for (int i = 1; i < c->n_in; i++) {
            if (!c->in[i]) continue;
            if (ew_same_types(c, 0, i)) return OP_ERROR;
            if (tensor_numel(c->in[i]) != 1)
                return op_fail(c, "input %d (%s) must be a scalar, got %lld elements", i,
                               i == 1 ? "min" : "max", (long long)tensor_numel(c->in[i]));
        }
    }
    return op_set_out(c, 0, c->in[0]->dtype, c->in[0]->ndim, c->in[0]->dims);
}

/* ---- float activations: T = float or double, a/b = attributes in T ---- */

/* Defines kernel `name` and its range function; SETUP declares constants
 * (read per chunk: a handful of attribute lookups per 16K elements). */
#define FLOAT_ACT(name, SETUP, EXPR)                                            \
    static int name##_range(const ew_job_t *j, int64_t s, int64_t e)            \
    {                                                                           \
        const dtype_t dt = j->c->in[0]->dtype;                                  \
        const node_t *nd = j->c->node;                                          \
        (void)nd;                                                               \
        DISPATCH_FLOAT(dt, SETUP; UN_RANGE(T, T, j->x, j->o, s, e, EXPR),       \
                       return ew_bad_type(j->c, dt))                            \
        return 0;                                                               \
    }                                                                           \
    int name(op_ctx_t *c) { return ew_unary(c, name##_range); }

#define NOSETUP (void)0
#define ATTR_A(name, dflt) const T a = (T)attr_float(nd, name, dflt)
#define ATTR_AB(na, da, nb, db) const T a = (T)attr_float(nd, na, da); const T b = (T)attr_float(nd, nb, db)

/* Overflow-free logistic and softplus, per type. */
static inline float sigmoid_f(float x)
{
    if (x >= 0) return 1.0f / (1.0f + expf(-x));
    float e = expf(x);
    return e / (1.0f + e);
}
static inline double sigmoid_d(double x)
{
    if (x >= 0) return 1.0 / (1.0 + exp(-x));
    double e = exp(x);
    return e / (1.0 + e);
}
static inline float softplus_f(float x) { return x > 0 ? x + log1pf(expf(-x)) : log1pf(expf(x)); }
static inline double softplus_d(double x) { return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)); }
#define SIGMOID(x) _Generic((x), float: sigmoid_f, default: sigmoid_d)(x)
#define SOFTPLUS(x) _Generic((x), float: softplus_f, default: softplus_d)(x)

VMATH_UNARY(run_sigmoid, vm_sigmoid_f32, SIGMOID(x))
FLOAT_ACT(run_softplus, NOSETUP, SOFTPLUS(x))
FLOAT_ACT(run_softsign, NOSETUP, x / ((T)1 + fabs(x)))
FLOAT_ACT(run_mish, NOSETUP, x * tanh(SOFTPLUS(x)))
FLOAT_ACT(run_elu, ATTR_A("alpha", 1.0f), x < 0 ? a * (exp(x) - (T)1) : x)
FLOAT_ACT(run_celu, ATTR_A("alpha", 1.0f), x > 0 ? x : a * (exp(x / a) - (T)1))
FLOAT_ACT(run_selu, ATTR_AB("alpha", 1.67326319217681884765625f, "gamma", 1.05070102214813232421875f),
          x > 0 ? b * x : b * (a * exp(x) - a))
FLOAT_ACT(run_leakyrelu, ATTR_A("alpha", 0.01f), x < 0 ? a * x : x)
FLOAT_ACT(run_thresholdedrelu, ATTR_A("alpha", 1.0f), x > a ? x : (T)0)

/* max(0, min(1, v)) keeping NaN */
#define CLAMP01(T, v) ((v) < (T)0 ? (T)0 : (v) > (T)1 ? (T)1 : (v))
FLOAT_ACT(run_hardsigmoid, ATTR_AB("alpha", 0.2f, "beta", 0.5f), CLAMP01(T, a * x + b))
FLOAT_ACT(run_hardswish, const T a = (T)(1.0 / 6.0); const T b = (T)0.5,
          x * CLAMP01(T, a * x + b))

/* 0.5 x (1 + erf(x / sqrt(2))), or with approximate="tanh"
 * 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
FLOAT_ACT(gelu_erf, const T r = (T)0.7071067811865476; const T h = (T)0.5,
          h * x * ((T)1 + erf(x * r)))
FLOAT_ACT(gelu_tanh_approx, const T k = (T)0.7978845608028654; const T h = (T)0.5; const T q = (T)0.044715,
          h * x * ((T)1 + tanh(k * (x + q * x * x * x))))

/* float32 Gelu: the inner argument into y, erf or tanh of it through vmath
 * in place, then the outer product, each the expression above. */
static int gelu_f32_range(const ew_job_t *j, int64_t s, int64_t e, int is_tanh)
{
    const float *x = (const float *)j->x + s;
    float *y = (float *)j->o + s;
    const int64_t n = e - s;
    const float h = 0.5f;
    if (is_tanh) {
        const float k = (float)0.7978845608028654, q = 0.044715f;
        for (int64_t i = 0; i < n; i++) y[i] = k * (x[i] + q * x[i] * x[i] * x[i]);
        vm_tanh_f32(y, y, n);
    } else {
        const float r = (float)0.7071067811865476;
        for (int64_t i = 0; i < n; i++) y[i] = x[i] * r;
        vm_erf_f32(y, y, n);
    }
    for (int64_t i = 0; i < n; i++) y[i] = h * x[i] * (1.0f + y[i]);
    return 0;
}
static int gelu_erf_f32(const ew_job_t *j, int64_t s, int64_t e) { return gelu_f32_range(j, s, e, 0); }
static int gelu_tanh_f32(const ew_job_t *j, int64_t s, int64_t e) { return gelu_f32_range(j, s, e, 1); }

int run_gelu(op_ctx_t *c)
{
    const int is_tanh = gelu_tanh(c);
    if (is_tanh < 0) return OP_ERROR;
    if (c->in[0]->dtype == DT_FLOAT) return ew_unary(c, is_tanh ? gelu_tanh_f32 : gelu_erf_f32);
    return is_tanh ? gelu_tanh_approx(c) : gelu_erf(c);
}

/* ---- ops defined for integers too ---- */

static int relu_range(const ew_job_t *j, int64_t s, int64_t e)
{
    const dtype_t dt = j->c->in[0]->dtype;
    if (dtype_is_float(dt)) {
        DISPATCH_FLOAT(dt, UN_RANGE(T, T, j->x, j->o, s, e, x < 0 ? (T)0 : x), return ew_bad_type(j->c, dt))
    } else {
        DISPATCH_INT(dt, UN_RANGE(T, T, j->x, j->o, s, e, LT0(T, x) ? (T)0 : x), return ew_bad_type(j->c, dt))
    }
    return 0;
}
int run_relu(op_ctx_t *c) { return ew_unary(c, relu_range); }

static int shrink_range(const ew_job_t *j, int64_t s, int64_t e)
{
    const dtype_t dt = j->c->in[0]->dtype;
    const float lambd = attr_float(j->c->node, "lambd", 0.5f), bias = attr_float(j->c->node, "bias", 0.0f);
    if (dtype_is_float(dt)) {
        DISPATCH_FLOAT(dt,
                       const T l = (T)lambd; const T b = (T)bias;
                       UN_RANGE(T, T, j->x, j->o, s, e, x < -l ? x + b : x > l ? x - b : (T)0),
                       return ew_bad_type(j->c, dt))
    } else {
        /* integers: computed in double (bias is a float), then saturated */
        const double l = lambd, b = bias;
        DISPATCH_INT(dt,
                     UN_RANGE(T, T, j->x, j->o, s, e,
                              (double)x < -l ? SAT_TO_INT(T, (double)x + b)
                              : (double)x > l ? SAT_TO_INT(T, (double)x - b) : (T)0),
                     return ew_bad_type(j->c, dt))
    }
    return 0;
}
int run_shrink(op_ctx_t *c) { return ew_unary(c, shrink_range); }

static int prelu_range(const ew_job_t *j, int64_t s, int64_t e)
{
    const dtype_t dt = j->c->in[0]->dtype;
    if (dtype_is_float(dt)) {
        DISPATCH_FLOAT(dt, BIN_RANGE(j, T, T, T, s, e, x < 0 ? y * x : x), return ew_bad_type(j->c, dt))
    } else {
        DISPATCH_INT(dt, BIN_RANGE(j, T, T, T, s, e, LT0(T, x) ? (T)((uint64_t)y * (uint64_t)x) : x),
                     return ew_bad_type(j->c, dt))
    }
    return 0;
}
int run_prelu(op_ctx_t *c) { return ew_broadcast(c, 2, prelu_range); }

/* Clip: y = min(max(x, lo), hi); lo > hi gives hi; NaN stays NaN. An absent
 * bound is the type's extreme (infinity for floats), so it never clips. */
#define CLIP_EXPR(x, lo, hi) ((x) < (lo) ? ((lo) > (hi) ? (hi) : (lo)) : (x) > (hi) ? (hi) : (x))
#define INT_MAX_T(T) ((T)(IS_SIGNED_T(T) ? (UINT64_MAX >> (65 - 8 * sizeof(T))) : UINT64_MAX))
#define INT_MIN_T(T) ((T)(IS_SIGNED_T(T) ? ~(UINT64_MAX >> (65 - 8 * sizeof(T))) : 0))

static int clip_range(const ew_job_t *j, int64_t s, int64_t e)
{
    op_ctx_t *c = j->c;
    const dtype_t dt = c->in[0]->dtype;
    if (c->node->opset < 11) {
        const int has_lo = node_attr(c->node, "min") != NULL, has_hi = node_attr(c->node, "max") != NULL;
        const float flo = attr_float(c->node, "min", 0), fhi = attr_float(c->node, "max", 0);
        DISPATCH_FLOAT(dt,
                       const T lo = has_lo ? (T)flo : -(T)INFINITY;
                       const T hi = has_hi ? (T)fhi : (T)INFINITY;
                       UN_RANGE(T, T, j->x, j->o, s, e, CLIP_EXPR(x, lo, hi)),
                       return ew_bad_type(c, dt))
        return 0;
    }
    const tensor_t *tlo = c->n_in > 1 ? c->in[1] : NULL, *thi = c->n_in > 2 ? c->in[2] : NULL;
    if (dtype_is_float(dt)) {
        DISPATCH_FLOAT(dt,
                       const T lo = tlo ? *(const T *)tlo->data : -(T)INFINITY;
                       const T hi = thi ? *(const T *)thi->data : (T)INFINITY;
                       UN_RANGE(T, T, j->x, j->o, s, e, CLIP_EXPR(x, lo, hi)),
                       return ew_bad_type(c, dt))
    } else {
        DISPATCH_INT(dt,
                     const T lo = tlo ? *(const T *)tlo->data : INT_MIN_T(T);
                     const T hi = thi ? *(const T *)thi->data : INT_MAX_T(T);
                     UN_RANGE(T, T, j->x, j->o, s, e, CLIP_EXPR(x, lo, hi)),
                     return ew_bad_type(c, dt))
    }
    return 0;
}

int run_clip(op_ctx_t *c)
{
    for (int i = 1; i < c->n_in; i++)
        if (c->in[i] && (c->in[i]->dtype != c->in[0]->dtype || tensor_numel(c->in[i]) != 1))
            return op_fail(c, "input %d must be a scalar of X's type %s", i, dtype_name(c->in[0]->dtype));
    return ew_unary(c, clip_range);
}
