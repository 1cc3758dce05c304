/* transpose.c — axis permutations: Transpose, and DepthToSpace and
 * SpaceToDepth, which are a reshape to 6-D followed by a permutation.
 *
 * tn_permute() first drops size-1 axes and merges output axes that stay
 * adjacent in the input, so most real permutations shrink to 2-D or 3-D.
 * Then: when the innermost output axis is also innermost in the input, rows
 * are memcpy'd; otherwise the two axes that are innermost in input and output
 * are copied in tiles, so both reads and writes stay in cache. Large copies
 * are split into shape-determined tasks on the thread pool (util/pool.h). */
#include <string.h>
#include "ops/tensor/tensor_impl.h"
#include "util/pool.h"
#include "ops/tensor/transpose_impl.h"

/* Tile of the tiled path: TA elements along the input's contiguous axis,
 * TB along the output's (measured best on 6400x256 .. 80x80 float copies). */
enum { TA = 64, TB = 32 };
/* A task covers TA x BAND elements, so both tall and wide copies split. */
enum { BAND = 256 };
/* Below this many bytes a permutation runs on the calling thread. */
#define PERM_PARALLEL_BYTES ((int64_t)1 << 18)

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

/* One permutation split into tasks whose bounds depend only on the shape. */
typedef struct perm_job {
    char *dst;
    const char *src;
    size_t es;
    perm_view_t v;
    int64_t per_task;        /* rows path: rows per task */
    /* tiled path: the axes other than q (input-innermost) and the last */
    int no;
    int64_t oth[TENSOR_MAX_DIMS], oth_ist[TENSOR_MAX_DIMS], oth_ost[TENSOR_MAX_DIMS];
    int64_t A, B, aos, bis, a_tiles, b_bands;
} perm_job_t;

/* Rows path task: rows whose innermost axis is contiguous in both tensors. */
static void perm_rows_task(void *ctx, int64_t t)
{
    const perm_job_t *j = ctx;
    const perm_view_t *v = &j->v;
    int m = v->n - 1;
    size_t row = (size_t)v->sz[m] * j->es;
    int64_t rows = prod_dims(v->sz, 0, m), r0 = t * j->per_task;
    int64_t r1 = r0 + j->per_task < rows ? r0 + j->per_task : rows, idx[TENSOR_MAX_DIMS], off = 0;
    int64_t rem = r0;
    for (int d = m - 1; d >= 0; d--) {
        idx[d] = rem % v->sz[d];
        rem /= v->sz[d];
        off += idx[d] * v->st[d];
    }
    char *dst = j->dst + r0 * (int64_t)row;
    for (int64_t r = r0; r < r1; r++) {
        memcpy(dst, j->src + off * (int64_t)j->es, row);
        dst += row;
        for (int d = m - 1; d >= 0; d--) {   /* odometer, offset kept incrementally */
            if (++idx[d] < v->sz[d]) { off += v->st[d]; break; }
            off -= v->st[d] * (v->sz[d] - 1);
            idx[d] = 0;
        }
    }
}

/* The generic set has no block transposer: the plain loop moves everything. */
static int64_t blocks_none(float *dst, int64_t dld, const float *src, int64_t sld, int64_t na, int64_t nb)
{
    return 0;
}

const transpose_arch_t transpose_arch_generic = {blocks_none};

/* The one selection point of the tiled path's block transposer (docs/design.md, "ISA dispatch"). */
static const transpose_arch_t *transpose_arch(void)
{
    return isa_pick(&transpose_arch_generic, ISA_TABLE(&transpose_arch_avx2), NULL);
}

/* Tiled path task: TA input-contiguous elements (axis q) by BAND elements of
 * the output-innermost axis, for one combination of the other axes. */
