/* concat.c — ops that join, split or replicate blocks of a tensor: Concat,
 * Split, Expand and Tile. All copy whole contiguous blocks (memcpy) and
 * walk the outer axes once; a large Concat is copied by the thread pool. */
#include <stdlib.h>
#include <string.h>
#include "ops/tensor/tensor_impl.h"
#include "util/pool.h"

/* ---- Concat ---- */

static int concat_axis(op_ctx_t *c, int *axis)
{
    if (c->n_in < 1) return op_fail(c, "needs at least one input");
    for (int i = 0; i < c->n_in; i++)
        if (!c->in[i]) return op_fail(c, "input %d is missing", i);
    const tensor_t *x = c->in[0];
    if (x->ndim == 0) return op_fail(c, "cannot concatenate scalars");
    const Onnx__AttributeProto *a = node_attr(c->node, "axis");
    if (!a && c->node->opset >= 4) return op_fail(c, "attribute 'axis' is required");
    *axis = op_axis(c, a ? attr_int(c->node, "axis", 1) : 1, x->ndim);
    return *axis < 0 ? -1 : 0;
}

int shape_concat(op_ctx_t *c)
{
    int axis;
    if (concat_axis(c, &axis)) return -1;
    const tensor_t *x = c->in[0];
    size_t es;
    if (tn_elem_size(c, x, &es)) return -1;
    int64_t d[TENSOR_MAX_DIMS];
    memcpy(d, x->dims, sizeof(int64_t) * x->ndim);
    d[axis] = 0;
    for (int i = 0; i < c->n_in; i++) {
        const tensor_t *t = c->in[i];
        if (t->dtype != x->dtype)
            return op_fail(c, "input %d is %s, input 0 is %s", i, dtype_name(t->dtype), dtype_name(x->dtype));
        if (t->ndim != x->ndim) return op_fail(c, "input %d has rank %d, input 0 rank %d", i, t->ndim, x->ndim);
        for (int k = 0; k < x->ndim; k++)
            if (k != axis && t->dims[k] != x->dims[k]) {
                char a[160], b[160];
                return op_fail(c, "input %d shape %s does not match input 0 shape %s off axis %d", i,
                               shape_str(t->ndim, t->dims, a, sizeof a),
                               shape_str(x->ndim, x->dims, b, sizeof b), axis);
            }
        d[axis] += t->dims[axis];
    }
    return op_set_out(c, 0, x->dtype, x->ndim, d);
}

/* The output is outer rows of n_in chunks (input i's chunk[i] bytes of
 * that row). Large outputs are copied by the pool in pieces of
 * CONCAT_PIECE output bytes (a piece may span chunks and rows); the bytes
 * are the same whoever copies them. */
#define CONCAT_PIECE ((int64_t)256 << 10)

typedef struct concat_job {
    const op_ctx_t *c;
    const size_t *chunk;
    int64_t row, total;   /* bytes per output row; in all */
} concat_job_t;

static void concat_piece(void *ctx, int64_t t)
{
    const concat_job_t *j = ctx;
    int64_t x = t * CONCAT_PIECE, end = x + CONCAT_PIECE < j->total ? x + CONCAT_PIECE : j->total;
    char *dst = j->c->out[0]->data;
    while (x < end) {
        int64_t o = x / j->row, off = x % j->row;
        int i = 0;
        while (off >= (int64_t)j->chunk[i]) off -= (int64_t)j->chunk[i++];
        int64_t len = (int64_t)j->chunk[i] - off;
        if (len > end - x) len = end - x;
        const char *src = (const char *)j->c->in[i]->data + o * (int64_t)j->chunk[i] + off;
        if (src != dst + x) memmove(dst + x, src, (size_t)len);   /* else made in place (graph_plan_memory) */
        x += len;
    }
}

/* One input's chunk of an output row. Rows of a few bytes (a Concat
 * over one of the last axes: MSDeformAttn stacks levels four floats at a
 * time) are copied inline, not through a call to memcpy each. */
static inline void copy_chunk(char *dst, const char *src, size_t n)
{
    switch (n) {
    case 4: memcpy(dst, src, 4); break;
    case 8: memcpy(dst, src, 8); break;
    case 16: memcpy(dst, src, 16); break;
    case 32: memcpy(dst, src, 32); break;
    default: memmove(dst, src, n); break;
    }
}

