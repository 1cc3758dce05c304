/* topk.c — TopK (REDUCE family; rows in reduce.c).
 *
 * Opset 1: k is an attribute; opset 10: k is a 1-element int64 input;
 * opset 11: largest / sorted attributes and negative axes. Outputs the k
 * values and their int64 indices along the axis.
 *
 * Order (a strict total order, so results are deterministic): by value, a
 * NaN ranking above every number (numpy's sort puts NaN last); equal values
 * (and NaNs among themselves) rank by lower index first, as ONNX specifies.
 * Results always come out sorted best first, also with sorted = 0 (the spec
 * leaves that order open). Selection keeps a heap of the k best indices of
 * each line: O(n log k).
 */
#include <string.h>
#include "ops/reduce/reduce_impl.h"

/* Reads k, the axis and the flags. Returns 0, OP_DYNAMIC or -1. */
static int topk_params(op_ctx_t *c, int64_t *k, int *axis, int *largest)
{
    const node_t *nd = c->node;
    const tensor_t *x = c->in[0];
    if (x->ndim == 0) return op_fail(c, "input must have rank >= 1");
    *axis = op_axis(c, attr_int(nd, "axis", -1), x->ndim);
    if (*axis < 0) return -1;
    *largest = nd->opset >= 11 ? attr_int(nd, "largest", 1) != 0 : 1;
    if (nd->opset < 10) {
        if (!node_attr(nd, "k")) return op_fail(c, "attribute k is missing");
        *k = attr_int(nd, "k", 0);
    } else {
        const tensor_t *kt = c->in[1];
        if (tensor_numel(kt) != 1 || kt->ndim > 1)
            return op_fail(c, "input K must hold exactly one value");
        if (!kt->data) return OP_DYNAMIC;
        if (op_read_ints(c, kt, k, 1) < 0) return -1;
    }
    if (*k < 0 || *k > x->dims[*axis])
        return op_fail(c, "k = %lld is outside [0, %lld] (the size of axis %d)", (long long)*k,
                       (long long)x->dims[*axis], *axis);
    return 0;
}

int topk_shape(op_ctx_t *c)
{
    int64_t k;
    int axis, largest, rc;
    if (op_check_inputs(c, c->node->opset < 10 ? 1 : 2, c->node->opset < 10 ? 1 : 2)) return -1;
    const tensor_t *x = c->in[0];
    if (red_check_type(c, 0, x->dtype, 1)) return -1;
    if ((rc = topk_params(c, &k, &axis, &largest))) return rc;
    int64_t dims[TENSOR_MAX_DIMS];
    memcpy(dims, x->dims, sizeof dims);
    dims[axis] = k;
    if (op_set_out(c, 0, x->dtype, x->ndim, dims)) return -1;
    return op_set_out(c, 1, DT_INT64, x->ndim, dims);
}

/* Three-way comparison in the "largest" sense: NaN above every number. */
#define TK_CMP(a, b) ((a) != (a) ? ((b) != (b) ? 0 : 1)                       \
                      : (b) != (b) ? -1 : (a) > (b) ? 1 : (a) < (b) ? -1 : 0)
/* Whether index i ranks strictly better than index j on line v. */
#define TK_BETTER(i, j) (tk_c_ = TK_CMP(v[i], v[j]) * sgn, tk_c_ > 0 || (tk_c_ == 0 && (i) < (j)))

/* Sifts heap position p down; the root is the worst of the kept indices. */
#define TK_SIFT(p, size)                                                       \
    do {                                                                       \
        int64_t q_ = (p);                                                      \
        for (;;) {                                                             \
            int64_t l_ = 2 * q_ + 1;                                           \
            int64_t w_ = q_;                                                   \
            if (l_ < (size) && TK_BETTER(h[w_], h[l_])) w_ = l_;               \
            if (l_ + 1 < (size) && TK_BETTER(h[w_], h[l_ + 1])) w_ = l_ + 1;   \
            if (w_ == q_) break;                                               \
            int64_t t_ = h[q_]; h[q_] = h[w_]; h[w_] = t_;                     \
            q_ = w_;                                                           \
        }                                                                      \
    } while (0)

int topk_run(op_ctx_t *c)
{
    int64_t k, outer, n, inner;
    int axis, largest;
    if (topk_params(c, &k, &axis, &largest)) return -1;
    const tensor_t *x = c->in[0];
    red_split_axis(x, axis, &outer, &n, &inner);
    if (k == 0 || outer * inner == 0) return 0;
    int64_t *yi = c->out[1] ? c->out[1]->data : NULL;
    const int sgn = largest ? 1 : -1;
    size_t esz = dtype_size(x->dtype);
    char *mem = c->scratch(c, (size_t)k * sizeof(int64_t) + (size_t)n * esz + 16);
    if (!mem) return op_fail(c, "out of scratch memory");
    int64_t *h = (int64_t *)mem;
    DISPATCH_NUMERIC(x->dtype, {
        const T *xs = x->data;
        T *yv = c->out[0]->data;
        T *line = (T *)(mem + (size_t)k * sizeof(int64_t));
        int tk_c_;
        for (int64_t o = 0; o < outer; o++)
            for (int64_t i = 0; i < inner; i++) {
                const T *v = line;
                const T *src = xs + o * n * inner + i;
                if (inner == 1) v = src;
                else for (int64_t j = 0; j < n; j++) line[j] = src[j * inner];
                /* heap of the k best so far, worst at the root */
                int64_t hs = 0;
                for (int64_t j = 0; j < n; j++) {
                    if (hs < k) {
                        int64_t q = hs++;
                        h[q] = j;
                        while (q > 0 && TK_BETTER(h[(q - 1) / 2], h[q])) {
                            int64_t p = (q - 1) / 2;
                            int64_t t = h[p];
                            h[p] = h[q]; h[q] = t;
                            q = p;
                        }
                    } else if (TK_BETTER(j, h[0])) {
                        h[0] = j;
                        TK_SIFT(0, hs);
                    }
                }
                /* popping the worst fills the outputs from the back */
                int64_t base = o * k * inner + i;
                for (int64_t r = k - 1; r >= 0; r--) {
                    int64_t j = h[0];
                    yv[base + r * inner] = v[j];
                    if (yi) yi[base + r * inner] = j;
                    h[0] = h[--hs];
                    TK_SIFT(0, hs);
                }
            }
    }, return op_fail(c, "unsupported element type %s", dtype_name(x->dtype)))
    return 0;
}
