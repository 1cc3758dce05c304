/* generate.c — TENSOR family ops that create data rather than move it:
 * ConstantOfShape, Range, OneHot, NonZero, EyeLike and Trilu. Shapes that
 * depend on input values (ConstantOfShape, Range, OneHot's depth, NonZero)
 * are computed when the data is known and are OP_DYNAMIC otherwise. */
#include <math.h>
#include <string.h>
#include "ops/tensor/tensor_impl.h"

/* ---- ConstantOfShape ---- */

/* The 'value' attribute (one element, any type); float32 0 when absent. */
static int const_value(op_ctx_t *c, dtype_t *dt, unsigned char *v)
{
    memset(v, 0, 8);
    *dt = DT_FLOAT;
    if (!node_attr(c->node, "value")) return 0;
    tensor_t *t = attr_tensor(c->node, "value", c->err);
    if (!t) return -1;
    size_t es = dtype_size(t->dtype);
    int bad = tensor_numel(t) != 1 || (es != 1 && es != 2 && es != 4 && es != 8);
    if (!bad) {
        *dt = t->dtype;
        memcpy(v, t->data, es);
    }
    tensor_free(t);
    return bad ? op_fail(c, "attribute 'value' must be one element of a numeric or bool type") : 0;
}

int shape_constantofshape(op_ctx_t *c)
{
    if (op_check_inputs(c, 1, 1)) return -1;
    const tensor_t *s = c->in[0];
    dtype_t dt;
    unsigned char v[8];
    if (const_value(c, &dt, v)) return -1;
    if (s->dtype != DT_INT64) return op_fail(c, "shape must be int64, got %s", dtype_name(s->dtype));
    if (s->ndim != 1) return op_fail(c, "shape must be 1-D, got rank %d", s->ndim);
    if (!s->data) return OP_DYNAMIC;
    int64_t d[TENSOR_MAX_DIMS];
    int n = op_read_ints(c, s, d, TENSOR_MAX_DIMS);
    if (n < 0) return -1;
    for (int i = 0; i < n; i++)
        if (d[i] < 0) return op_fail(c, "shape[%d] = %lld is negative", i, (long long)d[i]);
    return op_set_out(c, 0, dt, n, d);
}

int run_constantofshape(op_ctx_t *c)
{
    dtype_t dt;
    unsigned char v[8];
    if (const_value(c, &dt, v)) return -1;
    tensor_t *y = c->out[0];
    if (y->dtype != dt) return op_fail(c, "output type differs from the value's");
    tn_fill(y->data, v, dtype_size(dt), tensor_numel(y));
    return 0;
}

/* ---- Range ---- */

static int range_count(op_ctx_t *c, int64_t *n)
{
    if (op_check_inputs(c, 3, 3)) return -1;
    const tensor_t *s = c->in[0], *l = c->in[1], *d = c->in[2];
    dtype_t t = s->dtype;
    if (l->dtype != t || d->dtype != t) return op_fail(c, "start, limit and delta must have one type");
    if (t != DT_FLOAT && t != DT_DOUBLE && t != DT_INT16 && t != DT_INT32 && t != DT_INT64)
        return op_fail(c, "type %s is not supported", dtype_name(t));
    for (int i = 0; i < 3; i++)
        if (tensor_numel(c->in[i]) != 1 || c->in[i]->ndim > 1)
            return op_fail(c, "input %d must be a scalar", i);
    if (!s->data || !l->data || !d->data) return OP_DYNAMIC;
    if (dtype_is_float(t)) {
        double a = tensor_get_f64(s, 0), b = tensor_get_f64(l, 0), dd = tensor_get_f64(d, 0);
        if (!isfinite(a) || !isfinite(b) || !isfinite(dd) || dd == 0)
            return op_fail(c, "start %g, limit %g, delta %g give no finite range", a, b, dd);
        double cnt = ceil((b - a) / dd);
        if (cnt > (double)TENSOR_MAX_BYTES) return op_fail(c, "range of %g elements is absurdly large", cnt);
        *n = cnt > 0 ? (int64_t)cnt : 0;
        return 0;
    }
    int64_t a = tensor_get_i64(s, 0), b = tensor_get_i64(l, 0), dd = tensor_get_i64(d, 0);
    if (dd == 0) return op_fail(c, "delta is 0");
    /* exact ceil((b - a) / dd) in uint64: the span and step magnitudes fit */
    uint64_t span, step = dd > 0 ? (uint64_t)dd : (uint64_t)0 - (uint64_t)dd;
    if (dd > 0 ? b <= a : b >= a) { *n = 0; return 0; }
    span = dd > 0 ? (uint64_t)b - (uint64_t)a : (uint64_t)a - (uint64_t)b;
    uint64_t cnt = (span - 1) / step + 1;
    if (cnt > (uint64_t)TENSOR_MAX_BYTES) return op_fail(c, "range is absurdly large");
    *n = (int64_t)cnt;
    return 0;
}

