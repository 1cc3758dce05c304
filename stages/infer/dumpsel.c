/* dumpsel.c — which of a run's dumped tensors are written (infer
 * --dump-budget, --dump-like): a layerwise dump of every layer of a large
 * model at full resolution runs to gigabytes per sample, so the dump can be
 * held to a budget, and the other side of a comparison can dump exactly
 * the tensors the reference's dump holds (the layerwise walk pairs tensors
 * by name, so both sides must hold the same ones). Judged graph outputs are
 * always written: they are the run's result, not part of the dump. Outputs
 * the config does not judge (deep-supervision side outputs: 115 MB a
 * 1024x1024 sample on IS-Net) are kept for the sample the report shows
 * only, and in a dump are tensors like the others (issue 34). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dumpsel.h"
#include "io/tensorset.h"
#include "util/fsutil.h"

static int is_graph_output(const graph_t *g, const char *name)
{
    for (int i = 0; i < g->n_outputs; i++)
        if (!strcmp(g->vals[g->outputs[i]].name, name)) return 1;
    return 0;
}

/* A graph output the run keeps whatever the dump's budget. */
static int is_kept_output(const graph_t *g, const dump_limit_t *lim, const char *name)
{
    return is_graph_output(g, name) && (!lim->keep || name_sel_judged(lim->keep, name));
}

/* Evenly spread over the execution order (the order the tensors were dumped
 * in): every k-th tensor, k the smallest stride whose picks fit the budget,
 * so the layerwise walk still sees the whole depth of the network. */
static void pick_spread(const int64_t *size, int n, int64_t budget, char *keep)
{
    for (int k = 1; k <= n; k++) {
        int64_t sum = 0;
        for (int i = k - 1; i < n; i += k)
            if (size[i] <= budget) sum += size[i];
        if (sum > budget) continue;
        for (int i = 0; i < n; i++) keep[i] = (i % k == k - 1) && size[i] <= budget;
        return;
    }
    for (int i = 0; i < n; i++) keep[i] = 0;
}

/* Candidates in execution order: infer lists the dumped tensors in that
 * order and the graph outputs last, so an output not judged goes back to
 * its producer's place (a subgraph's tensor, not a value of g, keeps the
 * place of the one before it). Sorted by (producer, position): stable. */
typedef struct cand { int64_t key, pos; int idx; int64_t size; } cand_t;

