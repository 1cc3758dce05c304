/* engine.c — writing and reading engine files. Constants are stored as ONNX
 * TensorProtos in their storage type; attributes as ONNX AttributeProtos, so
 * the reader rebuilds exactly the graph the builder optimised. */
#include <stdlib.h>
#include <string.h>
#include "engine/engine.h"
#include "engine.pb-c.h"
#include "io/tensorproto.h"
#include "ops/run.h"
#include "util/fsutil.h"

#define PARITY_VERSION "0.1.0"

int engine_write(const graph_t *g, const engine_meta_t *m, const char *path, perr_t *e)
{
    Parity__Engine eng = PARITY__ENGINE__INIT;
    eng.has_format_version = 1;
    eng.format_version = ENGINE_FORMAT_VERSION;
    eng.source_sha256 = (char *)m->source_sha256;
    eng.source_path = (char *)(m->source_path ? m->source_path : "");
    eng.precision = (char *)(m->precision ? m->precision : "fp32");
    eng.builder = "parity " PARITY_VERSION;
    eng.has_arena_bytes = 1;
    eng.arena_bytes = m->arena_bytes;

    Parity__OpsetEntry *ops = xcalloc(g->n_opsets + 1, sizeof *ops);
    Parity__OpsetEntry **opp = xcalloc(g->n_opsets + 1, sizeof *opp);
    for (int i = 0; i < g->n_opsets; i++) {
        parity__opset_entry__init(&ops[i]);
        ops[i].domain = g->opsets[i].domain;
        ops[i].has_version = 1;
        ops[i].version = g->opsets[i].version;
        opp[i] = &ops[i];
    }
    eng.n_opset = g->n_opsets;
    eng.opset = opp;

    char **ins = xcalloc(g->n_inputs + 1, sizeof *ins), **outs = xcalloc(g->n_outputs + 1, sizeof *outs);
    for (int i = 0; i < g->n_inputs; i++) ins[i] = g->vals[g->inputs[i]].name;
    for (int i = 0; i < g->n_outputs; i++) outs[i] = g->vals[g->outputs[i]].name;
    eng.n_input = g->n_inputs; eng.input = ins;
    eng.n_output = g->n_outputs; eng.output = outs;

    Parity__EngineNode *nodes = xcalloc(g->n_nodes + 1, sizeof *nodes);
    Parity__EngineNode **np = xcalloc(g->n_nodes + 1, sizeof *np);
    char **names = NULL;
    int n_names = 0;
    static char empty[] = "";
    for (int i = 0; i < g->n_nodes; i++) {
        const node_t *n = &g->nodes[i];
        Parity__EngineNode *en = &nodes[i];
        parity__engine_node__init(en);
        en->name = n->name; en->op_type = n->op_type; en->domain = n->domain;
        en->has_opset = 1; en->opset = n->opset;
        en->n_input = n->n_in; en->input = xcalloc(n->n_in + 1, sizeof(char *));
        en->n_output = n->n_out; en->output = xcalloc(n->n_out + 1, sizeof(char *));
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
        np[i] = en;
    }
    (void)names; (void)n_names;
    eng.n_node = g->n_nodes; eng.node = np;

    int nc = 0, nv = 0;
    for (int i = 0; i < g->n_vals; i++) nc += g->vals[i].kind == VAL_CONST && g->vals[i].t.data;
    Onnx__TensorProto *cs = xcalloc(nc + 1, sizeof *cs), **csp = xcalloc(nc + 1, sizeof *csp);
    Parity__EngineValue *vs = xcalloc(g->n_vals + 1, sizeof *vs), **vsp = xcalloc(g->n_vals + 1, sizeof *vsp);
    nc = 0;
    for (int i = 0; i < g->n_vals; i++) {
        const value_t *v = &g->vals[i];
        if (v->kind == VAL_CONST && v->t.data) {
            tensor_to_tensorproto(&v->t, v->name, &cs[nc]);
            csp[nc] = &cs[nc];
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
        vsp[nv++] = ev;
    }
    eng.n_constant = nc; eng.constant = csp;
    eng.n_value = nv; eng.value = vsp;

    size_t len = parity__engine__get_packed_size(&eng);
    uint8_t *buf = xmalloc(len);
    parity__engine__pack(&eng, buf);
    int rc = atomic_write(path, buf, len, e);
    free(buf);
    for (int i = 0; i < g->n_nodes; i++) { free(nodes[i].input); free(nodes[i].output); }
    free(nodes); free(np); free(cs); free(csp); free(vs); free(vsp);
    free(ins); free(outs); free(ops); free(opp);
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
        for (size_t k = 0; k < n->n_attribute; k++)
            if (!n->attribute[k]->name) return BAD(e, "%s: node '%s': attribute %zu has no name", path, n->name, k);
    }
    for (size_t i = 0; i < eng->n_opset; i++)
        if (!eng->opset[i]->domain) return BAD(e, "%s: opset entry %zu has no domain", path, i);
    for (size_t i = 0; i < eng->n_constant; i++)
        if (!eng->constant[i]->name) return BAD(e, "%s: constant %zu has no name", path, i);
    return 0;
}

