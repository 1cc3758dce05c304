/* variadic.c — n-input ops of the elementwise family with numpy
 * broadcasting: Sum, Max, Min, Mean, and the three-way Where.
 *
 * Sum/Max/Min/Mean fold left to right as the reference does
 * (((a + b) + c) ...): the first two inputs are combined into the output,
 * every further input is combined into the output in place. Max and Min
 * propagate NaN like numpy's maximum/minimum. Where moves bytes only, so it
 * handles every element type by size (the row sets any_type). */
#include <string.h>
#include "ops/elementwise/elementwise_impl.h"

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

/* Range function of one fold step: FEXPR for floats, IEXPR for integers,
 * over x (the left operand: in[0] or the output so far) and y (in[k]). */
#define FOLD_STEP EW_BINARY_RANGE

FOLD_STEP(sum_step, x + y, (uint64_t)x + (uint64_t)y)
FOLD_STEP(max_step, x != x || x > y ? x : y, x > y ? x : y)
FOLD_STEP(min_step, x != x || x < y ? x : y, x < y ? x : y)

/* out = f(in[0], in[1]), then out = f(out, in[k]) for k >= 2 (in place:
 * each element reads only its own position of out). One input: a copy.
 * last: the final step is the kernel's last pass (not Mean's). */
static int fold(op_ctx_t *c, ew_range_fn step, int last)
{
    tensor_t *out = c->out[0];
    if (c->n_in == 1) {
        memcpy(out->data, c->in[0]->data, tensor_nbytes(out));
        return 0;
    }
    for (int k = 1; k < c->n_in; k++) {
        bcast_t b;
        const tensor_t *pair[2] = {k == 1 ? c->in[0] : out, c->in[k]};
        if (bcast_plan_tensors(&b, 2, pair, out))
            return op_fail(c, "input %d does not broadcast to the output", k);
        ew_job_t j = {.c = c, .b = &b, .x = pair[0]->data, .y = pair[1]->data, .o = out->data,
                      .last = k == c->n_in - 1 && last};
        if (ew_parallel(&j, tensor_numel(out), step)) return OP_ERROR;
    }
    return 0;
}

int run_sum(op_ctx_t *c) { return fold(c, sum_step, 1); }
int run_max(op_ctx_t *c) { return fold(c, max_step, 1); }
int run_min(op_ctx_t *c) { return fold(c, min_step, 1); }

static int mean_divide(const ew_job_t *j, int64_t s, int64_t e)
{
    const dtype_t dt = j->c->out[0]->dtype;
    DISPATCH_FLOAT(dt, const T k = (T)j->c->n_in; UN_RANGE(T, T, j->o, j->o, s, e, x / k),
                   return ew_bad_type(j->c, dt))
    return 0;
}

int run_mean(op_ctx_t *c)
{
    if (fold(c, sum_step, 0)) return OP_ERROR;
    ew_job_t j = {.c = c, .o = c->out[0]->data, .last = 1};
    return ew_parallel(&j, tensor_numel(c->out[0]), mean_divide);
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

static int where_range(const ew_job_t *j, int64_t s, int64_t e)
{
    const bcast_t *b = j->b;
    const int64_t n = b->inner, sc = b->is[0], sx = b->is[1], sy = b->is[2];
    if (s >= e) return 0;
    DISPATCH_BYSIZE(dtype_size(j->c->in[1]->dtype), {
        const uint8_t *C = j->x;
        const T *X = j->y;
        const T *Y = j->z;
        T *O = j->o;
        int64_t pos = s;
        bcast_iter_t it = bcast_seek(b, s / n);
        while (pos < e) {
            const int64_t base = it.row * n;
            const int64_t j0 = pos - base;
            const int64_t j1 = e - base < n ? e - base : n;
            const uint8_t *pc = C + it.off[0];
            const T *px = X + it.off[1];
            const T *py = Y + it.off[2];
            T *po = O + base;
            if (sc && sx && sy) {
                for (int64_t i = j0; i < j1; i++) po[i] = pc[i] ? px[i] : py[i];
            } else {
                for (int64_t i = j0; i < j1; i++) po[i] = pc[i * sc] ? px[i * sx] : py[i * sy];
            }
            pos = base + j1;
            bcast_next(b, &it);
        }
    }, return ew_bad_type(j->c, j->c->in[1]->dtype))
    return 0;
}

int run_where(op_ctx_t *c) { return ew_broadcast(c, 3, where_range); }
