/* subgraph.c — an ONNX model indexed by value for cutting, the closure of a
 * kept node set, and the standalone model of those nodes (subgraph.h). The
 * kept nodes are the model's own NodeProtos, packed as they are: the engine
 * that reads the reduced model sees the same layers. */
#include <stdlib.h>
#include <string.h>
#include "onnx/subgraph.h"
#include "util/fsutil.h"

static const char *sg_name(const void *s, int i) { return ((const sg_model_t *)s)->val[i]; }

int sg_value(const sg_model_t *s, const char *name)
{
    return name_index_find(&s->names, name, sg_name, s);
}

/* The value of a name, added (no producer, no initializer) when new. */
static int intern(sg_model_t *s, char *name)
{
    int v = sg_value(s, name);
    if (v >= 0) return v;
    v = s->n_vals++;
    s->val = xrealloc(s->val, s->n_vals * sizeof *s->val);
    s->val[v] = name;
    s->producer = xrealloc(s->producer, s->n_vals * sizeof *s->producer);
    s->init = xrealloc(s->init, s->n_vals * sizeof *s->init);
    s->is_input = xrealloc(s->is_input, s->n_vals * sizeof *s->is_input);
    s->producer[v] = s->init[v] = -1;
    s->is_input[v] = 0;
    name_index_add(&s->names, v, s->n_vals, sg_name, s);
    return v;
}

typedef struct names { char **v; int n, cap; } names_t;

static void names_add(names_t *l, char *s)
{
    if (!s || !*s) return;
    if (l->n == l->cap) { l->cap = l->cap ? 2 * l->cap : 16; l->v = xrealloc(l->v, l->cap * sizeof *l->v); }
    l->v[l->n++] = s;
}

static int cmp_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* l sorted by cmp_name */
static int names_has(const names_t *l, const char *s)
{
    return l->n && bsearch(&s, l->v, l->n, sizeof *l->v, cmp_name) != NULL;
}

/* Every name a nested graph reads and every name it defines (all depths). */
static void walk_graph(const Onnx__GraphProto *g, names_t *reads, names_t *defs);

static void walk_attrs(Onnx__NodeProto *const *nodes, size_t n, names_t *reads, names_t *defs)
{
    for (size_t i = 0; i < n; i++)
        for (size_t a = 0; a < nodes[i]->n_attribute; a++) {
            const Onnx__AttributeProto *at = nodes[i]->attribute[a];
            if (at->g) walk_graph(at->g, reads, defs);
            for (size_t k = 0; k < at->n_graphs; k++) walk_graph(at->graphs[k], reads, defs);
        }
}

static void walk_graph(const Onnx__GraphProto *g, names_t *reads, names_t *defs)
{
    for (size_t i = 0; i < g->n_input; i++) names_add(defs, g->input[i]->name);
    for (size_t i = 0; i < g->n_initializer; i++) names_add(defs, g->initializer[i]->name);
    for (size_t i = 0; i < g->n_node; i++) {
        for (size_t k = 0; k < g->node[i]->n_output; k++) names_add(defs, g->node[i]->output[k]);
        for (size_t k = 0; k < g->node[i]->n_input; k++) names_add(reads, g->node[i]->input[k]);
    }
    for (size_t i = 0; i < g->n_output; i++) names_add(reads, g->output[i]->name);
    walk_attrs(g->node, g->n_node, reads, defs);
}

/* Reads of one node, each value once (stamp: the last node that read it,
 * so a node with many inputs costs linear time). */
static void add_read(sg_model_t *s, int node, int v, int **stamp, int *cap)
{
    if (v >= *cap) {
        int nc = 2 * (v + 1);
        *stamp = xrealloc(*stamp, nc * sizeof **stamp);
        for (int i = *cap; i < nc; i++) (*stamp)[i] = -1;
        *cap = nc;
    }
    if ((*stamp)[v] == node) return;
    (*stamp)[v] = node;
    s->in[node] = xrealloc(s->in[node], (s->n_in[node] + 1) * sizeof **s->in);
    s->in[node][s->n_in[node]++] = v;
}

/* Explicit inputs, then the outer-scope values its subgraphs read. */
static void index_node(sg_model_t *s, int i, int **stamp, int *cap)
{
    Onnx__NodeProto *n = s->m->graph->node[i];
    for (size_t k = 0; k < n->n_input; k++)
        if (n->input[k] && n->input[k][0]) add_read(s, i, intern(s, n->input[k]), stamp, cap);
    names_t reads = {0}, defs = {0};
    walk_attrs(&n, 1, &reads, &defs);
    if (defs.n) qsort(defs.v, defs.n, sizeof *defs.v, cmp_name);
    for (int k = 0; k < reads.n; k++) {
        int v = names_has(&defs, reads.v[k]) ? -1 : sg_value(s, reads.v[k]);
        if (v >= 0) add_read(s, i, v, stamp, cap);
    }
    free(reads.v);
    free(defs.v);
}

