/* unique.c — Unique (opset 11; MISC family, row in misc.c).
 *
 * The unique elements (no axis: of the flattened input) or unique slices
 * along an axis, as numpy.unique computes them: slices compare
 * lexicographically in C order, NaN above every number and equal to NaN.
 * sorted = 1 gives them ascending; sorted = 0 in order of first occurrence.
 * Outputs: Y, indices (first occurrence of each), inverse_indices (for each
 * input slice, its row in Y) and counts — all int64 but Y.
 *
 * How many there are depends on the data: the shape function runs the whole
 * computation (a stable merge sort of slice indices) and the kernel runs it
 * again to fill the outputs.
 */
#include <stdlib.h>
#include <string.h>
#include "ops/misc/misc_impl.h"

typedef struct {
    int has_axis, axis;
    int64_t outer, a, inner;     /* input viewed as [outer, a, inner], slices along a */
    int64_t u;                   /* unique count */
    int64_t *first;              /* [u]: first input slice of each output row */
    int64_t *inverse;            /* [a] */
    int64_t *counts;             /* [u] */
} uniq_t;

typedef int (*uniq_cmp_fn)(const void *x, const uniq_t *q, int64_t i, int64_t j);

/* Three-way comparison of slices i and j; NaN ranks last and equals NaN. */
#define UNIQ_CMP(NAME, T)                                                      \
    static int NAME(const void *x, const uniq_t *q, int64_t i, int64_t j)     \
    {                                                                          \
        const T *v = x;                                                        \
        for (int64_t o = 0; o < q->outer; o++)                                 \
            for (int64_t k = 0; k < q->inner; k++) {                           \
                T a = v[(o * q->a + i) * q->inner + k];                        \
                T b = v[(o * q->a + j) * q->inner + k];                        \
                int an = a != a, bn = b != b;                                  \
                if (an || bn) {                                                \
                    if (an != bn) return an ? 1 : -1;                          \
                    continue;                                                  \
                }                                                              \
                if (a < b) return -1;                                          \
                if (a > b) return 1;                                           \
            }                                                                  \
        return 0;                                                              \
    }
UNIQ_CMP(cmp_f32, float)
UNIQ_CMP(cmp_f64, double)
UNIQ_CMP(cmp_i8, int8_t)
UNIQ_CMP(cmp_i16, int16_t)
UNIQ_CMP(cmp_i32, int32_t)
UNIQ_CMP(cmp_i64, int64_t)
UNIQ_CMP(cmp_u8, uint8_t)
UNIQ_CMP(cmp_u16, uint16_t)
UNIQ_CMP(cmp_u32, uint32_t)
UNIQ_CMP(cmp_u64, uint64_t)

static uniq_cmp_fn uniq_cmp_for(dtype_t dt)
{
    switch (dt) {
    case DT_FLOAT: return cmp_f32;
    case DT_DOUBLE: return cmp_f64;
    case DT_INT8: return cmp_i8;
    case DT_INT16: return cmp_i16;
    case DT_INT32: return cmp_i32;
    case DT_INT64: return cmp_i64;
    case DT_UINT8: case DT_BOOL: return cmp_u8;
    case DT_UINT16: return cmp_u16;
    case DT_UINT32: return cmp_u32;
    case DT_UINT64: return cmp_u64;
    default: return NULL;
    }
}

/* Stable bottom-up merge sort of idx[0..n) by cmp. */
static void uniq_sort(int64_t *idx, int64_t *tmp, int64_t n, uniq_cmp_fn cmp, const void *x, const uniq_t *q)
{
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) tmp[k++] = cmp(x, q, idx[j], idx[i]) < 0 ? idx[j++] : idx[i++];
            while (i < mid) tmp[k++] = idx[i++];
            while (j < hi) tmp[k++] = idx[j++];
        }
        memcpy(idx, tmp, (size_t)n * sizeof *idx);
    }
}

/* Reads the axis and views the input as [outer, a, inner]. */
static int uniq_view(op_ctx_t *c, uniq_t *q)
{
    if (op_check_inputs(c, 1, 1)) return -1;
    const tensor_t *x = c->in[0];
    memset(q, 0, sizeof *q);
    if (!uniq_cmp_for(x->dtype)) return op_fail(c, "type %s is not supported", dtype_name(x->dtype));
    q->has_axis = node_attr(c->node, "axis") != NULL;
    q->outer = q->inner = 1;
    if (!q->has_axis) {
        q->a = tensor_numel(x);
        return 0;
    }
    if (x->ndim == 0) return op_fail(c, "axis given for a scalar input");
    q->axis = op_axis(c, attr_int(c->node, "axis", 0), x->ndim);
    if (q->axis < 0) return -1;
    for (int d = 0; d < x->ndim; d++) {
        if (d < q->axis) q->outer *= x->dims[d];
        if (d > q->axis) q->inner *= x->dims[d];
    }
    q->a = x->dims[q->axis];
    return 0;
}

static void uniq_free(uniq_t *q)
{
    free(q->first);
    free(q->inverse);
    free(q->counts);
}

