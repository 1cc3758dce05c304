/* argmax.c — ArgMax and ArgMin (REDUCE family; rows in reduce.c).
 *
 * Index of the largest / smallest element along one axis, as int64, with
 * keepdims and (opset 12+) select_last_index. Ties go to the first index, or
 * the last with select_last_index. NaN follows numpy (the reference): a NaN
 * wins over any number in both ArgMax and ArgMin, the first NaN (the last
 * with select_last_index) among several.
 */
#include <string.h>
#include "ops/reduce/reduce_impl.h"

static int argmax_axis(op_ctx_t *c, int *axis)
{
    const tensor_t *x = c->in[0];
    if (x->ndim == 0) return op_fail(c, "input must have rank >= 1");
    *axis = op_axis(c, attr_int(c->node, "axis", 0), x->ndim);
    return *axis < 0 ? -1 : 0;
}

int argmax_shape(op_ctx_t *c)
{
    int axis;
    if (op_check_inputs(c, 1, 1)) return -1;
    const tensor_t *x = c->in[0];
    if (red_check_type(c, 0, x->dtype, 1) || argmax_axis(c, &axis)) return -1;
    int keep = attr_int(c->node, "keepdims", 1) != 0;
    int64_t dims[TENSOR_MAX_DIMS];
    int nd = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (d != axis) dims[nd++] = x->dims[d];
        else if (keep) dims[nd++] = 1;
    }
    if (x->dims[axis] == 0) {
        int64_t n = 1;
        for (int d = 0; d < nd; d++) n *= dims[d];
        if (n > 0) return op_fail(c, "cannot take the index of an extreme along an empty axis");
    }
    return op_set_out(c, 0, DT_INT64, nd, dims);
}

/* Whether v (at a later index) replaces the current best b. */
#define ARG_TAKE(v, b, is_max, last)                                           \
    ((b) != (b) ? ((last) && (v) != (v))                                       \
                : ((v) != (v) || ((is_max) ? ((v) > (b) || ((last) && (v) == (b)))  \
                                           : ((v) < (b) || ((last) && (v) == (b))))))

int argmax_run(op_ctx_t *c)
{
    int axis;
    if (argmax_axis(c, &axis)) return -1;
    const tensor_t *x = c->in[0];
    int is_max = !strcmp(c->node->op_type, "ArgMax");
    int last = attr_int(c->node, "select_last_index", 0) != 0;
    int64_t outer, n, inner;
    red_split_axis(x, axis, &outer, &n, &inner);
    int64_t *y = c->out[0]->data;
    if (outer * inner == 0) return 0;
    if (n == 0) return op_fail(c, "cannot take the index of an extreme along an empty axis");
    DISPATCH_NUMERIC(x->dtype, {
        const T *xs = x->data;
        if (inner == 1) {
            for (int64_t o = 0; o < outer; o++) {
                const T *row = xs + o * n;
                int64_t bi = 0;
                T b = row[0];
                for (int64_t k = 1; k < n; k++)
                    if (ARG_TAKE(row[k], b, is_max, last)) { b = row[k]; bi = k; }
                y[o] = bi;
            }
        } else {
            /* column-wise: keep the best value of each inner position */
            T *best = c->scratch(c, (size_t)inner * sizeof(T));
            if (!best) return op_fail(c, "out of scratch memory");
            for (int64_t o = 0; o < outer; o++) {
                const T *blk = xs + o * n * inner;
                int64_t *yi = y + o * inner;
                memcpy(best, blk, (size_t)inner * sizeof(T));
                memset(yi, 0, (size_t)inner * sizeof(int64_t));
                for (int64_t k = 1; k < n; k++) {
                    const T *row = blk + k * inner;
                    for (int64_t i = 0; i < inner; i++)
                        if (ARG_TAKE(row[i], best[i], is_max, last)) { best[i] = row[i]; yi[i] = k; }
                }
            }
        }
    }, return op_fail(c, "unsupported element type %s", dtype_name(x->dtype)))
    return 0;
}