int sg_load(const char *path, sg_model_t *s, perr_t *e)
{
    memset(s, 0, sizeof *s);
    char *buf;
    size_t len;
    if (read_file(path, &buf, &len, e)) return -1;
    s->m = onnx__model_proto__unpack(NULL, len, (const uint8_t *)buf);
    free(buf);
    if (!s->m || !s->m->graph) {
        if (s->m) onnx__model_proto__free_unpacked(s->m, NULL);
        s->m = NULL;
        return BAD(e, "%s: not an ONNX model (no graph)", path);
    }
    Onnx__GraphProto *g = s->m->graph;
    s->n_nodes = (int)g->n_node;
    for (size_t i = 0; i < g->n_initializer; i++)
        if (g->initializer[i]->name && g->initializer[i]->name[0]) {
            int v = intern(s, g->initializer[i]->name);   /* intern may move s->init */
            s->init[v] = (int)i;
        }
    for (size_t i = 0; i < g->n_input; i++) {
        if (!g->input[i]->name || !g->input[i]->name[0]) continue;
        int v = intern(s, g->input[i]->name);
        if (s->init[v] < 0) s->is_input[v] = 1;
    }
    s->n_in = xcalloc(s->n_nodes + 1, sizeof *s->n_in);
    s->in = xcalloc(s->n_nodes + 1, sizeof *s->in);
    s->n_out = xcalloc(s->n_nodes + 1, sizeof *s->n_out);
    s->out = xcalloc(s->n_nodes + 1, sizeof *s->out);
    for (int i = 0; i < s->n_nodes; i++) {
        Onnx__NodeProto *n = g->node[i];
        s->out[i] = xcalloc(n->n_output + 1, sizeof **s->out);
        for (size_t k = 0; k < n->n_output; k++) {
            if (!n->output[k] || !n->output[k][0]) continue;
            int v = intern(s, n->output[k]);
            if (s->producer[v] >= 0 || s->init[v] >= 0 || s->is_input[v])
                return BAD(e, "%s: node %d (%s): output '%s' is defined twice", path, i,
                           n->name ? n->name : "", n->output[k]);
            s->producer[v] = i;
            s->out[i][s->n_out[i]++] = v;
        }
    }
    int *stamp = NULL, cap = 0;
    for (int i = 0; i < s->n_nodes; i++) index_node(s, i, &stamp, &cap);
    free(stamp);
    return 0;
}

void sg_free(sg_model_t *s)
{
    for (int i = 0; i < s->n_nodes; i++) { free(s->in[i]); free(s->out[i]); }
    free(s->in); free(s->out); free(s->n_in); free(s->n_out);
    free(s->val); free(s->producer); free(s->init); free(s->is_input);
    name_index_free(&s->names);
    if (s->m) onnx__model_proto__free_unpacked(s->m, NULL);
    memset(s, 0, sizeof *s);
}

void sg_ancestors(const sg_model_t *s, int value, unsigned char *anc)
{
    memset(anc, 0, s->n_nodes);
    int p = value >= 0 ? s->producer[value] : -1;
    if (p < 0) return;
    anc[p] = 1;
    for (int i = p; i >= 0; i--) {
        if (!anc[i]) continue;
        for (int k = 0; k < s->n_in[i]; k++) {
            int q = s->producer[s->in[i][k]];
            if (q >= 0) anc[q] = 1;
        }
    }
}

int sg_close(const sg_model_t *s, unsigned char *keep, const unsigned char *have, int out, int **cut, int *n_cut,
             perr_t *e)
{
    int p = s->producer[out];
    if (p < 0) return BAD(e, "'%s' is produced by no node", s->val[out]);
    keep[p] = 1;
    /* producers come before readers: one pass from the end pulls in every
     * producer a kept node needs, and drops what does not lead to out */
    unsigned char *need = xcalloc(s->n_nodes + 1, 1);
    need[p] = 1;
    for (int i = p; i >= 0; i--) {
        if (!keep[i] || !need[i]) { keep[i] = 0; continue; }
        for (int k = 0; k < s->n_in[i]; k++) {
            int v = s->in[i][k], q = s->producer[v];
            if (s->init[v] >= 0) continue;
            if (q >= 0 && (keep[q] || !have[v])) { keep[q] = 1; need[q] = 1; continue; }
            if (!have[v]) { free(need); return BAD(e, "'%s' has neither a value nor a producer", s->val[v]); }
        }
    }
    for (int i = p + 1; i < s->n_nodes; i++) keep[i] = 0;
    free(need);
    unsigned char *seen = xcalloc(s->n_vals + 1, 1);
    int n = 0, kept = 0;
    *cut = NULL;
    for (int i = 0; i <= p; i++) {
        if (!keep[i]) continue;
        kept++;
        for (int k = 0; k < s->n_in[i]; k++) {
            int v = s->in[i][k], q = s->producer[v];
            if (s->init[v] >= 0 || (q >= 0 && keep[q]) || seen[v]) continue;
            seen[v] = 1;
            *cut = xrealloc(*cut, (n + 1) * sizeof **cut);
            (*cut)[n++] = v;
        }
    }
    free(seen);
    *n_cut = n;
    return kept;
}

