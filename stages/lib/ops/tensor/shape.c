/* shape.c — TENSOR family ops that change only the view of the data
 * (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout at inference) and
 * the ops that report a shape (Shape, Size). The data is copied unchanged;
 * all the work is in the shape functions. */
#include <string.h>
#include "ops/tensor/tensor_impl.h"

int run_view_copy(op_ctx_t *c)
{
    const tensor_seq_t *s = tensor_seq(c->in[0]);
    if (s) {   /* Identity of a sequence */
        tensor_seq_t *o = tensor_seq(c->out[0]);
        for (int i = 0; i < s->n; i++)
            if (tensor_seq_insert(o, &s->items[i], o->n, c->err)) return -1;
        o->elem = s->elem;
        return 0;
    }
    return tn_copy_input0(c);
}

int shape_identity(op_ctx_t *c)
{
    if (op_check_inputs(c, 1, 1)) return -1;
    if (c->in[0]->dtype == DT_SEQUENCE) {
        if (!c->in[0]->data) return OP_DYNAMIC;
        c->out[0]->dtype = DT_SEQUENCE;
        c->out[0]->ndim = 0;
        return 0;
    }
    size_t es;
    if (tn_elem_size(c, c->in[0], &es)) return -1;
    return shape_same_as_input0(c);
}

/* Reshape: 0 copies the input's dim (unless allowzero), -1 is inferred. */
int shape_reshape(op_ctx_t *c)
{
    if (op_check_inputs(c, 2, 2)) return -1;
    const tensor_t *x = c->in[0], *s = c->in[1];
    if (!s->data) return OP_DYNAMIC;
    if (s->ndim != 1) return op_fail(c, "shape must be 1-D, got rank %d", s->ndim);
    int64_t d[TENSOR_MAX_DIMS];
    int n = op_read_ints(c, s, d, TENSOR_MAX_DIMS);
    if (n < 0) return -1;
    int allowzero = c->node->opset >= 14 ? (int)attr_int(c->node, "allowzero", 0) : 0;
    int infer = -1, has_zero = 0;
    int64_t known = 1;
    for (int i = 0; i < n; i++) {
        if (d[i] == -1) {
            if (infer >= 0) return op_fail(c, "shape has more than one -1");
            infer = i;
            continue;
        }
        if (d[i] < -1) return op_fail(c, "shape has invalid dimension %lld", (long long)d[i]);
        if (d[i] == 0) {
            has_zero = 1;
            if (!allowzero) {
                if (i >= x->ndim)
                    return op_fail(c, "shape[%d] = 0 copies a dimension the rank-%d input lacks", i, x->ndim);
                d[i] = x->dims[i];
            }
        }
        if (d[i] && known > INT64_MAX / d[i]) return op_fail(c, "shape is absurdly large");
        known *= d[i];
    }
    if (allowzero && has_zero && infer >= 0)
        return op_fail(c, "shape has both 0 and -1 with allowzero=1");
    int64_t numel = tensor_numel(x);
    if (infer >= 0) {
        if (known == 0 || numel % known)
            return op_fail(c, "cannot infer -1: %lld elements do not divide into %lld",
                           (long long)numel, (long long)known);
        d[infer] = numel / known;
    } else if (known != numel) {
        char a[160];
        return op_fail(c, "cannot reshape %s (%lld elements) to %lld elements",
                       shape_str(x->ndim, x->dims, a, sizeof a), (long long)numel, (long long)known);
    }
    return op_set_out(c, 0, x->dtype, n, d);
}

int shape_flatten(op_ctx_t *c)
{
    if (op_check_inputs(c, 1, 1)) return -1;
    const tensor_t *x = c->in[0];
    int64_t axis = attr_int(c->node, "axis", 1);
    if (axis < -x->ndim || axis > x->ndim)
        return op_fail(c, "axis %lld out of range for rank %d", (long long)axis, x->ndim);
    if (axis < 0) axis += x->ndim;
    int64_t d[2] = {prod_dims(x->dims, 0, (int)axis), prod_dims(x->dims, (int)axis, x->ndim)};
    return op_set_out(c, 0, x->dtype, 2, d);
}

