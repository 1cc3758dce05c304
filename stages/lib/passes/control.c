/* control.c — constant folding and shape inference through control flow
 * (If, Loop, Scan). Each subgraph is folded like a graph of its own, after
 * the outer values it captures lend it their types, shapes and, when
 * constant, their data; an If whose condition is constant is replaced by
 * its branch (inlined, its values named by their subgraph path). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "passes/passes.h"
#include "ops/run.h"

/* Trip counts beyond this are refused at build time (the runtime bound of
 * engine/control.c). */
#define MAX_LOOP_TRIPS ((int64_t)1 << 24)

static void lend_captures(const graph_t *g, graph_t *sub)
{
    for (int j = sub->n_formal_inputs; j < sub->n_inputs; j++) {
        value_t *sv = &sub->vals[sub->inputs[j]];
        int ov = graph_find(g, sv->name);
        if (ov < 0) continue;
        const value_t *o = &g->vals[ov];
        if (sv->kind == VAL_CONST) continue;
        sv->t.dtype = o->t.dtype;
        sv->t.ndim = o->t.ndim;
        memcpy(sv->t.dims, o->t.dims, sizeof sv->t.dims);
        sv->shape_known = o->shape_known;
        if (o->kind == VAL_CONST && o->t.data) {
            tensor_t *c = tensor_clone(&o->t);
            sv->t = *c;
            free(c);
            sv->kind = VAL_CONST;
        }
    }
}

/* Loop and Scan bodies see different shapes from one iteration to the next:
 * their formal inputs keep their type only (Loop's iteration number and
 * condition excepted). */
static void forget_body_shapes(const node_t *n, graph_t *body)
{
    int first = !strcmp(n->op_type, "Loop") ? 2 : 0;
    for (int k = first; k < body->n_formal_inputs; k++) {
        value_t *v = &body->vals[body->inputs[k]];
        v->shape_known = 0;
        int outer = !strcmp(n->op_type, "Loop") ? k : k + (n->opset < 9);
        if (!v->t.dtype && outer < n->n_in - n->n_implicit && n->in[outer] >= 0 && !strcmp(n->op_type, "Loop"))
            v->t.dtype = ((const graph_t *)body->parent)->vals[n->in[outer]].t.dtype;
    }
}

static void move_node(node_t *dst, node_t *src)
{
    *dst = *src;
    memset(src, 0, sizeof *src);
}

/* Replaces node i (an If) by the nodes of branch b, then one Identity per
 * output joining the branch's result to the If's output value. */
static void inline_branch(graph_t *g, int i, graph_t *b, const char *attr)
{
    node_t *n = &g->nodes[i];
    char name[1024];
    int *map = xcalloc(b->n_vals + 1, sizeof *map);
    for (int j = 0; j < b->n_vals; j++) {
        value_t *sv = &b->vals[j];
        int captured = 0;
        for (int k = b->n_formal_inputs; k < b->n_inputs; k++) captured |= b->inputs[k] == j;
        if (captured) { map[j] = graph_find(g, sv->name); continue; }
        snprintf(name, sizeof name, "%s/%s/%s", n->name, attr, sv->name);
        map[j] = graph_value(g, name);
        n = &g->nodes[i];
        value_t *ov = &g->vals[map[j]];
        ov->t = sv->t;
        ov->kind = sv->kind;
        ov->shape_known = sv->shape_known;
        memset(&sv->t, 0, sizeof sv->t);
    }
    int n_new = b->n_nodes + n->n_out, total = g->n_nodes - 1 + n_new;
    node_t *nodes = xcalloc(total + 1, sizeof *nodes);
    int w = 0;
    for (int k = 0; k < i; k++) move_node(&nodes[w++], &g->nodes[k]);
    for (int k = 0; k < b->n_nodes; k++) {
        node_t *bn = &b->nodes[k];
        for (int m = 0; m < bn->n_in; m++) if (bn->in[m] >= 0) bn->in[m] = map[bn->in[m]];
        for (int m = 0; m < bn->n_out; m++) if (bn->out[m] >= 0) bn->out[m] = map[bn->out[m]];
        move_node(&nodes[w++], bn);
    }
    b->n_nodes = 0;
    for (int k = 0; k < n->n_out; k++) {
        if (n->out[k] < 0) continue;
        node_t *id = &nodes[w++];
        snprintf(name, sizeof name, "%s/%s/output_%d", n->name, attr, k);
        id->name = xstrdup(name);
        id->op_type = xstrdup("Identity");
        id->domain = xstrdup("");
        id->opset = graph_opset(g, "");
        id->n_in = id->n_out = 1;
        id->in = xmalloc(sizeof(int));
        id->out = xmalloc(sizeof(int));
        id->in[0] = map[b->outputs[k]];
        id->out[0] = n->out[k];
        id->storage = DT_FLOAT;
        id->op = op_lookup("", "Identity", id->opset, NULL);
    }
    node_free(n);
    for (int k = i + 1; k < g->n_nodes; k++) move_node(&nodes[w++], &g->nodes[k]);
    free(g->nodes);
    g->nodes = nodes;
    g->n_nodes = w;
    g->cap_nodes = total + 1;
    free(map);
}

/* The outputs' element types (shapes stay unknown: they come from running). */
static void set_output_types(graph_t *g, const node_t *n)
{
    const graph_t *b = n->sub[0];
    int loop = !strcmp(n->op_type, "Loop"), scan = !strcmp(n->op_type, "Scan");
    for (int k = 0; k < n->n_out; k++) {
        if (n->out[k] < 0) continue;
        int bo = loop ? k + 1 : k;
        dtype_t t = DT_UNDEFINED;
        if ((loop || scan) && bo < b->n_outputs) t = b->vals[b->outputs[bo]].t.dtype;
        if (!loop && !scan && k < b->n_outputs) t = b->vals[b->outputs[k]].t.dtype;
        if (t && !g->vals[n->out[k]].t.dtype) g->vals[n->out[k]].t.dtype = t;
    }
}

int graph_fold_control(graph_t *g, int i, int64_t max_fold_bytes, perr_t *e)
{
    node_t *n = &g->nodes[i];
    int is_if = !strcmp(n->op_type, "If"), is_loop = !strcmp(n->op_type, "Loop");
    for (int k = 0; k < n->n_sub; k++) {
        graph_t *sub = n->sub[k];
        sub->parent = g;
        lend_captures(g, sub);
        if (!is_if) forget_body_shapes(n, sub);
        if (graph_fold(sub, max_fold_bytes, e) < 0) return -1;
        graph_remove_dead(sub);
    }
    if (is_if && n->in[0] >= 0) {
        const value_t *c = &g->vals[n->in[0]];
        if (c->kind == VAL_CONST && c->t.data && tensor_numel(&c->t) == 1) {
            const char *attr = tensor_get_i64(&c->t, 0) ? "then_branch" : "else_branch";
            inline_branch(g, i, node_sub(n, attr), attr);
            return 1;
        }
    }
    if (is_loop && n->in[0] >= 0 && (n->n_in - n->n_implicit < 2 || n->in[1] < 0)) {
        const value_t *m = &g->vals[n->in[0]];
        if (m->kind == VAL_CONST && m->t.data && tensor_numel(&m->t) == 1 && tensor_get_i64(&m->t, 0) > MAX_LOOP_TRIPS)
            return BAD(e, "%s: node '%s' (Loop): trip count %lld with no condition is beyond the limit of %lld iterations",
                       g->source, n->name, (long long)tensor_get_i64(&m->t, 0), (long long)MAX_LOOP_TRIPS);
    }
    set_output_types(g, n);
    return 0;
}
