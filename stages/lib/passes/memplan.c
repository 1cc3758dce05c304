/* memplan.c — the memory plan: arena offsets by liveness, with views,
 * in-place elementwise layers, sliced views and Concat elision sharing
 * their inputs' bytes (the op table's view/inplace flags say which). */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include "passes/passes.h"
#include "ops/run.h"

/* Greedy best-fit over lifetimes, values taken largest first: a classic
 * offset planner (as in TFLite's arena planner). */
typedef struct interval { int v; int64_t size; int start, end; int64_t off; } interval_t;

static int cmp_size_desc(const void *a, const void *b)
{
    const interval_t *x = a, *y = b;
    if (x->size != y->size) return x->size < y->size ? 1 : -1;
    return x->v - y->v;
}

static int cmp_offset(const void *a, const void *b)
{
    const interval_t *x = *(interval_t *const *)a, *y = *(interval_t *const *)b;
    return x->off < y->off ? -1 : x->off > y->off;
}

static int plannable(const value_t *v)
{
    return v->kind == VAL_ACTIVATION && v->shape_known && v->producer >= 0;
}

static int lifetime_end(const value_t *v)
{
    return v->last_use < 0 ? v->producer : v->last_use;
}

static int same_layout(const value_t *a, const value_t *b)
{
    if (a->t.dtype != b->t.dtype || a->t.ndim != b->t.ndim) return 0;
    for (int d = 0; d < a->t.ndim; d++)
        if (a->t.dims[d] != b->t.dims[d]) return 0;
    return 1;
}

/* Output y of elementwise node i (op->inplace) may take the bytes of its
 * input k: planned, of y's shape and type, bytes no node after i reads
 * (end: per set of shared bytes, its last reader so far; a name that would
 * share them later is read after i), and no other input on those bytes
 * under another shape or on other bytes of the same buffer (a slice of the
 * same input elsewhere, which may overlap). */
static int inplace_ok(const graph_t *g, const node_t *n, int i, int k, const int *root, const int64_t *delta,
                      const int *end)
{
    int a = n->in[k], y = n->out[0];
    if (a < 0 || !plannable(&g->vals[a]) || end[root[a]] != i || !same_layout(&g->vals[a], &g->vals[y])) return 0;
    for (int kk = 0; kk < n->n_in; kk++) {
        int b = n->in[kk];
        if (kk != k && b >= 0 && plannable(&g->vals[b]) && root[b] == root[a] &&
            (delta[b] != delta[a] || !same_layout(&g->vals[b], &g->vals[y])))
            return 0;
    }
    return 1;
}

/* Where Slice node n's output lies in its input's bytes when it is one
 * contiguous run inside them (ops/tensor/slice.c; every argument a constant: one
 * known only at run time might place it elsewhere), the input is planned,
 * and the node changes no byte on the way (as a view: no cast at a
 * precision boundary, no activation, the input's storage type); the place
 * is 64 bytes aligned (as the engine file requires). -1 otherwise. */
static int64_t slice_view_at(const graph_t *g, const node_t *n)
{
    int x = n->in[0], y = n->out[0];
    if (x < 0 || !plannable(&g->vals[x]) || (n->round_inputs & 1) || n->act != ACT_NONE) return -1;
    if (g->nodes[g->vals[x].producer].storage != n->storage || g->vals[x].t.dtype != g->vals[y].t.dtype) return -1;
    if (n->n_in > MAX_NODE_IO) return -1;
    const tensor_t *in[MAX_NODE_IO];
    for (int k = 0; k < n->n_in; k++) {
        int v = n->in[k];
        if (k > 0 && v >= 0 && g->vals[v].kind != VAL_CONST) return -1;   /* known only at run time */
        in[k] = v < 0 ? NULL : &g->vals[v].t;
    }
    int64_t at = slice_run_at(n, in, n->n_in);
    if (at < 0 || at % 64 || at + (int64_t)tensor_nbytes(&g->vals[y].t) > (int64_t)tensor_nbytes(&g->vals[x].t)) return -1;
    return at;
}

/* Whether Pad node n pads nothing and changes no byte (pad_is_noop, every
 * argument a constant), so that its output may be a view of its input. */
