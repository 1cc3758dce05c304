/* common.c — helpers shared by shape functions and kernels: errors that name
 * the node, output allocation, broadcasting, axis normalisation. */
#include <stdio.h>
#include <string.h>
#include "ops/ops.h"

int op_fail(op_ctx_t *c, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return BAD(c->err, "node '%s' (%s): %s", c->node->name, c->node->op_type, msg);
}

int op_check_inputs(op_ctx_t *c, int min, int max)
{
    if (c->n_in < min || c->n_in > max)
        return op_fail(c, "has %d inputs, expected %d to %d", c->n_in, min, max);
    for (int i = 0; i < min; i++)
        if (!c->in[i]) return op_fail(c, "required input %d is missing", i);
    return 0;
}

int op_set_out(op_ctx_t *c, int i, dtype_t dt, int ndim, const int64_t *dims)
{
    if (i >= c->n_out) return 0;   /* optional output not requested */
    tensor_t *o = c->out[i];
    if (!o) return 0;
    perr_t tmp = {0};
    if (tensor_check_shape(dt, ndim, dims, &tmp))
        return op_fail(c, "output %d: %s", i, tmp.msg);
    o->dtype = dt;
    o->ndim = ndim;
    for (int k = 0; k < ndim; k++) o->dims[k] = dims[k];
    return 0;
}

int shape_same_as_input0(op_ctx_t *c)
{
    if (c->n_in < 1 || !c->in[0]) return op_fail(c, "missing input 0");
    return op_set_out(c, 0, c->in[0]->dtype, c->in[0]->ndim, c->in[0]->dims);
}

int broadcast_shapes(int n, const tensor_t *const *ts, int64_t *out, perr_t *e, const node_t *node)
{
    int rank = 0;
    for (int i = 0; i < n; i++)
        if (ts[i] && ts[i]->ndim > rank) rank = ts[i]->ndim;
    for (int d = 0; d < rank; d++) out[d] = 1;
    for (int i = 0; i < n; i++) {
        if (!ts[i]) continue;
        int off = rank - ts[i]->ndim;
        for (int d = 0; d < ts[i]->ndim; d++) {
            int64_t v = ts[i]->dims[d], *o = &out[off + d];
            if (v == *o || v == 1) continue;
            if (*o == 1) { *o = v; continue; }
            char a[160], b[160];
            return BAD(e, "node '%s' (%s): shapes %s and %s do not broadcast",
                       node ? node->name : "?", node ? node->op_type : "?",
                       shape_str(ts[0]->ndim, ts[0]->dims, a, sizeof a),
                       shape_str(ts[i]->ndim, ts[i]->dims, b, sizeof b));
        }
    }
    return rank;
}

int op_axis(op_ctx_t *c, int64_t axis, int rank)
{
    if (axis < -rank || axis >= (rank ? rank : 1))
        return op_fail(c, "axis %lld out of range for rank %d", (long long)axis, rank);
    return (int)(axis < 0 ? axis + rank : axis);
}

int op_read_ints(op_ctx_t *c, const tensor_t *t, int64_t *dst, int max)
{
    int64_t n = tensor_numel(t);
    if (n > max) return op_fail(c, "expected at most %d values, got %lld", max, (long long)n);
    if (t->dtype != DT_INT64 && t->dtype != DT_INT32)
        return op_fail(c, "expected an int64 tensor, got %s", dtype_name(t->dtype));
    for (int64_t i = 0; i < n; i++) dst[i] = tensor_get_i64(t, i);
    return (int)n;
}