/* Checks Squeeze/Unsqueeze inputs and reads the axes: an attribute before
 * opset 13, input 1 from 13. *n = -1 when absent. Returns 0, -1 or OP_DYNAMIC. */
static int read_axes(op_ctx_t *c, int64_t *axes, int *n)
{
    if (op_check_inputs(c, 1, c->node->opset < 13 ? 1 : 2)) return -1;
    *n = -1;
    if (c->node->opset < 13) {
        const int64_t *v;
        *n = attr_ints(c->node, "axes", &v);
        if (*n > TENSOR_MAX_DIMS) return op_fail(c, "too many axes (%d)", *n);
        for (int i = 0; i < *n; i++) axes[i] = v[i];
        return 0;
    }
    if (c->n_in < 2 || !c->in[1]) return 0;
    if (!c->in[1]->data) return OP_DYNAMIC;
    if (c->in[1]->ndim > 1) return op_fail(c, "axes must be 1-D");
    *n = op_read_ints(c, c->in[1], axes, TENSOR_MAX_DIMS);
    return *n < 0 ? -1 : 0;
}

/* Normalises axes against a rank and rejects duplicates; mask[d] set per axis. */
static int axes_mask(op_ctx_t *c, const int64_t *axes, int n, int rank, int *mask)
{
    memset(mask, 0, sizeof(int) * (rank > 0 ? rank : 1));
    for (int i = 0; i < n; i++) {
        if (axes[i] < -rank || axes[i] >= rank)
            return op_fail(c, "axis %lld out of range for rank %d", (long long)axes[i], rank);
        int a = (int)(axes[i] < 0 ? axes[i] + rank : axes[i]);
        if (mask[a]) return op_fail(c, "axis %lld repeated", (long long)axes[i]);
        mask[a] = 1;
    }
    return 0;
}

int shape_squeeze(op_ctx_t *c)
{
    int64_t axes[TENSOR_MAX_DIMS], d[TENSOR_MAX_DIMS];
    int mask[TENSOR_MAX_DIMS], n;
    int st = read_axes(c, axes, &n);
    if (st) return st;
    const tensor_t *x = c->in[0];
    if (n >= 0) {
        if (axes_mask(c, axes, n, x->ndim, mask)) return -1;
        for (int k = 0; k < x->ndim; k++)
            if (mask[k] && x->dims[k] != 1)
                return op_fail(c, "cannot squeeze axis %d of size %lld", k, (long long)x->dims[k]);
    } else {
        for (int k = 0; k < x->ndim; k++) mask[k] = x->dims[k] == 1;
    }
    int r = 0;
    for (int k = 0; k < x->ndim; k++)
        if (!mask[k]) d[r++] = x->dims[k];
    return op_set_out(c, 0, x->dtype, r, d);
}

int shape_unsqueeze(op_ctx_t *c)
{
    int64_t axes[TENSOR_MAX_DIMS], d[TENSOR_MAX_DIMS];
    int mask[TENSOR_MAX_DIMS], n;
    int st = read_axes(c, axes, &n);
    if (st) return st;
    const tensor_t *x = c->in[0];
    if (n < 0) return op_fail(c, "axes are required");
    int rank = x->ndim + n;
    if (rank > TENSOR_MAX_DIMS) return op_fail(c, "output rank %d beyond %d", rank, TENSOR_MAX_DIMS);
    if (axes_mask(c, axes, n, rank, mask)) return -1;
    for (int k = 0, j = 0; k < rank; k++) d[k] = mask[k] ? 1 : x->dims[j++];
    return op_set_out(c, 0, x->dtype, rank, d);
}

