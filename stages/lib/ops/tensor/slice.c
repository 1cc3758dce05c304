/* slice.c — ops that select or reorder ranges along axes: Slice (strided,
 * negative steps), Compress (mask along an axis) and ReverseSequence. */
#include <string.h>
#include "ops/tensor/tensor_impl.h"
#include "util/pool.h"

/* ---- Slice ---- */

/* Per-axis result of the spec's clamping: first input index, step and count. */
typedef struct slice_plan {
    int64_t start[TENSOR_MAX_DIMS], step[TENSOR_MAX_DIMS], count[TENSOR_MAX_DIMS];
} slice_plan_t;

/* Reads starts/ends/axes/steps: attributes before opset 10, inputs 1..4 after. */
static int slice_args(op_ctx_t *c, int64_t *st, int64_t *en, int64_t *ax, int64_t *sp, int *n, int *has_axes)
{
    const int rank = c->in[0]->ndim;
    *has_axes = 0;
    if (c->node->opset < 10) {
        if (op_check_inputs(c, 1, 1)) return -1;
        const int64_t *s, *e, *a;
        int ns = attr_ints(c->node, "starts", &s), ne = attr_ints(c->node, "ends", &e);
        int na = attr_ints(c->node, "axes", &a);
        if (ns < 0 || ne < 0) return op_fail(c, "attributes 'starts' and 'ends' are required");
        if (ns != ne) return op_fail(c, "starts has %d entries, ends %d", ns, ne);
        if (ns > rank) return op_fail(c, "%d starts for a rank-%d input", ns, rank);
        if (na >= 0 && na != ns) return op_fail(c, "axes has %d entries, starts %d", na, ns);
        for (int i = 0; i < ns; i++) {
            st[i] = s[i];
            en[i] = e[i];
            sp[i] = 1;
            if (na >= 0) ax[i] = a[i];
        }
        *has_axes = na >= 0;
        *n = ns;
        return 0;
    }
    if (op_check_inputs(c, 3, 5)) return -1;
    const tensor_t *ts[4] = {c->in[1], c->in[2], c->n_in > 3 ? c->in[3] : NULL, c->n_in > 4 ? c->in[4] : NULL};
    int64_t *dst[4] = {st, en, ax, sp};
    static const char *names[4] = {"starts", "ends", "axes", "steps"};
    int cnt[4] = {0, 0, -1, -1};
    for (int k = 0; k < 4; k++) {
        if (!ts[k]) continue;
        if (!ts[k]->data) return OP_DYNAMIC;
        if (tn_check_index_type(c, ts[k], names[k])) return -1;
        if (ts[k]->ndim != 1) return op_fail(c, "%s must be 1-D", names[k]);
        cnt[k] = op_read_ints(c, ts[k], dst[k], TENSOR_MAX_DIMS);
        if (cnt[k] < 0) return -1;
    }
    for (int k = 1; k < 4; k++)
        if (cnt[k] >= 0 && cnt[k] != cnt[0])
            return op_fail(c, "%s has %d entries, starts %d", names[k], cnt[k], cnt[0]);
    if (cnt[0] > rank) return op_fail(c, "%d starts for a rank-%d input", cnt[0], rank);
    if (cnt[3] < 0)
        for (int i = 0; i < cnt[0]; i++) sp[i] = 1;
    *has_axes = cnt[2] >= 0;
    *n = cnt[0];
    return 0;
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* The spec's rule: negative starts/ends count from the end; then clamp to
 * [0, dim] for positive steps, [0, dim-1] (start) / [-1, dim-1] (end) for
 * negative steps; count = ceil((end - start) / step), at least 0. */
static int slice_plan(op_ctx_t *c, slice_plan_t *p)
{
    const tensor_t *x = c->in[0];
    const int rank = x->ndim;
    int64_t st[TENSOR_MAX_DIMS], en[TENSOR_MAX_DIMS], ax[TENSOR_MAX_DIMS], sp[TENSOR_MAX_DIMS];
    int n = 0, has_axes = 0;
    int r = slice_args(c, st, en, ax, sp, &n, &has_axes);
    if (r) return r;
    int seen[TENSOR_MAX_DIMS] = {0};
    for (int d = 0; d < rank; d++) {
        p->start[d] = 0;
        p->step[d] = 1;
        p->count[d] = x->dims[d];
    }
    for (int i = 0; i < n; i++) {
        int64_t a = has_axes ? ax[i] : i;
        if (a < -rank || a >= rank) return op_fail(c, "axis %lld out of range for rank %d", (long long)a, rank);
        int d = (int)(a < 0 ? a + rank : a);
        if (seen[d]) return op_fail(c, "axis %d repeated", d);
        seen[d] = 1;
        int64_t dim = x->dims[d], step = sp[i], s = st[i], e = en[i];
        if (step == 0) return op_fail(c, "steps[%d] is 0", i);
        if (s < 0) s += dim;   /* cannot overflow: s < 0 and dim >= 0 */
        if (e < 0) e += dim;
        int64_t cnt;
        if (dim == 0) {
            cnt = 0;   /* the negative-step clamp [0, dim-1] is empty */
        } else if (step > 0) {
            s = clamp64(s, 0, dim);
            e = clamp64(e, 0, dim);
            cnt = e > s ? (e - s - 1) / step + 1 : 0;
        } else {
            s = clamp64(s, 0, dim - 1);
            e = clamp64(e, -1, dim - 1);
            /* step may be INT64_MIN: divide by its magnitude in uint64 */
            cnt = s > e ? (int64_t)((uint64_t)(s - e - 1) / ((uint64_t)0 - (uint64_t)step)) + 1 : 0;
        }
        p->start[d] = cnt ? s : 0;
        p->step[d] = cnt > 1 ? step : 1;   /* a step beyond the range never advances */
        p->count[d] = cnt;
    }
    return 0;
}

int shape_slice(op_ctx_t *c)
{
    if (c->n_in < 1 || !c->in[0]) return op_fail(c, "missing input 0");
    size_t es;
    if (tn_elem_size(c, c->in[0], &es)) return -1;
    slice_plan_t p;
    int r = slice_plan(c, &p);
    if (r) return r;
    return op_set_out(c, 0, c->in[0]->dtype, c->in[0]->ndim, p.count);
}

/* Where a Slice's output lies in its input as one contiguous run (its
 * elements in order): the run's first byte in x, or -1 where it does not
 * (a step, a partial axis inside another, arguments not constants). From
 * the input's shape alone: in[0] may have no data. The memory plan makes
 * such an output a view of the input's bytes (graph_plan_memory), and
 * run_slice then finds it in place and copies nothing. */
int64_t slice_run_at(const node_t *n, const tensor_t *const *in, int n_in)
{
    perr_t e = {0};
    op_ctx_t c = {.node = n, .n_in = n_in, .in = in, .err = &e};
    slice_plan_t p;
    if (n_in < 1 || !in[0] || slice_plan(&c, &p)) return -1;
    const tensor_t *x = in[0];
    int64_t st[TENSOR_MAX_DIMS], off = 0;
    strides_of(x->dims, x->ndim, st);
    int d = x->ndim - 1;
    while (d >= 0 && p.start[d] == 0 && p.step[d] == 1 && p.count[d] == x->dims[d]) d--;
    if (d >= 0 && p.step[d] != 1) return -1;
    for (int a = 0; a < d; a++)
        if (p.count[a] != 1) return -1;
    for (int a = 0; a < x->ndim; a++) off += p.start[a] * st[a];
    return off * (int64_t)dtype_size(x->dtype);
}

/* A large slice of contiguous runs (unit step along its last axis) is
 * copied by the pool in pieces of SLICE_PIECE output bytes; piece t finds
 * the source of each run it touches from the run's index. */
#define SLICE_PIECE ((int64_t)256 << 10)

typedef struct slice_job {
    const char *src;
    char *dst;
    int last;                 /* runs are indexed by the axes before `last` */
    const int64_t *count, *jump;
    int64_t off, run, total;  /* source offset of run 0 (bytes); bytes per run; in all */
} slice_job_t;

static void slice_piece(void *ctx, int64_t t)
{
    const slice_job_t *j = ctx;
    int64_t x = t * SLICE_PIECE, end = x + SLICE_PIECE < j->total ? x + SLICE_PIECE : j->total;
    while (x < end) {
        int64_t r = x / j->run, in = x % j->run, src = j->off;
        /* the run's source: its index in mixed radix over count[0..last) */
        for (int d = j->last - 1; d >= 0; d--) {
            src += (r % j->count[d]) * j->jump[d];
            r /= j->count[d];
        }
        int64_t len = j->run - in < end - x ? j->run - in : end - x;
        memcpy(j->dst + x, j->src + src + in, (size_t)len);
        x += len;
    }
}

int run_slice(op_ctx_t *c)
{
    slice_plan_t p;
    int r = slice_plan(c, &p);
    if (r) return r < 0 ? -1 : op_fail(c, "slice arguments unknown at run time");
    const tensor_t *x = c->in[0];
    const int R = x->ndim;
    size_t es = dtype_size(x->dtype);
    int64_t total = prod_dims(p.count, 0, R);
    if (total == 0) return 0;
    if (R == 0) return tn_copy_input0(c);
    int64_t xst[TENSOR_MAX_DIMS], jump[TENSOR_MAX_DIMS], idx[TENSOR_MAX_DIMS] = {0}, off = 0;
    strides_of(x->dims, R, xst);
    for (int d = 0; d < R; d++) {
        jump[d] = p.step[d] * xst[d];   /* |step| <= dim here, so this fits */
        off += p.start[d] * xst[d];
    }
    /* the axes after `last` are taken whole: with a unit step on `last` too,
     * each row is one contiguous run (a slice of 6400 of 8400 rows of 8 x 32
     * is one copy, not 51,200) */
    int last = R - 1;
    while (last > 0 && p.start[last] == 0 && p.step[last] == 1 && p.count[last] == x->dims[last]) last--;
    if (p.step[last] != 1) last = R - 1;
    const int64_t L = prod_dims(p.count, last, R), rows = total / L, js = last == R - 1 ? p.step[R - 1] : 1;
    char *dst = c->out[0]->data;
    const char *src = x->data;
    if (rows == 1 && js == 1 && dst == src + off * (int64_t)es) return 0;   /* a view (slice_run_at) */
    if (js == 1 && total * (int64_t)es >= 2 * SLICE_PIECE && L * (int64_t)es >= 4096) {
        int64_t jb[TENSOR_MAX_DIMS];
        for (int d = 0; d < last; d++) jb[d] = jump[d] * (int64_t)es;
        slice_job_t j = {src, dst, last, p.count, jb, off * (int64_t)es, L * (int64_t)es, total * (int64_t)es};
        pool_for((j.total + SLICE_PIECE - 1) / SLICE_PIECE, slice_piece, &j);
        return 0;
    }
    for (int64_t r0 = 0; r0 < rows; r0++) {
        if (js == 1) {
            memcpy(dst, src + off * (int64_t)es, (size_t)L * es);
        } else {
            DISPATCH_BYSIZE(es, {
                const T *s = (const T *)src + off;
                T *d = (T *)dst;
                for (int64_t j = 0; j < L; j++) d[j] = s[j * js];
            }, (void)0);
        }
        dst += (size_t)L * es;
        for (int d = last - 1; d >= 0; d--) {
            if (++idx[d] < p.count[d]) { off += jump[d]; break; }
            off -= jump[d] * (p.count[d] - 1);
            idx[d] = 0;
        }
    }
    return 0;
}

/* ---- Compress ---- */

/* Axis (or -1 = flattened) and the number of selected slices. */
static int compress_plan(op_ctx_t *c, int *axis, int64_t *n_sel)
{
    if (op_check_inputs(c, 2, 2)) return -1;
    const tensor_t *x = c->in[0], *cond = c->in[1];
    if (cond->dtype != DT_BOOL) return op_fail(c, "condition must be bool, got %s", dtype_name(cond->dtype));
    if (cond->ndim != 1) return op_fail(c, "condition must be 1-D, got rank %d", cond->ndim);
    *axis = -1;
    if (node_attr(c->node, "axis")) {
        *axis = op_axis(c, attr_int(c->node, "axis", 0), x->ndim);
        if (*axis < 0) return -1;
    }
    if (!cond->data) return OP_DYNAMIC;
    int64_t len = *axis < 0 ? tensor_numel(x) : x->dims[*axis];
    const uint8_t *m = cond->data;
    *n_sel = 0;
    for (int64_t j = 0; j < cond->dims[0]; j++) {
        if (!m[j]) continue;
        if (j >= len) return op_fail(c, "condition selects index %lld beyond the axis of %lld", (long long)j, (long long)len);
        ++*n_sel;
    }
    return 0;
}

int shape_compress(op_ctx_t *c)
{
    int axis;
    int64_t n;
    int r = compress_plan(c, &axis, &n);
    if (r) return r;
    size_t es;
    if (tn_elem_size(c, c->in[0], &es)) return -1;
    const tensor_t *x = c->in[0];
    if (axis < 0) return op_set_out(c, 0, x->dtype, 1, &n);
    int64_t d[TENSOR_MAX_DIMS];
    memcpy(d, x->dims, sizeof(int64_t) * x->ndim);
    d[axis] = n;
    return op_set_out(c, 0, x->dtype, x->ndim, d);
}

int run_compress(op_ctx_t *c)
{
    int axis;
    int64_t n;
    int r = compress_plan(c, &axis, &n);
    if (r) return r < 0 ? -1 : op_fail(c, "condition unknown at run time");
    const tensor_t *x = c->in[0], *cond = c->in[1];
    size_t es = dtype_size(x->dtype);
    int64_t outer = 1, dim = tensor_numel(x), inner = 1;
    if (axis >= 0) {
        outer = prod_dims(x->dims, 0, axis);
        dim = x->dims[axis];
        inner = prod_dims(x->dims, axis + 1, x->ndim);
    }
    int64_t len = cond->dims[0] < dim ? cond->dims[0] : dim;
    const uint8_t *m = cond->data;
    size_t blk = (size_t)inner * es;
    char *dst = c->out[0]->data;
    const char *src = x->data;
    if (!blk) return 0;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < len; j++)
            if (m[j]) {
                memcpy(dst, src + (o * dim + j) * (int64_t)blk, blk);
                dst += blk;
            }
    return 0;
}

