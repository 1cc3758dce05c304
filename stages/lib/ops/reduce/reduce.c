/* reduce.c — the REDUCE family's operator table (ops_reduce[]) and the
 * Reduce* operators' axes handling and shape function.
 *
 * Reduce*: axes come from an attribute up to ReduceSum-11 / Reduce*-13 and
 * from an optional second input from ReduceSum-13 / Reduce*-18 on, where an
 * empty or omitted axes input means "all axes", or "no reduction at all"
 * when noop_with_empty_axes = 1. The kernels are in reduce_walk.c; the other
 * ops of the family live in argmax.c, softmax.c, topk.c, cumsum.c, loss.c.
 */
#include <string.h>
#include "ops/reduce/reduce_impl.h"

int red_check_type(op_ctx_t *c, int input, dtype_t dt, int allow_int)
{
    if (dt == DT_FLOAT || dt == DT_DOUBLE) return 0;
    if (allow_int && (dtype_is_signed_int(dt) || dtype_is_unsigned_int(dt))) return 0;
    return op_fail(c, "input %d: element type %s is not supported (expected %s)", input,
                   dtype_name(dt), allow_int ? "a float or integer type" : "float32 or float64");
}

void red_split_axis(const tensor_t *t, int axis, int64_t *outer, int64_t *n, int64_t *inner)
{
    *outer = 1;
    *inner = 1;
    for (int d = 0; d < axis; d++) *outer *= t->dims[d];
    for (int d = axis + 1; d < t->ndim; d++) *inner *= t->dims[d];
    *n = axis < t->ndim ? t->dims[axis] : 1;
}

/* Whether this node takes its axes from input 1 rather than an attribute. */
static int axes_from_input(const node_t *n)
{
    return !strcmp(n->op_type, "ReduceSum") ? n->opset >= 13 : n->opset >= 18;
}

/* Fills red[d] = 1 for each reduced axis of a rank-`rank` input; sets *noop
 * when the node must copy its input unchanged. Returns 0, OP_DYNAMIC (axes
 * input without data at build time) or -1. */
static int reduce_axes(op_ctx_t *c, int rank, unsigned char *red, int *noop)
{
    const node_t *n = c->node;
    int64_t ax[TENSOR_MAX_DIMS];
    int nax = 0, from_input = axes_from_input(n);

    *noop = 0;
    if (op_check_inputs(c, 1, from_input ? 2 : 1)) return -1;
    if (from_input) {
        const tensor_t *a = c->n_in > 1 ? c->in[1] : NULL;
        if (node_attr(n, "axes"))   /* an older exporter's form: refuse, never ignore */
            return op_fail(c, "at opset %d axes is an input, not an attribute", n->opset);
        if (a && tensor_numel(a) > 0) {
            if (!a->data) return OP_DYNAMIC;
            if (a->ndim > 1) return op_fail(c, "axes input must be 1-D, got rank %d", a->ndim);
            nax = op_read_ints(c, a, ax, TENSOR_MAX_DIMS);
            if (nax < 0) return -1;
        }
        if (nax == 0 && attr_int(n, "noop_with_empty_axes", 0)) {
            *noop = 1;
            return 0;
        }
    } else {
        const int64_t *v;
        int k = attr_ints(n, "axes", &v);
        if (k > TENSOR_MAX_DIMS)
            return op_fail(c, "attribute axes has %d entries, more than rank %d", k, rank);
        for (int i = 0; i < k; i++) ax[i] = v[i];
        nax = k > 0 ? k : 0;
    }
    /* no axes = every axis; a scalar has nothing to reduce over */
    memset(red, nax == 0, TENSOR_MAX_DIMS);
    if (rank == 0) {
        memset(red, 0, TENSOR_MAX_DIMS);
        for (int i = 0; i < nax; i++)
            if (ax[i] != 0 && ax[i] != -1)
                return op_fail(c, "axis %lld out of range for a scalar input", (long long)ax[i]);
        return 0;
    }
    for (int i = 0; i < nax; i++) {
        int a = op_axis(c, ax[i], rank);
        if (a < 0) return -1;
        if (red[a]) return op_fail(c, "axis %lld is listed twice", (long long)ax[i]);
        red[a] = 1;
    }
    return 0;
}

