/* elementwise.c — the elementwise operator family: its rows in the op table
 * and the checks its shape functions share. Kernels live in unary.c,
 * activation.c, binary.c, variadic.c and cast.c; the broadcasting walk in
 * bcast.c.
 *
 * Rows cover every version from opset 1 where the older form only differs by
 * the ignorable consumed_inputs hint or by the legacy broadcast/axis
 * attributes (handled in legacy_view); ops whose semantics changed get one
 * row per form (Clip: attributes before 11, inputs from 11). Type
 * additions across versions (integers for Relu-14, Max-12, ...) are checked
 * in the shape functions against the node's opset where it matters. */
#include <stdio.h>
#include <string.h>
#include "ops/elementwise/elementwise_impl.h"
#include "ops/run.h"
#include "tensor/half.h"
#include "util/pool.h"

int ew_bad_type(op_ctx_t *c, dtype_t dt)
{
    return op_fail(c, "element type %s is not supported by this kernel", dtype_name(dt));
}

int ew_attr_choice(op_ctx_t *c, const char *name, const char *dflt, const char *a, const char *b)
{
    char buf[64];
    const char *v = attr_string(c->node, name, dflt, buf, sizeof buf);
    if (!strcmp(v, a)) return 0;
    if (!strcmp(v, b)) return 1;
    return op_fail(c, "attribute %s='%s' is not '%s' or '%s'", name, v, a, b);
}

int ew_check_type(op_ctx_t *c, dtype_t dt, unsigned mask, const char *what)
{
    if ((unsigned)dt < 32 && (mask & TM(dt))) return 0;
    return op_fail(c, "%s has element type %s, which this operator does not take", what, dtype_name(dt));
}

int ew_check_input(op_ctx_t *c, int i, unsigned mask)
{
    char what[32];
    snprintf(what, sizeof what, "input %d", i);
    return ew_check_type(c, c->in[i]->dtype, mask, what);
}

int ew_same_types(op_ctx_t *c, int i, int j)
{
    if (!c->in[i] || !c->in[j] || c->in[i]->dtype == c->in[j]->dtype) return 0;
    return op_fail(c, "inputs %d and %d have different element types (%s, %s)", i, j,
                   dtype_name(c->in[i]->dtype), dtype_name(c->in[j]->dtype));
}

/* Opset < 7 forms: binary ops with broadcast=1 align B with A from `axis`
 * (default: B's trailing axes), and PRelu-6 applies a slope of size C along
 * axis 1. Both become numpy broadcasting once B's shape is padded with ones
 * to A's rank. Returns input i, or a view of it with the padded shape (in
 * *view, sharing data); NULL after a failure. */
static const tensor_t *legacy_view(op_ctx_t *c, int i, tensor_t *view)
{
    const tensor_t *a = c->in[0], *b = c->in[i];
    if (c->node->opset >= 7 || i != 1 || !a || !b) return b;
    int64_t axis;
    if (!strcmp(c->node->op_type, "PRelu")) {
        if (b->ndim != 1 || a->ndim < 2 || b->dims[0] == 1 || b->dims[0] != a->dims[1]) return b;
        axis = 1;
    } else {
        if (attr_int(c->node, "broadcast", 0) != 1 || b->ndim > a->ndim) return b;
        axis = attr_int(c->node, "axis", a->ndim - b->ndim);
        if (axis < 0) axis += a->ndim;
        if (axis < 0 || axis + b->ndim > a->ndim) {
            op_fail(c, "broadcast axis %lld does not fit B (rank %d) into A (rank %d)",
                    (long long)axis, b->ndim, a->ndim);
            return NULL;
        }
    }
    *view = *b;
    view->owns = 0;
    view->ndim = a->ndim;
    for (int d = 0; d < a->ndim; d++)
        view->dims[d] = d >= axis && d < axis + b->ndim ? b->dims[d - axis] : 1;
    return view;
}

int ew_set_broadcast(op_ctx_t *c, int first, int n, dtype_t dt)
{
    int64_t dims[TENSOR_MAX_DIMS];
    const tensor_t *ins[2];
    const tensor_t *const *use = c->in + first;
    tensor_t view;
    if (first == 0 && n == 2) {
        ins[0] = c->in[0];
        if (!(ins[1] = legacy_view(c, 1, &view))) return OP_ERROR;
        use = ins;
    }
    int rank = broadcast_shapes(n, use, dims, c->err, c->node);
    if (rank < 0) return OP_ERROR;
    return op_set_out(c, 0, dt, rank, dims);
}

