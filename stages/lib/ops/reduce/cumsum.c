/* cumsum.c — CumSum and Det (REDUCE family; rows in reduce.c).
 *
 * CumSum (opset 11, 14): running sums along the axis given as an int32/int64
 * scalar input, with the exclusive and reverse attributes. Float inputs
 * accumulate in double along the axis in order (forward, or backward with
 * reverse) and round each output; integers accumulate in uint64 and wrap.
 *
 * Det (opset 11): determinant of each trailing [M, M] matrix of a [*, M, M]
 * input, by LU decomposition with partial pivoting in double (the pivot is
 * the first row with the largest magnitude, so the result is deterministic).
 */
#include <math.h>
#include <string.h>
#include "ops/reduce/reduce_impl.h"

static int cumsum_axis(op_ctx_t *c, int *axis)
{
    const tensor_t *x = c->in[0], *a = c->in[1];
    int64_t v;
    if (x->ndim == 0) return op_fail(c, "input must have rank >= 1");
    if (tensor_numel(a) != 1 || a->ndim > 1) return op_fail(c, "axis input must hold one value");
    if (!a->data) return OP_DYNAMIC;
    if (op_read_ints(c, a, &v, 1) < 0) return -1;
    *axis = op_axis(c, v, x->ndim);
    return *axis < 0 ? -1 : 0;
}

int cumsum_shape(op_ctx_t *c)
{
    int axis, rc;
    if (op_check_inputs(c, 2, 2)) return -1;
    if (red_check_type(c, 0, c->in[0]->dtype, 1)) return -1;
    /* the axis does not change the shape: still validate it when known */
    if ((rc = cumsum_axis(c, &axis)) < 0) return rc;
    return shape_same_as_input0(c);
}

#define CUMSUM_BODY(ACC, CONV)                                                \
    {                                                                         \
        const T *xs = x->data;                                                \
        T *ys = c->out[0]->data;                                              \
        ACC *acc = c->scratch(c, (size_t)inner * sizeof(ACC) + 8);            \
        if (!acc) return op_fail(c, "out of scratch memory");                 \
        for (int64_t o = 0; o < outer; o++) {                                 \
            const T *xb = xs + o * n * inner;                                 \
            T *yb = ys + o * n * inner;                                       \
            for (int64_t i = 0; i < inner; i++) acc[i] = 0;                   \
            for (int64_t s = 0; s < n; s++) {                                 \
                int64_t k = rev ? n - 1 - s : s;                              \
                const T *xr = xb + k * inner;                                 \
                T *yr = yb + k * inner;                                       \
                for (int64_t i = 0; i < inner; i++) {                         \
                    ACC t = CONV(xr[i]);                                      \
                    if (excl) { yr[i] = (T)acc[i]; acc[i] += t; }             \
                    else { acc[i] += t; yr[i] = (T)acc[i]; }                  \
                }                                                             \
            }                                                                 \
        }                                                                     \
    }

#define TO_DOUBLE(v) ((double)(v))
#define TO_U64(v) ((uint64_t)(v))

int cumsum_run(op_ctx_t *c)
{
    int axis;
    if (cumsum_axis(c, &axis)) return op_fail(c, "axis input has no data at run time");
    const tensor_t *x = c->in[0];
    int excl = attr_int(c->node, "exclusive", 0) != 0;
    int rev = attr_int(c->node, "reverse", 0) != 0;
    int64_t outer, n, inner;
    red_split_axis(x, axis, &outer, &n, &inner);
    if (outer * n * inner == 0) return 0;
    if (dtype_is_float(x->dtype)) {
        DISPATCH_FLOAT(x->dtype, CUMSUM_BODY(double, TO_DOUBLE), (void)0)
    } else {
        DISPATCH_INT(x->dtype, CUMSUM_BODY(uint64_t, TO_U64),
                     return op_fail(c, "unsupported element type %s", dtype_name(x->dtype)))
    }
    return 0;
}

int det_shape(op_ctx_t *c)
{
    if (op_check_inputs(c, 1, 1)) return -1;
    const tensor_t *x = c->in[0];
    if (red_check_type(c, 0, x->dtype, 0)) return -1;
    int r = x->ndim;
    if (r < 2 || x->dims[r - 1] != x->dims[r - 2]) {
        char s[160];
        return op_fail(c, "input must be [*, M, M], got %s", shape_str(r, x->dims, s, sizeof s));
    }
    return op_set_out(c, 0, x->dtype, r - 2, x->dims);
}

/* Determinant of the m x m row-major matrix a (destroyed). */
static double det_lu(double *a, int64_t m)
{
    double det = 1;
    for (int64_t k = 0; k < m; k++) {
        int64_t p = k;
        double best = fabs(a[k * m + k]);
        for (int64_t r = k + 1; r < m; r++)
            if (fabs(a[r * m + k]) > best) { best = fabs(a[r * m + k]); p = r; }
        if (p != k) {
            for (int64_t j = 0; j < m; j++) {
                double t = a[k * m + j];
                a[k * m + j] = a[p * m + j];
                a[p * m + j] = t;
            }
            det = -det;
        }
        double piv = a[k * m + k];
        det *= piv;
        if (piv == 0) return det;   /* singular: 0 with the right sign */
        for (int64_t r = k + 1; r < m; r++) {
            double f = a[r * m + k] / piv;
            if (f == 0) continue;
            for (int64_t j = k + 1; j < m; j++) a[r * m + j] -= f * a[k * m + j];
        }
    }
    return det;
}

int det_run(op_ctx_t *c)
{
    const tensor_t *x = c->in[0];
    int64_t m = x->dims[x->ndim - 1], batch = tensor_numel(c->out[0]);
    double *a = c->scratch(c, (size_t)(m * m + 1) * sizeof(double));
    if (!a) return op_fail(c, "out of scratch memory");
    DISPATCH_FLOAT(x->dtype, {
        const T *xs = x->data;
        T *y = c->out[0]->data;
        for (int64_t b = 0; b < batch; b++) {
            for (int64_t i = 0; i < m * m; i++) a[i] = (double)xs[b * m * m + i];
            y[b] = (T)det_lu(a, m);
        }
    }, return op_fail(c, "unsupported element type %s", dtype_name(x->dtype)))
    return 0;
}
