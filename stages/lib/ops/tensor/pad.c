/* pad.c — Pad: constant, reflect, edge (and wrap, opset 19) modes, pads as
 * an attribute before opset 11 and as inputs from 11 (constant_value input,
 * opset 18 axes). Negative pads crop. Index mapping follows numpy.pad (the
 * ONNX reference): reflect mirrors without repeating the edge, periodically
 * when the pad is wider than the axis.
 *
 * The kernel walks output rows: each row's outer coordinates map to an input
 * row (or to the constant); inside the row the interior is one memcpy and
 * only the padded ends are mapped element by element. */
#include <string.h>
#include "ops/tensor/tensor_impl.h"

enum { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP };

typedef struct pad_plan {
    int mode;
    int64_t begin[TENSOR_MAX_DIMS], end[TENSOR_MAX_DIMS];
    unsigned char value[8];   /* constant, in the data's type */
} pad_plan_t;

static int pad_mode(op_ctx_t *c, int *mode)
{
    char buf[16];
    const char *m = attr_string(c->node, "mode", "constant", buf, sizeof buf);
    if (!strcmp(m, "constant")) *mode = PAD_CONSTANT;
    else if (!strcmp(m, "reflect")) *mode = PAD_REFLECT;
    else if (!strcmp(m, "edge")) *mode = PAD_EDGE;
    else if (!strcmp(m, "wrap") && c->node->opset >= 19) *mode = PAD_WRAP;
    else return op_fail(c, "mode '%s' is not supported", m);
    return 0;
}

/* Pads from inputs (opset >= 11): pads, constant_value, axes. */
static int pad_inputs(op_ctx_t *c, pad_plan_t *p)
{
    const tensor_t *x = c->in[0], *pads = c->in[1];
    const tensor_t *cv = c->n_in > 2 ? c->in[2] : NULL, *axes = c->n_in > 3 ? c->in[3] : NULL;
    const int rank = x->ndim;
    if (!pads->data || (cv && !cv->data) || (axes && !axes->data)) return OP_DYNAMIC;
    if (tn_check_index_type(c, pads, "pads")) return -1;
    if (pads->ndim != 1) return op_fail(c, "pads must be 1-D");
    int64_t ax[TENSOR_MAX_DIMS];
    int na = rank;
    if (axes && c->node->opset >= 18) {
        if (tn_check_index_type(c, axes, "axes")) return -1;
        na = op_read_ints(c, axes, ax, TENSOR_MAX_DIMS);
        if (na < 0) return -1;
    } else {
        for (int i = 0; i < rank; i++) ax[i] = i;
    }
    if (pads->dims[0] != 2 * (int64_t)na)
        return op_fail(c, "pads has %lld entries, expected %d", (long long)pads->dims[0], 2 * na);
    int seen[TENSOR_MAX_DIMS] = {0};
    for (int i = 0; i < na; i++) {
        int d = op_axis(c, ax[i], rank);
        if (d < 0) return -1;
        if (seen[d]) return op_fail(c, "axis %d repeated", d);
        seen[d] = 1;
        p->begin[d] = idx_get(pads, i);
        p->end[d] = idx_get(pads, i + na);
    }
    if (cv) {
        if (cv->dtype != x->dtype)
            return op_fail(c, "constant_value is %s, data %s", dtype_name(cv->dtype), dtype_name(x->dtype));
        if (tensor_numel(cv) != 1) return op_fail(c, "constant_value must hold one value");
        memcpy(p->value, cv->data, dtype_size(x->dtype));
    }
    return 0;
}

static int pad_plan(op_ctx_t *c, pad_plan_t *p)
{
    const int old = c->node->opset < 11;
    if (op_check_inputs(c, old ? 1 : 2, old ? 1 : 4)) return -1;
    const tensor_t *x = c->in[0];
    size_t es;
    memset(p, 0, sizeof *p);
    if (tn_elem_size(c, x, &es) || pad_mode(c, &p->mode)) return -1;
    const int rank = x->ndim;
    if (old) {
        const int64_t *v;
        int n = attr_ints(c->node, "pads", &v);
        if (n != 2 * rank) return op_fail(c, "attribute 'pads' has %d entries, expected %d", n, 2 * rank);
        for (int d = 0; d < rank; d++) {
            p->begin[d] = v[d];
            p->end[d] = v[d + rank];
        }
        tn_scalar_bytes(x->dtype, attr_float(c->node, "value", 0.0f), p->value);
    } else {
        int r = pad_inputs(c, p);
        if (r) return r;
    }
    for (int d = 0; d < rank; d++) {
        int64_t n = x->dims[d], b = p->begin[d], e = p->end[d];
        if (b < -n || e < -n || b > TENSOR_MAX_BYTES || e > TENSOR_MAX_BYTES || n + b + e < 0)
            return op_fail(c, "pads %lld, %lld are invalid for axis %d of size %lld", (long long)b,
                           (long long)e, d, (long long)n);
        if (p->mode != PAD_CONSTANT && n == 0 && (b > 0 || e > 0))
            return op_fail(c, "cannot pad the empty axis %d in this mode", d);
    }
    return 0;
}