int ew_plan(op_ctx_t *c, bcast_t *b, int n)
{
    const tensor_t *ins[BCAST_MAX_IN];
    tensor_t view;
    for (int k = 0; k < n; k++) ins[k] = c->in[k];
    if (n == 2 && !(ins[1] = legacy_view(c, 1, &view))) return OP_ERROR;
    if (bcast_plan_tensors(b, n, ins, c->out[0]))
        return op_fail(c, "input shapes do not broadcast to the output shape");
    return 0;
}

typedef struct chunk_ctx {
    const ew_job_t *j;
    ew_range_fn fn;
    int64_t total;
    int act;         /* apply the node's fused activation to each finished chunk */
    dtype_t round;   /* then round it to this storage type (op_ctx_t.round_out) */
} chunk_ctx_t;

static void run_chunk(void *arg, int64_t k)
{
    const chunk_ctx_t *x = arg;
    int64_t s = k * EW_CHUNK, e = s + EW_CHUNK < x->total ? s + EW_CHUNK : x->total;
    float *o = (float *)x->j->o + s;
    x->fn(x->j, s, e);
    if (x->act) node_act_range(x->j->c->node, o, e - s);
    if (x->round == DT_FLOAT16) round_f16_inplace(o, e - s);
    else if (x->round == DT_BFLOAT16) round_bf16_inplace(o, e - s);
}

/* A fused activation (a SiLU after an Add, passes/fuse.c) and then the
 * storage rounding of an FP16/BF16 layer run on each chunk while it is in
 * cache rather than in second and third passes over the whole output: the
 * same functions of the same values in the same order, element by element,
 * so the same bits. The rounding only in the kernel's last pass (not a
 * step of Sum's fold) and where nothing is left to apply after the chunk
 * (the activation done here or none). */
int ew_parallel(const ew_job_t *j, int64_t total, ew_range_fn fn)
{
    if (fn(j, 0, 0)) return OP_ERROR;       /* type check; no elements */
    op_ctx_t *c = j->c;
    const tensor_t *o = c->out[0];
    int whole = o->dtype == DT_FLOAT && j->o == o->data && tensor_numel(o) == total;
    int act = whole && c->node && c->node->act != ACT_NONE;
    dtype_t round = whole && j->last && (act || !c->node || c->node->act == ACT_NONE) ? c->round_out : DT_UNDEFINED;
    chunk_ctx_t x = {j, fn, total, act, round};
    pool_for((total + EW_CHUNK - 1) / EW_CHUNK, run_chunk, &x);
    if (x.act) c->act_done = 1;
    if (x.round) c->round_done = 1;
    return 0;
}

int ew_unary(op_ctx_t *c, ew_range_fn fn)
{
    ew_job_t j = {.c = c, .x = c->in[0]->data, .o = c->out[0]->data, .last = 1};
    return ew_parallel(&j, tensor_numel(c->in[0]), fn);
}

int ew_broadcast(op_ctx_t *c, int n, ew_range_fn fn)
{
    bcast_t b;
    if (ew_plan(c, &b, n)) return OP_ERROR;
    ew_job_t j = {.c = c, .b = &b, .x = c->in[0]->data, .y = c->in[1]->data,
                  .z = n > 2 ? c->in[2]->data : NULL, .o = c->out[0]->data, .last = 1};
    return ew_parallel(&j, tensor_numel(c->out[0]), fn);
}

#define ROW(op, since, until, shape, run) {"", op, since, until, shape, run, 0, 0, 0}
#define ROW_ANY(op, since, until, shape, run) {"", op, since, until, shape, run, 0, 0, 1}
/* kernels that run element by element (UN_RANGE, BIN_RANGE, vmath's array
 * functions, which work in place): their output may take an input's bytes */
#define ROW_INPLACE(op, since, until, shape, run) {"", op, since, until, shape, run, 0, 0, 0, 0, 0, 1}