/* ---- ReverseSequence ---- */

static int revseq_axes(op_ctx_t *c, int *tax, int *bax)
{
    if (op_check_inputs(c, 2, 2)) return -1;
    const tensor_t *x = c->in[0], *lens = c->in[1];
    if (x->ndim < 2) return op_fail(c, "input must have rank >= 2, got %d", x->ndim);
    int64_t t = attr_int(c->node, "time_axis", 0), b = attr_int(c->node, "batch_axis", 1);
    if (!((t == 0 && b == 1) || (t == 1 && b == 0)))
        return op_fail(c, "time_axis %lld and batch_axis %lld must be 0 and 1 in some order", (long long)t, (long long)b);
    *tax = (int)t;
    *bax = (int)b;
    if (tn_check_index_type(c, lens, "sequence_lens")) return -1;
    if (lens->ndim != 1 || lens->dims[0] != x->dims[*bax])
        return op_fail(c, "sequence_lens must be 1-D of the batch size %lld", (long long)x->dims[*bax]);
    if (lens->data)
        for (int64_t i = 0; i < lens->dims[0]; i++) {
            int64_t v = idx_get(lens, i);
            if (v < 0 || v > x->dims[*tax])
                return op_fail(c, "sequence_lens[%lld] = %lld is outside [0, %lld]", (long long)i,
                               (long long)v, (long long)x->dims[*tax]);
        }
    return 0;
}

