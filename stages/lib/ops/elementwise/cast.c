/* cast.c — Cast and CastLike of the elementwise family. The conversion
 * rules live in tensor/convert.c (tensor_convert), shared with the executor's
 * half-precision widening, so a model's own Cast nodes and the precision
 * emulation round identically. Rows set any_type: Cast sees half types. */
#include "ops/elementwise/elementwise_impl.h"

/* Types Cast handles: every numeric type, bool, float16, bfloat16. */
static int castable(op_ctx_t *c, dtype_t dt, const char *what)
{
    if (dt == DT_STRING)
        return op_fail(c, "%s: string tensors are not supported", what);
    return ew_check_type(c, dt, TM_NUMERIC | TM_BOOL, what);
}

int ew_shape_cast(op_ctx_t *c)
{
    if (op_check_inputs(c, 1, 1)) return OP_ERROR;
    const Onnx__AttributeProto *a = node_attr(c->node, "to");
    if (!a || !a->has_i) return op_fail(c, "attribute 'to' is missing");
    if (a->i <= 0 || a->i > 64) return op_fail(c, "attribute to=%lld is not an element type", (long long)a->i);
    const dtype_t to = (dtype_t)a->i;
    if (castable(c, c->in[0]->dtype, "input") || castable(c, to, "attribute 'to'")) return OP_ERROR;
    return op_set_out(c, 0, to, c->in[0]->ndim, c->in[0]->dims);
}

int ew_shape_castlike(op_ctx_t *c)
{
    if (op_check_inputs(c, 2, 2)) return OP_ERROR;
    if (castable(c, c->in[0]->dtype, "input") || castable(c, c->in[1]->dtype, "target_type"))
        return OP_ERROR;
    return op_set_out(c, 0, c->in[1]->dtype, c->in[0]->ndim, c->in[0]->dims);
}

/* Converts elements [s, e) through 1-D views of input and output. */
static int cast_range(const ew_job_t *j, int64_t s, int64_t e)
{
    const tensor_t *in = j->c->in[0];
    tensor_t *out = j->c->out[0];
    tensor_t src = {.dtype = in->dtype, .ndim = 1, .dims = {e - s},
                    .data = (char *)in->data + s * (int64_t)dtype_size(in->dtype)};
    tensor_t dst = {.dtype = out->dtype, .ndim = 1, .dims = {e - s},
                    .data = (char *)out->data + s * (int64_t)dtype_size(out->dtype)};
    return tensor_convert(&src, &dst, j->c->err);
}

int run_cast(op_ctx_t *c) { return ew_unary(c, cast_range); }
