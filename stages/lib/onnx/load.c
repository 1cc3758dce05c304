/* load.c — reading an ONNX ModelProto into parity's graph IR.
 *
 * The protobuf message stays alive inside the graph (graph->keep) because
 * nodes point at its AttributeProtos; tensors are converted to tensor_t at
 * once. Model-local functions are inlined here, so every later pass sees
 * only primitive operators. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "onnx/load.h"
#include "io/tensorproto.h"
#include "util/fsutil.h"

#define MAX_INLINE_DEPTH 16

typedef struct load_ctx {
    graph_t *g;
    const Onnx__ModelProto *m;
    const char *path;
    char *dir;
    perr_t *e;
    int anon;        /* counter for unnamed nodes */
    const char *node_path;   /* inside a subgraph: "Node/attr", prefixed to node names */
} load_ctx_t;

static void keep_message(graph_t *g, void *msg)
{
    g->keep = xrealloc(g->keep, (g->n_keep + 1) * sizeof *g->keep);
    g->keep[g->n_keep++] = msg;
}

/* Attribute copies made while inlining functions are plain malloc'd structs
 * (shallow copies whose payload stays in the model message). */
static Onnx__AttributeProto *copy_attr(graph_t *g, const Onnx__AttributeProto *a, const char *name)
{
    Onnx__AttributeProto *c = xmalloc(sizeof *c + strlen(name) + 1);
    *c = *a;
    c->name = (char *)(c + 1);
    strcpy(c->name, name);
    c->ref_attr_name = NULL;
    g->attr_copies = xrealloc(g->attr_copies, (g->n_attr_copies + 1) * sizeof *g->attr_copies);
    g->attr_copies[g->n_attr_copies++] = c;
    return c;
}

static int set_value_info(load_ctx_t *L, int v, const Onnx__ValueInfoProto *vi)
{
    value_t *val = &L->g->vals[v];
    if (!vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) return 0;
    const Onnx__TypeProto__Tensor *tt = vi->type->tensor_type;
    if (tt->has_elem_type) val->t.dtype = (dtype_t)tt->elem_type;
    if (!tt->shape) return 0;
    if (tt->shape->n_dim > TENSOR_MAX_DIMS)
        return BAD(L->e, "%s: value '%s' has rank %zu, beyond %d", L->path, vi->name, tt->shape->n_dim, TENSOR_MAX_DIMS);
    val->t.ndim = (int)tt->shape->n_dim;
    int known = 1;
    for (size_t i = 0; i < tt->shape->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && d->dim_value >= 0) {
            val->t.dims[i] = d->dim_value;
        } else {
            val->t.dims[i] = -1;
            known = 0;
        }
    }
    val->shape_known = known;
    return 0;
}

static int add_constant(load_ctx_t *L, const char *name, tensor_t *t)
{
    int v = graph_value(L->g, name);
    value_t *val = &L->g->vals[v];
    tensor_free_data(&val->t);
    val->t = *t;
    val->kind = VAL_CONST;
    val->shape_known = 1;
    return v;
}

/* A Constant node becomes a constant value directly. */
static int load_constant_node(load_ctx_t *L, const Onnx__NodeProto *np, const char *out_name,
                              Onnx__AttributeProto *const *attrs, size_t n_attrs)
{
    tensor_t t = {0};
    if (n_attrs != 1)
        return BAD(L->e, "%s: Constant node '%s' must have exactly one attribute", L->path, np->name ? np->name : "");
    const Onnx__AttributeProto *a = attrs[0];
    const char *an = a->name ? a->name : "";
    if (!strcmp(an, "value") && a->t) {
        if (tensorproto_to_tensor(a->t, L->dir, &t, L->e))
            return perr_prefix(L->e, "%s: Constant '%s': ", L->path, np->name ? np->name : "");
    } else if (!strcmp(an, "value_float") || !strcmp(an, "value_int")) {
        int isf = an[6] == 'f';
        if (tensor_alloc(&t, isf ? DT_FLOAT : DT_INT64, 0, NULL, L->e)) return -1;
        if (isf) *(float *)t.data = a->f; else *(int64_t *)t.data = a->i;
    } else if (!strcmp(an, "value_floats") || !strcmp(an, "value_ints")) {
        int isf = an[6] == 'f';
        int64_t n = isf ? (int64_t)a->n_floats : (int64_t)a->n_ints;
        if (tensor_alloc(&t, isf ? DT_FLOAT : DT_INT64, 1, &n, L->e)) return -1;
        memcpy(t.data, isf ? (void *)a->floats : (void *)a->ints, n * (isf ? 4 : 8));
    } else {
        return BAD(L->e, "%s: Constant node '%s': attribute '%s' is not supported (string and sparse constants)",
                   L->path, np->name ? np->name : "", an);
    }
    add_constant(L, out_name, &t);
    return 0;
}

