/* graph.c — building and indexing the IR; attribute access for kernels. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "graph/graph.h"
#include "io/tensorproto.h"

static const char *const prec_names[] = {"fp32", "tf32", "fp16", "bf16"};

const char *precision_name(precision_t p)
{
    return (unsigned)p < 4 ? prec_names[p] : "?";
}

int precision_from_name(const char *s)
{
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, prec_names[i])) return i;
    return -1;
}

graph_t *graph_new(const char *source)
{
    graph_t *g = xcalloc(1, sizeof *g);
    g->source = xstrdup(source ? source : "");
    return g;
}

void graph_free(graph_t *g)
{
    if (!g) return;
    for (int i = 0; i < g->n_vals; i++) {
        free(g->vals[i].name);
        tensor_free_data(&g->vals[i].t);
    }
    for (int i = 0; i < g->n_nodes; i++) node_free(&g->nodes[i]);
    for (int i = 0; i < g->n_opsets; i++) free(g->opsets[i].domain);
    for (int i = 0; i < g->n_keep; i++)
        protobuf_c_message_free_unpacked(g->keep[i], NULL);
    for (int i = 0; i < g->n_attr_copies; i++) free(g->attr_copies[i]);
    free(g->attr_copies);
    free(g->keep); free(g->opsets);
    free(g->vals); free(g->nodes); free(g->inputs); free(g->outputs);
    name_index_free(&g->val_index);
    free(g->source);
    free(g);
}

void node_free(node_t *n)
{
    free(n->name); free(n->op_type); free(n->domain);
    free(n->in); free(n->out); free(n->attr);
    free(n->reason); free(n->fused_from); free(n->range_note);
    for (int k = 0; k < n->n_sub; k++) {
        graph_free(n->sub[k]);
        free(n->sub_attr[k]);
    }
    free(n->sub); free(n->sub_attr);
    n->sub = NULL; n->sub_attr = NULL; n->n_sub = 0;
}

graph_t *node_sub(const node_t *n, const char *attr)
{
    for (int k = 0; k < n->n_sub; k++)
        if (!strcmp(n->sub_attr[k], attr)) return n->sub[k];
    return NULL;
}

static const char *val_name(const void *g, int i) { return ((const graph_t *)g)->vals[i].name; }

int graph_find(const graph_t *g, const char *name)
{
    return name_index_find(&g->val_index, name, val_name, g);
}

int graph_value(graph_t *g, const char *name)
{
    int i = graph_find(g, name);
    if (i >= 0) return i;
    if (g->n_vals == g->cap_vals) {
        g->cap_vals = g->cap_vals ? 2 * g->cap_vals : 64;
        g->vals = xrealloc(g->vals, g->cap_vals * sizeof *g->vals);
    }
    value_t *v = &g->vals[g->n_vals];
    memset(v, 0, sizeof *v);
    v->name = xstrdup(name);
    v->producer = -1;
    v->last_use = -1;
    v->offset = -1;
    g->n_vals++;
    name_index_add(&g->val_index, g->n_vals - 1, g->n_vals, val_name, g);
    return g->n_vals - 1;
}

int graph_add_node(graph_t *g, const char *name, const char *op_type, const char *domain,
                   int opset, int n_in, const int *in, int n_out, const int *out)
{
    if (g->n_nodes == g->cap_nodes) {
        g->cap_nodes = g->cap_nodes ? 2 * g->cap_nodes : 64;
        g->nodes = xrealloc(g->nodes, g->cap_nodes * sizeof *g->nodes);
    }
    node_t *n = &g->nodes[g->n_nodes];
    memset(n, 0, sizeof *n);
    n->name = xstrdup(name ? name : "");
    n->op_type = xstrdup(op_type);
    n->domain = xstrdup(domain ? domain : "");
    n->opset = opset;
    n->n_in = n_in;
    n->n_out = n_out;
    n->in = xmalloc((n_in + 1) * sizeof(int));
    n->out = xmalloc((n_out + 1) * sizeof(int));
    memcpy(n->in, in, n_in * sizeof(int));
    memcpy(n->out, out, n_out * sizeof(int));
    n->storage = DT_FLOAT;
    return g->n_nodes++;
}

int graph_opset(const graph_t *g, const char *domain)
{
    if (!strcmp(domain, "ai.onnx")) domain = "";
    for (int i = 0; i < g->n_opsets; i++)
        if (!strcmp(g->opsets[i].domain, domain)) return g->opsets[i].version;
    return 0;
}

void graph_index(graph_t *g)
{
    for (int i = 0; i < g->n_vals; i++) {
        g->vals[i].producer = -1;
        g->vals[i].last_use = -1;
        g->vals[i].is_output = 0;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        node_t *n = &g->nodes[i];
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] >= 0) g->vals[n->in[k]].last_use = i;
        for (int k = 0; k < n->n_out; k++)
            if (n->out[k] >= 0) g->vals[n->out[k]].producer = i;
    }
    for (int i = 0; i < g->n_outputs; i++) {
        g->vals[g->outputs[i]].is_output = 1;
        g->vals[g->outputs[i]].last_use = g->n_nodes;
    }
}

int graph_remove_dead(graph_t *g)
{
    graph_index(g);
    char *live = xcalloc(g->n_vals, 1);
    for (int i = 0; i < g->n_outputs; i++) live[g->outputs[i]] = 1;
    char *keep = xcalloc(g->n_nodes + 1, 1);
    for (int i = g->n_nodes - 1; i >= 0; i--) {
        node_t *n = &g->nodes[i];
        for (int k = 0; k < n->n_out; k++)
            if (n->out[k] >= 0 && live[n->out[k]]) keep[i] = 1;
        if (!keep[i]) continue;
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] >= 0) live[n->in[k]] = 1;
    }
    int w = 0, removed = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        if (keep[i]) {
            g->nodes[w++] = g->nodes[i];
        } else {
            node_free(&g->nodes[i]);
            removed++;
        }
    }
    g->n_nodes = w;
    /* constants nobody reads any more release their data */
    for (int i = 0; i < g->n_vals; i++)
        if (!live[i] && g->vals[i].kind == VAL_CONST) tensor_free_data(&g->vals[i].t);
    free(live);
    free(keep);
    graph_index(g);
    return removed;
}

