/* transpose.c — axis permutations: Transpose, and DepthToSpace and
 * SpaceToDepth, which are a reshape to 6-D followed by a permutation.
 *
 * tn_permute() first drops size-1 axes and merges output axes that stay
 * adjacent in the input, so most real permutations shrink to 2-D or 3-D.
 * Then: when the innermost output axis is also innermost in the input, rows
 * are memcpy'd; otherwise the two axes that are innermost in input and output
 * are copied as 32x32 tiles, so both reads and writes stay in cache. */
#include <string.h>
#include "ops/tensor_impl.h"

enum { TILE = 32 };

/* Coalesced view: output axis k has size sz[k] and input stride st[k]. */
typedef struct perm_view { int n; int64_t sz[TENSOR_MAX_DIMS], st[TENSOR_MAX_DIMS]; } perm_view_t;

static void perm_view(int ndim, const int64_t *dims, const int *perm, perm_view_t *v)
{
    int64_t in_st[TENSOR_MAX_DIMS];
    strides_of(dims, ndim, in_st);
    v->n = 0;
    for (int k = 0; k < ndim; k++) {
        int64_t s = dims[perm[k]];
        if (s == 1) continue;
        if (v->n && v->st[v->n - 1] == in_st[perm[k]] * s) {
            /* previous output axis is the next-outer input axis: merge */
            v->sz[v->n - 1] *= s;
            v->st[v->n - 1] = in_st[perm[k]];
            continue;
        }
        v->sz[v->n] = s;
        v->st[v->n] = in_st[perm[k]];
        v->n++;
    }
}

/* Copies rows whose innermost axis is contiguous in both tensors. */
static void permute_rows(char *dst, const char *src, size_t es, const perm_view_t *v)
{
    int m = v->n - 1;
    size_t row = (size_t)v->sz[m] * es;
    int64_t rows = prod_dims(v->sz, 0, m), idx[TENSOR_MAX_DIMS] = {0}, off = 0;
    for (int64_t r = 0; r < rows; r++) {
        memcpy(dst, src + off * (int64_t)es, row);
        dst += row;
        for (int d = m - 1; d >= 0; d--) {   /* odometer, offset kept incrementally */
            if (++idx[d] < v->sz[d]) { off += v->st[d]; break; }
            off -= v->st[d] * (v->sz[d] - 1);
            idx[d] = 0;
        }
    }
}

/* Tiled copy: axis q is innermost in the input (stride 1), axis m = n-1 is
 * innermost in the output. The other axes are walked by an odometer. */
static void permute_tiled(void *dst, const void *src, size_t es, const perm_view_t *v)
{
    int n = v->n, m = n - 1, q = -1;
    for (int k = 0; k < n; k++)
        if (v->st[k] == 1) q = k;
    int64_t ost[TENSOR_MAX_DIMS];
    strides_of(v->sz, n, ost);
    int64_t oth[TENSOR_MAX_DIMS], oth_ist[TENSOR_MAX_DIMS], oth_ost[TENSOR_MAX_DIMS];
    int no = 0;
    for (int k = 0; k < n; k++)
        if (k != q && k != m) { oth[no] = v->sz[k]; oth_ist[no] = v->st[k]; oth_ost[no] = ost[k]; no++; }
    const int64_t A = v->sz[q], B = v->sz[m], aos = ost[q], bis = v->st[m];
    int64_t idx[TENSOR_MAX_DIMS] = {0};
    for (;;) {
        int64_t ib = 0, ob = 0;
        for (int k = 0; k < no; k++) { ib += idx[k] * oth_ist[k]; ob += idx[k] * oth_ost[k]; }
        DISPATCH_BYSIZE(es, {
            const T *s = (const T *)src + ib;
            T *d = (T *)dst + ob;
            for (int64_t a0 = 0; a0 < A; a0 += TILE) {
                int64_t a1 = a0 + TILE < A ? a0 + TILE : A;
                for (int64_t b0 = 0; b0 < B; b0 += TILE) {
                    int64_t b1 = b0 + TILE < B ? b0 + TILE : B;
                    for (int64_t a = a0; a < a1; a++) {
                        T *dr = d + a * aos;
                        const T *sr = s + a;
                        for (int64_t b = b0; b < b1; b++) dr[b] = sr[b * bis];
                    }
                }
            }
        }, (void)0);
        if (!odo_next(idx, oth, no)) break;
    }
}

void tn_permute(void *dst, const void *src, size_t es, int ndim,
                   const int64_t *dims, const int *perm)
{
    int64_t total = prod_dims(dims, 0, ndim);
    if (total == 0) return;
    perm_view_t v;
    perm_view(ndim, dims, perm, &v);
    if (v.n == 0 || (v.n == 1 && v.st[0] == 1)) {
        memcpy(dst, src, (size_t)total * es);
        return;
    }
    if (v.st[v.n - 1] == 1)
        permute_rows(dst, src, es, &v);
    else
        permute_tiled(dst, src, es, &v);
}