static const Onnx__FunctionProto *find_function(load_ctx_t *L, const char *domain, const char *op)
{
    for (size_t i = 0; i < L->m->n_functions; i++) {
        const Onnx__FunctionProto *f = L->m->functions[i];
        if (f->name && !strcmp(f->name, op) && !strcmp(f->domain ? f->domain : "", domain)) return f;
    }
    return NULL;
}

typedef struct scope {
    const struct scope *parent;
    /* renaming of a function body's names: formal -> actual */
    int n; char **from; char **to;
    const Onnx__NodeProto *caller;   /* for attribute references */
    const char *prefix;
    const Onnx__FunctionProto *fn;
} scope_t;

static const char *scope_name(const scope_t *s, const char *name, char *buf, size_t bufsz)
{
    if (!s || !name[0]) return name;
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->from[i], name)) return s->to[i];
    snprintf(buf, bufsz, "%s/%s", s->prefix, name);
    return buf;
}

static int opset_for(load_ctx_t *L, const scope_t *s, const char *domain)
{
    if (s && s->fn) {
        for (size_t i = 0; i < s->fn->n_opset_import; i++) {
            const char *d = s->fn->opset_import[i]->domain ? s->fn->opset_import[i]->domain : "";
            if (!strcmp(d, domain) || (!strcmp(d, "ai.onnx") && !domain[0]))
                return (int)s->fn->opset_import[i]->version;
        }
    }
    return graph_opset(L->g, domain);
}

static int load_nodes(load_ctx_t *L, Onnx__NodeProto *const *nodes, size_t n_nodes, const scope_t *s, int depth);
static graph_t *load_subgraph(load_ctx_t *L, const Onnx__GraphProto *gp, const char *node, const char *op,
                              const char *attr);

static int inline_function(load_ctx_t *L, const Onnx__NodeProto *np, const Onnx__FunctionProto *f,
                           const scope_t *outer, const char *node_name, int depth)
{
    if (depth >= MAX_INLINE_DEPTH)
        return BAD(L->e, "%s: function '%s' nests deeper than %d (recursive?)", L->path, f->name, MAX_INLINE_DEPTH);
    scope_t s = {.parent = outer, .caller = np, .prefix = node_name, .fn = f};
    int cap = (int)(f->n_input + f->n_output);
    s.from = xcalloc(cap + 1, sizeof *s.from);
    s.to = xcalloc(cap + 1, sizeof *s.to);
    char buf[1024];
    for (size_t i = 0; i < f->n_input; i++) {
        s.from[s.n] = f->input[i];
        s.to[s.n++] = xstrdup(i < np->n_input ? scope_name(outer, np->input[i], buf, sizeof buf) : "");
    }
    for (size_t i = 0; i < f->n_output; i++) {
        s.from[s.n] = f->output[i];
        s.to[s.n++] = xstrdup(i < np->n_output ? scope_name(outer, np->output[i], buf, sizeof buf) : "");
    }
    int rc = load_nodes(L, f->node, f->n_node, &s, depth + 1);
    for (int i = 0; i < s.n; i++) free(s.to[i]);
    free(s.from);
    free(s.to);
    return rc;
}