/* Output rows [o0, o1), each input's chunk in turn. */
static void concat_rows(const concat_job_t *j, int64_t o0, int64_t o1)
{
    const op_ctx_t *c = j->c;
    char *dst = (char *)c->out[0]->data + o0 * j->row;
    for (int64_t o = o0; o < o1; o++)
        for (int i = 0; i < c->n_in; i++) {
            if (!j->chunk[i]) continue;
            const char *src = (const char *)c->in[i]->data + o * (int64_t)j->chunk[i];
            if (src != dst) copy_chunk(dst, src, j->chunk[i]);
            dst += j->chunk[i];
        }
}

/* Task t: the rows of output piece t (short rows: whole rows per task). */
static void concat_row_piece(void *ctx, int64_t t)
{
    const concat_job_t *j = ctx;
    int64_t per = CONCAT_PIECE / j->row, outer = j->total / j->row;
    concat_rows(j, t * per, (t + 1) * per < outer ? (t + 1) * per : outer);
}

/* Whether every input already lies where the output holds it (one block
 * each: the memory plan made them there). */
static int made_in_place(const op_ctx_t *c, const size_t *chunk)
{
    const char *at = c->out[0]->data;
    for (int i = 0; i < c->n_in; at += chunk[i], i++)
        if (chunk[i] && (const char *)c->in[i]->data != at) return 0;
    return 1;
}

int run_concat(op_ctx_t *c)
{
    int axis;
    if (concat_axis(c, &axis)) return -1;
    const tensor_t *x = c->in[0];
    size_t es = dtype_size(x->dtype);
    int64_t outer = prod_dims(x->dims, 0, axis), inner = prod_dims(x->dims, axis + 1, x->ndim);
    size_t *chunk = xcalloc((size_t)c->n_in, sizeof *chunk);
    int64_t row = 0;
    for (int i = 0; i < c->n_in; i++) row += (int64_t)(chunk[i] = (size_t)(c->in[i]->dims[axis] * inner) * es);
    concat_job_t j = {c, chunk, row, row * outer};
    if (outer == 1 && made_in_place(c, chunk)) row = 0;
    if (row > 0 && j.total >= 2 * CONCAT_PIECE && row >= 4096) {   /* long rows: pieces may split them */
        pool_for((j.total + CONCAT_PIECE - 1) / CONCAT_PIECE, concat_piece, &j);
    } else if (row > 0 && j.total >= 2 * CONCAT_PIECE) {   /* short rows: whole rows per piece */
        int64_t per = CONCAT_PIECE / row;
        pool_for((outer + per - 1) / per, concat_row_piece, &j);
    } else if (row > 0) {
        concat_rows(&j, 0, outer);
    }
    free(chunk);
    return 0;
}

/* ---- Split ---- */

/* Fills sizes[0..n_out-1] along the axis: the 'split' attribute (< 13) or
 * input (>= 13), else num_outputs (18), else equal parts. */
static int split_sizes(op_ctx_t *c, int axis, int64_t *sizes)
{
    int64_t dim = c->in[0]->dims[axis];
    int n = c->n_out;
    int given = -1;
    if (c->node->opset < 13) {
        const int64_t *v;
        given = attr_ints(c->node, "split", &v);
        for (int i = 0; i < given && i < n; i++) sizes[i] = v[i];
    } else if (c->n_in > 1 && c->in[1]) {
        const tensor_t *s = c->in[1];
        if (!s->data) return OP_DYNAMIC;
        if (tn_check_index_type(c, s, "split")) return -1;
        if (s->ndim != 1) return op_fail(c, "split must be 1-D");
        given = (int)(s->dims[0] < INT32_MAX ? s->dims[0] : INT32_MAX);
        for (int i = 0; i < given && i < n; i++) sizes[i] = idx_get(s, i);
    }
    if (given >= 0) {
        if (given != n) return op_fail(c, "split has %d entries for %d outputs", given, n);
        int64_t sum = 0;
        for (int i = 0; i < n; i++) {
            if (sizes[i] < 0 || sizes[i] > dim) return op_fail(c, "split[%d] = %lld is invalid", i, (long long)sizes[i]);
            sum += sizes[i];
        }
        if (sum != dim) return op_fail(c, "split sums to %lld, axis %d has %lld", (long long)sum, axis, (long long)dim);
        return 0;
    }
    int64_t num = c->node->opset >= 18 ? attr_int(c->node, "num_outputs", 0) : 0;
    if (num) {
        if (num != n) return op_fail(c, "num_outputs %lld but %d outputs", (long long)num, n);
        int64_t chunk = (dim + n - 1) / n, rest = dim - chunk * (n - 1);
        if (rest < 0) return op_fail(c, "axis of %lld cannot split into %d parts", (long long)dim, n);
        for (int i = 0; i < n; i++) sizes[i] = i < n - 1 ? chunk : rest;
        return 0;
    }
    if (dim % n) return op_fail(c, "axis of %lld does not split into %d equal parts", (long long)dim, n);
    for (int i = 0; i < n; i++) sizes[i] = dim / n;
    return 0;
}

