/* binary.c — binary ops of the elementwise family with numpy broadcasting
 * (opset >= 7): Add, Sub, Mul, Div, Mod, Pow, BitShift, the comparisons and
 * And/Or/Xor. Every kernel walks a bcast.h plan through BIN_RANGE, in
 * parallel chunks (ew_broadcast).
 *
 * Integer arithmetic has no undefined behaviour: sums and products wrap
 * through uint64; division or remainder by zero is defined as 0; INT_MIN / -1
 * wraps to INT_MIN (and INT_MIN % -1 is 0). Integer division truncates
 * toward zero (C, ONNX Runtime); Mod with fmod=0 follows Python's sign rule
 * (the result takes the divisor's sign), fmod=1 C's. */
#include <string.h>
#include <tgmath.h>
#include "ops/elementwise/elementwise_impl.h"
#include "ops/elementwise/vmath.h"

/* ---- shape functions ---- */

/* Two inputs of one type in mask; output the broadcast shape of type out_dt
 * (DT_UNDEFINED = the inputs' type). */
static int shape_binary(op_ctx_t *c, unsigned mask, dtype_t out_dt)
{
    if (op_check_inputs(c, 2, 2) || ew_check_input(c, 0, mask) || ew_same_types(c, 0, 1))
        return OP_ERROR;
    return ew_set_broadcast(c, 0, 2, out_dt == DT_UNDEFINED ? c->in[0]->dtype : out_dt);
}

int ew_shape_arith(op_ctx_t *c) { return shape_binary(c, TM_NUMERIC, DT_UNDEFINED); }
int ew_shape_compare(op_ctx_t *c) { return shape_binary(c, TM_NUMERIC, DT_BOOL); }
int ew_shape_equal(op_ctx_t *c) { return shape_binary(c, TM_NUMERIC | TM_BOOL, DT_BOOL); }
int ew_shape_logic(op_ctx_t *c) { return shape_binary(c, TM_BOOL, DT_BOOL); }

/* BitShift's direction: 0 = LEFT, 1 = RIGHT, -1 = invalid (failed). */
static int shift_right(op_ctx_t *c) { return ew_attr_choice(c, "direction", "", "LEFT", "RIGHT"); }

int ew_shape_bitshift(op_ctx_t *c)
{
    if (shift_right(c) < 0) return OP_ERROR;
    return shape_binary(c, TM_UINT, DT_UNDEFINED);
}

int ew_shape_mod(op_ctx_t *c)
{
    if (shape_binary(c, TM_NUMERIC, DT_UNDEFINED)) return OP_ERROR;
    if (dtype_is_float(c->in[0]->dtype) && attr_int(c->node, "fmod", 0) != 1)
        return op_fail(c, "fmod must be 1 for floating-point inputs (type %s)", dtype_name(c->in[0]->dtype));
    return 0;
}

/* Pow: base and exponent types may differ; Z has the base's type. */
int ew_shape_pow(op_ctx_t *c)
{
    if (op_check_inputs(c, 2, 2) || ew_check_input(c, 0, TM_FLOAT | TM_INT) ||
        ew_check_input(c, 1, TM_NUMERIC))
        return OP_ERROR;
    if (c->node->opset < 12 && ew_same_types(c, 0, 1)) return OP_ERROR;
    return ew_set_broadcast(c, 0, 2, c->in[0]->dtype);
}

/* ---- integer helpers (operands widened to 64 bits, results truncated) ---- */

static inline int64_t div_s(int64_t x, int64_t y)
{
    if (y == 0) return 0;
    if (y == -1) return (int64_t)(0 - (uint64_t)x);   /* INT_MIN / -1 wraps */
    return x / y;
}
static inline uint64_t div_u(uint64_t x, uint64_t y) { return y ? x / y : 0; }

static inline int64_t rem_s(int64_t x, int64_t y, int python)
{
    if (y == 0 || y == -1) return 0;
    int64_t r = x % y;
    if (python && r != 0 && ((r < 0) != (y < 0))) r += y;   /* opposite signs: no overflow */
    return r;
}
static inline uint64_t rem_u(uint64_t x, uint64_t y) { return y ? x % y : 0; }

#define INT_DIV(T, x, y) (IS_SIGNED_T(T) ? (T)div_s((int64_t)(x), (int64_t)(y)) \
                                         : (T)div_u((uint64_t)(x), (uint64_t)(y)))
#define INT_REM(T, x, y, py) (IS_SIGNED_T(T) ? (T)rem_s((int64_t)(x), (int64_t)(y), (py)) \
                                             : (T)rem_u((uint64_t)(x), (uint64_t)(y)))

