/* gather.c — index-driven reads: Gather, GatherElements and GatherND.
 * Every index is range-checked (negative ones count from the end) before it
 * is used: a bad index fails the node with its position and value, it never
 * reads outside the data. Indices may be int32 or int64. */
#include <string.h>
#include "ops/tensor/tensor_impl.h"

/* Fails naming the first index outside [-n, n-1]; 0 if all are valid. */
static int check_indices(op_ctx_t *c, const tensor_t *ind, int64_t n, const char *what)
{
    int64_t cnt = tensor_numel(ind);
    for (int64_t i = 0; i < cnt; i++) {
        int64_t v = idx_get(ind, i);
        if (idx_norm(v, n) < 0)
            return op_fail(c, "%s[%lld] = %lld is out of range for an axis of %lld", what,
                           (long long)i, (long long)v, (long long)n);
    }
    return 0;
}

/* ---- Gather ---- */

static int gather_args(op_ctx_t *c, int *axis)
{
    if (tn_check_data_indices(c, 2, 2)) return -1;
    const tensor_t *x = c->in[0], *ind = c->in[1];
    if (x->ndim < 1) return op_fail(c, "data must have rank >= 1");
    *axis = op_axis(c, attr_int(c->node, "axis", 0), x->ndim);
    if (*axis < 0) return -1;
    if (ind->data && check_indices(c, ind, x->dims[*axis], "indices")) return -1;
    return 0;
}

int shape_gather(op_ctx_t *c)
{
    int axis;
    if (gather_args(c, &axis)) return -1;
    const tensor_t *x = c->in[0], *ind = c->in[1];
    int rank = x->ndim - 1 + ind->ndim;
    if (rank > TENSOR_MAX_DIMS) return op_fail(c, "output rank %d beyond %d", rank, TENSOR_MAX_DIMS);
    int64_t d[TENSOR_MAX_DIMS];
    int k = 0;
    for (int i = 0; i < axis; i++) d[k++] = x->dims[i];
    for (int i = 0; i < ind->ndim; i++) d[k++] = ind->dims[i];
    for (int i = axis + 1; i < x->ndim; i++) d[k++] = x->dims[i];
    return op_set_out(c, 0, x->dtype, rank, d);
}

int run_gather(op_ctx_t *c)
{
    int axis;
    if (gather_args(c, &axis)) return -1;
    const tensor_t *x = c->in[0], *ind = c->in[1];
    if (!ind->data) return op_fail(c, "indices unknown at run time");
    size_t es = dtype_size(x->dtype);
    int64_t outer = prod_dims(x->dims, 0, axis), n = x->dims[axis];
    int64_t inner = prod_dims(x->dims, axis + 1, x->ndim), ni = tensor_numel(ind);
    if (!outer || !ni || !inner) return 0;
    char *dst = c->out[0]->data;
    const char *src = x->data;
    if (inner == 1) {
        /* gathering single elements: typed copy, no memcpy call per element */
        DISPATCH_BYSIZE(es, {
            T *d = (T *)dst;
            const T *s = (const T *)src;
            for (int64_t o = 0; o < outer; o++)
                for (int64_t j = 0; j < ni; j++) *d++ = s[o * n + idx_norm(idx_get(ind, j), n)];
        }, (void)0);
        return 0;
    }
    size_t blk = (size_t)inner * es;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < ni; j++) {
            memcpy(dst, src + (o * n + idx_norm(idx_get(ind, j), n)) * (int64_t)blk, blk);
            dst += blk;
        }
    return 0;
}

/* ---- GatherElements ---- */

static int gather_el_args(op_ctx_t *c, int *axis)
{
    if (tn_check_data_indices(c, 2, 2)) return -1;
    const tensor_t *x = c->in[0], *ind = c->in[1];
    if (x->ndim < 1) return op_fail(c, "data must have rank >= 1");
    if (ind->ndim != x->ndim) return op_fail(c, "indices rank %d differs from data rank %d", ind->ndim, x->ndim);
    *axis = op_axis(c, attr_int(c->node, "axis", 0), x->ndim);
    if (*axis < 0) return -1;
    for (int d = 0; d < x->ndim; d++)
        if (d != *axis && ind->dims[d] > x->dims[d])
            return op_fail(c, "indices dimension %d (%lld) exceeds data's (%lld)", d,
                           (long long)ind->dims[d], (long long)x->dims[d]);
    if (ind->data && check_indices(c, ind, x->dims[*axis], "indices")) return -1;
    return 0;
}

int shape_gather_elements(op_ctx_t *c)
{
    int axis;
    if (gather_el_args(c, &axis)) return -1;
    return op_set_out(c, 0, c->in[0]->dtype, c->in[1]->ndim, c->in[1]->dims);
}

