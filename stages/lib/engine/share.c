/* share.c — partial reruns: a run whose inputs differ from an earlier
 * run's only in some of them, or whose engine computes some layers as the
 * earlier run's engine does, recomputes only the layers that differ.
 *
 * The validation matrix runs preprocessing variants that differ in an input
 * the graph reads at its very end (RT-DETR's orig_target_sizes scales the
 * boxes in 6 of its 1,933 nodes; letterbox and letterbox-naive make
 * byte-identical images), and precisions whose engines share layers (the
 * fp16 and mixed engines compute the whole backbone alike). Running such
 * sets in one process, a later run needs only the layers whose values
 * differ plus the values those layers read from the rest: the cut. A share
 * is planned from the keeping run's graph to the reusing run's graph for a
 * set of inputs that may vary: within one engine every layer the varying
 * inputs do not reach is common; across engines match.c decides which
 * layers are, from the engines' bytes. A run with ro->keep copies the cut
 * (and the reusing graph's outputs outside what it runs) as the values are
 * made, with the inputs that must not vary; a run with ro->reuse binds
 * those copies and runs the other layers only, after checking byte for
 * byte that its fixed inputs are the kept ones (otherwise it runs whole).
 * The executor is deterministic, so the outputs are the bytes a whole run
 * writes (tests/stage/infer_share.t, infer_xshare.t compare them). */
#include <stdlib.h>
#include <string.h>
#include "engine/exec.h"
#include "engine/match.h"
#include "engine/share.h"

struct exec_share {
    const graph_t *from;    /* the keeping run's graph */
    const graph_t *g;       /* the reusing run's graph (from itself within one engine) */
    unsigned char *vary;    /* per input of g (index into g->inputs): may differ */
    int *src;               /* per value of g: the value of from holding its bytes, or -1 */
    unsigned char *reach;   /* per node of g: runs in a reusing run */
    unsigned char *cut;     /* per value of g: made by a layer that does not run and read by one
                               that does, or a graph output made outside them: bound to a copy */
    unsigned char *want;    /* per value of from: copied by a keeping run (the cut's sources and
                               the fixed inputs) */
    tensor_t **kept;        /* per value of from: the copies */
    int n_reach;
    int kept_ok;            /* a keeping run completed and every wanted value could be copied */
};

/* Within one graph: the layers the varying inputs reach run, every other
 * value is its own. */
static void plan_within(exec_share_t *s)
{
    const graph_t *g = s->g;
    for (int v = 0; v < g->n_vals; v++) s->src[v] = g->vals[v].kind == VAL_CONST ? -1 : v;
    for (int k = 0; k < g->n_inputs; k++)
        if (s->vary[k]) s->src[g->inputs[k]] = -1;
    /* nodes run in order, each after the producers of what it reads
     * (implicit captures of control flow included: they are in in[]) */
    for (int i = 0; i < g->n_nodes; i++) {
        const node_t *n = &g->nodes[i];
        for (int k = 0; k < n->n_in && !s->reach[i]; k++)
            if (n->in[k] >= 0 && g->vals[n->in[k]].kind != VAL_CONST && s->src[n->in[k]] < 0) s->reach[i] = 1;
        for (int k = 0; s->reach[i] && k < n->n_out; k++)
            if (n->out[k] >= 0) s->src[n->out[k]] = -1;
    }
}

/* Across graphs: the layers match.c cannot match run. */
static void plan_across(exec_share_t *s)
{
    const graph_t *g = s->g;
    int *src = graph_match(s->from, g, s->vary, NULL);
    memcpy(s->src, src, (size_t)g->n_vals * sizeof *src);
    free(src);
    for (int i = 0; i < g->n_nodes; i++) {
        const node_t *n = &g->nodes[i];
        for (int k = 0; k < n->n_out; k++)
            if (n->out[k] >= 0 && s->src[n->out[k]] < 0) s->reach[i] = 1;
        if (n->n_out == 0) s->reach[i] = 1;
    }
}

static void mark_cut(exec_share_t *s, int v)
{
    if (v < 0 || s->g->vals[v].kind != VAL_ACTIVATION || s->src[v] < 0) return;
    s->cut[v] = 1;
    s->want[s->src[v]] = 1;
}