static void perm_tile_task(void *ctx, int64_t t)
{
    const perm_job_t *j = ctx;
    int64_t bb = (t % j->b_bands) * BAND;
    t /= j->b_bands;
    int64_t o = t / j->a_tiles, a0 = (t % j->a_tiles) * TA, ib = 0, ob = 0;
    for (int k = j->no - 1; k >= 0; k--) {
        int64_t i = o % j->oth[k];
        o /= j->oth[k];
        ib += i * j->oth_ist[k];
        ob += i * j->oth_ost[k];
    }
    const int64_t a1 = a0 + TA < j->A ? a0 + TA : j->A, aos = j->aos, bis = j->bis;
    const int64_t B = bb + BAND < j->B ? bb + BAND : j->B;
    const transpose_arch_t *arch = transpose_arch();
    DISPATCH_BYSIZE(j->es, {
        const T *s = (const T *)j->src + ib;
        T *d = (T *)j->dst + ob;
        for (int64_t b0 = bb; b0 < B; b0 += TB) {
            int64_t b1 = b0 + TB < B ? b0 + TB : B;
            /* 4-byte elements: whole blocks in registers where the CPU can, the rest below */
            int64_t blk = sizeof(T) == 4 ? arch->blocks_f32((float *)(d + a0 * aos + b0), aos,
                                                           (const float *)(s + a0 + b0 * bis), bis, a1 - a0,
                                                           b1 - b0) : 0;
            int64_t ab = blk ? a0 + (a1 - a0) / blk * blk : a0;
            int64_t bbk = blk ? b0 + (b1 - b0) / blk * blk : b0;
            for (int64_t a = a0; a < a1; a++) {
                T *dr = d + a * aos;
                const T *sr = s + a;
                for (int64_t b = a < ab ? bbk : b0; b < b1; b++) dr[b] = sr[b * bis];
            }
        }
    }, (void)0);
}

static void run_tasks(int64_t n, void (*fn)(void *, int64_t), void *ctx, int64_t bytes)
{
    if (bytes >= PERM_PARALLEL_BYTES && n > 1) {
        pool_for(n, fn, ctx);
        return;
    }
    for (int64_t i = 0; i < n; i++) fn(ctx, i);
}

void tn_permute(void *dst, const void *src, size_t es, int ndim,
                const int64_t *dims, const int *perm)
{
    int64_t total = prod_dims(dims, 0, ndim), bytes = total * (int64_t)es;
    if (total == 0) return;
    perm_job_t j = {.dst = dst, .src = src, .es = es};
    perm_view_t *v = &j.v;
    perm_view(ndim, dims, perm, v);
    if (v->n == 0 || (v->n == 1 && v->st[0] == 1)) {
        memcpy(dst, src, (size_t)bytes);
        return;
    }
    int m = v->n - 1;
    if (v->st[m] == 1) {
        /* tasks of about 64 KiB of rows */
        int64_t rows = prod_dims(v->sz, 0, m), row = v->sz[m] * (int64_t)es;
        j.per_task = row >= 65536 ? 1 : 65536 / row;
        run_tasks((rows + j.per_task - 1) / j.per_task, perm_rows_task, &j, bytes);
        return;
    }
    int q = -1;
    for (int k = 0; k < v->n; k++)
        if (v->st[k] == 1) q = k;
    int64_t ost[TENSOR_MAX_DIMS];
    strides_of(v->sz, v->n, ost);
    for (int k = 0; k < v->n; k++)
        if (k != q && k != m) {
            j.oth[j.no] = v->sz[k];
            j.oth_ist[j.no] = v->st[k];
            j.oth_ost[j.no] = ost[k];
            j.no++;
        }
    j.A = v->sz[q];
    j.B = v->sz[m];
    j.aos = ost[q];
    j.bis = v->st[m];
    j.a_tiles = (j.A + TA - 1) / TA;
    j.b_bands = (j.B + BAND - 1) / BAND;
    run_tasks(prod_dims(j.oth, 0, j.no) * j.a_tiles * j.b_bands, perm_tile_task, &j, bytes);
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