static int pad_view_ok(const graph_t *g, const node_t *n)
{
    if (n->n_in > MAX_NODE_IO || n->n_in < 1 || n->in[0] < 0) return 0;
    const tensor_t *in[MAX_NODE_IO];
    for (int k = 0; k < n->n_in; k++) {
        int v = n->in[k];
        if (k > 0 && v >= 0 && g->vals[v].kind != VAL_CONST) return 0;   /* known only at run time */
        in[k] = v < 0 ? NULL : &g->vals[v].t;
    }
    return pad_is_noop(n, in, n->n_in);
}

/* Whether Concat node i's output y holds its inputs back to back: one
 * block of each per output (every axis before the Concat's is 1). */
static int concat_blocks(const graph_t *g, const node_t *n, const value_t *y)
{
    int64_t axis = attr_int(n, "axis", 1);
    if (axis < 0) axis += y->t.ndim;
    if (axis < 0 || axis >= y->t.ndim) return 0;
    for (int d = 0; d < axis; d++)
        if (y->t.dims[d] != 1) return 0;
    return 1;
}

/* Concat node i's inputs made in its output's bytes, each where the Concat
 * would copy it, so that its kernel copies nothing (TensorRT's concatenation
 * elision). An input qualifies when its bytes are its own (it shares no
 * other value's: those may be read under their own names meanwhile), its
 * producer writes it in the arena (no control-flow node) and rounds to the
 * Concat's storage type (rounding the output again changes none of its
 * bytes), and its place is 64 bytes aligned (as the engine file requires);
 * an input given twice is made at its first place (the Concat copies it to
 * the second). The Concat rounds no input
 * at a precision boundary: its output bytes are then its inputs' bytes, and
 * the Concat's kernel finds each input in place (ops/tensor/concat.c skips it). A
 * value read through a view of it moves with it. */
static void concat_in_place(const graph_t *g, int i, int *root, int64_t *delta, int *end)
{
    const node_t *n = &g->nodes[i];
    int y = n->out[0];
    if (root[y] != y || n->round_inputs || n->act != ACT_NONE || !concat_blocks(g, n, &g->vals[y])) return;
    int64_t at = 0;
    for (int k = 0; k < n->n_in; at += n->in[k] >= 0 ? (int64_t)tensor_nbytes(&g->vals[n->in[k]].t) : 0, k++) {
        int a = n->in[k];
        if (a < 0 || !plannable(&g->vals[a]) || root[a] != a || at % 64) continue;
        const node_t *p = &g->nodes[g->vals[a].producer];
        if (!p->op || p->op->control || p->storage != n->storage || g->vals[a].t.dtype != g->vals[y].t.dtype) continue;
        for (int v = 0; v < g->n_vals; v++)
            if (v != a && root[v] == a) {
                root[v] = y;
                delta[v] += at;
            }
        root[a] = y;
        delta[a] = at;
        if (end[a] > end[y]) end[y] = end[a];
    }
}

/* root[v]: the value whose bytes v uses, decided node by node.
 * - A view node's output (Reshape, Squeeze, ..., a Pad of zero pads) takes its input's bytes
 *   when both are planned, the sizes match, and the node changes no byte on
 *   the way: it casts no input at a precision boundary, applies no fused
 *   activation, and rounds to the same storage type as the input's producer
 *   (rounding again in place changes nothing). Its kernel then copies nothing.
 * - An elementwise node's output takes the bytes of an input that dies
 *   there (inplace_ok): no bytes of its own, and the lines it writes are
 *   the ones it has just read (a store that misses reads its line first).
 *   Rounding, activations and dumps are unaffected: a dump copies a value
 *   when it is made, and the input is read by no one afterwards.
 * - A Slice whose output is one run of its input's bytes takes them
 *   (slice_view_at), under the view's conditions; its kernel copies nothing.
 * - A Concat's inputs are made where the Concat's output will hold them
 *   (concat_in_place), so its kernel copies nothing. */
