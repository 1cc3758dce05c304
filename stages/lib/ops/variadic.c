/* variadic.c — n-input ops of the elementwise family with numpy
 * broadcasting: Sum, Max, Min, Mean, and the three-way Where.
 *
 * Sum/Max/Min/Mean fold left to right as the reference does
 * (((a + b) + c) ...): the first two inputs are combined into the output,
 * every further input is combined into the output in place. Max and Min
 * propagate NaN like numpy's maximum/minimum. Where moves bytes only, so it
 * handles every element type by size (the row sets any_type). */
#include <string.h>
#include "ops/elementwise_impl.h"

int ew_shape_variadic(op_ctx_t *c)
{
    const char *op = c->node->op_type;
    unsigned mask = TM_FLOAT;
    if ((!strcmp(op, "Max") || !strcmp(op, "Min")) && c->node->opset >= 12) mask = TM_NUMERIC;
    if (c->n_in < 1) return op_fail(c, "needs at least one input");
    for (int i = 0; i < c->n_in; i++) {
        if (!c->in[i]) return op_fail(c, "input %d is missing", i);
        if (ew_same_types(c, 0, i)) return OP_ERROR;
    }
    if (ew_check_input(c, 0, mask)) return OP_ERROR;
    return ew_set_broadcast(c, 0, c->n_in, c->in[0]->dtype);
}

/* Combines out = f(in[0], in[1]), then out = f(out, in[k]) for k >= 2, with
 * FEXPR / IEXPR over x (left) and y (right). One input: a copy. */
#define FOLD_KERNEL(FEXPR, IEXPR)                                               \
    do {                                                                        \
        tensor_t *out = c->out[0];                                              \
        const dtype_t dt = c->in[0]->dtype;                                     \
        if (c->n_in == 1) {                                                     \
            memcpy(out->data, c->in[0]->data, tensor_nbytes(out));              \
            break;                                                              \
        }                                                                       \
        for (int k = 1; k < c->n_in; k++) {                                     \
            bcast_t b;                                                          \
            const tensor_t *pair[2] = {k == 1 ? c->in[0] : out, c->in[k]};      \
            if (bcast_plan_tensors(&b, 2, pair, out))                           \
                return op_fail(c, "input %d does not broadcast to the output", k); \
            const void *A = pair[0]->data, *B = pair[1]->data;                  \
            if (dtype_is_float(dt)) {                                           \
                DISPATCH_FLOAT(dt, BIN_ROWS(&b, T, T, T, A, B, out->data, FEXPR), \
                               return ew_bad_type(c, dt))                   \
            } else {                                                            \
                DISPATCH_INT(dt, BIN_ROWS(&b, T, T, T, A, B, out->data, IEXPR), \
                             return ew_bad_type(c, dt))                     \
            }                                                                   \
        }                                                                       \
    } while (0)

int run_sum(op_ctx_t *c)
{
    FOLD_KERNEL(x + y, (uint64_t)x + (uint64_t)y);
    return 0;
}

int run_max(op_ctx_t *c)
{
    FOLD_KERNEL(x != x || x > y ? x : y, x > y ? x : y);
    return 0;
}

int run_min(op_ctx_t *c)
{
    FOLD_KERNEL(x != x || x < y ? x : y, x < y ? x : y);
    return 0;
}

int run_mean(op_ctx_t *c)
{
    FOLD_KERNEL(x + y, (uint64_t)x + (uint64_t)y);
    tensor_t *out = c->out[0];
    const int64_t n = tensor_numel(out);
    DISPATCH_FLOAT(out->dtype,
                   const T k = (T)c->n_in;
                   UN_LOOP(T, T, out->data, out->data, n, x / k),
                   return ew_bad_type(c, out->dtype))
    return 0;
}

/* ---- Where ---- */

int ew_shape_where(op_ctx_t *c)
{
    if (op_check_inputs(c, 3, 3) || ew_check_input(c, 0, TM_BOOL) || ew_same_types(c, 1, 2))
        return OP_ERROR;
    if (!dtype_size(c->in[1]->dtype))
        return op_fail(c, "element type %s is not supported", dtype_name(c->in[1]->dtype));
    return ew_set_broadcast(c, 0, 3, c->in[1]->dtype);
}

int run_where(op_ctx_t *c)
{
    bcast_t b;
    if (ew_plan(c, &b, 3)) return OP_ERROR;
    const uint8_t *cond = c->in[0]->data;
    const int64_t n = b.inner, sc = b.is[0], sx = b.is[1], sy = b.is[2];
    DISPATCH_BYSIZE(dtype_size(c->in[1]->dtype), {
        const T *X = c->in[1]->data;
        const T *Y = c->in[2]->data;
        T *O = c->out[0]->data;
        BCAST_FOR_ROWS(&b, it) {
            const uint8_t *pc = cond + it.off[0];
            const T *px = X + it.off[1];
            const T *py = Y + it.off[2];
            T *po = O + it.row * n;
            if (sc && sx && sy) {
                for (int64_t i = 0; i < n; i++) po[i] = pc[i] ? px[i] : py[i];
            } else {
                for (int64_t i = 0; i < n; i++) po[i] = pc[i * sc] ? px[i * sx] : py[i * sy];
            }
        }
    }, return ew_bad_type(c, c->in[1]->dtype))
    return 0;
}
