/* toposort.c — puts a graph's nodes in an order where every node follows
 * the nodes producing what it reads. ONNX requires it, but ONNX Runtime
 * sorts what it loads, so exported models exist that are not sorted (the
 * float16 converter of onnxconverter-common appends its input Casts after
 * their readers). Kahn's algorithm, taking among the ready nodes always the
 * one earliest in the file: a graph already sorted keeps its order exactly,
 * and any other comes out the same on every run. Linear apart from the
 * heap: O((nodes + edges) log nodes). */
#include <stdlib.h>
#include <string.h>
#include "graph/graph.h"

/* A min-heap of node indices (the ready set). */
typedef struct heap { int *a; int n; } heap_t;

static void heap_push(heap_t *h, int v)
{
    int i = h->n++;
    while (i > 0 && h->a[(i - 1) / 2] > v) {
        h->a[i] = h->a[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->a[i] = v;
}

static int heap_pop(heap_t *h)
{
    int top = h->a[0], last = h->a[--h->n], i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && h->a[c + 1] < h->a[c]) c++;
        if (h->a[c] >= last) break;
        h->a[i] = h->a[c];
        i = c;
    }
    if (h->n) h->a[i] = last;
    return top;
}

/* Values a node must wait for: activations (inputs and constants are
 * there from the start). */
static int waits_for(const graph_t *g, int v)
{
    return v >= 0 && g->vals[v].kind == VAL_ACTIVATION;
}

/* The first problem that makes a graph unsortable, as an error: a value
 * read that no node writes, a node writing an input or constant, or a
 * cycle (named by its earliest node). */
static int explain_unsortable(const graph_t *g, const char *emitted, const char *written, perr_t *e)
{
    for (int i = 0; i < g->n_nodes; i++) {
        const node_t *n = &g->nodes[i];
        for (int k = 0; k < n->n_in; k++)
            if (waits_for(g, n->in[k]) && !written[n->in[k]])
                return BAD(e, "%s: node '%s' (%s) reads '%s', which no node produces (a missing input)",
                           g->source, n->name, n->op_type, g->vals[n->in[k]].name);
    }
    for (int i = 0; i < g->n_nodes; i++)
        if (!emitted[i])
            return BAD(e, "%s: node '%s' (%s) is on a cycle: it depends on its own output", g->source,
                       g->nodes[i].name, g->nodes[i].op_type);
    return BAD(e, "%s: graph cannot be ordered", g->source);
}

static int check_writes(const graph_t *g, char *written, perr_t *e)
{
    for (int i = 0; i < g->n_nodes; i++) {
        const node_t *n = &g->nodes[i];
        for (int k = 0; k < n->n_out; k++) {
            if (n->out[k] < 0) continue;
            if (g->vals[n->out[k]].kind != VAL_ACTIVATION)
                return BAD(e, "%s: node '%s' writes '%s', which is an input or constant", g->source, n->name,
                           g->vals[n->out[k]].name);
            /* ONNX values are single-assignment (ONNX Runtime refuses a
             * second definition too): a second writer would leave readers
             * with whichever shape and type came last */
            if (written[n->out[k]])
                return BAD(e, "%s: node '%s' (%s) writes '%s', which an earlier node in the file also writes "
                           "(a value must have one producer)", g->source, n->name, n->op_type, g->vals[n->out[k]].name);
            written[n->out[k]] = 1;
        }
    }
    return 0;
}

/* Readers of each value as compressed lists: first[v]..first[v+1] in who. */
static void build_readers(const graph_t *g, int *first, int *who, int *pending)
{
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_in; k++)
            if (waits_for(g, g->nodes[i].in[k])) {
                first[g->nodes[i].in[k] + 1]++;
                pending[i]++;
            }
    for (int v = 0; v < g->n_vals; v++) first[v + 1] += first[v];
    int *fill = xcalloc(g->n_vals + 1, sizeof *fill);
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_in; k++) {
            int v = g->nodes[i].in[k];
            if (waits_for(g, v)) who[first[v] + fill[v]++] = i;
        }
    free(fill);
}

static int64_t count_reads(const graph_t *g)
{
    int64_t n = 0;
    for (int i = 0; i < g->n_nodes; i++) n += g->nodes[i].n_in;
    return n;
}

int graph_toposort(graph_t *g, perr_t *e)
{
    int nn = g->n_nodes, nv = g->n_vals;
    char *written = xcalloc(nv + 1, 1), *ready = xcalloc(nv + 1, 1), *emitted = xcalloc(nn + 1, 1);
    int *first = xcalloc(nv + 2, sizeof *first), *who = xmalloc((count_reads(g) + 1) * sizeof *who);
    int *pending = xcalloc(nn + 1, sizeof *pending), *order = xmalloc((nn + 1) * sizeof *order);
    heap_t h = {xmalloc((nn + 1) * sizeof *h.a), 0};
    int rc = check_writes(g, written, e), w = 0;
    if (!rc) {
        build_readers(g, first, who, pending);
        for (int i = 0; i < nn; i++)
            if (!pending[i]) heap_push(&h, i);
        while (h.n) {
            int i = heap_pop(&h);
            order[w++] = i;
            emitted[i] = 1;
            const node_t *n = &g->nodes[i];
            for (int k = 0; k < n->n_out; k++) {
                int v = n->out[k];
                if (v < 0 || ready[v]) continue;
                ready[v] = 1;
                for (int r = first[v]; r < first[v + 1]; r++)
                    if (--pending[who[r]] == 0) heap_push(&h, who[r]);
            }
        }
        if (w < nn) rc = explain_unsortable(g, emitted, written, e);
    }
    int moved = 0;
    if (!rc) {
        node_t *sorted = xmalloc((nn + 1) * sizeof *sorted);
        for (int i = 0; i < nn; i++) {
            sorted[i] = g->nodes[order[i]];
            moved += order[i] != i;
        }
        if (nn) memcpy(g->nodes, sorted, nn * sizeof *sorted);   /* an empty graph has no node array */
        free(sorted);
        g->resorted = moved;
    }
    free(written); free(ready); free(emitted); free(first); free(who); free(pending); free(order); free(h.a);
    return rc ? -1 : moved;
}