int shape_range(op_ctx_t *c)
{
    int64_t n;
    int r = range_count(c, &n);
    if (r) return r;
    return op_set_out(c, 0, c->in[0]->dtype, 1, &n);
}

int run_range(op_ctx_t *c)
{
    int64_t n;
    int r = range_count(c, &n);
    if (r) return r < 0 ? -1 : op_fail(c, "inputs unknown at run time");
    tensor_t *y = c->out[0];
    if (dtype_is_float(y->dtype)) {
        double a = tensor_get_f64(c->in[0], 0), d = tensor_get_f64(c->in[2], 0);
        DISPATCH_FLOAT(y->dtype, {
            T *o = y->data;
            for (int64_t i = 0; i < n; i++) o[i] = (T)(a + (double)i * d);
        }, (void)0);
        return 0;
    }
    uint64_t a = (uint64_t)tensor_get_i64(c->in[0], 0), d = (uint64_t)tensor_get_i64(c->in[2], 0);
    DISPATCH_INT(y->dtype, {
        T *o = y->data;
        for (int64_t i = 0; i < n; i++) o[i] = (T)(a + (uint64_t)i * d);
    }, (void)0);
    return 0;
}

/* ---- OneHot ---- */

static int onehot_args(op_ctx_t *c, int *axis, int64_t *depth)
{
    if (op_check_inputs(c, 3, 3)) return -1;
    const tensor_t *ind = c->in[0], *dep = c->in[1], *val = c->in[2];
    size_t es;
    if (tn_elem_size(c, val, &es)) return -1;
    if (tensor_numel(val) != 2) return op_fail(c, "values must hold [off, on]");
    if (tensor_numel(dep) != 1) return op_fail(c, "depth must be a scalar");
    if (ind->dtype == DT_BOOL || ind->dtype == DT_STRING || !dtype_size(ind->dtype) ||
        dep->dtype == DT_BOOL || dep->dtype == DT_STRING || !dtype_size(dep->dtype))
        return op_fail(c, "indices and depth must be numeric");
    if (ind->ndim + 1 > TENSOR_MAX_DIMS) return op_fail(c, "output rank beyond %d", TENSOR_MAX_DIMS);
    *axis = op_axis(c, attr_int(c->node, "axis", -1), ind->ndim + 1);
    if (*axis < 0) return -1;
    if (!dep->data) return OP_DYNAMIC;
    double d = tensor_get_f64(dep, 0);
    if (!(d >= 1) || d > (double)TENSOR_MAX_BYTES) return op_fail(c, "depth %g is invalid", d);
    *depth = (int64_t)d;
    return 0;
}

int shape_onehot(op_ctx_t *c)
{
    int axis;
    int64_t depth;
    int r = onehot_args(c, &axis, &depth);
    if (r) return r;
    const tensor_t *ind = c->in[0];
    int64_t d[TENSOR_MAX_DIMS];
    for (int i = 0, k = 0; i <= ind->ndim; i++) d[i] = i == axis ? depth : ind->dims[k++];
    return op_set_out(c, 0, c->in[2]->dtype, ind->ndim + 1, d);
}