static void share_bytes(const graph_t *g, int *root, int64_t *delta)
{
    int *end = xcalloc(g->n_vals + 1, sizeof *end);
    for (int i = 0; i < g->n_vals; i++) {
        root[i] = i;
        delta[i] = 0;
        end[i] = lifetime_end(&g->vals[i]);
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const node_t *n = &g->nodes[i];
        if (!n->op || n->n_in < 1 || n->n_out < 1) continue;
        int y = n->out[0];
        if (y < 0 || !plannable(&g->vals[y])) continue;
        if (!n->domain[0] && !strcmp(n->op_type, "Concat")) {
            concat_in_place(g, i, root, delta, end);
            continue;
        }
        int from = -1;
        int64_t at = 0;
        if (n->op->view || (!n->domain[0] && !strcmp(n->op_type, "Pad") && pad_view_ok(g, n))) {
            int x = n->in[0];
            if (x < 0 || !plannable(&g->vals[x])) continue;
            if (tensor_nbytes(&g->vals[x].t) != tensor_nbytes(&g->vals[y].t)) continue;
            if ((n->round_inputs & 1) || n->act != ACT_NONE) continue;
            if (g->nodes[g->vals[x].producer].storage != n->storage) continue;
            from = x;
        } else if (n->op->inplace && n->n_out == 1) {
            for (int k = 0; k < n->n_in && from < 0; k++)
                if (inplace_ok(g, n, i, k, root, delta, end)) from = n->in[k];
        } else if (!n->domain[0] && !strcmp(n->op_type, "Slice")) {
            at = slice_view_at(g, n);
            if (at >= 0) from = n->in[0];
        }
        if (from < 0) continue;
        root[y] = root[from];
        delta[y] = delta[from] + at;
        if (end[y] > end[root[y]]) end[root[y]] = end[y];
    }
    free(end);
}

int64_t graph_plan_memory(graph_t *g)
{
    graph_index(g);
    interval_t *iv = xcalloc(g->n_vals + 1, sizeof *iv);
    int *root = xcalloc(g->n_vals + 1, sizeof *root), *slot = xcalloc(g->n_vals + 1, sizeof *slot);
    int64_t *delta = xcalloc(g->n_vals + 1, sizeof *delta);
    share_bytes(g, root, delta);
    int n = 0;
    for (int i = 0; i < g->n_vals; i++) {
        value_t *v = &g->vals[i];
        v->offset = -1;
        slot[i] = -1;
        if (!plannable(v) || root[i] != i) continue;
        slot[i] = n;
        iv[n].v = i;
        iv[n].size = ((int64_t)tensor_nbytes(&v->t) + 63) / 64 * 64;
        iv[n].start = v->producer;
        iv[n].end = lifetime_end(v);
        n++;
    }
    /* the bytes live from the first producer of any of their names (a
     * Concat's inputs come before it) to the last reader of any */
    for (int i = 0; i < g->n_vals; i++)
        if (plannable(&g->vals[i]) && root[i] != i) {
            /* share_bytes only roots a value at a planned one that is its own
             * root: one without a slot would be placed at offset -1 + delta */
            assert(slot[root[i]] >= 0);
            interval_t *r = &iv[slot[root[i]]];
            if (lifetime_end(&g->vals[i]) > r->end) r->end = lifetime_end(&g->vals[i]);
            if (g->vals[i].producer < r->start) r->start = g->vals[i].producer;
        }
    qsort(iv, n, sizeof *iv, cmp_size_desc);
    int64_t arena = 0;
    interval_t **live = xcalloc(n + 1, sizeof *live);
    for (int i = 0; i < n; i++) {
        /* the placed intervals alive at the same time, by offset; take the
         * first gap large enough (best-fit would also do; first-fit is simpler) */
        int m = 0;
        for (int k = 0; k < i; k++)
            if (!(iv[k].end < iv[i].start || iv[i].end < iv[k].start)) live[m++] = &iv[k];
        qsort(live, m, sizeof *live, cmp_offset);
        int64_t off = 0;
        for (int k = 0; k < m; k++) {
            if (live[k]->off >= off + iv[i].size) break;
            if (live[k]->off + live[k]->size > off) off = live[k]->off + live[k]->size;
        }
        iv[i].off = off;
        if (off + iv[i].size > arena) arena = off + iv[i].size;
        g->vals[iv[i].v].offset = off;
    }
    for (int i = 0; i < g->n_vals; i++)
        if (plannable(&g->vals[i]) && root[i] != i) g->vals[i].offset = g->vals[root[i]].offset + delta[i];
    free(live);
    free(delta);
    free(iv);
    free(root);
    free(slot);
    return arena;
}
