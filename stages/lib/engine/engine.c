/* engine.c — writing and reading engine files. Constants are stored as ONNX
 * TensorProtos in their storage type; attributes as ONNX AttributeProtos, so
 * the reader rebuilds exactly the graph the builder optimised. */
#include <stdlib.h>
#include <string.h>
#include "engine/engine.h"
#include "engine/narrow.h"
#include "engine.pb-c.h"
#include "io/tensorproto.h"
#include "ops/run.h"
#include "precision/precision.h"
#include "util/fsutil.h"
#include "version.h"

/* Everything pack_graph allocates, freed after the message is written. */
typedef struct packer { void **p; int n, cap; } packer_t;

static void *pk_alloc(packer_t *pk, size_t n, size_t size)
{
    if (pk->n == pk->cap) {
        pk->cap = pk->cap ? 2 * pk->cap : 64;
        pk->p = xrealloc(pk->p, pk->cap * sizeof *pk->p);
    }
    return pk->p[pk->n++] = xcalloc(n + 1, size);
}

static Parity__Engine *pack_graph(const graph_t *g, int narrow, packer_t *pk);

/* The subgraph a control-flow node needs and lacks, or NULL (the executor
 * runs If's branches and Loop's and Scan's bodies; a file may omit them). */
static const char *missing_subgraph(const node_t *n)
{
    if (n->domain && n->domain[0]) return NULL;
    if (!strcmp(n->op_type, "If"))
        return !node_sub(n, "then_branch") ? "then_branch" : !node_sub(n, "else_branch") ? "else_branch" : NULL;
    if (!strcmp(n->op_type, "Loop") || !strcmp(n->op_type, "Scan")) return node_sub(n, "body") ? NULL : "body";
    return NULL;
}

static void pack_node(const graph_t *g, const node_t *n, Parity__EngineNode *en, int narrow, packer_t *pk)
{
    static char empty[] = "";
    parity__engine_node__init(en);
    en->name = n->name; en->op_type = n->op_type; en->domain = n->domain;
    en->has_opset = 1; en->opset = n->opset;
    en->n_input = n->n_in; en->input = pk_alloc(pk, n->n_in, sizeof(char *));
    en->n_output = n->n_out; en->output = pk_alloc(pk, n->n_out, sizeof(char *));
    for (int k = 0; k < n->n_in; k++) en->input[k] = n->in[k] >= 0 ? g->vals[n->in[k]].name : empty;
    for (int k = 0; k < n->n_out; k++) en->output[k] = n->out[k] >= 0 ? g->vals[n->out[k]].name : empty;
    en->n_attribute = n->n_attr;
    en->attribute = n->attr;
    en->precision = (char *)precision_name(n->precision);
    en->has_storage = 1; en->storage = n->storage;
    en->reason = n->reason ? n->reason : empty;
    en->fused_from = n->fused_from ? n->fused_from : empty;
    en->has_round_inputs = 1;
    en->round_inputs = n->round_inputs;
    en->has_activation = en->has_act_a = en->has_act_b = n->act != 0;
    en->activation = n->act;
    en->act_a = n->act_a;
    en->act_b = n->act_b;
    en->has_residual = en->residual = n->residual != 0;
    en->has_n_implicit_inputs = n->n_implicit != 0;
    en->n_implicit_inputs = n->n_implicit;
    en->n_subgraph = n->n_sub;
    en->subgraph = pk_alloc(pk, n->n_sub, sizeof *en->subgraph);
    for (int k = 0; k < n->n_sub; k++) {
        Parity__EngineSubgraph *sg = pk_alloc(pk, 1, sizeof *sg);
        parity__engine_subgraph__init(sg);
        sg->attr = n->sub_attr[k];
        sg->graph = pack_graph(n->sub[k], narrow, pk);
        en->subgraph[k] = sg;
    }
}