/* Dropout at inference: the output is the input and the mask all true. A
 * training_mode that is true (with a non-zero ratio) is refused: it would
 * need random numbers, which an inference validator must not invent. */
static int dropout_check(op_ctx_t *c)
{
    if (c->node->opset < 12) {
        if (op_check_inputs(c, 1, 1)) return -1;
        return 0;
    }
    if (op_check_inputs(c, 1, 3)) return -1;
    const tensor_t *ratio = c->n_in > 1 ? c->in[1] : NULL;
    const tensor_t *train = c->n_in > 2 ? c->in[2] : NULL;
    if (!train) return 0;
    if (train->dtype != DT_BOOL || tensor_numel(train) != 1)
        return op_fail(c, "training_mode must be one bool");
    if (!train->data) return OP_DYNAMIC;
    if (!((const uint8_t *)train->data)[0]) return 0;
    if (ratio && ratio->data && tensor_numel(ratio) == 1 && tensor_get_f64(ratio, 0) == 0) return 0;
    return op_fail(c, "training_mode=true is not supported (inference only: dropout would be random)");
}

int shape_dropout(op_ctx_t *c)
{
    int r = dropout_check(c);
    if (r < 0) return -1;
    size_t es;
    if (tn_elem_size(c, c->in[0], &es)) return -1;
    const tensor_t *x = c->in[0];
    if (op_set_out(c, 0, x->dtype, x->ndim, x->dims)) return -1;
    /* Dropout-7 gives the mask the data's type; bool from opset 10 */
    dtype_t mt = c->node->opset < 10 ? x->dtype : DT_BOOL;
    /* an unknown training_mode is checked by the kernel: the shape is known */
    return op_set_out(c, 1, mt, x->ndim, x->dims);
}

int run_dropout(op_ctx_t *c)
{
    int r = dropout_check(c);
    if (r < 0) return -1;
    if (r == OP_DYNAMIC) return op_fail(c, "training_mode has no data at run time");
    if (tn_copy_input0(c)) return -1;
    if (c->n_out > 1 && c->out[1]) {
        tensor_t *m = c->out[1];
        size_t es = dtype_size(m->dtype);
        unsigned char one[8];
        tn_scalar_bytes(m->dtype, 1.0, one);
        int64_t n = tensor_numel(m);
        for (int64_t i = 0; i < n; i++) memcpy((char *)m->data + i * es, one, es);
    }
    return 0;
}

/* Shape-15's start/end: negative counts from the end, then clamped. */
static void shape_range_of(op_ctx_t *c, int rank, int64_t *start, int64_t *end)
{
    *start = 0;
    *end = rank;
    if (c->node->opset < 15) return;
    int64_t s = attr_int(c->node, "start", 0), e = attr_int(c->node, "end", rank);
    if (s < 0) s += rank;
    if (e < 0) e += rank;
    *start = s < 0 ? 0 : s > rank ? rank : s;
    *end = e < 0 ? 0 : e > rank ? rank : e;
    if (*end < *start) *end = *start;
}

int shape_shape(op_ctx_t *c)
{
    if (op_check_inputs(c, 1, 1)) return -1;
    int64_t s, e;
    shape_range_of(c, c->in[0]->ndim, &s, &e);
    int64_t d = e - s;
    return op_set_out(c, 0, DT_INT64, 1, &d);
}

int run_shape(op_ctx_t *c)
{
    int64_t s, e;
    shape_range_of(c, c->in[0]->ndim, &s, &e);
    int64_t *o = c->out[0]->data;
    for (int64_t i = s; i < e; i++) o[i - s] = c->in[0]->dims[i];
    return 0;
}

int shape_size(op_ctx_t *c)
{
    if (op_check_inputs(c, 1, 1)) return -1;
    return op_set_out(c, 0, DT_INT64, 0, NULL);
}

int run_size(op_ctx_t *c)
{
    *(int64_t *)c->out[0]->data = tensor_numel(c->in[0]);
    return 0;
}