const Onnx__AttributeProto *node_attr(const node_t *n, const char *name)
{
    for (int i = 0; i < n->n_attr; i++)
        if (n->attr[i]->name && !strcmp(n->attr[i]->name, name)) return n->attr[i];
    return NULL;
}

int64_t attr_int(const node_t *n, const char *name, int64_t dflt)
{
    const Onnx__AttributeProto *a = node_attr(n, name);
    return a && a->has_i ? a->i : dflt;
}

float attr_float(const node_t *n, const char *name, float dflt)
{
    const Onnx__AttributeProto *a = node_attr(n, name);
    return a && a->has_f ? a->f : dflt;
}

const char *attr_string(const node_t *n, const char *name, const char *dflt, char *buf, size_t bufsz)
{
    const Onnx__AttributeProto *a = node_attr(n, name);
    if (!a || !a->has_s) return dflt;
    size_t len = a->s.len < bufsz - 1 ? a->s.len : bufsz - 1;
    memcpy(buf, a->s.data, len);
    buf[len] = 0;
    return buf;
}

int attr_ints(const node_t *n, const char *name, const int64_t **v)
{
    const Onnx__AttributeProto *a = node_attr(n, name);
    if (!a) return -1;
    *v = a->ints;
    return (int)a->n_ints;
}

int attr_floats(const node_t *n, const char *name, const float **v)
{
    const Onnx__AttributeProto *a = node_attr(n, name);
    if (!a) return -1;
    *v = a->floats;
    return (int)a->n_floats;
}

tensor_t *attr_tensor(const node_t *n, const char *name, perr_t *e)
{
    const Onnx__AttributeProto *a = node_attr(n, name);
    if (!a || !a->t) {
        BAD(e, "node '%s' (%s): attribute '%s' (tensor) is missing", n->name, n->op_type, name);
        return NULL;
    }
    tensor_t *t = xcalloc(1, sizeof *t);
    if (tensorproto_to_tensor(a->t, NULL, t, e)) {
        free(t);
        return NULL;
    }
    return t;
}