/* Indices outside [-depth, depth-1] give an all-off row (the spec's rule). */
int run_onehot(op_ctx_t *c)
{
    int axis;
    int64_t depth;
    int r = onehot_args(c, &axis, &depth);
    if (r) return r < 0 ? -1 : op_fail(c, "depth unknown at run time");
    const tensor_t *ind = c->in[0], *val = c->in[2];
    tensor_t *y = c->out[0];
    size_t es = dtype_size(val->dtype);
    const char *off = val->data, *on = off + es;
    tn_fill(y->data, off, es, tensor_numel(y));
    int64_t inner = prod_dims(ind->dims, axis, ind->ndim), n = tensor_numel(ind);
    for (int64_t p = 0; p < n; p++) {
        double v = trunc(tensor_get_f64(ind, p));
        if (!(v >= -(double)depth && v < (double)depth)) continue;
        int64_t k = (int64_t)v;
        if (k < 0) k += depth;
        int64_t o = p / inner, i = p % inner;
        memcpy((char *)y->data + ((o * depth + k) * inner + i) * (int64_t)es, on, es);
    }
    return 0;
}

/* ---- NonZero ---- */

/* Whether element i is non-zero; float signs are masked so -0.0 is zero. */
static int is_nonzero(const tensor_t *x, int64_t i)
{
    switch (x->dtype) {
    case DT_FLOAT16: case DT_BFLOAT16: return (((const uint16_t *)x->data)[i] & 0x7fff) != 0;
    case DT_FLOAT: return (((const uint32_t *)x->data)[i] & 0x7fffffffu) != 0;
    case DT_DOUBLE: return (((const uint64_t *)x->data)[i] & 0x7fffffffffffffffull) != 0;
    default: break;
    }
    DISPATCH_BYSIZE(dtype_size(x->dtype), return ((const T *)x->data)[i] != 0, (void)0);
    return 0;
}

static int64_t count_nonzero(const tensor_t *x)
{
    int64_t n = tensor_numel(x), cnt = 0;
    for (int64_t i = 0; i < n; i++) cnt += is_nonzero(x, i);
    return cnt;
}

int shape_nonzero(op_ctx_t *c)
{
    if (op_check_inputs(c, 1, 1)) return -1;
    const tensor_t *x = c->in[0];
    size_t es;
    if (tn_elem_size(c, x, &es)) return -1;
    if (!x->data) return OP_DYNAMIC;
    /* a scalar is treated as 1-D, as numpy's nonzero does */
    int64_t d[2] = {x->ndim ? x->ndim : 1, count_nonzero(x)};
    return op_set_out(c, 0, DT_INT64, 2, d);
}

int run_nonzero(op_ctx_t *c)
{
    const tensor_t *x = c->in[0];
    tensor_t *y = c->out[0];
    int64_t nnz = y->dims[1], n = tensor_numel(x), k = 0;
    if (count_nonzero(x) != nnz) return op_fail(c, "output was sized for another input");
    int64_t idx[TENSOR_MAX_DIMS] = {0};
    int64_t *o = y->data;
    for (int64_t i = 0; i < n; i++) {
        if (is_nonzero(x, i)) {
            if (x->ndim == 0) o[k] = 0;
            for (int d = 0; d < x->ndim; d++) o[d * nnz + k] = idx[d];
            k++;
        }
        odo_next(idx, x->dims, x->ndim);
    }
    return 0;
}

/* ---- EyeLike ---- */