/* Groups equal slices. Returns 0, OP_DYNAMIC or -1. */
static int uniq_compute(op_ctx_t *c, uniq_t *q)
{
    if (uniq_view(c, q)) return -1;
    const tensor_t *x = c->in[0];
    if (!x->data && tensor_numel(x) > 0) return OP_DYNAMIC;
    uniq_cmp_fn cmp = uniq_cmp_for(x->dtype);
    int64_t n = q->a;
    int64_t *idx = xmalloc((size_t)n * sizeof *idx + 8), *tmp = xmalloc((size_t)n * sizeof *tmp + 8);
    q->first = xmalloc((size_t)n * sizeof *q->first + 8);
    q->counts = xmalloc((size_t)n * sizeof *q->counts + 8);
    q->inverse = xmalloc((size_t)n * sizeof *q->inverse + 8);
    for (int64_t i = 0; i < n; i++) idx[i] = i;
    /* an empty slice shape makes every slice equal */
    int empty = q->outer * q->inner == 0;
    if (!empty) uniq_sort(idx, tmp, n, cmp, x->data, q);
    int64_t u = 0;
    for (int64_t s = 0; s < n; s++) {
        if (s == 0 || (!empty && cmp(x->data, q, idx[s - 1], idx[s]) != 0)) {
            q->first[u] = idx[s];   /* the sort is stable: the lowest index leads its group */
            q->counts[u++] = 0;
        }
        q->counts[u - 1]++;
        q->inverse[idx[s]] = u - 1;
    }
    q->u = u;
    if (!attr_int(c->node, "sorted", 1) && u > 1) {
        /* order by first occurrence: rank[g] = position of group g */
        int64_t *order = idx, *rank = tmp;
        for (int64_t g = 0; g < u; g++) order[g] = g;
        /* first[] values are distinct input positions: walk the positions */
        int64_t *pos = xmalloc((size_t)n * sizeof *pos + 8);
        for (int64_t i = 0; i < n; i++) pos[i] = -1;
        for (int64_t g = 0; g < u; g++) pos[q->first[g]] = g;
        int64_t r = 0;
        for (int64_t i = 0; i < n; i++)
            if (pos[i] >= 0) order[r++] = pos[i];
        free(pos);
        int64_t *cnt = xmalloc((size_t)u * sizeof *cnt);
        for (int64_t k = 0; k < u; k++) {
            rank[order[k]] = k;
            cnt[k] = q->counts[order[k]];
        }
        for (int64_t k = 0; k < u; k++) q->counts[k] = cnt[k];
        for (int64_t k = 0; k < u; k++) cnt[k] = q->first[order[k]];
        for (int64_t k = 0; k < u; k++) q->first[k] = cnt[k];
        for (int64_t i = 0; i < n; i++) q->inverse[i] = rank[q->inverse[i]];
        free(cnt);
    }
    free(idx);
    free(tmp);
    return 0;
}

int unique_shape(op_ctx_t *c)
{
    uniq_t q;
    int rc = uniq_compute(c, &q);
    if (rc) return rc;
    const tensor_t *x = c->in[0];
    int64_t dims[TENSOR_MAX_DIMS];
    int nd = 1;
    dims[0] = q.u;
    if (q.has_axis) {
        nd = x->ndim;
        memcpy(dims, x->dims, sizeof dims);
        dims[q.axis] = q.u;
    }
    int64_t inv = q.a;
    rc = op_set_out(c, 0, x->dtype, nd, dims) || op_set_out(c, 1, DT_INT64, 1, &q.u) ||
         op_set_out(c, 2, DT_INT64, 1, &inv) || op_set_out(c, 3, DT_INT64, 1, &q.u) ? -1 : 0;
    uniq_free(&q);
    return rc;
}

int unique_run(op_ctx_t *c)
{
    uniq_t q;
    if (uniq_compute(c, &q)) return op_fail(c, "cannot compute the unique slices");
    tensor_t *y = c->out[0];
    int rc = 0;
    if (tensor_numel(y) != q.outer * q.u * q.inner) {
        rc = op_fail(c, "output Y has the wrong size");
        goto done;
    }
    size_t es = dtype_size(y->dtype), row = (size_t)q.inner * es;
    const char *src = c->in[0]->data;
    char *dst = y->data;
    for (int64_t o = 0; row && o < q.outer; o++)
        for (int64_t k = 0; k < q.u; k++)
            memcpy(dst + (size_t)(o * q.u + k) * row, src + (size_t)(o * q.a + q.first[k]) * row, row);
    if (q.u && c->n_out > 1 && c->out[1]) memcpy(c->out[1]->data, q.first, (size_t)q.u * sizeof(int64_t));
    if (q.a && c->n_out > 2 && c->out[2]) memcpy(c->out[2]->data, q.inverse, (size_t)q.a * sizeof(int64_t));
    if (q.u && c->n_out > 3 && c->out[3]) memcpy(c->out[3]->data, q.counts, (size_t)q.u * sizeof(int64_t));
done:
    uniq_free(&q);
    return rc;
}
