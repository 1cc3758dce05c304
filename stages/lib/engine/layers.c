/* layers.c — the layer report: one row per layer in execution order (name,
 * op, inputs, output shapes and types, precision, storage, the rule that chose
 * it, fused-from). compare --layerwise and report read it. */
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine/engine.h"
#include "util/fsutil.h"
#include "util/jsonfile.h"

/* A value's name as infer --dump names it: inside a subgraph, prefixed
 * by the subgraph's path ("Loop_0/body/x"). */
static json_t *value_name(const char *path, const char *name)
{
    if (!path) return json_string(name);
    char buf[2048];
    snprintf(buf, sizeof buf, "%s/%s", path, name);
    return json_string(buf);
}

static json_t *layer_row(const graph_t *g, int i, int index, const char *path)
{
    const node_t *n = &g->nodes[i];
    json_t *row = json_object();
    json_object_set_new(row, "index", json_integer(index));
    if (path) json_object_set_new(row, "subgraph", json_string(path));
    json_object_set_new(row, "name", json_string(n->name));
    json_object_set_new(row, "op", json_string(n->op_type));
    if (n->domain[0]) json_object_set_new(row, "domain", json_string(n->domain));
    json_object_set_new(row, "opset", json_integer(n->opset));
    json_t *ins = json_array();
    for (int k = 0; k < n->n_in; k++)
        json_array_append_new(ins, n->in[k] >= 0 && g->vals[n->in[k]].kind == VAL_ACTIVATION
                                       ? value_name(path, g->vals[n->in[k]].name)
                                       : json_string(n->in[k] >= 0 ? g->vals[n->in[k]].name : ""));
    json_object_set_new(row, "inputs", ins);
    json_t *outs = json_array();
    for (int k = 0; k < n->n_out; k++) {
        if (n->out[k] < 0) continue;
        const value_t *v = &g->vals[n->out[k]];
        json_t *o = json_object();
        json_object_set_new(o, "name", value_name(path, v->name));
        json_t *shape = json_array();
        for (int d = 0; v->shape_known && d < v->t.ndim; d++) json_array_append_new(shape, json_integer(v->t.dims[d]));
        json_object_set_new(o, "shape", v->shape_known ? shape : (json_decref(shape), json_null()));
        json_object_set_new(o, "dtype", json_string(dtype_name(v->t.dtype)));
        json_array_append_new(outs, o);
    }
    json_object_set_new(row, "outputs", outs);
    json_object_set_new(row, "precision", json_string(precision_name(n->precision)));
    json_object_set_new(row, "storage", json_string(dtype_name(n->storage)));
    json_object_set_new(row, "reason", json_string(n->reason ? n->reason : "default"));
    json_t *ff = json_array();
    if (n->fused_from && n->fused_from[0]) {
        char *s = xstrdup(n->fused_from), *save = NULL;
        for (char *t = strtok_r(s, ",", &save); t; t = strtok_r(NULL, ",", &save)) json_array_append_new(ff, json_string(t));
        free(s);
    }
    json_object_set_new(row, "fused_from", ff);
    if (n->range_note) json_object_set_new(row, "out_of_range", json_string(n->range_note));
    return row;
}

/* Rows in execution order; a control-flow node's subgraph layers follow it. */
static void add_rows(json_t *layers, const graph_t *g, const char *path)
{
    for (int i = 0; i < g->n_nodes; i++) {
        const node_t *n = &g->nodes[i];
        json_array_append_new(layers, layer_row(g, i, (int)json_array_size(layers), path));
        for (int k = 0; k < n->n_sub; k++) {
            char sub[2048];
            snprintf(sub, sizeof sub, "%s/%s", n->name, n->sub_attr[k]);
            add_rows(layers, n->sub[k], sub);
        }
    }
}

/* One note, printf-style, appended to the layer report's notes. */
static void add_note(json_t *notes, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_note(json_t *notes, const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    json_array_append_new(notes, json_string(buf));
}

/* What the build did to the graph that the rows do not show. */
static void add_notes(json_t *notes, const graph_t *g)
{
    if (g->resorted)
        add_note(notes, "graph re-sorted: the model's nodes were not in topological order; %d moved (as ONNX Runtime "
                        "sorts; the file's order kept wherever valid)", g->resorted);
    if (g->widened)
        add_note(notes, "%d float16 activations carried as float32 rounded to float16 (storage float16): the same "
                        "values, fused as a GPU engine fuses them (build-engine --no-widen runs them as float16 tensors)",
                 g->widened);
}

int layers_write_json(const graph_t *g, const engine_meta_t *m, const char *path, perr_t *e)
{
    json_t *root = json_object();
    json_object_set_new(root, "source", json_string(m->source_path ? m->source_path : ""));
    json_object_set_new(root, "source_sha256", json_string(m->source_sha256));
    json_object_set_new(root, "precision", json_string(m->precision ? m->precision : "fp32"));
    json_object_set_new(root, "arena_bytes", json_integer(m->arena_bytes));
    json_t *notes = json_array();
    add_notes(notes, g);
    if (json_array_size(notes)) json_object_set_new(root, "notes", notes);
    else json_decref(notes);
    json_t *outs = json_array();
    for (int i = 0; i < g->n_outputs; i++) json_array_append_new(outs, json_string(g->vals[g->outputs[i]].name));
    json_object_set_new(root, "graph_outputs", outs);
    json_t *layers = json_array();
    add_rows(layers, g, NULL);
    json_object_set_new(root, "layers", layers);
    int rc = write_json(path, root, JSON_INDENT(1) | JSON_PRESERVE_ORDER, e);
    json_decref(root);
    return rc;
}