const op_def_t ops_elementwise[] = {
    /* unary math */
    ROW_INPLACE("Abs", 1, 0, ew_shape_numeric, run_abs),
    ROW("Acos", 7, 0, ew_shape_float, run_acos),
    ROW("Acosh", 9, 0, ew_shape_float, run_acosh),
    ROW("Asin", 7, 0, ew_shape_float, run_asin),
    ROW("Asinh", 9, 0, ew_shape_float, run_asinh),
    ROW("Atan", 7, 0, ew_shape_float, run_atan),
    ROW("Atanh", 9, 0, ew_shape_float, run_atanh),
    ROW("Ceil", 1, 0, ew_shape_float, run_ceil),
    ROW("Cos", 7, 0, ew_shape_float, run_cos),
    ROW("Cosh", 9, 0, ew_shape_float, run_cosh),
    ROW("Erf", 9, 0, ew_shape_numeric, run_erf),
    ROW("Exp", 1, 0, ew_shape_float, run_exp),
    ROW("Floor", 1, 0, ew_shape_float, run_floor),
    ROW("Log", 1, 0, ew_shape_float, run_log),
    ROW_INPLACE("Neg", 1, 0, ew_shape_neg, run_neg),
    ROW("Reciprocal", 1, 0, ew_shape_float, run_reciprocal),
    ROW("Round", 11, 0, ew_shape_float, run_round),
    ROW("Sign", 9, 0, ew_shape_numeric, run_sign),
    ROW("Sin", 7, 0, ew_shape_float, run_sin),
    ROW("Sinh", 9, 0, ew_shape_float, run_sinh),
    ROW("Sqrt", 1, 0, ew_shape_float, run_sqrt),
    ROW("Tan", 7, 0, ew_shape_float, run_tan),
    ROW("Tanh", 1, 0, ew_shape_float, run_tanh),
    ROW("Not", 1, 0, ew_shape_not, run_not),
    ROW("IsInf", 10, 0, ew_shape_isx, run_isinf),
    ROW("IsNaN", 9, 0, ew_shape_isx, run_isnan),
    /* activations */
    ROW_INPLACE("Relu", 1, 0, ew_shape_relu, run_relu),
    ROW_INPLACE("Sigmoid", 1, 0, ew_shape_float, run_sigmoid),
    ROW("Softplus", 1, 0, ew_shape_float, run_softplus),
    ROW("Softsign", 1, 0, ew_shape_float, run_softsign),
    ROW("Elu", 1, 0, ew_shape_float, run_elu),
    ROW("Selu", 1, 0, ew_shape_float, run_selu),
    ROW("Celu", 12, 0, ew_shape_float, run_celu),
    ROW_INPLACE("LeakyRelu", 1, 0, ew_shape_float, run_leakyrelu),
    ROW("HardSigmoid", 1, 0, ew_shape_float, run_hardsigmoid),
    ROW("HardSwish", 14, 0, ew_shape_float, run_hardswish),
    ROW("Mish", 18, 0, ew_shape_float, run_mish),
    /* Gelu is opset 20; exporters emit it under older imports, so any opset */
    ROW("Gelu", 1, 0, ew_shape_gelu, run_gelu),
    ROW("ThresholdedRelu", 10, 0, ew_shape_float, run_thresholdedrelu),
    ROW("Shrink", 9, 0, ew_shape_shrink, run_shrink),
    ROW("PRelu", 1, 0, ew_shape_prelu, run_prelu),
    ROW("Clip", 1, 10, ew_shape_clip, run_clip),
    ROW("Clip", 11, 0, ew_shape_clip, run_clip),
    /* binary, numpy broadcasting */
    ROW_INPLACE("Add", 1, 0, ew_shape_arith, run_add),
    ROW_INPLACE("Sub", 1, 0, ew_shape_arith, run_sub),
    ROW_INPLACE("Mul", 1, 0, ew_shape_arith, run_mul),
    ROW_INPLACE("Div", 1, 0, ew_shape_arith, run_div),
    ROW("Pow", 1, 0, ew_shape_pow, run_pow),
    ROW("Mod", 10, 0, ew_shape_mod, run_mod),
    ROW("BitShift", 11, 0, ew_shape_bitshift, run_bitshift),
    ROW("Equal", 1, 0, ew_shape_equal, run_equal),
    ROW("Greater", 1, 0, ew_shape_compare, run_greater),
    ROW("GreaterOrEqual", 12, 0, ew_shape_compare, run_greater_equal),
    ROW("Less", 1, 0, ew_shape_compare, run_less),
    ROW("LessOrEqual", 12, 0, ew_shape_compare, run_less_equal),
    ROW("And", 1, 0, ew_shape_logic, run_and),
    ROW("Or", 1, 0, ew_shape_logic, run_or),
    ROW("Xor", 1, 0, ew_shape_logic, run_xor),
    /* variadic, numpy broadcasting (before opset 8 they required equal shapes:
     * broadcasting is a superset) */
    ROW("Sum", 1, 0, ew_shape_variadic, run_sum),
    ROW("Max", 1, 0, ew_shape_variadic, run_max),
    ROW("Min", 1, 0, ew_shape_variadic, run_min),
    ROW("Mean", 1, 0, ew_shape_variadic, run_mean),
    ROW_ANY("Where", 9, 0, ew_shape_where, run_where),
    /* conversions */
    ROW_ANY("Cast", 6, 0, ew_shape_cast, run_cast),
    ROW_ANY("CastLike", 15, 0, ew_shape_castlike, run_cast),
};
const int ops_elementwise_count = sizeof ops_elementwise / sizeof ops_elementwise[0];