/* Resolves attribute references (ref_attr_name) against the calling node. */
static int resolve_attrs(load_ctx_t *L, const Onnx__NodeProto *np, const scope_t *s,
                         Onnx__AttributeProto ***out, int *n_out)
{
    Onnx__AttributeProto **v = xcalloc(np->n_attribute + 1, sizeof *v);
    int n = 0;
    for (size_t i = 0; i < np->n_attribute; i++) {
        Onnx__AttributeProto *a = np->attribute[i];
        if (a->ref_attr_name && a->ref_attr_name[0]) {
            const Onnx__AttributeProto *found = NULL;
            for (size_t k = 0; s && s->caller && k < s->caller->n_attribute; k++)
                if (s->caller->attribute[k]->name && !strcmp(s->caller->attribute[k]->name, a->ref_attr_name))
                    found = s->caller->attribute[k];
            if (!found) continue;   /* not given by the caller: the op's default applies */
            v[n++] = copy_attr(L->g, found, a->name ? a->name : "");
        } else {
            v[n++] = a;
        }
    }
    *out = v;
    *n_out = n;
    return 0;
}

/* Moves the graph attributes of a node (If's branches, Loop's and Scan's
 * body) out of its attribute list into loaded subgraphs. */
static int take_subgraphs(load_ctx_t *L, const char *node, const char *op, Onnx__AttributeProto **attrs,
                          int *n_attrs, graph_t ***subs, char ***names, int *n_sub)
{
    int w = 0;
    for (int i = 0; i < *n_attrs; i++) {
        Onnx__AttributeProto *a = attrs[i];
        if (a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS && a->n_graphs)
            return BAD(L->e, "%s: node '%s' (%s): attribute '%s' holds a list of graphs (not supported)",
                       L->path, node, op, a->name ? a->name : "");
        if (!a->g) { attrs[w++] = a; continue; }
        graph_t *sg = load_subgraph(L, a->g, node, op, a->name ? a->name : "");
        if (!sg) return -1;
        *subs = xrealloc(*subs, (*n_sub + 1) * sizeof **subs);
        *names = xrealloc(*names, (*n_sub + 1) * sizeof **names);
        (*subs)[*n_sub] = sg;
        (*names)[(*n_sub)++] = xstrdup(a->name ? a->name : "");
    }
    *n_attrs = w;
    return 0;
}

/* The structural rules a control-flow node's subgraphs must meet to run. */
static int check_subgraphs(load_ctx_t *L, const char *node, const Onnx__NodeProto *np, graph_t **subs,
                           char **names, int n_sub)
{
    const char *op = np->op_type;
    const char *dom = np->domain && strcmp(np->domain, "ai.onnx") ? np->domain : "";
    if (dom[0]) return 0;
    graph_t *then_g = NULL, *else_g = NULL, *body = NULL;
    for (int k = 0; k < n_sub; k++) {
        if (!strcmp(names[k], "then_branch")) then_g = subs[k];
        if (!strcmp(names[k], "else_branch")) else_g = subs[k];
        if (!strcmp(names[k], "body")) body = subs[k];
    }
    if (!strcmp(op, "If")) {
        if (!then_g || !else_g)
            return BAD(L->e, "%s: node '%s' (If): needs both then_branch and else_branch", L->path, node);
        if (then_g->n_outputs != else_g->n_outputs || then_g->n_outputs != (int)np->n_output)
            return BAD(L->e, "%s: node '%s' (If): then_branch gives %d outputs, else_branch %d, the node has %zu",
                       L->path, node, then_g->n_outputs, else_g->n_outputs, np->n_output);
        if (then_g->n_formal_inputs || else_g->n_formal_inputs)
            return BAD(L->e, "%s: node '%s' (If): a branch declares inputs (branches take none)", L->path, node);
    } else if (!strcmp(op, "Loop")) {
        if (!body) return BAD(L->e, "%s: node '%s' (Loop): has no body", L->path, node);
        int carried = (int)np->n_input - 2;
        if (carried < 0 || body->n_formal_inputs != carried + 2 || body->n_outputs < carried + 1 ||
            (int)np->n_output != body->n_outputs - 1)
            return BAD(L->e, "%s: node '%s' (Loop): body takes %d inputs and gives %d outputs; the node has %zu inputs "
                       "and %zu outputs (expected body inputs = node inputs, body outputs = node outputs + 1)",
                       L->path, node, body->n_formal_inputs, body->n_outputs, np->n_input, np->n_output);
        for (int k = 0; k < carried; k++) {
            dtype_t a = body->vals[body->inputs[k + 2]].t.dtype, b = body->vals[body->outputs[k + 1]].t.dtype;
            if (a && b && a != b)
                return BAD(L->e, "%s: node '%s' (Loop): carried value %d changes type from %s to %s in the body",
                           L->path, node, k, dtype_name(a), dtype_name(b));
        }
    } else if (!strcmp(op, "Scan")) {
        if (!body) return BAD(L->e, "%s: node '%s' (Scan): has no body", L->path, node);
    }
    return 0;
}