int run_gather_elements(op_ctx_t *c)
{
    int axis;
    if (gather_el_args(c, &axis)) return -1;
    const tensor_t *x = c->in[0], *ind = c->in[1];
    if (!ind->data) return op_fail(c, "indices unknown at run time");
    const int R = x->ndim;
    int64_t total = tensor_numel(ind);
    if (!total) return 0;
    int64_t xst[TENSOR_MAX_DIMS], idx[TENSOR_MAX_DIMS] = {0};
    strides_of(x->dims, R, xst);
    const int64_t L = ind->dims[R - 1], rows = total / L, n = x->dims[axis], ast = xst[axis];
    const int64_t lst = axis == R - 1 ? 0 : 1;   /* last axis stride in data unless it is the gather axis */
    int64_t pos = 0;
    DISPATCH_BYSIZE(dtype_size(x->dtype), {
        T *d = c->out[0]->data;
        const T *s = x->data;
        for (int64_t r = 0; r < rows; r++) {
            int64_t base = 0;
            for (int k = 0; k < R - 1; k++)
                if (k != axis) base += idx[k] * xst[k];
            for (int64_t j = 0; j < L; j++, pos++)
                d[pos] = s[base + j * lst + idx_norm(idx_get(ind, pos), n) * ast];
            odo_next(idx, ind->dims, R - 1);
        }
    }, (void)0);
    return 0;
}

/* ---- GatherND ---- */

typedef struct gnd_plan {
    int b, k;                /* batch_dims, index tuple length */
    int64_t nb, nsel, inner; /* batches, tuples per batch, elements per slice */
    int64_t bstride;         /* data elements per batch */
} gnd_plan_t;

static int gather_nd_plan(op_ctx_t *c, gnd_plan_t *p)
{
    if (tn_check_data_indices(c, 2, 2)) return -1;
    const tensor_t *x = c->in[0], *ind = c->in[1];
    int64_t b = c->node->opset >= 12 ? attr_int(c->node, "batch_dims", 0) : 0;
    int r = x->ndim, q = ind->ndim;
    if (r < 1 || q < 1) return op_fail(c, "data and indices must have rank >= 1");
    if (b < 0 || b >= (r < q ? r : q)) return op_fail(c, "batch_dims %lld invalid for ranks %d and %d", (long long)b, r, q);
    int64_t k = ind->dims[q - 1];
    if (k < 1 || k > r - b)
        return op_fail(c, "indices' last dimension %lld must be in [1, %lld]", (long long)k, (long long)(r - b));
    for (int i = 0; i < b; i++)
        if (ind->dims[i] != x->dims[i])
            return op_fail(c, "batch dimension %d differs: indices %lld, data %lld", i,
                           (long long)ind->dims[i], (long long)x->dims[i]);
    p->b = (int)b;
    p->k = (int)k;
    p->nb = prod_dims(x->dims, 0, p->b);
    p->nsel = prod_dims(ind->dims, p->b, q - 1);
    p->inner = prod_dims(x->dims, p->b + p->k, r);
    p->bstride = prod_dims(x->dims, p->b, r);
    return 0;
}

/* Data offset (within a batch) of tuple t; -1 if an index is out of range. */
static int64_t gnd_offset(const tensor_t *x, const tensor_t *ind, const gnd_plan_t *p, int64_t t, int *bad)
{
    int64_t off = 0;
    for (int j = 0; j < p->k; j++) {
        int64_t n = x->dims[p->b + j];
        int64_t v = idx_norm(idx_get(ind, t * p->k + j), n);
        if (v < 0) { *bad = j; return -1; }
        off = off * n + v;
    }
    return off * p->inner;
}

static int gnd_check(op_ctx_t *c, const gnd_plan_t *p)
{
    const tensor_t *x = c->in[0], *ind = c->in[1];
    for (int64_t t = 0; t < p->nb * p->nsel; t++) {
        int j = 0;
        if (gnd_offset(x, ind, p, t, &j) < 0)
            return op_fail(c, "indices[%lld] = %lld is out of range for data dimension %d (%lld)",
                           (long long)(t * p->k + j), (long long)idx_get(ind, t * p->k + j),
                           p->b + j, (long long)x->dims[p->b + j]);
    }
    return 0;
}

int shape_gather_nd(op_ctx_t *c)
{
    gnd_plan_t p;
    if (gather_nd_plan(c, &p)) return -1;
    const tensor_t *x = c->in[0], *ind = c->in[1];
    if (ind->data && gnd_check(c, &p)) return -1;
    int64_t d[2 * TENSOR_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < ind->ndim - 1; i++) d[n++] = ind->dims[i];
    for (int i = p.b + p.k; i < x->ndim; i++) d[n++] = x->dims[i];
    if (n > TENSOR_MAX_DIMS) return op_fail(c, "output rank %d beyond %d", n, TENSOR_MAX_DIMS);
    return op_set_out(c, 0, x->dtype, n, d);
}

int run_gather_nd(op_ctx_t *c)
{
    gnd_plan_t p;
    if (gather_nd_plan(c, &p)) return -1;
    const tensor_t *x = c->in[0], *ind = c->in[1];
    if (!ind->data) return op_fail(c, "indices unknown at run time");
    if (gnd_check(c, &p)) return -1;
    size_t es = dtype_size(x->dtype), blk = (size_t)p.inner * es;
    if (!blk) return 0;
    char *dst = c->out[0]->data;
    for (int64_t bi = 0; bi < p.nb; bi++)
        for (int64_t s = 0; s < p.nsel; s++) {
            int j;
            int64_t off = gnd_offset(x, ind, &p, bi * p.nsel + s, &j);
            memcpy(dst, (const char *)x->data + (bi * p.bstride + off) * (int64_t)es, blk);
            dst += blk;
        }
    return 0;
}