/* A ValueInfoProto of a tensor's type and static shape (freed by free_vi). */
static Onnx__ValueInfoProto *make_vi(const char *name, const tensor_t *t)
{
    Onnx__ValueInfoProto *vi = xmalloc(sizeof *vi);
    Onnx__TypeProto *ty = xmalloc(sizeof *ty);
    Onnx__TypeProto__Tensor *tt = xmalloc(sizeof *tt);
    Onnx__TensorShapeProto *sh = xmalloc(sizeof *sh);
    onnx__value_info_proto__init(vi);
    onnx__type_proto__init(ty);
    onnx__type_proto__tensor__init(tt);
    onnx__tensor_shape_proto__init(sh);
    sh->n_dim = t->ndim;
    sh->dim = xcalloc(t->ndim + 1, sizeof *sh->dim);
    for (int d = 0; d < t->ndim; d++) {
        Onnx__TensorShapeProto__Dimension *dm = xmalloc(sizeof *dm);
        onnx__tensor_shape_proto__dimension__init(dm);
        dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        dm->dim_value = t->dims[d];
        sh->dim[d] = dm;
    }
    tt->has_elem_type = 1;
    tt->elem_type = (int32_t)t->dtype;
    tt->shape = sh;
    ty->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    ty->tensor_type = tt;
    vi->name = (char *)name;
    vi->type = ty;
    return vi;
}

static void free_vi(Onnx__ValueInfoProto *vi)
{
    Onnx__TensorShapeProto *sh = vi->type->tensor_type->shape;
    for (size_t d = 0; d < sh->n_dim; d++) free(sh->dim[d]);
    free(sh->dim); free(sh); free(vi->type->tensor_type); free(vi->type); free(vi);
}

int sg_pack(const sg_model_t *s, const unsigned char *keep, const int *in, const tensor_t *const *in_t, int n_in,
            const int *out, const tensor_t *const *out_t, int n_out, const char *graph_name, uint8_t **buf,
            size_t *len, perr_t *e)
{
    const Onnx__GraphProto *og = s->m->graph;
    Onnx__GraphProto g;
    onnx__graph_proto__init(&g);
    g.name = (char *)graph_name;
    g.node = xcalloc(s->n_nodes + 1, sizeof *g.node);
    unsigned char *used = xcalloc(og->n_initializer + 1, 1);
    for (int i = 0; i < s->n_nodes; i++) {
        if (!keep[i]) continue;
        g.node[g.n_node++] = og->node[i];
        for (int k = 0; k < s->n_in[i]; k++)
            if (s->init[s->in[i][k]] >= 0) used[s->init[s->in[i][k]]] = 1;
    }
    g.initializer = xcalloc(og->n_initializer + 1, sizeof *g.initializer);
    for (size_t i = 0; i < og->n_initializer; i++)
        if (used[i]) g.initializer[g.n_initializer++] = og->initializer[i];
    g.input = xcalloc(n_in + 1, sizeof *g.input);
    for (int i = 0; i < n_in; i++) {
        if (in_t[i]->dtype == DT_SEQUENCE || in_t[i]->dtype == DT_STRING) {
            for (size_t k = 0; k < g.n_input; k++) free_vi(g.input[k]);
            free(g.input); free(g.node); free(g.initializer); free(used);
            return BAD(e, "cut input '%s' is a %s: only tensors can be graph inputs", s->val[in[i]],
                       in_t[i]->dtype == DT_SEQUENCE ? "sequence" : "string tensor");
        }
        g.input[g.n_input++] = make_vi(s->val[in[i]], in_t[i]);
    }
    g.output = xcalloc(n_out + 1, sizeof *g.output);
    for (int i = 0; i < n_out; i++) g.output[g.n_output++] = make_vi(s->val[out[i]], out_t[i]);
    Onnx__ModelProto m = *s->m;
    m.graph = &g;
    *len = onnx__model_proto__get_packed_size(&m);
    *buf = xmalloc(*len + 1);
    onnx__model_proto__pack(&m, *buf);
    for (size_t k = 0; k < g.n_input; k++) free_vi(g.input[k]);
    for (size_t k = 0; k < g.n_output; k++) free_vi(g.output[k]);
    free(g.input); free(g.output); free(g.node); free(g.initializer); free(used);
    return 0;
}