/* Appends to a node's inputs the outer values its subgraphs capture (each
 * once); returns the new input array. */
static int *add_captures(graph_t *g, graph_t **subs, int n_sub, int *in, int n_in, int *n_implicit)
{
    int n = n_in;
    for (int k = 0; k < n_sub; k++)
        for (int j = subs[k]->n_formal_inputs; j < subs[k]->n_inputs; j++) {
            int v = graph_value(g, subs[k]->vals[subs[k]->inputs[j]].name), seen = 0;
            for (int m = n_in; m < n; m++) seen |= in[m] == v;
            if (seen) continue;
            in = xrealloc(in, (n + 1) * sizeof *in);
            in[n++] = v;
        }
    *n_implicit = n - n_in;
    return in;
}

static int load_nodes(load_ctx_t *L, Onnx__NodeProto *const *nodes, size_t n_nodes, const scope_t *s, int depth)
{
    graph_t *g = L->g;
    char buf[1024], nbuf[1024];
    for (size_t i = 0; i < n_nodes; i++) {
        const Onnx__NodeProto *np = nodes[i];
        const char *domain = np->domain ? np->domain : "";
        if (!strcmp(domain, "ai.onnx")) domain = "";
        if (!np->op_type || !np->op_type[0])
            return BAD(L->e, "%s: node %zu has no op_type", L->path, i);
        /* a node that writes nothing is damage: kernels write their outputs */
        size_t named = 0;
        for (size_t k = 0; k < np->n_output; k++) named += np->output[k][0] != 0;
        if (!named) return BAD(L->e, "%s: node %zu (%s) has no outputs", L->path, i, np->op_type);
        /* output 0 is what every kernel writes; only the recurrent ops may omit it (Y) */
        int rnn = !strcmp(np->op_type, "RNN") || !strcmp(np->op_type, "GRU") || !strcmp(np->op_type, "LSTM");
        if (!np->output[0][0] && !rnn)
            return BAD(L->e, "%s: node %zu (%s): its first output has no name", L->path, i, np->op_type);
        const char *name = np->name && np->name[0] ? np->name : NULL;
        if (!name) {
            snprintf(nbuf, sizeof nbuf, "%s_%d", np->op_type, L->anon++);
            name = nbuf;
        }
        char full_name[1024];
        const char *prefix = s ? s->prefix : L->node_path;
        snprintf(full_name, sizeof full_name, "%s%s%s", prefix ? prefix : "", prefix ? "/" : "", name);
        Onnx__AttributeProto **attrs;
        int n_attrs;
        resolve_attrs(L, np, s, &attrs, &n_attrs);
        if (!domain[0] && !strcmp(np->op_type, "Constant")) {
            if (np->n_output != 1) {
                free(attrs);
                return BAD(L->e, "%s: Constant node '%s' must have one output", L->path, full_name);
            }
            int rc = load_constant_node(L, np, scope_name(s, np->output[0], buf, sizeof buf), attrs, n_attrs);
            free(attrs);
            if (rc) return -1;
            continue;
        }
        const Onnx__FunctionProto *f = find_function(L, domain, np->op_type);
        if (f) {
            free(attrs);
            if (inline_function(L, np, f, s, full_name, depth)) return -1;
            continue;
        }
        int *in = xmalloc((np->n_input + 1) * sizeof *in), *out = xmalloc((np->n_output + 1) * sizeof *out);
        for (size_t k = 0; k < np->n_input; k++)
            in[k] = np->input[k][0] ? graph_value(g, scope_name(s, np->input[k], buf, sizeof buf)) : -1;
        for (size_t k = 0; k < np->n_output; k++)
            out[k] = np->output[k][0] ? graph_value(g, scope_name(s, np->output[k], buf, sizeof buf)) : -1;
        int opset = opset_for(L, s, domain);
        graph_t **subs = NULL;
        char **sub_attr = NULL;
        int n_sub = 0;
        if (take_subgraphs(L, full_name, np->op_type, attrs, &n_attrs, &subs, &sub_attr, &n_sub) ||
            check_subgraphs(L, full_name, np, subs, sub_attr, n_sub)) {
            for (int k = 0; k < n_sub; k++) { graph_free(subs[k]); free(sub_attr[k]); }
            free(subs); free(sub_attr); free(in); free(out); free(attrs);
            return -1;
        }
        int n_implicit = 0;
        in = add_captures(g, subs, n_sub, in, (int)np->n_input, &n_implicit);
        int ni = graph_add_node(g, full_name, np->op_type, domain, opset,
                                (int)np->n_input + n_implicit, in, (int)np->n_output, out);
        node_t *nn = &g->nodes[ni];
        nn->attr = attrs;
        nn->n_attr = n_attrs;
        nn->sub = subs;
        nn->sub_attr = sub_attr;
        nn->n_sub = n_sub;
        nn->n_implicit = n_implicit;
        free(in);
        free(out);
    }
    return 0;
}