/* A constant as a TensorProto: float32 ones that a narrow type holds
 * exactly in that type (listed in widen), the others as they are. */
static void pack_constant(const value_t *v, int narrow, Parity__Engine *eng, Onnx__TensorProto *p, packer_t *pk)
{
    tensor_to_tensorproto(&v->t, v->name, p);
    if (!narrow || v->t.dtype != DT_FLOAT) return;
    uint16_t *buf = pk_alloc(pk, (size_t)tensor_numel(&v->t), sizeof *buf);
    dtype_t dt = narrow_exact(&v->t, buf);
    if (dt == DT_UNDEFINED) return;
    p->data_type = (int32_t)dt;
    p->raw_data.data = (uint8_t *)buf;
    p->raw_data.len = (size_t)tensor_numel(&v->t) * sizeof *buf;
    eng->widen[eng->n_widen++] = (uint32_t)eng->n_constant;
}

/* The graph as an Engine message (subgraphs nested); pointers into g. */
static Parity__Engine *pack_graph(const graph_t *g, int narrow, packer_t *pk)
{
    Parity__Engine *eng = pk_alloc(pk, 1, sizeof *eng);
    parity__engine__init(eng);
    eng->has_n_formal_inputs = 1;
    eng->n_formal_inputs = g->n_formal_inputs;
    Parity__OpsetEntry *ops = pk_alloc(pk, g->n_opsets, sizeof *ops);
    eng->opset = pk_alloc(pk, g->n_opsets, sizeof *eng->opset);
    for (int i = 0; i < g->n_opsets; i++) {
        parity__opset_entry__init(&ops[i]);
        ops[i].domain = g->opsets[i].domain;
        ops[i].has_version = 1;
        ops[i].version = g->opsets[i].version;
        eng->opset[i] = &ops[i];
    }
    eng->n_opset = g->n_opsets;
    eng->input = pk_alloc(pk, g->n_inputs, sizeof(char *));
    eng->output = pk_alloc(pk, g->n_outputs, sizeof(char *));
    for (int i = 0; i < g->n_inputs; i++) eng->input[i] = g->vals[g->inputs[i]].name;
    for (int i = 0; i < g->n_outputs; i++) eng->output[i] = g->vals[g->outputs[i]].name;
    eng->n_input = g->n_inputs;
    eng->n_output = g->n_outputs;
    Parity__EngineNode *nodes = pk_alloc(pk, g->n_nodes, sizeof *nodes);
    eng->node = pk_alloc(pk, g->n_nodes, sizeof *eng->node);
    for (int i = 0; i < g->n_nodes; i++) {
        pack_node(g, &g->nodes[i], &nodes[i], narrow, pk);
        eng->node[i] = &nodes[i];
    }
    eng->n_node = g->n_nodes;
    int nc = 0, nv = 0;
    for (int i = 0; i < g->n_vals; i++) nc += g->vals[i].kind == VAL_CONST && g->vals[i].t.data;
    Onnx__TensorProto *cs = pk_alloc(pk, nc, sizeof *cs);
    eng->constant = pk_alloc(pk, nc, sizeof *eng->constant);
    Parity__EngineValue *vs = pk_alloc(pk, g->n_vals, sizeof *vs);
    eng->value = pk_alloc(pk, g->n_vals, sizeof *eng->value);
    eng->widen = pk_alloc(pk, nc, sizeof *eng->widen);
    nc = 0;
    for (int i = 0; i < g->n_vals; i++) {
        const value_t *v = &g->vals[i];
        if (v->kind == VAL_CONST && v->t.data) {
            eng->n_constant = nc;   /* the index pack_constant records */
            pack_constant(v, narrow, eng, &cs[nc], pk);
            eng->constant[nc] = &cs[nc];
            nc++;
            continue;
        }
        if (v->kind == VAL_CONST || (v->producer < 0 && v->kind != VAL_INPUT)) continue;
        Parity__EngineValue *ev = &vs[nv];
        parity__engine_value__init(ev);
        ev->name = v->name;
        ev->has_dtype = 1; ev->dtype = v->t.dtype;
        ev->n_dims = v->t.ndim; ev->dims = (int64_t *)v->t.dims;
        ev->has_shape_known = 1; ev->shape_known = v->shape_known;
        ev->has_offset = 1; ev->offset = v->offset;
        eng->value[nv++] = ev;
    }
    eng->n_constant = nc;
    eng->n_value = nv;
    return eng;
}