static int split_prepare(op_ctx_t *c, int *axis, int64_t **sizes)
{
    if (op_check_inputs(c, 1, 2)) return -1;
    if (c->n_out < 1) return op_fail(c, "has no outputs");
    if (c->in[0]->ndim == 0) return op_fail(c, "cannot split a scalar");
    *axis = op_axis(c, attr_int(c->node, "axis", 0), c->in[0]->ndim);
    if (*axis < 0) return -1;
    *sizes = xmalloc(sizeof(int64_t) * c->n_out);
    int r = split_sizes(c, *axis, *sizes);
    if (r) { free(*sizes); *sizes = NULL; }
    return r;
}

int shape_split(op_ctx_t *c)
{
    int axis;
    int64_t *sizes;
    size_t es;
    int r = split_prepare(c, &axis, &sizes);
    if (r) return r;
    if (tn_elem_size(c, c->in[0], &es)) { free(sizes); return -1; }
    const tensor_t *x = c->in[0];
    int64_t d[TENSOR_MAX_DIMS];
    memcpy(d, x->dims, sizeof(int64_t) * x->ndim);
    for (int i = 0; i < c->n_out && !r; i++) {
        d[axis] = sizes[i];
        r = op_set_out(c, i, x->dtype, x->ndim, d);
    }
    free(sizes);
    return r;
}

int run_split(op_ctx_t *c)
{
    int axis;
    int64_t *sizes;
    int r = split_prepare(c, &axis, &sizes);
    if (r) return r < 0 ? -1 : op_fail(c, "split sizes unknown at run time");
    const tensor_t *x = c->in[0];
    size_t es = dtype_size(x->dtype);
    int64_t outer = prod_dims(x->dims, 0, axis), inner = prod_dims(x->dims, axis + 1, x->ndim);
    const char *src = x->data;
    for (int64_t o = 0; o < outer; o++)
        for (int i = 0; i < c->n_out; i++) {
            size_t chunk = (size_t)(sizes[i] * inner) * es;
            if (!chunk) continue;
            if (c->out[i]) memcpy((char *)c->out[i]->data + o * chunk, src, chunk);
            src += chunk;
        }
    free(sizes);
    return 0;
}

/* ---- Expand ---- */

int shape_expand(op_ctx_t *c)
{
    if (op_check_inputs(c, 2, 2)) return -1;
    const tensor_t *x = c->in[0], *s = c->in[1];
    size_t es;
    if (tn_elem_size(c, x, &es)) return -1;
    if (!s->data) return OP_DYNAMIC;
    if (s->ndim != 1) return op_fail(c, "shape must be 1-D");
    int64_t sh[TENSOR_MAX_DIMS], d[TENSOR_MAX_DIMS];
    int n = op_read_ints(c, s, sh, TENSOR_MAX_DIMS);
    if (n < 0) return -1;
    int rank = n > x->ndim ? n : x->ndim;
    for (int k = 0; k < rank; k++) {
        int64_t a = k - (rank - x->ndim) >= 0 ? x->dims[k - (rank - x->ndim)] : 1;
        int64_t b = k - (rank - n) >= 0 ? sh[k - (rank - n)] : 1;
        if (b < 0) return op_fail(c, "shape has negative dimension %lld", (long long)b);
        if (a == b || b == 1) d[k] = a;
        else if (a == 1) d[k] = b;
        else return op_fail(c, "input dimension %lld does not broadcast to %lld", (long long)a, (long long)b);
    }
    return op_set_out(c, 0, x->dtype, rank, d);
}