/* The position of value v among the graph inputs read so far. */
static int input_index(const graph_t *g, int v)
{
    for (int i = 0; i < g->n_inputs; i++)
        if (g->inputs[i] == v) return i;
    return -1;
}

static int load_graph(load_ctx_t *L, const Onnx__GraphProto *gp)
{
    graph_t *g = L->g;
    if (!gp) return BAD(L->e, "%s: model has no graph", L->path);
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *tp = gp->initializer[i];
        tensor_t t;
        if (!tp->name || !tp->name[0]) return BAD(L->e, "%s: initializer %zu has no name", L->path, i);
        if (tensorproto_to_tensor(tp, L->dir, &t, L->e)) return perr_prefix(L->e, "%s: ", L->path);
        add_constant(L, tp->name, &t);
    }
    if (gp->n_sparse_initializer)
        return BAD(L->e, "%s: sparse initializers are not supported", L->path);
    g->inputs = xcalloc(gp->n_input + 1, sizeof *g->inputs);
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        if (!vi->name || !vi->name[0]) return BAD(L->e, "%s: graph input %zu has no name", L->path, i);
        int v = graph_value(g, vi->name);
        if (g->vals[v].kind == VAL_CONST) continue;  /* initializer listed as input */
        if (g->vals[v].kind == VAL_INPUT)
            return BAD(L->e, "%s: graph input '%s' is listed twice (inputs %d and %zu)", L->path, vi->name,
                       input_index(g, v), i);
        g->vals[v].kind = VAL_INPUT;
        if (set_value_info(L, v, vi)) return -1;
        if (g->parent && (!vi->type || vi->type->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE)) {
            /* a body's inputs may be untyped, or a Loop-carried sequence */
            if (vi->type) g->vals[v].t.dtype = DT_SEQUENCE;
        } else if (!vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
            return BAD(L->e, "%s: input '%s' is not a tensor (sequences, maps and optionals are not supported)",
                       L->path, vi->name);
        g->inputs[g->n_inputs++] = v;
    }
    if (load_nodes(L, gp->node, gp->n_node, NULL, 0)) return -1;
    g->outputs = xcalloc(gp->n_output + 1, sizeof *g->outputs);
    for (size_t i = 0; i < gp->n_output; i++) {
        const Onnx__ValueInfoProto *vi = gp->output[i];
        if (!vi->name || !vi->name[0]) return BAD(L->e, "%s: graph output %zu has no name", L->path, i);
        int v = g->parent ? graph_value(g, vi->name) : graph_find(g, vi->name);
        if (v < 0) return BAD(L->e, "%s: output '%s' is produced by no node", L->path, vi->name);
        g->outputs[g->n_outputs++] = v;
        if (vi->type && vi->type->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE &&
            vi->type->tensor_type->has_elem_type && g->vals[v].kind == VAL_ACTIVATION &&
            !g->vals[v].t.dtype)
            g->vals[v].t.dtype = (dtype_t)vi->type->tensor_type->elem_type;
        if (vi->type && vi->type->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE && !g->vals[v].t.dtype)
            g->vals[v].t.dtype = DT_SEQUENCE;
    }
    g->n_formal_inputs = g->n_inputs;
    return 0;
}

/* A value a subgraph reads but does not define comes from an enclosing
 * graph: it must exist there (an intermediate subgraph captures it too). */