/* Reads and validates Transpose's perm (default: reversed axes). */
static int read_perm(op_ctx_t *c, int rank, int *perm)
{
    const int64_t *p;
    int n = attr_ints(c->node, "perm", &p);
    if (n < 0) {
        for (int k = 0; k < rank; k++) perm[k] = rank - 1 - k;
        return 0;
    }
    if (n != rank) return op_fail(c, "perm has %d entries for a rank-%d input", n, rank);
    int seen[TENSOR_MAX_DIMS] = {0};
    for (int k = 0; k < n; k++) {
        if (p[k] < 0 || p[k] >= rank || seen[p[k]])
            return op_fail(c, "perm is not a permutation of 0..%d", rank - 1);
        seen[p[k]] = 1;
        perm[k] = (int)p[k];
    }
    return 0;
}

int shape_transpose(op_ctx_t *c)
{
    if (op_check_inputs(c, 1, 1)) return -1;
    const tensor_t *x = c->in[0];
    size_t es;
    if (tn_elem_size(c, x, &es)) return -1;
    int perm[TENSOR_MAX_DIMS];
    if (read_perm(c, x->ndim, perm)) return -1;
    int64_t d[TENSOR_MAX_DIMS];
    for (int k = 0; k < x->ndim; k++) d[k] = x->dims[perm[k]];
    return op_set_out(c, 0, x->dtype, x->ndim, d);
}

int run_transpose(op_ctx_t *c)
{
    const tensor_t *x = c->in[0];
    int perm[TENSOR_MAX_DIMS];
    if (read_perm(c, x->ndim, perm)) return -1;
    tn_permute(c->out[0]->data, x->data, dtype_size(x->dtype), x->ndim, x->dims, perm);
    return 0;
}

/* Validates a 4-D NCHW input and the blocksize attribute. */
static int block_args(op_ctx_t *c, int64_t *b)
{
    if (op_check_inputs(c, 1, 1)) return -1;
    const tensor_t *x = c->in[0];
    size_t es;
    if (tn_elem_size(c, x, &es)) return -1;
    if (x->ndim != 4) return op_fail(c, "input must be 4-D (NCHW), got rank %d", x->ndim);
    *b = attr_int(c->node, "blocksize", 0);
    if (*b <= 0 || *b > 65536) return op_fail(c, "blocksize %lld is invalid", (long long)*b);
    return 0;
}

/* DCR (default) or CRD; DepthToSpace before opset 11 only knows DCR. */
static int d2s_crd(op_ctx_t *c, int *crd)
{
    char buf[16];
    const char *m = c->node->opset >= 11 ? attr_string(c->node, "mode", "DCR", buf, sizeof buf) : "DCR";
    if (strcmp(m, "DCR") && strcmp(m, "CRD")) return op_fail(c, "mode '%s' is not DCR or CRD", m);
    *crd = !strcmp(m, "CRD");
    return 0;
}

int shape_depthtospace(op_ctx_t *c)
{
    int64_t b;
    int crd;
    if (block_args(c, &b) || d2s_crd(c, &crd)) return -1;
    const int64_t *x = c->in[0]->dims;
    if (x[1] % (b * b))
        return op_fail(c, "channels %lld not divisible by blocksize^2 = %lld", (long long)x[1], (long long)(b * b));
    int64_t d[4] = {x[0], x[1] / (b * b), x[2] * b, x[3] * b};
    return op_set_out(c, 0, c->in[0]->dtype, 4, d);
}

int run_depthtospace(op_ctx_t *c)
{
    int64_t b;
    int crd;
    if (block_args(c, &b) || d2s_crd(c, &crd)) return -1;
    const int64_t *x = c->in[0]->dims;
    int64_t cc = x[1] / (b * b);
    int64_t dcr[6] = {x[0], b, b, cc, x[2], x[3]}, crdd[6] = {x[0], cc, b, b, x[2], x[3]};
    static const int pdcr[6] = {0, 3, 4, 1, 5, 2}, pcrd[6] = {0, 1, 4, 2, 5, 3};
    tn_permute(c->out[0]->data, c->in[0]->data, dtype_size(c->in[0]->dtype), 6,
                  crd ? crdd : dcr, crd ? pcrd : pdcr);
    return 0;
}

int shape_spacetodepth(op_ctx_t *c)
{
    int64_t b;
    if (block_args(c, &b)) return -1;
    const int64_t *x = c->in[0]->dims;
    if (x[2] % b || x[3] % b)
        return op_fail(c, "spatial size %lldx%lld not divisible by blocksize %lld",
                       (long long)x[2], (long long)x[3], (long long)b);
    int64_t d[4] = {x[0], x[1] * b * b, x[2] / b, x[3] / b};
    return op_set_out(c, 0, c->in[0]->dtype, 4, d);
}

int run_spacetodepth(op_ctx_t *c)
{
    int64_t b;
    if (block_args(c, &b)) return -1;
    const int64_t *x = c->in[0]->dims;
    int64_t v[6] = {x[0], x[1], x[2] / b, b, x[3] / b, b};
    static const int p[6] = {0, 3, 5, 1, 2, 4};
    tn_permute(c->out[0]->data, c->in[0]->data, dtype_size(c->in[0]->dtype), 6, v, p);
    return 0;
}