int run_expand(op_ctx_t *c)
{
    const tensor_t *x = c->in[0];
    tensor_t *y = c->out[0];
    size_t es = dtype_size(x->dtype);
    int R = y->ndim;
    int64_t total = tensor_numel(y);
    if (total == 0) return 0;
    if (tensor_numel(x) == total) return tn_copy_input0(c);
    if (R == 0) return tn_copy_input0(c);
    /* input strides aligned to the output's axes, 0 where broadcast */
    int64_t xd[TENSOR_MAX_DIMS], xst[TENSOR_MAX_DIMS], st[TENSOR_MAX_DIMS];
    for (int k = 0; k < R; k++) xd[k] = k - (R - x->ndim) >= 0 ? x->dims[k - (R - x->ndim)] : 1;
    strides_of(xd, R, xst);
    for (int k = 0; k < R; k++) st[k] = xd[k] == y->dims[k] ? xst[k] : 0;
    int64_t L = y->dims[R - 1], rows = total / L, idx[TENSOR_MAX_DIMS] = {0}, off = 0;
    char *dst = y->data;
    const char *src = x->data;
    for (int64_t r = 0; r < rows; r++) {
        if (st[R - 1]) memcpy(dst, src + off * (int64_t)es, (size_t)L * es);
        else tn_fill(dst, src + off * (int64_t)es, es, L);
        dst += (size_t)L * es;
        for (int d = R - 2; d >= 0; d--) {
            if (++idx[d] < y->dims[d]) { off += st[d]; break; }
            off -= st[d] * (y->dims[d] - 1);
            idx[d] = 0;
        }
    }
    return 0;
}

/* ---- Tile ---- */

static int tile_repeats(op_ctx_t *c, int64_t *rep)
{
    const tensor_t *x = c->in[0], *r = c->in[1];
    if (!r->data) return OP_DYNAMIC;
    if (r->ndim != 1) return op_fail(c, "repeats must be 1-D");
    if (r->dims[0] != x->ndim)
        return op_fail(c, "repeats has %lld entries for a rank-%d input", (long long)r->dims[0], x->ndim);
    if (op_read_ints(c, r, rep, TENSOR_MAX_DIMS) < 0) return -1;
    for (int k = 0; k < x->ndim; k++)
        if (rep[k] < 0) return op_fail(c, "repeats[%d] = %lld is negative", k, (long long)rep[k]);
    return 0;
}

int shape_tile(op_ctx_t *c)
{
    if (op_check_inputs(c, 2, 2)) return -1;
    const tensor_t *x = c->in[0];
    size_t es;
    if (tn_elem_size(c, x, &es)) return -1;
    int64_t rep[TENSOR_MAX_DIMS], d[TENSOR_MAX_DIMS];
    int r = tile_repeats(c, rep);
    if (r) return r;
    for (int k = 0; k < x->ndim; k++) {
        if (rep[k] && x->dims[k] > TENSOR_MAX_BYTES / rep[k]) return op_fail(c, "output is absurdly large");
        d[k] = x->dims[k] * rep[k];
    }
    return op_set_out(c, 0, x->dtype, x->ndim, d);
}

int run_tile(op_ctx_t *c)
{
    const tensor_t *x = c->in[0];
    tensor_t *y = c->out[0];
    size_t es = dtype_size(x->dtype);
    int R = x->ndim;
    int64_t total = tensor_numel(y);
    if (total == 0) return 0;
    if (R == 0) return tn_copy_input0(c);
    int64_t xst[TENSOR_MAX_DIMS], idx[TENSOR_MAX_DIMS] = {0};
    strides_of(x->dims, R, xst);
    size_t in_row = (size_t)x->dims[R - 1] * es;
    int64_t reps = y->dims[R - 1] / x->dims[R - 1], rows = total / y->dims[R - 1];
    char *dst = y->data;
    for (int64_t r = 0; r < rows; r++) {
        /* output row r reads input row (idx mod input dims) */
        int64_t off = 0;
        for (int d = 0; d < R - 1; d++) off += (idx[d] % x->dims[d]) * xst[d];
        const char *src = (const char *)x->data + off * (int64_t)es;
        for (int64_t k = 0; k < reps; k++, dst += in_row) memcpy(dst, src, in_row);
        odo_next(idx, y->dims, R - 1);
    }
    return 0;
}
