/* unary.c — elementwise unary math of the elementwise family: Abs, Neg,
 * Sign, Ceil, Floor, Round, Exp, Log, Sqrt, Reciprocal, Erf, the
 * trigonometric and hyperbolic functions, Not, IsInf, IsNaN.
 *
 * Float kernels compute in the tensor's own type (<tgmath.h> picks sinf or
 * sin from T), so float32 results match the float32 reference; float32
 * Exp, Tanh and Erf go through vmath.h (vectorised, within a few ulp, the
 * same bits on every CPU). Integer variants (Abs, Neg, Sign, Erf) wrap or
 * saturate without undefined behaviour. Half types never reach these
 * kernels (ops.h). */
#include <tgmath.h>
#include "ops/elementwise/elementwise_impl.h"
#include "ops/elementwise/vmath.h"

/* ---- shape functions ---- */

int ew_shape_unary(op_ctx_t *c, unsigned mask, int bool_out)
{
    if (op_check_inputs(c, 1, 1) || ew_check_input(c, 0, mask)) return OP_ERROR;
    const tensor_t *x = c->in[0];
    return op_set_out(c, 0, bool_out ? DT_BOOL : x->dtype, x->ndim, x->dims);
}

int ew_shape_float(op_ctx_t *c) { return ew_shape_unary(c, TM_FLOAT, 0); }
int ew_shape_numeric(op_ctx_t *c) { return ew_shape_unary(c, TM_NUMERIC, 0); }
int ew_shape_neg(op_ctx_t *c) { return ew_shape_unary(c, TM_FLOAT | TM_SINT, 0); }
int ew_shape_not(op_ctx_t *c) { return ew_shape_unary(c, TM_BOOL, 0); }
int ew_shape_isx(op_ctx_t *c) { return ew_shape_unary(c, TM_FLOAT, 1); }

/* ---- float-only functions: one definition per op, T = float or double ---- */

/* Defines kernel `name` and its range function name_range. */
#define FLOAT_UNARY(name, EXPR)                                                 \
    static int name##_range(const ew_job_t *j, int64_t s, int64_t e)            \
    {                                                                           \
        const dtype_t dt = j->c->in[0]->dtype;                                  \
        DISPATCH_FLOAT(dt, UN_RANGE(T, T, j->x, j->o, s, e, EXPR),              \
                       return ew_bad_type(j->c, dt))                            \
        return 0;                                                               \
    }                                                                           \
    int name(op_ctx_t *c) { return ew_unary(c, name##_range); }

FLOAT_UNARY(run_ceil, ceil(x))
FLOAT_UNARY(run_floor, floor(x))
FLOAT_UNARY(run_round, rint(x))          /* default rounding mode: half to even */
VMATH_UNARY(run_exp, vm_exp_f32, exp(x))
VMATH_UNARY(run_tanh, vm_tanh_f32, tanh(x))
FLOAT_UNARY(run_log, log(x))
FLOAT_UNARY(run_sqrt, sqrt(x))
FLOAT_UNARY(run_reciprocal, (T)1 / x)
FLOAT_UNARY(run_sin, sin(x))
FLOAT_UNARY(run_cos, cos(x))
FLOAT_UNARY(run_tan, tan(x))
FLOAT_UNARY(run_asin, asin(x))
FLOAT_UNARY(run_acos, acos(x))
FLOAT_UNARY(run_atan, atan(x))
FLOAT_UNARY(run_sinh, sinh(x))
FLOAT_UNARY(run_cosh, cosh(x))
FLOAT_UNARY(run_asinh, asinh(x))
FLOAT_UNARY(run_acosh, acosh(x))
FLOAT_UNARY(run_atanh, atanh(x))

/* ---- ops defined for integers too ---- */

/* Float body FEXPR, integer body IEXPR, both over x of type T. */
#define NUMERIC_UNARY(name, FEXPR, IEXPR)                                       \
    static int name##_range(const ew_job_t *j, int64_t s, int64_t e)            \
    {                                                                           \
        const dtype_t dt = j->c->in[0]->dtype;                                  \
        if (dtype_is_float(dt)) {                                               \
            DISPATCH_FLOAT(dt, UN_RANGE(T, T, j->x, j->o, s, e, FEXPR),         \
                           return ew_bad_type(j->c, dt))                        \
        } else {                                                                \
            DISPATCH_INT(dt, UN_RANGE(T, T, j->x, j->o, s, e, IEXPR),           \
                         return ew_bad_type(j->c, dt))                          \
        }                                                                       \
        return 0;                                                               \
    }                                                                           \
    int name(op_ctx_t *c) { return ew_unary(c, name##_range); }

/* |INT_MIN| and -INT_MIN wrap to INT_MIN (two's complement via uint64). */
NUMERIC_UNARY(run_abs, fabs(x), LT0(T, x) ? (T)(0 - (uint64_t)x) : x)
NUMERIC_UNARY(run_neg, -x, (T)(0 - (uint64_t)x))
/* Sign keeps NaN (numpy) and the zero as it is. */
NUMERIC_UNARY(run_sign, x > 0 ? (T)1 : x < 0 ? (T)-1 : x, x > 0 ? (T)1 : LT0(T, x) ? (T)-1 : (T)0)
/* erf of an integer: computed in double, truncated like a numpy astype;
 * float32 through vmath. */
static int erf_other(op_ctx_t *c);
NUMERIC_UNARY(erf_other, erf(x), SAT_TO_INT(T, erf((double)x)))
static int erf_f32(op_ctx_t *c);
VMATH_UNARY(erf_f32, vm_erf_f32, erf(x))
int run_erf(op_ctx_t *c) { return c->in[0]->dtype == DT_FLOAT ? erf_f32(c) : erf_other(c); }

/* ---- boolean results ---- */

static int not_range(const ew_job_t *j, int64_t s, int64_t e)
{
    UN_RANGE(uint8_t, uint8_t, j->x, j->o, s, e, x == 0);
    return 0;
}
int run_not(op_ctx_t *c) { return ew_unary(c, not_range); }

static int isnan_range(const ew_job_t *j, int64_t s, int64_t e)
{
    const dtype_t dt = j->c->in[0]->dtype;
    DISPATCH_FLOAT(dt, UN_RANGE(T, uint8_t, j->x, j->o, s, e, x != x), return ew_bad_type(j->c, dt))
    return 0;
}
int run_isnan(op_ctx_t *c) { return ew_unary(c, isnan_range); }

static int isinf_range(const ew_job_t *j, int64_t s, int64_t e)
{
    const dtype_t dt = j->c->in[0]->dtype;
    const int pos = attr_int(j->c->node, "detect_positive", 1) != 0;
    const int neg = attr_int(j->c->node, "detect_negative", 1) != 0;
    DISPATCH_FLOAT(dt,
                   UN_RANGE(T, uint8_t, j->x, j->o, s, e,
                            (pos && x == (T)INFINITY) || (neg && x == -(T)INFINITY)),
                   return ew_bad_type(j->c, dt))
    return 0;
}
int run_isinf(op_ctx_t *c) { return ew_unary(c, isinf_range); }