static int eyelike_type(op_ctx_t *c, dtype_t *dt)
{
    if (op_check_inputs(c, 1, 1)) return -1;
    if (c->in[0]->ndim != 2) return op_fail(c, "input must be 2-D, got rank %d", c->in[0]->ndim);
    *dt = (dtype_t)attr_int(c->node, "dtype", c->in[0]->dtype);
    size_t es = dtype_size(*dt);
    if ((es != 1 && es != 2 && es != 4 && es != 8))
        return op_fail(c, "dtype %d is not supported", (int)*dt);
    return 0;
}

int shape_eyelike(op_ctx_t *c)
{
    dtype_t dt;
    if (eyelike_type(c, &dt)) return -1;
    return op_set_out(c, 0, dt, 2, c->in[0]->dims);
}

int run_eyelike(op_ctx_t *c)
{
    dtype_t dt;
    if (eyelike_type(c, &dt)) return -1;
    tensor_t *y = c->out[0];
    size_t es = dtype_size(dt);
    int64_t rows = y->dims[0], cols = y->dims[1], k = attr_int(c->node, "k", 0);
    unsigned char one[8];
    tn_scalar_bytes(dt, 1.0, one);
    if (rows > 0 && cols > 0) memset(y->data, 0, (size_t)(rows * cols) * es);
    for (int64_t i = 0; i < rows; i++) {
        /* column i + k, computed without overflow for absurd k */
        if (k >= cols || k <= -rows) break;
        int64_t j = i + k;
        if (j >= 0 && j < cols) memcpy((char *)y->data + (i * cols + j) * (int64_t)es, one, es);
    }
    return 0;
}

/* ---- Trilu ---- */

static int trilu_k(op_ctx_t *c, int64_t *k)
{
    if (op_check_inputs(c, 1, 2)) return -1;
    const tensor_t *x = c->in[0];
    size_t es;
    if (tn_elem_size(c, x, &es)) return -1;
    if (x->ndim < 2) return op_fail(c, "input must have rank >= 2, got %d", x->ndim);
    *k = 0;
    const tensor_t *kt = c->n_in > 1 ? c->in[1] : NULL;
    if (!kt) return 0;
    if (tn_check_index_type(c, kt, "k")) return -1;
    if (tensor_numel(kt) != 1) return op_fail(c, "k must be a scalar");
    if (!kt->data) return OP_DYNAMIC;
    *k = idx_get(kt, 0);
    /* clamp so i + k cannot overflow; beyond the matrix the result is the same */
    int64_t rows = x->dims[x->ndim - 2], cols = x->dims[x->ndim - 1];
    if (*k > cols) *k = cols;
    if (*k < -rows) *k = -rows;
    return 0;
}

int shape_trilu(op_ctx_t *c)
{
    int64_t k;
    if (trilu_k(c, &k) < 0) return -1;
    return shape_same_as_input0(c);
}

int run_trilu(op_ctx_t *c)
{
    int64_t k;
    int r = trilu_k(c, &k);
    if (r) return r < 0 ? -1 : op_fail(c, "k unknown at run time");
    const tensor_t *x = c->in[0];
    const int upper = attr_int(c->node, "upper", 1) != 0;
    size_t es = dtype_size(x->dtype);
    int64_t rows = x->dims[x->ndim - 2], cols = x->dims[x->ndim - 1];
    int64_t mats = prod_dims(x->dims, 0, x->ndim - 2);
    const char *src = x->data;
    char *dst = c->out[0]->data;
    for (int64_t m = 0; m < mats * rows; m++) {
        int64_t i = m % rows, off = m * cols * (int64_t)es;
        /* upper keeps j >= i + k; lower keeps j <= i + k */
        int64_t cut = upper ? i + k : i + k + 1;
        cut = cut < 0 ? 0 : cut > cols ? cols : cut;
        size_t a = (size_t)cut * es, b = (size_t)(cols - cut) * es;
        if (upper) {
            if (a) memset(dst + off, 0, a);
            copy_bytes(dst + off + a, src + off + a, b);
        } else {
            copy_bytes(dst + off, src + off, a);
            if (b) memset(dst + off + a, 0, b);
        }
    }
    return 0;
}