/* 1 where every pad is 0 (known at build time: the inputs past the
 * first are the node's constants): the output is the input, byte for byte.
 * PyTorch exports ResNet-vd's shortcut AvgPool (ceil_mode) with such a Pad;
 * the memory plan makes it a view and run_pad copies nothing. */
static int pads_zero(const pad_plan_t *p, int rank)
{
    for (int d = 0; d < rank; d++)
        if (p->begin[d] || p->end[d]) return 0;
    return 1;
}

int pad_is_noop(const node_t *n, const tensor_t *const *in, int n_in)
{
    perr_t e = {0};
    op_ctx_t c = {.node = n, .n_in = n_in, .in = in, .err = &e};
    pad_plan_t p;
    if (n_in < 1 || !in[0] || pad_plan(&c, &p)) return 0;
    return pads_zero(&p, in[0]->ndim);
}

int shape_pad(op_ctx_t *c)
{
    pad_plan_t p;
    int r = pad_plan(c, &p);
    if (r) return r;
    const tensor_t *x = c->in[0];
    int64_t d[TENSOR_MAX_DIMS];
    for (int k = 0; k < x->ndim; k++) d[k] = x->dims[k] + p.begin[k] + p.end[k];
    return op_set_out(c, 0, x->dtype, x->ndim, d);
}

/* Input coordinate for coordinate i (already shifted by the begin pad) of an
 * axis of n elements; -1 means the constant. */
static int64_t pad_map(int mode, int64_t i, int64_t n)
{
    if (i >= 0 && i < n) return i;
    switch (mode) {
    case PAD_EDGE: return i < 0 ? 0 : n - 1;
    case PAD_WRAP: { int64_t m = i % n; return m < 0 ? m + n : m; }
    case PAD_REFLECT: {
        if (n == 1) return 0;
        int64_t per = 2 * (n - 1), m = i % per;
        if (m < 0) m += per;
        return m < n ? m : per - m;
    }
    default: return -1;
    }
}

int run_pad(op_ctx_t *c)
{
    pad_plan_t p;
    int r = pad_plan(c, &p);
    if (r) return r < 0 ? -1 : op_fail(c, "pads unknown at run time");
    const tensor_t *x = c->in[0];
    tensor_t *y = c->out[0];
    const int R = x->ndim;
    const size_t es = dtype_size(x->dtype);
    int64_t total = tensor_numel(y);
    if (total == 0) return 0;
    if (R == 0 || pads_zero(&p, R)) return tn_copy_input0(c);   /* nothing when planned as a view */
    int64_t xst[TENSOR_MAX_DIMS], idx[TENSOR_MAX_DIMS] = {0};
    strides_of(x->dims, R, xst);
    const int64_t L = y->dims[R - 1], n = x->dims[R - 1], b = p.begin[R - 1], rows = total / L;
    /* interior of a row: output [lo, hi) comes from input [lo - b, hi - b) */
    const int64_t lo = b > 0 ? b : 0, hi = b + n < L ? b + n : L;
    char *dst = y->data;
    const char *src = x->data;
    for (int64_t row = 0; row < rows; row++, dst += (size_t)L * es) {
        int64_t off = 0;
        int outside = 0;
        for (int d = 0; d < R - 1; d++) {
            int64_t i = pad_map(p.mode, idx[d] - p.begin[d], x->dims[d]);
            if (i < 0) { outside = 1; break; }
            off += i * xst[d];
        }
        odo_next(idx, y->dims, R - 1);
        DISPATCH_BYSIZE(es, {
            T v;
            memcpy(&v, p.value, sizeof v);
            T *o = (T *)dst;
            const T *s = (const T *)src + off;
            if (outside) {
                for (int64_t j = 0; j < L; j++) o[j] = v;
            } else {
                for (int64_t j = 0; j < lo && j < L; j++) {
                    int64_t i = pad_map(p.mode, j - b, n);
                    o[j] = i < 0 ? v : s[i];
                }
                if (hi > lo) memcpy(o + lo, s + (lo - b), (size_t)(hi - lo) * sizeof(T));
                for (int64_t j = hi > lo ? hi : lo; j < L; j++) {
                    int64_t i = pad_map(p.mode, j - b, n);
                    o[j] = i < 0 ? v : s[i];
                }
            }
        }, (void)0);
    }
    return 0;
}
