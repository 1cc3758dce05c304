/* dumpsel.c — which of a run's dumped tensors are written (infer
 * --dump-budget, --dump-like): a layerwise dump of every layer of a large
 * model at full resolution runs to gigabytes per sample, so the dump can be
 * held to a budget, and the other side of a comparison can dump exactly
 * the tensors the reference's dump holds (the layerwise walk pairs tensors
 * by name, so both sides must hold the same ones). Graph outputs are always
 * written: they are the run's result, not part of the dump. */
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

int dump_select(const graph_t *g, tensor_set_t *s, const dump_limit_t *lim, const char *where)
{
    if (lim->where) where = lim->where;
    if (lim->budget < 0 && !lim->like) return 0;
    int n = 0;
    int64_t *size = xcalloc((size_t)s->n + 1, sizeof *size), all = 0, kept = 0;
    int *idx = xcalloc((size_t)s->n + 1, sizeof *idx);
    char *keep = xcalloc((size_t)s->n + 1, 1), *pick = xcalloc((size_t)s->n + 1, 1);
    for (int i = 0; i < s->n; i++) {
        keep[i] = is_graph_output(g, s->names[i]);
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
        pick_spread(size, n, lim->budget > outs ? lim->budget - outs : 0, pick);
        for (int k = 0; k < n; k++) keep[idx[k]] = pick[k];
    }
    int dumped = 0, written = 0;
    for (int i = 0; i < s->n; i++) {
        if (is_graph_output(g, s->names[i])) continue;
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