int engine_write(const graph_t *g, const engine_meta_t *m, const char *path, perr_t *e)
{
    packer_t pk = {0};
    Parity__Engine *eng = pack_graph(g, !m->no_narrow, &pk);
    eng->has_format_version = 1;
    eng->format_version = ENGINE_FORMAT_VERSION;
    eng->source_sha256 = (char *)m->source_sha256;
    eng->source_path = (char *)(m->source_path ? m->source_path : "");
    eng->precision = (char *)(m->precision ? m->precision : "fp32");
    eng->builder = "parity " PARITY_VERSION;
    eng->has_arena_bytes = 1;
    eng->arena_bytes = m->arena_bytes;
    size_t len = parity__engine__get_packed_size(eng);
    uint8_t *buf = xmalloc(len);
    parity__engine__pack(eng, buf);
    int rc = atomic_write(path, buf, len, e);
    free(buf);
    for (int i = 0; i < pk.n; i++) free(pk.p[i]);
    free(pk.p);
    return rc;
}

/* Every name the reader relies on must be present (proto2 leaves a missing
 * optional string NULL): a damaged file is bad input, not a crash. */
static int check_names(const Parity__Engine *eng, const char *path, perr_t *e)
{
    for (size_t i = 0; i < eng->n_value; i++)
        if (!eng->value[i]->name) return BAD(e, "%s: value %zu has no name", path, i);
    for (size_t i = 0; i < eng->n_node; i++) {
        const Parity__EngineNode *n = eng->node[i];
        if (!n->name || !n->op_type || !n->op_type[0] || !n->domain)
            return BAD(e, "%s: node %zu is missing its name, op type or domain", path, i);
        size_t named = 0;   /* a node that writes nothing is damage: kernels write their outputs */
        for (size_t k = 0; k < n->n_output; k++) named += n->output[k] && n->output[k][0];
        if (!named) return BAD(e, "%s: node '%s' (%s) has no outputs", path, n->name, n->op_type);
        int rnn = !strcmp(n->op_type, "RNN") || !strcmp(n->op_type, "GRU") || !strcmp(n->op_type, "LSTM");
        if ((!n->output[0] || !n->output[0][0]) && !rnn)   /* output 0 is what every kernel writes */
            return BAD(e, "%s: node '%s' (%s): its first output has no name", path, n->name, n->op_type);
        for (size_t k = 0; k < n->n_attribute; k++)
            if (!n->attribute[k]->name) return BAD(e, "%s: node '%s': attribute %zu has no name", path, n->name, k);
        for (size_t k = 0; k < n->n_subgraph; k++) {
            const Parity__EngineSubgraph *sg = n->subgraph[k];
            if (!sg->attr || !sg->graph) return BAD(e, "%s: node '%s': subgraph %zu is incomplete", path, n->name, k);
            if (check_names(sg->graph, path, e)) return -1;
        }
        if (n->n_implicit_inputs < 0 || (size_t)n->n_implicit_inputs > n->n_input)
            return BAD(e, "%s: node '%s': %d implicit inputs of %zu", path, n->name, n->n_implicit_inputs, n->n_input);
    }
    for (size_t i = 0; i < eng->n_opset; i++)
        if (!eng->opset[i]->domain) return BAD(e, "%s: opset entry %zu has no domain", path, i);
    for (size_t i = 0; i < eng->n_constant; i++)
        if (!eng->constant[i]->name) return BAD(e, "%s: constant %zu has no name", path, i);
    return 0;
}

