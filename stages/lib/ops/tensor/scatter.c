/* scatter.c — index-driven writes: ScatterElements (and the deprecated
 * Scatter, its opset 9..10 name) and ScatterND, with the reductions of opset
 * 16 (add, mul) and 18 (max, min). The output starts as a copy of data; the
 * updates are then applied in index order, so duplicate indices give the
 * ONNX reference's result (last write wins; reductions accumulate).
 * Every index is range-checked before anything is written. */
#include <string.h>
#include "ops/tensor/tensor_impl.h"
#include "tensor/half.h"

enum { RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN };

static int read_reduction(op_ctx_t *c, int *red)
{
    *red = RED_NONE;
    if (strcmp(c->node->op_type, "Scatter") == 0 || c->node->opset < 16) return 0;
    char buf[16];
    const char *s = attr_string(c->node, "reduction", "none", buf, sizeof buf);
    if (!strcmp(s, "none")) return 0;
    if (!strcmp(s, "add")) *red = RED_ADD;
    else if (!strcmp(s, "mul")) *red = RED_MUL;
    else if (c->node->opset >= 18 && !strcmp(s, "max")) *red = RED_MAX;
    else if (c->node->opset >= 18 && !strcmp(s, "min")) *red = RED_MIN;
    else return op_fail(c, "reduction '%s' is not supported at opset %d", s, c->node->opset);
    dtype_t t = c->in[0]->dtype;
    if (t == DT_BOOL || !dtype_size(t))
        return op_fail(c, "reduction '%s' is not defined for %s", s, dtype_name(t));
    return 0;
}

static float red_f32(int red, float a, float b)
{
    switch (red) {
    case RED_ADD: return a + b;
    case RED_MUL: return a * b;
    case RED_MAX: return a > b ? a : b;
    default: return a < b ? a : b;
    }
}

/* out[oo + i] (op)= upd[uo + i] for i < n, elements of out's type. */
static void apply_block(tensor_t *out, const tensor_t *upd, int64_t oo, int64_t uo, int64_t n, int red)
{
    dtype_t dt = out->dtype;
    size_t es = dtype_size(dt);
    if (red == RED_NONE) {
        memcpy((char *)out->data + oo * (int64_t)es, (const char *)upd->data + uo * (int64_t)es, (size_t)n * es);
        return;
    }
    if (dt == DT_FLOAT16 || dt == DT_BFLOAT16) {
        uint16_t *d = (uint16_t *)out->data + oo;
        const uint16_t *s = (const uint16_t *)upd->data + uo;
        for (int64_t i = 0; i < n; i++)
            d[i] = dt == DT_FLOAT16 ? f32_to_f16(red_f32(red, f16_to_f32(d[i]), f16_to_f32(s[i])))
                                    : f32_to_bf16(red_f32(red, bf16_to_f32(d[i]), bf16_to_f32(s[i])));
        return;
    }
    if (dtype_is_float(dt)) {
        DISPATCH_FLOAT(dt, {
            T *d = (T *)out->data + oo;
            const T *s = (const T *)upd->data + uo;
            for (int64_t i = 0; i < n; i++)
                switch (red) {
                case RED_ADD: d[i] += s[i]; break;
                case RED_MUL: d[i] *= s[i]; break;
                case RED_MAX: if (s[i] > d[i]) d[i] = s[i]; break;
                default: if (s[i] < d[i]) d[i] = s[i]; break;
                }
        }, (void)0);
        return;
    }
    /* integers wrap like the two's complement hardware does (no C overflow) */
    DISPATCH_INT(dt, {
        T *d = (T *)out->data + oo;
        const T *s = (const T *)upd->data + uo;
        for (int64_t i = 0; i < n; i++)
            switch (red) {
            case RED_ADD: d[i] = (T)((uint64_t)d[i] + (uint64_t)s[i]); break;
            case RED_MUL: d[i] = (T)((uint64_t)d[i] * (uint64_t)s[i]); break;
            case RED_MAX: if (s[i] > d[i]) d[i] = s[i]; break;
            default: if (s[i] < d[i]) d[i] = s[i]; break;
            }
    }, (void)0);
}

/* ---- ScatterElements / Scatter ---- */

static int scatter_inputs(op_ctx_t *c)
{
    if (tn_check_data_indices(c, 3, 3)) return -1;
    if (c->in[2]->dtype != c->in[0]->dtype)
        return op_fail(c, "updates are %s, data %s", dtype_name(c->in[2]->dtype), dtype_name(c->in[0]->dtype));
    return 0;
}