int reduce_shape(op_ctx_t *c)
{
    unsigned char red[TENSOR_MAX_DIMS];
    int noop, rc;
    if (op_check_inputs(c, 1, 2)) return -1;
    const tensor_t *x = c->in[0];
    if (red_check_type(c, 0, x->dtype, 1)) return -1;
    rc = reduce_axes(c, x->ndim, red, &noop);
    if (rc) return rc;
    if (noop) return op_set_out(c, 0, x->dtype, x->ndim, x->dims);
    int keep = attr_int(c->node, "keepdims", 1) != 0;
    int64_t dims[TENSOR_MAX_DIMS];
    int nd = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (!red[d]) dims[nd++] = x->dims[d];
        else if (keep) dims[nd++] = 1;
    }
    return op_set_out(c, 0, x->dtype, nd, dims);
}

/* reduce_walk.c */
int reduce_kernel(op_ctx_t *c, const char *op, const unsigned char *red);

int reduce_run(op_ctx_t *c)
{
    unsigned char red[TENSOR_MAX_DIMS];
    int noop, rc;
    const tensor_t *x = c->in[0];
    rc = reduce_axes(c, x->ndim, red, &noop);
    if (rc == OP_DYNAMIC) return op_fail(c, "axes input has no data at run time");
    if (rc) return rc;
    if (noop) {
        memcpy(c->out[0]->data, x->data, tensor_nbytes(x));
        return 0;
    }
    return reduce_kernel(c, c->node->op_type, red);
}

#define REDUCE_ROWS(NAME)                                             \
    {"", NAME, 1, 17, reduce_shape, reduce_run, 0, 0, 0},             \
    {"", NAME, 18, 0, reduce_shape, reduce_run, 0, 0, 0}

/* Rows split where the ONNX signature changes (axes attribute -> input);
 * versions in between (11: negative axes, 12/13: more types) are handled by
 * the same code, so they share a row. */
const op_def_t ops_reduce[] = {
    REDUCE_ROWS("ReduceMax"), REDUCE_ROWS("ReduceMin"), REDUCE_ROWS("ReduceMean"),
    REDUCE_ROWS("ReduceProd"), REDUCE_ROWS("ReduceL1"), REDUCE_ROWS("ReduceL2"),
    REDUCE_ROWS("ReduceLogSum"), REDUCE_ROWS("ReduceLogSumExp"),
    REDUCE_ROWS("ReduceSumSquare"),
    {"", "ReduceSum", 1, 12, reduce_shape, reduce_run, 0, 0, 0},
    {"", "ReduceSum", 13, 0, reduce_shape, reduce_run, 0, 0, 0},
    {"", "ArgMax", 1, 0, argmax_shape, argmax_run, 0, 0, 0},
    {"", "ArgMin", 1, 0, argmax_shape, argmax_run, 0, 0, 0},
    /* opset 1-12: input coerced to 2-D at axis (default 1); 13+: one axis (default -1).
     * Softmax runs in place (softmax.c: each element's exp is written where it
     * was read, after the maxima; the scaling reads the output only), so its
     * output may take its input's bytes; LogSoftmax's float32 blocks read the
     * input again after writing, so it may not. */
    {"", "Softmax", 1, 12, softmax_shape, softmax_run, 0, 0, 0, 0, 0, 1},
    {"", "Softmax", 13, 0, softmax_shape, softmax_run, 0, 0, 0, 0, 0, 1},
    {"", "LogSoftmax", 1, 12, softmax_shape, softmax_run, 0, 0, 0},
    {"", "LogSoftmax", 13, 0, softmax_shape, softmax_run, 0, 0, 0},
    {"", "Hardmax", 1, 12, softmax_shape, softmax_run, 0, 0, 0},
    {"", "Hardmax", 13, 0, softmax_shape, softmax_run, 0, 0, 0},
    /* 1: k attribute; 10: k input; 11: largest, sorted, negative axis */
    {"", "TopK", 1, 9, topk_shape, topk_run, 0, 0, 0},
    {"", "TopK", 10, 0, topk_shape, topk_run, 0, 0, 0},
    {"", "CumSum", 11, 0, cumsum_shape, cumsum_run, 0, 0, 0},
    {"", "NegativeLogLikelihoodLoss", 12, 0, nllloss_shape, nllloss_run, 0, 0, 0},
    {"", "SoftmaxCrossEntropyLoss", 12, 0, sce_shape, sce_run, 0, 0, 0},
    {"", "Det", 11, 0, det_shape, det_run, 0, 0, 0},
};
const int ops_reduce_count = (int)(sizeof ops_reduce / sizeof ops_reduce[0]);