exec_share_t *exec_share_plan(const graph_t *from, const graph_t *g, const unsigned char *vary)
{
    exec_share_t *s = xcalloc(1, sizeof *s);
    s->from = from;
    s->g = g;
    s->vary = xcalloc((size_t)g->n_inputs + 1, 1);
    memcpy(s->vary, vary, (size_t)g->n_inputs);
    s->src = xcalloc((size_t)g->n_vals + 1, sizeof *s->src);
    s->reach = xcalloc((size_t)g->n_nodes + 1, 1);
    s->cut = xcalloc((size_t)g->n_vals + 1, 1);
    s->want = xcalloc((size_t)from->n_vals + 1, 1);
    s->kept = xcalloc((size_t)from->n_vals + 1, sizeof *s->kept);
    if (from == g) plan_within(s);
    else plan_across(s);
    for (int i = 0; i < g->n_nodes; i++) {
        const node_t *n = &g->nodes[i];
        s->n_reach += s->reach[i];
        for (int k = 0; s->reach[i] && k < n->n_in; k++) mark_cut(s, n->in[k]);
    }
    for (int k = 0; k < g->n_outputs; k++) mark_cut(s, g->outputs[k]);
    for (int k = 0; k < g->n_inputs; k++)
        if (s->src[g->inputs[k]] >= 0) s->want[s->src[g->inputs[k]]] = 1;
    return s;
}

void exec_share_also(exec_share_t *s, const exec_share_t *next)
{
    if (next->from != s->g) return;
    for (int v = 0; v < s->g->n_vals; v++)
        if (next->want[v]) mark_cut(s, v);
}

int exec_share_layers(const exec_share_t *s) { return s->n_reach; }

const unsigned char *exec_share_vary(const exec_share_t *s) { return s->vary; }

int exec_share_is(const exec_share_t *s, const graph_t *from, const graph_t *g, const unsigned char *vary)
{
    return s && s->from == from && s->g == g && !memcmp(s->vary, vary, (size_t)g->n_inputs);
}

void exec_share_free(exec_share_t *s)
{
    if (!s) return;
    for (int v = 0; v < s->from->n_vals; v++) tensor_free(s->kept[v]);
    free(s->kept);
    free(s->want);
    free(s->cut);
    free(s->reach);
    free(s->src);
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

void share_keep_begin(exec_share_t *const *keep, int n_keep, const graph_t *g, tensor_t *const *rt)
{
    /* valid only once the run completes with every wanted value copied
     * (share_keep_end); nothing of an earlier run stays */
    for (int i = 0; i < n_keep; i++) {
        exec_share_t *s = keep[i];
        s->kept_ok = s->from == g;
        for (int v = 0; v < s->from->n_vals; v++) {
            tensor_free(s->kept[v]);
            s->kept[v] = NULL;
        }
        /* the inputs, and in a reusing run the values bound from its share */
        for (int v = 0; v < g->n_vals && s->kept_ok; v++)
            if (s->want[v] && rt[v] && g->vals[v].kind != VAL_CONST) put_kept(s, v, rt[v]);
    }
}

void share_keep_value(exec_share_t *const *keep, int n_keep, int v, const tensor_t *t)
{
    /* kept_ok is 0 for a share planned from another graph (keep_begin): v
     * is no index of its */
    for (int i = 0; i < n_keep; i++)
        if (keep[i]->kept_ok && keep[i]->want[v]) put_kept(keep[i], v, t);
}

void share_keep_end(exec_share_t *const *keep, int n_keep, int ok)
{
    for (int i = 0; i < n_keep; i++) {
        exec_share_t *s = keep[i];
        s->kept_ok = s->kept_ok && ok;
        /* a reusing run does not make the values it did not run: the ones
         * wanted must have been bound (exec_share_also) */
        for (int v = 0; v < s->from->n_vals && s->kept_ok; v++)
            if (s->want[v] && !s->kept[v]) s->kept_ok = 0;
    }
}

int share_reuse_bind(const exec_share_t *s, const graph_t *g, tensor_t **rt)
{
    if (!s->kept_ok || s->g != g) return 0;
    for (int k = 0; k < g->n_inputs; k++) {
        int v = g->inputs[k], a = s->src[v];
        if (a >= 0 && !(s->kept[a] && rt[v] && tensor_identical(s->kept[a], rt[v]))) return 0;
    }
    for (int v = 0; v < g->n_vals; v++)
        if (s->cut[v] && !s->kept[s->src[v]]) return 0;
    for (int v = 0; v < g->n_vals; v++)
        if (s->cut[v]) rt[v] = s->kept[s->src[v]];
    return 1;
}

int share_runs(const exec_share_t *s, int node) { return s->reach[node]; }