static int scatter_el_args(op_ctx_t *c, int *axis, int *red)
{
    if (scatter_inputs(c)) return -1;
    const tensor_t *x = c->in[0], *ind = c->in[1], *upd = c->in[2];
    if (x->ndim < 1) return op_fail(c, "data must have rank >= 1");
    if (ind->ndim != x->ndim) return op_fail(c, "indices rank %d differs from data rank %d", ind->ndim, x->ndim);
    if (!tensor_same_shape(ind, upd)) return op_fail(c, "updates shape differs from indices shape");
    *axis = op_axis(c, attr_int(c->node, "axis", 0), x->ndim);
    if (*axis < 0) return -1;
    for (int d = 0; d < x->ndim; d++)
        if (d != *axis && ind->dims[d] > x->dims[d])
            return op_fail(c, "indices dimension %d (%lld) exceeds data's (%lld)", d,
                           (long long)ind->dims[d], (long long)x->dims[d]);
    if (read_reduction(c, red)) return -1;
    if (ind->data) {
        int64_t n = tensor_numel(ind), lim = x->dims[*axis];
        for (int64_t i = 0; i < n; i++)
            if (idx_norm(idx_get(ind, i), lim) < 0)
                return op_fail(c, "indices[%lld] = %lld is out of range for an axis of %lld",
                               (long long)i, (long long)idx_get(ind, i), (long long)lim);
    }
    return 0;
}

int shape_scatter_elements(op_ctx_t *c)
{
    int axis, red;
    if (scatter_el_args(c, &axis, &red)) return -1;
    return shape_same_as_input0(c);
}

int run_scatter_elements(op_ctx_t *c)
{
    int axis, red;
    if (scatter_el_args(c, &axis, &red)) return -1;
    const tensor_t *x = c->in[0], *ind = c->in[1], *upd = c->in[2];
    if (!ind->data) return op_fail(c, "indices unknown at run time");
    if (tn_copy_input0(c)) return -1;
    const int R = x->ndim;
    int64_t total = tensor_numel(ind);
    int64_t xst[TENSOR_MAX_DIMS], idx[TENSOR_MAX_DIMS] = {0};
    strides_of(x->dims, R, xst);
    const int64_t n = x->dims[axis];
    for (int64_t pos = 0; pos < total; pos++) {
        int64_t off = 0;
        for (int k = 0; k < R; k++)
            off += (k == axis ? idx_norm(idx_get(ind, pos), n) : idx[k]) * xst[k];
        apply_block(c->out[0], upd, off, pos, 1, red);
        odo_next(idx, ind->dims, R);
    }
    return 0;
}

/* ---- ScatterND ---- */

typedef struct snd_plan { int k; int64_t ntup, inner; } snd_plan_t;

static int scatter_nd_args(op_ctx_t *c, snd_plan_t *p, int *red)
{
    if (scatter_inputs(c)) return -1;
    const tensor_t *x = c->in[0], *ind = c->in[1], *upd = c->in[2];
    int r = x->ndim, q = ind->ndim;
    if (r < 1 || q < 1) return op_fail(c, "data and indices must have rank >= 1");
    int64_t k = ind->dims[q - 1];
    if (k > r) return op_fail(c, "indices' last dimension %lld exceeds the data rank %d", (long long)k, r);
    /* updates must be indices.shape[:-1] + data.shape[k:] */
    int ur = q - 1 + r - (int)k;
    int good = upd->ndim == ur;
    for (int i = 0; good && i < q - 1; i++) good = upd->dims[i] == ind->dims[i];
    for (int i = (int)k; good && i < r; i++) good = upd->dims[q - 1 + i - k] == x->dims[i];
    if (!good) {
        char a[160];
        return op_fail(c, "updates shape %s is not indices.shape[:-1] + data.shape[%lld:]",
                       shape_str(upd->ndim, upd->dims, a, sizeof a), (long long)k);
    }
    if (read_reduction(c, red)) return -1;
    p->k = (int)k;
    p->ntup = prod_dims(ind->dims, 0, q - 1);
    p->inner = prod_dims(x->dims, p->k, r);
    if (ind->data)
        for (int64_t t = 0; t < p->ntup; t++)
            for (int j = 0; j < p->k; j++) {
                int64_t v = idx_get(ind, t * p->k + j);
                if (idx_norm(v, x->dims[j]) < 0)
                    return op_fail(c, "indices[%lld] = %lld is out of range for data dimension %d (%lld)",
                                   (long long)(t * p->k + j), (long long)v, j, (long long)x->dims[j]);
            }
    return 0;
}

int shape_scatter_nd(op_ctx_t *c)
{
    snd_plan_t p;
    int red;
    if (scatter_nd_args(c, &p, &red)) return -1;
    return shape_same_as_input0(c);
}

int run_scatter_nd(op_ctx_t *c)
{
    snd_plan_t p;
    int red;
    if (scatter_nd_args(c, &p, &red)) return -1;
    const tensor_t *x = c->in[0], *ind = c->in[1], *upd = c->in[2];
    if (!ind->data) return op_fail(c, "indices unknown at run time");
    if (tn_copy_input0(c)) return -1;
    if (!p.inner) return 0;
    for (int64_t t = 0; t < p.ntup; t++) {
        int64_t off = 0;
        for (int j = 0; j < p.k; j++) off = off * x->dims[j] + idx_norm(idx_get(ind, t * p.k + j), x->dims[j]);
        apply_block(c->out[0], upd, off * p.inner, t * p.inner, p.inner, red);
    }
    return 0;
}