/* A value's description drives the executor's arena: its type and shape
 * must be ones a tensor can have, and its bytes must lie inside the arena
 * the file declares. */
static int check_value(const Parity__Engine *eng, const Parity__EngineValue *ev, const char *path, perr_t *e)
{
    if (ev->n_dims > TENSOR_MAX_DIMS) return BAD(e, "%s: value '%s' rank too large", path, ev->name);
    if (!ev->shape_known) return 0;   /* sequences carry type codes of their own */
    if (ev->dtype && !dtype_size((dtype_t)ev->dtype))
        return BAD(e, "%s: value '%s': element type %d is not supported", path, ev->name, ev->dtype);
    perr_t e2 = {0};
    if (tensor_check_shape(ev->dtype ? (dtype_t)ev->dtype : DT_FLOAT, (int)ev->n_dims, ev->dims, &e2))
        return BAD(e, "%s: value '%s': %s", path, ev->name, e2.msg);
    tensor_t shape = {.dtype = ev->dtype ? (dtype_t)ev->dtype : DT_FLOAT, .ndim = (int)ev->n_dims};
    for (size_t k = 0; k < ev->n_dims; k++) shape.dims[k] = ev->dims[k];
    int64_t bytes = (int64_t)tensor_nbytes(&shape);
    /* the planner places values at multiples of 64 bytes (the arena is one
     * aligned_alloc of 64-byte units) */
    if (ev->offset >= 0 && ev->offset % 64)
        return BAD(e, "%s: value '%s': arena offset %lld is not a multiple of 64", path, ev->name, (long long)ev->offset);
    if (ev->offset < -1 || (ev->offset >= 0 && (ev->offset > eng->arena_bytes || bytes > eng->arena_bytes - ev->offset)))
        return BAD(e, "%s: value '%s': arena offset %lld (%lld bytes) outside the %lld-byte arena", path, ev->name,
                   (long long)ev->offset, (long long)bytes, (long long)eng->arena_bytes);
    return 0;
}

/* Engine.widen: increasing indices of float16/bfloat16 constants. */
static int check_widen(const Parity__Engine *eng, const char *path, perr_t *e)
{
    for (size_t k = 0; k < eng->n_widen; k++) {
        uint32_t i = eng->widen[k];
        if (i >= eng->n_constant || (k > 0 && i <= eng->widen[k - 1]))
            return BAD(e, "%s: widen entry %zu: constant index %u out of order or beyond the %zu constants", path, k, i,
                       eng->n_constant);
        int32_t dt = eng->constant[i]->data_type;
        if (dt != DT_FLOAT16 && dt != DT_BFLOAT16)
            return BAD(e, "%s: constant '%s' is listed to widen but holds element type %d, not float16/bfloat16", path,
                       eng->constant[i]->name, dt);
    }
    return 0;
}

static int value_of(graph_t *g, const char *name)
{
    return name[0] ? graph_value(g, name) : -1;
}