int shape_reversesequence(op_ctx_t *c)
{
    int t, b;
    if (revseq_axes(c, &t, &b)) return -1;
    size_t es;
    if (tn_elem_size(c, c->in[0], &es)) return -1;
    return shape_same_as_input0(c);
}

int run_reversesequence(op_ctx_t *c)
{
    int tax, bax;
    if (revseq_axes(c, &tax, &bax)) return -1;
    const tensor_t *x = c->in[0], *lens = c->in[1];
    size_t es = dtype_size(x->dtype);
    int64_t inner = prod_dims(x->dims, 2, x->ndim);
    int64_t T_ = x->dims[tax], B = x->dims[bax];
    /* element (b, t) starts at b*bs + t*ts, in blocks of inner elements */
    int64_t ts = (tax == 0 ? B : 1) * inner, bs = (bax == 0 ? T_ : 1) * inner;
    size_t blk = (size_t)inner * es;
    if (!blk) return 0;
    for (int64_t b = 0; b < B; b++) {
        int64_t len = idx_get(lens, b);
        for (int64_t t = 0; t < T_; t++) {
            int64_t from = t < len ? len - 1 - t : t;
            memcpy((char *)c->out[0]->data + (b * bs + t * ts) * (int64_t)es,
                   (const char *)x->data + (b * bs + from * ts) * (int64_t)es, blk);
        }
    }
    return 0;
}