static int value_of(graph_t *g, const char *name)
{
    return name[0] ? graph_value(g, name) : -1;
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
    if (!eng->has_format_version || eng->format_version != ENGINE_FORMAT_VERSION) {
        BAD(e, "%s: engine format version %u, this parity reads %d (rebuild the engine)",
            path, eng->format_version, ENGINE_FORMAT_VERSION);
        parity__engine__free_unpacked(eng, NULL);
        return NULL;
    }
    if (check_names(eng, path, e)) {
        parity__engine__free_unpacked(eng, NULL);
        return NULL;
    }
    graph_t *g = graph_new(path);
    g->keep = xmalloc(sizeof *g->keep);
    g->keep[g->n_keep++] = eng;
    if (m) {
        memset(m, 0, sizeof *m);
        snprintf(m->source_sha256, sizeof m->source_sha256, "%s", eng->source_sha256 ? eng->source_sha256 : "");
        m->source_path = eng->source_path;
        m->precision = eng->precision;
        m->arena_bytes = eng->arena_bytes;
    }
    g->opsets = xcalloc(eng->n_opset + 1, sizeof *g->opsets);
    for (size_t i = 0; i < eng->n_opset; i++) {
        g->opsets[i].domain = xstrdup(eng->opset[i]->domain ? eng->opset[i]->domain : "");
        g->opsets[i].version = (int)eng->opset[i]->version;
    }
    g->n_opsets = (int)eng->n_opset;
    for (size_t i = 0; i < eng->n_constant; i++) {
        tensor_t t;
        if (tensorproto_to_tensor(eng->constant[i], NULL, &t, e)) goto fail;
        int v = graph_value(g, eng->constant[i]->name ? eng->constant[i]->name : "");
        g->vals[v].t = t;
        g->vals[v].kind = VAL_CONST;
        g->vals[v].shape_known = 1;
    }
    for (size_t i = 0; i < eng->n_value; i++) {
        const Parity__EngineValue *ev = eng->value[i];
        if (ev->n_dims > TENSOR_MAX_DIMS) { BAD(e, "%s: value '%s' rank too large", path, ev->name); goto fail; }
        int v = graph_value(g, ev->name);
        value_t *val = &g->vals[v];
        val->t.dtype = (dtype_t)ev->dtype;
        val->t.ndim = (int)ev->n_dims;
        for (size_t k = 0; k < ev->n_dims; k++) val->t.dims[k] = ev->dims[k];
        val->shape_known = ev->shape_known;
        val->offset = ev->offset;
    }
    g->inputs = xcalloc(eng->n_input + 1, sizeof(int));
    for (size_t i = 0; i < eng->n_input; i++) {
        int v = graph_value(g, eng->input[i]);
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
        if (p < 0) { BAD(e, "%s: node '%s': unknown precision '%s'", path, en->name, en->precision); goto fail; }
        n->precision = (precision_t)p;
        n->storage = en->has_storage ? (dtype_t)en->storage : DT_FLOAT;
        if (en->reason && en->reason[0]) n->reason = xstrdup(en->reason);
        if (en->fused_from && en->fused_from[0]) n->fused_from = xstrdup(en->fused_from);
        n->round_inputs = en->round_inputs;
        if (en->activation < ACT_NONE || en->activation > ACT_SILU) {
            BAD(e, "%s: node '%s': unknown fused activation %d", path, en->name, en->activation);
            goto fail;
        }
        n->act = en->activation;
        n->act_a = en->act_a;
        n->act_b = en->act_b;
    }
    g->outputs = xcalloc(eng->n_output + 1, sizeof(int));
    for (size_t i = 0; i < eng->n_output; i++) {
        int v = graph_find(g, eng->output[i]);
        if (v < 0) { BAD(e, "%s: output '%s' is produced by nothing", path, eng->output[i]); goto fail; }
        g->outputs[g->n_outputs++] = v;
    }
    if (resolve_ops(g, e)) goto fail;
    graph_index(g);
    return g;
fail:
    graph_free(g);
    return NULL;
}