static int find_outer(graph_t *g, const char *name)
{
    graph_t *p = (graph_t *)g->parent;
    if (!p) return 0;
    if (graph_find(p, name) >= 0) return 1;
    if (!find_outer(p, name)) return 0;
    graph_value(p, name);
    return 1;
}

static int check_topology(load_ctx_t *L);

static graph_t *load_subgraph(load_ctx_t *L, const Onnx__GraphProto *gp, const char *node, const char *op,
                              const char *attr)
{
    graph_t *outer = L->g, *g = graph_new(L->path);
    const char *saved_path = L->node_path;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", node, attr);
    g->parent = outer;
    g->opsets = xcalloc(outer->n_opsets + 1, sizeof *g->opsets);
    for (int i = 0; i < outer->n_opsets; i++) {
        g->opsets[i].domain = xstrdup(outer->opsets[i].domain);
        g->opsets[i].version = outer->opsets[i].version;
    }
    g->n_opsets = outer->n_opsets;
    L->g = g;
    L->node_path = path;
    int rc = load_graph(L, gp);
    L->g = outer;
    L->node_path = saved_path;
    if (!rc) {
        /* what no node here produces, no input or initializer defines, is captured */
        graph_index(g);
        int n_vals = g->n_vals;
        for (int i = 0; i < n_vals && !rc; i++) {
            value_t *v = &g->vals[i];
            if (v->kind != VAL_ACTIVATION || v->producer >= 0) continue;
            if (!find_outer(g, v->name)) {
                rc = BAD(L->e, "%s: node '%s' (%s): subgraph '%s' reads '%s', which exists nowhere", L->path, node, op,
                         attr, v->name);
                break;
            }
            int ov = graph_find(outer, v->name);
            v->kind = VAL_INPUT;
            if (ov >= 0) {
                v->t.dtype = outer->vals[ov].t.dtype;
                v->t.ndim = outer->vals[ov].t.ndim;
                memcpy(v->t.dims, outer->vals[ov].t.dims, sizeof v->t.dims);
                v->shape_known = outer->vals[ov].shape_known;
            }
            g->inputs = xrealloc(g->inputs, (g->n_inputs + 1) * sizeof *g->inputs);
            g->inputs[g->n_inputs++] = i;
        }
    }
    if (!rc) {
        L->g = g;
        rc = check_topology(L);
        L->g = outer;
    }
    if (rc) {
        graph_free(g);
        return NULL;
    }
    graph_index(g);
    return g;
}

/* ONNX Runtime sorts the graphs it loads; so does parity (graph/toposort.c). */
static int check_topology(load_ctx_t *L)
{
    return graph_toposort(L->g, L->e) < 0 ? -1 : 0;
}

graph_t *onnx_load(const char *path, perr_t *e)
{
    char *buf;
    size_t n;
    if (read_file(path, &buf, &n, e)) return NULL;
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, n, (uint8_t *)buf);
    free(buf);
    if (!m) {
        BAD(e, "%s: not a valid ONNX model (protobuf parse failed: truncated or garbage)", path);
        return NULL;
    }
    graph_t *g = graph_new(path);
    keep_message(g, m);
    load_ctx_t L = {.g = g, .m = m, .path = path, .e = e};
    L.dir = xstrdup(path);
    char *slash = strrchr(L.dir, '/');
    if (slash) *slash = 0; else strcpy(L.dir, ".");
    g->opsets = xcalloc(m->n_opset_import + 1, sizeof *g->opsets);
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const char *d = m->opset_import[i]->domain ? m->opset_import[i]->domain : "";
        g->opsets[g->n_opsets].domain = xstrdup(!strcmp(d, "ai.onnx") ? "" : d);
        g->opsets[g->n_opsets++].version = (int)m->opset_import[i]->version;
    }
    if (m->n_opset_import == 0) {
        /* IR version 1-2 models: opset 1 */
        g->opsets[0].domain = xstrdup("");
        g->opsets[0].version = 1;
        g->n_opsets = 1;
    }
    int rc = load_graph(&L, m->graph);
    if (!rc) rc = check_topology(&L);
    free(L.dir);
    if (rc) {
        graph_free(g);
        return NULL;
    }
    graph_index(g);
    return g;
}