/* Integer power modulo 2^64 (then truncated to T, which is the wrapped
 * result). Negative exponents: 1 for base 1, +-1 for base -1, else 0 (the
 * truncated reciprocal; 0^-n is defined as 0). */
static inline uint64_t ipow(uint64_t b, int b_neg, uint64_t e, int e_neg)
{
    if (e_neg) {
        if (b == 1) return 1;
        if (b_neg && b == UINT64_MAX) return (e & 1) ? UINT64_MAX : 1;
        return 0;
    }
    uint64_t r = 1;
    while (e) {
        if (e & 1) r *= b;
        b *= b;
        e >>= 1;
    }
    return r;
}

/* ---- arithmetic ---- */

/* Defines kernel `name` over broadcast ranges: FEXPR for float types, IEXPR
 * for integers, over x, y of type T. */
#define ARITH_KERNEL(name, FEXPR, IEXPR)                                        \
    EW_BINARY_RANGE(name##_range, FEXPR, IEXPR)                                 \
    int name(op_ctx_t *c) { return ew_broadcast(c, 2, name##_range); }

/* float32 Add, Sub, Mul and Div: each piece of a row in one call of
 * vmath's row form (vm_binary_f32: 16 lanes at AVX-512, the same bits at
 * every level), a piece shorter than a vector element by element
 * (vm_binary1_from, the reference: the same bits); the other types
 * through ARITH_KERNEL's loops. */
static void f32_piece(vm_binary_fn form, vm_binop_t op, const float *a, int sa, const float *b, int sb, float *o,
                      int64_t n)
{
    if (n >= 16) form(op, a, sa, b, sb, o, n);
    else vm_binary1_from(op, a, sa, b, sb, o, 0, n);
}

/* Rows shorter than a vector, grouped. A plan whose rows are a few
 * elements (RT-DETR's sampling offsets, [300,8,3,4,2] times [300,1,1,1,2]:
 * 28,800 rows of 2) went a row at a time, element by element. Where the
 * axis above the rows is walked contiguously by one operand and repeats
 * the other's row, a group of those rows is one row of the vector form:
 * the repeated row copied out as many times as the group needs (the same
 * values, so the same bits). The operand that walks is x or y: `rep` says
 * which repeats (0 or 1). */
#define GROUP_MAX 4096
static int f32_groups(const ew_job_t *j, int64_t s, int64_t e, vm_binop_t op, int rep)
{
    const bcast_t *b = j->b;
    bcast_t g = *b;   /* the rows of b, each group of dims[rank-2] rows one row */
    g.rank = b->rank - 1;
    g.inner = b->dims[b->rank - 2] * b->inner;
    g.dims[g.rank - 1] = g.inner;
    g.rows = b->rows / b->dims[b->rank - 2];
    for (int i = 0; i < 2; i++) g.st[i][g.rank - 1] = g.is[i] = 1;
    const int64_t n = b->inner, chunk = GROUP_MAX / n * n;
    float pattern[GROUP_MAX + 16];
    const float *made_from = NULL;   /* the row pattern[0, made) repeats */
    int64_t made = 0;
    vm_binary_fn form = vm_binary_f32_form();
    const float *xs = j->x, *ys = j->y;
    float *o = j->o;
    int64_t pos = s;
    bcast_iter_t it = bcast_seek(&g, pos / g.inner);
    while (pos < e) {
        int64_t base = it.row * g.inner, j0 = pos - base, j1 = e - base < g.inner ? e - base : g.inner;
        const float *walk = (rep ? xs : ys) + it.off[rep ? 0 : 1], *row = (rep ? ys : xs) + it.off[rep ? 1 : 0];
        int64_t filled = j1 - j0 + n < chunk + n ? j1 - j0 + n : chunk + n;
        if (row != made_from || filled > made) {   /* else the copies of the last group serve */
            memcpy(pattern, row, (size_t)n * sizeof *pattern);
            for (int64_t k = n; k < filled; k *= 2)   /* the copies so far, doubled */
                memcpy(pattern + k, pattern, (size_t)(filled - k < k ? filled - k : k) * sizeof *pattern);
            made_from = row;
            made = filled;
        }
        for (int64_t q = j0; q < j1; q += chunk) {
            int64_t len = j1 - q < chunk ? j1 - q : chunk;
            const float *p = pattern + q % n;
            if (rep) f32_piece(form, op, walk + q, 1, p, 1, o + base + q, len);
            else f32_piece(form, op, p, 1, walk + q, 1, o + base + q, len);
        }
        pos = base + j1;
        bcast_next(&g, &it);
    }
    return 0;
}

/* Which operand repeats its row along the axis above the rows, the other
 * walking both axes as one (f32_groups); -1 where the plan is not that. */
static int repeated_row(const bcast_t *b)
{
    if (b->n != 2 || b->rank < 2 || b->inner >= 16 || !b->is[0] || !b->is[1]) return -1;
    const int r = b->rank - 2;
    if (b->inner < 1 || b->dims[r] < 1) return -1;   /* an empty output: nothing to group */
    if (b->st[0][r] == b->inner && b->st[1][r] == 0) return 1;
    if (b->st[1][r] == b->inner && b->st[0][r] == 0) return 0;
    return -1;
}

static int f32_rows(const ew_job_t *j, int64_t s, int64_t e, vm_binop_t op)
{
    int rep = repeated_row(j->b);
    if (rep >= 0) return f32_groups(j, s, e, op, rep);
    vm_binary_fn form = vm_binary_f32_form();
    BIN_ROWS(j, float, float, float, s, e,
             f32_piece(form, op, pa_ + (sa_ ? j0_ : 0), sa_, pb_ + (sb_ ? j0_ : 0), sb_, po_ + j0_, j1_ - j0_));
    return 0;
}

#define ARITH_KERNEL_F32(name, OP, FEXPR, IEXPR)                                \
    EW_BINARY_RANGE(name##_typed, FEXPR, IEXPR)                                 \
    static int name##_range(const ew_job_t *j, int64_t s, int64_t e)            \
    {                                                                           \
        if (j->c->in[0]->dtype == DT_FLOAT) return f32_rows(j, s, e, OP);       \
        return name##_typed(j, s, e);                                           \
    }                                                                           \
    int name(op_ctx_t *c) { return ew_broadcast(c, 2, name##_range); }

ARITH_KERNEL_F32(run_add, VM_ADD, x + y, (uint64_t)x + (uint64_t)y)
ARITH_KERNEL_F32(run_sub, VM_SUB, x - y, (uint64_t)x - (uint64_t)y)
ARITH_KERNEL_F32(run_mul, VM_MUL, x * y, (uint64_t)x * (uint64_t)y)
ARITH_KERNEL_F32(run_div, VM_DIV, x / y, INT_DIV(T, x, y))

/* fmod=1 everywhere (floats require it: shape function), fmod=0 integers */
static int mod_c(op_ctx_t *c);
static int mod_python(op_ctx_t *c);
ARITH_KERNEL(mod_c, fmod(x, y), INT_REM(T, x, y, 0))
ARITH_KERNEL(mod_python, fmod(x, y), INT_REM(T, x, y, 1))

int run_mod(op_ctx_t *c)
{
    const int python = attr_int(c->node, "fmod", 0) == 0;
    if (python && dtype_is_float(c->in[0]->dtype))
        return op_fail(c, "fmod must be 1 for floating-point inputs");
    return python ? mod_python(c) : mod_c(c);
}

static int pow_range(const ew_job_t *j, int64_t s, int64_t e)
{
    const dtype_t bt = j->c->in[0]->dtype, et = j->c->in[1]->dtype;
    if (dtype_is_float(bt)) {
        /* float base: the exponent converted to the base's type, pow in that type */
        DISPATCH_FLOAT(bt, typedef T TB;
                       DISPATCH_NUMERIC(et, BIN_RANGE(j, TB, T, TB, s, e, pow(x, (TB)y)),
                                        return ew_bad_type(j->c, et)),
                       return ew_bad_type(j->c, bt))
    } else if (dtype_is_float(et)) {
        /* integer base, float exponent: pow in double, truncated like astype */
        DISPATCH_INT(bt, typedef T TB;
                     DISPATCH_FLOAT(et, BIN_RANGE(j, TB, T, TB, s, e, SAT_TO_INT(TB, pow((double)x, (double)y))),
                                    return ew_bad_type(j->c, et)),
                     return ew_bad_type(j->c, bt))
    } else {
        /* integers: exact power, wrapping */
        DISPATCH_INT(bt, typedef T TB;
                     DISPATCH_INT(et, BIN_RANGE(j, TB, T, TB, s, e,
                                                ipow((uint64_t)x, LT0(TB, x), (uint64_t)y, LT0(T, y))),
                                  return ew_bad_type(j->c, et)),
                     return ew_bad_type(j->c, bt))
    }
    return 0;
}
/* float32 x^2 with a scalar exponent (a decomposed LayerNorm's variance):
 * x * x, the correctly rounded square, as numpy's power, PyTorch and ONNX
 * Runtime compute it. powf (this file's pow on floats, via tgmath.h) is
 * not correctly rounded: on RT-DETR's LayerNorm inputs it was one ulp off
 * for 9 of 12,800 values. And x * x is ten times faster. A NaN keeps going
 * through pow. */
static int square_range(const ew_job_t *j, int64_t s, int64_t e)
{
    const float *x = j->x;
    float *o = j->o;
    for (int64_t i = s; i < e; i++) o[i] = x[i] == x[i] ? x[i] * x[i] : (float)pow(x[i], 2.0);
    return 0;
}

static int is_square(const op_ctx_t *c)
{
    const tensor_t *x = c->in[0], *y = c->in[1];
    if (x->dtype != DT_FLOAT || tensor_numel(y) != 1 || tensor_numel(x) != tensor_numel(c->out[0])) return 0;
    double v;
    switch (y->dtype) {
    case DT_FLOAT: v = *(const float *)y->data; break;
    case DT_DOUBLE: v = *(const double *)y->data; break;
    case DT_INT64: v = (double)*(const int64_t *)y->data; break;
    case DT_INT32: v = *(const int32_t *)y->data; break;
    default: return 0;
    }
    return v == 2.0;
}

int run_pow(op_ctx_t *c)
{
    if (is_square(c)) {
        ew_job_t j = {.c = c, .x = c->in[0]->data, .o = c->out[0]->data, .last = 1};
        return ew_parallel(&j, tensor_numel(c->out[0]), square_range);
    }
    return ew_broadcast(c, 2, pow_range);
}

/* Shifts by the width or more give 0 (no undefined behaviour). */
static int shl_range(const ew_job_t *j, int64_t s, int64_t e)
{
    const dtype_t dt = j->c->in[0]->dtype;
    DISPATCH_INT(dt,
                 BIN_RANGE(j, T, T, T, s, e,
                           (uint64_t)y >= 8 * sizeof(T) ? (T)0 : (T)((uint64_t)x << (uint64_t)y)),
                 return ew_bad_type(j->c, dt))
    return 0;
}

static int shr_range(const ew_job_t *j, int64_t s, int64_t e)
{
    const dtype_t dt = j->c->in[0]->dtype;
    DISPATCH_INT(dt,
                 BIN_RANGE(j, T, T, T, s, e,
                           (uint64_t)y >= 8 * sizeof(T) ? (T)0 : (T)((uint64_t)x >> (uint64_t)y)),
                 return ew_bad_type(j->c, dt))
    return 0;
}

int run_bitshift(op_ctx_t *c)
{
    const int right = shift_right(c);
    if (right < 0) return OP_ERROR;
    return ew_broadcast(c, 2, right ? shr_range : shl_range);
}

/* ---- comparisons and logic: bool (uint8 0/1) results ---- */

#define CMP_KERNEL(name, OP)                                                    \
    static int name##_range(const ew_job_t *j, int64_t s, int64_t e)            \
    {                                                                           \
        const dtype_t dt = j->c->in[0]->dtype;                                  \
        if (dt == DT_BOOL) {                                                    \
            BIN_RANGE(j, uint8_t, uint8_t, uint8_t, s, e, (x != 0) OP (y != 0)); \
            return 0;                                                           \
        }                                                                       \
        DISPATCH_NUMERIC(dt, BIN_RANGE(j, T, T, uint8_t, s, e, x OP y),         \
                         return ew_bad_type(j->c, dt))                          \
        return 0;                                                               \
    }                                                                           \
    int name(op_ctx_t *c) { return ew_broadcast(c, 2, name##_range); }

CMP_KERNEL(run_equal, ==)
CMP_KERNEL(run_greater, >)
CMP_KERNEL(run_greater_equal, >=)
CMP_KERNEL(run_less, <)
CMP_KERNEL(run_less_equal, <=)

#define LOGIC_KERNEL(name, EXPR)                                                \
    static int name##_range(const ew_job_t *j, int64_t s, int64_t e)            \
    {                                                                           \
        BIN_RANGE(j, uint8_t, uint8_t, uint8_t, s, e, EXPR);                    \
        return 0;                                                               \
    }                                                                           \
    int name(op_ctx_t *c) { return ew_broadcast(c, 2, name##_range); }

LOGIC_KERNEL(run_and, (x != 0) & (y != 0))
LOGIC_KERNEL(run_or, (x != 0) | (y != 0))
LOGIC_KERNEL(run_xor, (x != 0) ^ (y != 0))