static graph_t *unpack_graph(const Parity__Engine *eng, const char *path, perr_t *e)
{
    graph_t *g = graph_new(path);
    g->opsets = xcalloc(eng->n_opset + 1, sizeof *g->opsets);
    for (size_t i = 0; i < eng->n_opset; i++) {
        g->opsets[i].domain = xstrdup(eng->opset[i]->domain ? eng->opset[i]->domain : "");
        g->opsets[i].version = (int)eng->opset[i]->version;
    }
    g->n_opsets = (int)eng->n_opset;
    if (check_widen(eng, path, e)) goto fail_g;
    size_t w = 0;   /* the next entry of eng->widen (increasing) */
    for (size_t i = 0; i < eng->n_constant; i++) {
        if (graph_find(g, eng->constant[i]->name) >= 0) {
            BAD(e, "%s: constant '%s' is stored twice", path, eng->constant[i]->name);
            goto fail_g;
        }
        tensor_t t;
        if (tensorproto_to_tensor(eng->constant[i], NULL, &t, e)) { perr_prefix(e, "%s: ", path); goto fail_g; }
        if (w < eng->n_widen && eng->widen[w] == i) { narrow_widen(&t); w++; }
        int v = graph_value(g, eng->constant[i]->name);
        g->vals[v].t = t;
        g->vals[v].kind = VAL_CONST;
        g->vals[v].shape_known = 1;
    }
    for (size_t i = 0; i < eng->n_value; i++) {
        const Parity__EngineValue *ev = eng->value[i];
        if (check_value(eng, ev, path, e)) goto fail_g;
        int v = graph_find(g, ev->name);
        if (v >= 0) {   /* a constant's shape is its data's, a value is described once */
            BAD(e, "%s: value '%s' is described twice", path, ev->name);
            goto fail_g;
        }
        v = graph_value(g, ev->name);
        value_t *val = &g->vals[v];
        val->t.dtype = (dtype_t)ev->dtype;
        val->t.ndim = (int)ev->n_dims;
        for (size_t k = 0; k < ev->n_dims; k++) val->t.dims[k] = ev->dims[k];
        val->shape_known = ev->shape_known;
        val->offset = ev->offset;
    }
    g->inputs = xcalloc(eng->n_input + 1, sizeof(int));
    size_t n_formal = eng->has_n_formal_inputs && eng->n_formal_inputs >= 0 ? (size_t)eng->n_formal_inputs : eng->n_input;
    for (size_t i = 0; i < eng->n_input; i++) {
        int v = graph_value(g, eng->input[i]);
        /* a subgraph's captured outer values (the inputs past the formal
         * ones) may be constants the subgraph's folding also saw */
        int ok = g->vals[v].kind == VAL_ACTIVATION || (i >= n_formal && g->vals[v].kind == VAL_CONST);
        if (!ok) { BAD(e, "%s: input '%s' is a constant or listed twice", path, eng->input[i]); goto fail_g; }
        g->vals[v].kind = VAL_INPUT;
        g->inputs[g->n_inputs++] = v;
    }
    for (size_t i = 0; i < eng->n_node; i++) {
        const Parity__EngineNode *en = eng->node[i];
        int *in = xcalloc(en->n_input + 1, sizeof(int)), *out = xcalloc(en->n_output + 1, sizeof(int));
        for (size_t k = 0; k < en->n_input; k++) in[k] = value_of(g, en->input[k]);
        for (size_t k = 0; k < en->n_output; k++) out[k] = value_of(g, en->output[k]);
        int ni = graph_add_node(g, en->name, en->op_type, en->domain, (int)en->opset,
                                (int)en->n_input, in, (int)en->n_output, out);
        free(in); free(out);
        node_t *n = &g->nodes[ni];
        n->n_attr = (int)en->n_attribute;
        n->attr = xcalloc(en->n_attribute + 1, sizeof *n->attr);
        if (en->n_attribute) memcpy(n->attr, en->attribute, en->n_attribute * sizeof *n->attr);
        int p = precision_from_name(en->precision ? en->precision : "fp32");
        if (p < 0) { BAD(e, "%s: node '%s': unknown precision '%s'", path, en->name, en->precision); goto fail_g; }
        n->precision = (precision_t)p;
        n->storage = en->has_storage ? (dtype_t)en->storage : DT_FLOAT;
        if (en->reason && en->reason[0]) n->reason = xstrdup(en->reason);
        if (en->fused_from && en->fused_from[0]) n->fused_from = xstrdup(en->fused_from);
        n->round_inputs = en->round_inputs;
        if (en->activation < ACT_NONE || en->activation > ACT_SILU) {
            BAD(e, "%s: node '%s': unknown fused activation %d", path, en->name, en->activation);
            goto fail_g;
        }
        n->act = en->activation;
        n->act_a = en->act_a;
        n->act_b = en->act_b;
        n->n_implicit = en->n_implicit_inputs;
        n->residual = en->residual;
        if (n->residual && (n->n_in < 2 || n->n_implicit || n->in[n->n_in - 1] < 0)) {
            BAD(e, "%s: node '%s': a residual input needs a named last input and no implicit inputs", path, en->name);
            goto fail_g;
        }
        n->sub = xcalloc(en->n_subgraph + 1, sizeof *n->sub);
        n->sub_attr = xcalloc(en->n_subgraph + 1, sizeof *n->sub_attr);
        for (size_t k = 0; k < en->n_subgraph; k++) {
            n->sub[k] = unpack_graph(en->subgraph[k]->graph, path, e);
            if (!n->sub[k]) goto fail_g;
            n->sub_attr[n->n_sub++] = xstrdup(en->subgraph[k]->attr);
        }
        const char *need = missing_subgraph(n);
        if (need) {
            BAD(e, "%s: node '%s' (%s): no %s subgraph", path, n->name, n->op_type, need);
            goto fail_g;
        }
    }
    g->outputs = xcalloc(eng->n_output + 1, sizeof(int));
    for (size_t i = 0; i < eng->n_output; i++) {
        int v = graph_find(g, eng->output[i]);
        if (v < 0) { BAD(e, "%s: output '%s' is produced by nothing", path, eng->output[i]); goto fail_g; }
        g->outputs[g->n_outputs++] = v;
    }
    g->n_formal_inputs = eng->has_n_formal_inputs ? eng->n_formal_inputs : g->n_inputs;
    if (g->n_formal_inputs < 0 || g->n_formal_inputs > g->n_inputs) {
        BAD(e, "%s: %d formal inputs of %d", path, g->n_formal_inputs, g->n_inputs);
        goto fail_g;
    }
    graph_index(g);
    return g;
fail_g:
    graph_free(g);
    return NULL;
}

