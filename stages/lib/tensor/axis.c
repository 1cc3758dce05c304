/* axis.c — taking a tensor apart along an axis and putting tensors back
 * together along one: what SplitToSequence, ConcatFromSequence and the scan
 * inputs and outputs of Loop and Scan need (byte moves, any element type). */
#include <string.h>
#include "tensor/tensor.h"

static int64_t dims_prod(const int64_t *d, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++) p *= d[i];
    return p;
}

int tensor_slice_axis(const tensor_t *x, int axis, int64_t start, int64_t len, int keep_axis, tensor_t *out,
                      perr_t *e)
{
    if (axis < 0 || axis >= x->ndim || start < 0 || len < 0 || start + len > x->dims[axis])
        return BAD(e, "slice [%lld, %lld) of axis %d is outside the tensor", (long long)start,
                   (long long)(start + len), axis);
    int64_t d[TENSOR_MAX_DIMS];
    int nd = 0;
    for (int i = 0; i < x->ndim; i++) {
        if (i == axis && !keep_axis) continue;
        d[nd++] = i == axis ? len : x->dims[i];
    }
    if (tensor_alloc(out, x->dtype, nd, d, e)) return -1;
    size_t es = dtype_size(x->dtype);
    int64_t outer = dims_prod(x->dims, 0, axis), inner = dims_prod(x->dims, axis + 1, x->ndim) * (int64_t)es;
    size_t chunk = (size_t)(len * inner);
    for (int64_t o = 0; o < outer && chunk; o++)
        memcpy((char *)out->data + o * chunk, (const char *)x->data + (o * x->dims[axis] + start) * inner, chunk);
    return 0;
}

int tensor_concat_axis(const tensor_t *const *xs, int n, int axis, int new_axis, tensor_t *out, perr_t *e)
{
    if (n < 1) return BAD(e, "nothing to concatenate");
    const tensor_t *x0 = xs[0];
    int rank = x0->ndim + (new_axis ? 1 : 0);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) return BAD(e, "axis out of range for rank %d", rank);
    int64_t d[TENSOR_MAX_DIMS], total = 0;
    for (int k = 0; k < n; k++) {
        const tensor_t *x = xs[k];
        if (x->dtype != x0->dtype || x->ndim != x0->ndim)
            return BAD(e, "element %d has type %s rank %d, element 0 %s rank %d", k, dtype_name(x->dtype), x->ndim,
                       dtype_name(x0->dtype), x0->ndim);
        for (int i = 0; i < x->ndim; i++)
            if (x->dims[i] != x0->dims[i] && (new_axis || i != axis)) {
                char a[160], b[160];
                return BAD(e, "element %d has shape %s, element 0 %s", k, shape_str(x->ndim, x->dims, a, sizeof a),
                           shape_str(x0->ndim, x0->dims, b, sizeof b));
            }
        total += new_axis ? 1 : x->dims[axis];
    }
    if (rank > TENSOR_MAX_DIMS) return BAD(e, "rank %d is beyond the supported %d", rank, TENSOR_MAX_DIMS);
    for (int i = 0; i < rank; i++)
        d[i] = i == axis ? total : new_axis && i > axis ? x0->dims[i - 1] : x0->dims[i];
    if (tensor_alloc(out, x0->dtype, rank, d, e)) return -1;
    size_t es = dtype_size(x0->dtype);
    int64_t outer = dims_prod(d, 0, axis), inner = dims_prod(d, axis + 1, rank) * (int64_t)es;
    char *dst = out->data;
    for (int64_t o = 0; o < outer; o++)
        for (int k = 0; k < n; k++) {
            size_t chunk = (size_t)((new_axis ? 1 : xs[k]->dims[axis]) * inner);
            if (chunk) memcpy(dst, (const char *)xs[k]->data + o * chunk, chunk);
            dst += chunk;
        }
    return 0;
}
