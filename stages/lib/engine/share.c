/* share.c — partial reruns: a run whose inputs differ from the previous
 * run's only in some of them recomputes only the layers those inputs reach.
 *
 * The validation matrix runs preprocessing variants that differ in an input
 * the graph reads at its very end (RT-DETR's orig_target_sizes scales the
 * boxes in 6 of its 1,933 nodes; letterbox and letterbox-naive make
 * byte-identical images). Running both in one session, the second run
 * needs only the layers downstream of orig_target_sizes plus the values
 * those layers read from the rest: the cut. A share is planned for a set
 * of inputs that may vary; a run with ro->keep copies the cut (and the
 * graph outputs outside the recomputed part) as they are produced, with
 * the inputs that must not vary; a run with ro->reuse binds those copies
 * and runs the reached layers only, after checking byte for byte that its
 * fixed inputs are the kept ones (otherwise it runs whole). The executor is
 * deterministic, so the outputs are the bytes a whole run writes
 * (tests/stage/infer_share.t compares them). */
#include <stdlib.h>
#include <string.h>
#include "engine/exec.h"
#include "engine/share.h"

struct exec_share {
    const graph_t *g;
    unsigned char *vary;    /* per graph input (index into g->inputs): may differ */
    unsigned char *reach;   /* per node: reads a varying input, or a value such a node made */
    unsigned char *cut;     /* per value: made by an unreached node and read by a reached one,
                               or a graph output made outside the reached part */
    tensor_t **kept;        /* per value: the cut's copies, then the fixed inputs' (by value index) */
    int n_reach;
    int kept_ok;            /* a keeping run completed and every cut value could be copied */
};

exec_share_t *exec_share_plan(const graph_t *g, const unsigned char *vary)
{
    exec_share_t *s = xcalloc(1, sizeof *s);
    s->g = g;
    s->vary = xcalloc((size_t)g->n_inputs + 1, 1);
    memcpy(s->vary, vary, (size_t)g->n_inputs);
    s->reach = xcalloc((size_t)g->n_nodes + 1, 1);
    s->cut = xcalloc((size_t)g->n_vals + 1, 1);
    s->kept = xcalloc((size_t)g->n_vals + 1, sizeof *s->kept);
    unsigned char *dirty = xcalloc((size_t)g->n_vals + 1, 1);
    for (int k = 0; k < g->n_inputs; k++)
        if (vary[k]) dirty[g->inputs[k]] = 1;
    /* nodes run in order, each after the producers of what it reads
     * (implicit captures of control flow included: they are in in[]) */
    for (int i = 0; i < g->n_nodes; i++) {
        const node_t *n = &g->nodes[i];
        for (int k = 0; k < n->n_in && !s->reach[i]; k++)
            if (n->in[k] >= 0 && dirty[n->in[k]]) s->reach[i] = 1;
        if (!s->reach[i]) continue;
        s->n_reach++;
        for (int k = 0; k < n->n_out; k++)
            if (n->out[k] >= 0) dirty[n->out[k]] = 1;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const node_t *n = &g->nodes[i];
        for (int k = 0; s->reach[i] && k < n->n_in; k++) {
            int v = n->in[k];
            if (v >= 0 && !dirty[v] && g->vals[v].kind == VAL_ACTIVATION) s->cut[v] = 1;
        }
    }
    for (int k = 0; k < g->n_outputs; k++) {
        int v = g->outputs[k];
        if (!dirty[v] && g->vals[v].kind == VAL_ACTIVATION) s->cut[v] = 1;
    }
    free(dirty);
    return s;
}

int exec_share_layers(const exec_share_t *s) { return s->n_reach; }

const unsigned char *exec_share_vary(const exec_share_t *s) { return s->vary; }

void exec_share_free(exec_share_t *s)
{
    if (!s) return;
    for (int v = 0; v < s->g->n_vals; v++) tensor_free(s->kept[v]);
    free(s->kept);
    free(s->cut);
    free(s->reach);
    free(s->vary);
    free(s);
}

static void put_kept(exec_share_t *s, int v, const tensor_t *t)
{
    tensor_free(s->kept[v]);
    s->kept[v] = NULL;
    if (t->dtype == DT_SEQUENCE) { s->kept_ok = 0; return; }   /* not copied: a later run runs whole */
    s->kept[v] = tensor_clone(t);
}

void share_keep_begin(exec_share_t *s, tensor_t *const *rt)
{
    /* valid only once the run completes (share_keep_end) */
    s->kept_ok = 1;
    for (int k = 0; k < s->g->n_inputs; k++) {
        int v = s->g->inputs[k];
        if (!s->vary[k]) put_kept(s, v, rt[v]);
    }
}

void share_keep_value(exec_share_t *s, int v, const tensor_t *t)
{
    if (s->cut[v]) put_kept(s, v, t);
}

void share_keep_end(exec_share_t *s, int ok) { s->kept_ok = s->kept_ok && ok; }

int share_reuse_bind(const exec_share_t *s, tensor_t **rt)
{
    const graph_t *g = s->g;
    if (!s->kept_ok) return 0;
    for (int k = 0; k < g->n_inputs; k++) {
        int v = g->inputs[k];
        if (!s->vary[k] && !(s->kept[v] && rt[v] && tensor_identical(s->kept[v], rt[v]))) return 0;
    }
    for (int v = 0; v < g->n_vals; v++)
        if (s->cut[v]) {
            if (!s->kept[v]) return 0;
            rt[v] = s->kept[v];
        }
    return 1;
}

int share_runs(const exec_share_t *s, int node) { return s->reach[node]; }