static int cmp_cand(const void *a, const void *b)
{
    const cand_t *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static void order_by_producer(const graph_t *g, const tensor_set_t *s, int *idx, int64_t *size, int n)
{
    cand_t *c = xcalloc((size_t)n + 1, sizeof *c);
    int64_t last = -1;
    for (int k = 0; k < n; k++) {
        int v = graph_find(g, s->names[idx[k]]);
        if (v >= 0 && g->vals[v].producer >= 0) last = g->vals[v].producer;
        c[k] = (cand_t){.key = last, .pos = k, .idx = idx[k], .size = size[k]};
    }
    qsort(c, (size_t)n, sizeof *c, cmp_cand);
    for (int k = 0; k < n; k++) idx[k] = c[k].idx, size[k] = c[k].size;
    free(c);
}

static void drop(tensor_set_t *s, const char *keep_or_null)
{
    int w = 0;
    for (int i = 0; i < s->n; i++) {
        if (keep_or_null[i]) { s->names[w] = s->names[i]; s->ts[w++] = s->ts[i]; continue; }
        free(s->names[i]);
        tensor_free(s->ts[i]);
    }
    s->n = w;
}

/* The dump's share of the run's budget: what the engines (each the size of
 * this one) and the cells' outputs (the judged ones of every sample, the
 * others of the shown sample, each the size of this sample's) leave, over
 * the dumps; said on stderr when that leaves no room at all. */
static int64_t run_share(const graph_t *g, const tensor_set_t *s, const dump_limit_t *lim)
{
    const run_budget_t *r = &lim->run;
    int64_t judged = 0, shown = 0;
    for (int i = 0; i < s->n; i++) {
        if (!is_graph_output(g, s->names[i])) continue;
        int64_t b = (int64_t)tensor_nbytes(s->ts[i]);
        if (is_kept_output(g, lim, s->names[i])) judged += b;
        else shown += b;
    }
    int64_t engines = r->engines * r->engine_bytes, outputs = r->cells * (judged * r->samples + shown);
    int64_t left = r->bytes - engines - outputs, share = left > 0 ? left / (r->dumps > 0 ? r->dumps : 1) : 0;
    fprintf(stderr, "infer: the run's budget %.1f MB (dump.budget): engines %d x %.1f MB, outputs %d x %.1f MB, "
                    "the rest over %d dumps\n", r->bytes / 1e6, r->engines, r->engine_bytes / 1e6, r->cells,
            (judged * r->samples + shown) / 1e6, r->dumps);
    if (share <= judged)
        fprintf(stderr, "infer: the run's budget %.1f MB (dump.budget) cannot be kept: engines and outputs take %.1f MB; "
                        "the dumps hold the judged outputs only (raise dump.budget for a layerwise diagnosis)\n",
                r->bytes / 1e6, (engines + outputs) / 1e6);
    return share;
}

int dump_select(const graph_t *g, tensor_set_t *s, const dump_limit_t *lim_in, const char *where)
{
    dump_limit_t run_lim = *lim_in;
    const dump_limit_t *lim = &run_lim;
    if (lim->run.bytes >= 0) run_lim.budget = run_share(g, s, lim_in);
    if (lim->where) where = lim->where;
    if (lim->budget < 0 && !lim->like) return 0;
    int n = 0;
    int64_t *size = xcalloc((size_t)s->n + 1, sizeof *size), all = 0, kept = 0;
    int *idx = xcalloc((size_t)s->n + 1, sizeof *idx);
    char *keep = xcalloc((size_t)s->n + 1, 1), *pick = xcalloc((size_t)s->n + 1, 1);
    for (int i = 0; i < s->n; i++) {
        keep[i] = is_kept_output(g, lim, s->names[i]);
        if (keep[i]) continue;
        if (lim->like) {   /* what the reference's dump holds */
            char *f = tensor_file_name(s->names[i]), *p = path_join(lim->like, f);
            keep[i] = file_exists(p);
            free(f);
            free(p);
        } else {
            idx[n] = i;
            size[n++] = (int64_t)tensor_nbytes(s->ts[i]);
        }
    }
    if (!lim->like) {   /* the outputs written beside the dump count against its budget */
        int64_t outs = 0;
        for (int i = 0; i < s->n; i++)
            if (keep[i]) outs += (int64_t)tensor_nbytes(s->ts[i]);
        order_by_producer(g, s, idx, size, n);
        pick_spread(size, n, lim->budget > outs ? lim->budget - outs : 0, pick);
        for (int k = 0; k < n; k++) keep[idx[k]] = pick[k];
    }
    int dumped = 0, written = 0;
    for (int i = 0; i < s->n; i++) {
        if (is_kept_output(g, lim, s->names[i])) continue;
        dumped++;
        all += (int64_t)tensor_nbytes(s->ts[i]);
        if (keep[i]) { written++; kept += (int64_t)tensor_nbytes(s->ts[i]); }
    }
    drop(s, keep);
    if (lim->budget >= 0)
        fprintf(stderr, "infer: dump %s: %d of %d tensors, %.1f MB of %.1f MB (budget %.1f MB)\n", where, written, dumped,
                kept / 1e6, all / 1e6, lim->budget / 1e6);
    else
        fprintf(stderr, "infer: dump %s: %d of %d tensors, %.1f MB of %.1f MB (the ones %s holds)\n", where, written, dumped,
                kept / 1e6, all / 1e6, lim->like);
    free(size); free(idx); free(keep); free(pick);
    return 0;
}

void outputs_select(const graph_t *g, tensor_set_t *s, const dump_limit_t *lim)
{
    if (lim->shown || !lim->keep) return;
    char *keep = xcalloc((size_t)s->n + 1, 1);
    for (int i = 0; i < s->n; i++) keep[i] = is_kept_output(g, lim, s->names[i]);
    drop(s, keep);
    free(keep);
}