graph_t *engine_read(const char *path, engine_meta_t *m, perr_t *e)
{
    char *buf;
    size_t len;
    if (read_file(path, &buf, &len, e)) return NULL;
    Parity__Engine *eng = parity__engine__unpack(NULL, len, (uint8_t *)buf);
    free(buf);
    if (!eng) {
        BAD(e, "%s: not a parity engine file (protobuf parse failed: truncated or garbage)", path);
        return NULL;
    }
    if (!eng->has_format_version || eng->format_version < ENGINE_FORMAT_OLDEST || eng->format_version > ENGINE_FORMAT_VERSION) {
        BAD(e, "%s: engine format version %u, this parity reads %d to %d (rebuild the engine)",
            path, eng->format_version, ENGINE_FORMAT_OLDEST, ENGINE_FORMAT_VERSION);
        parity__engine__free_unpacked(eng, NULL);
        return NULL;
    }
    if (check_names(eng, path, e)) {
        parity__engine__free_unpacked(eng, NULL);
        return NULL;
    }
    graph_t *g = unpack_graph(eng, path, e);
    if (!g) {
        parity__engine__free_unpacked(eng, NULL);
        return NULL;
    }
    g->keep = xmalloc(sizeof *g->keep);
    g->keep[g->n_keep++] = eng;
    if (m) {
        memset(m, 0, sizeof *m);
        snprintf(m->source_sha256, sizeof m->source_sha256, "%s", eng->source_sha256 ? eng->source_sha256 : "");
        m->source_path = eng->source_path;
        m->precision = eng->precision;
        m->arena_bytes = eng->arena_bytes;
    }
    if (resolve_ops(g, e)) goto fail;
    graph_index(g);
    precision_mark_kept_storage(g);
    return g;
fail:
    graph_free(g);
    return NULL;
}
