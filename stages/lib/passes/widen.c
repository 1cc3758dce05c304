/* widen.c — FP16-storage models (what onnxconverter-common's float16
 * converter writes: FLOAT16 weights and activations, FP32 graph I/O through
 * Cast nodes) carried as float32 values rounded to float16, as a GPU engine
 * keeps them in its own layout. Executed as written, every float16 layer
 * widens its inputs and weights on each run and narrows its output again,
 * and no activation fuses (fusion works on float32 values); carried as
 * float32, each layer stores its output rounded to float16 (storage
 * float16, the model's type) and Relu and friends fuse into the Conv before
 * it. The values are the same: a float16-typed layer already computed in
 * float32 on exactly widened inputs and rounded its outputs to nearest
 * even; fusing an activation that commutes with that rounding (Relu, Clip,
 * LeakyRelu) changes no bit, one that does not (Sigmoid) is then the GPU's
 * fused form (passes/fuse.c).
 *
 * All or nothing, so no float16 tensor meets a float32 one it did not meet
 * before: graphs with control flow, float16 graph inputs or outputs, an
 * activation of unknown type, or a float16 value made from no float16 input
 * (ConstantOfShape with a float16 value, a Random* of dtype float16) are
 * left as they are. */
#include <stdlib.h>
#include <string.h>
#include "passes/passes.h"
#include "ops/ops.h"

static int is_half(dtype_t t)
{
    return t == DT_FLOAT16 || t == DT_BFLOAT16;
}

static int is_cast(const node_t *n)
{
    return !n->domain[0] && (!strcmp(n->op_type, "Cast") || !strcmp(n->op_type, "CastLike"));
}

/* The half type a node's float outputs have in the model, as the executor
 * gives them: a typed kernel with a half input narrows every float output
 * to it (ops/run.c), a data-movement kernel or Cast keeps its output's
 * own type. DT_UNDEFINED when none; -1 when its half output comes from no
 * half input (the graph cannot be widened). */
static int model_storage(const graph_t *g, const node_t *n)
{
    dtype_t in_half = DT_UNDEFINED, out_half = DT_UNDEFINED;
    for (int k = 0; k < n->n_in; k++)
        if (n->in[k] >= 0 && is_half(g->vals[n->in[k]].t.dtype)) in_half = g->vals[n->in[k]].t.dtype;
    for (int k = 0; k < n->n_out; k++)
        if (n->out[k] >= 0 && is_half(g->vals[n->out[k]].t.dtype)) out_half = g->vals[n->out[k]].t.dtype;
    if (!n->op->any_type) {
        if (out_half && !in_half) return -1;
        return in_half;
    }
    if (out_half && !in_half && !is_cast(n)) return -1;
    return out_half;
}

static int widenable(const graph_t *g)
{
    int half = 0;
    for (int i = 0; i < g->n_vals; i++) {
        const value_t *v = &g->vals[i];
        if (v->kind == VAL_ACTIVATION && v->producer >= 0 && (v->t.dtype == DT_UNDEFINED || v->t.dtype == DT_SEQUENCE))
            return 0;
        if (!is_half(v->t.dtype)) continue;
        half = 1;
        if (v->kind == VAL_INPUT || v->is_output) return 0;
        if (v->kind == VAL_CONST && !v->t.data) return 0;
    }
    for (int i = 0; i < g->n_nodes && half; i++)
        if (g->nodes[i].n_sub || model_storage(g, &g->nodes[i]) < 0) return 0;
    return half;
}

/* Cast(to=FLOAT16) becomes Cast(to=FLOAT): the rounding is its storage's. */
static void retarget_cast(graph_t *g, node_t *n)
{
    for (int k = 0; k < n->n_attr; k++) {
        const Onnx__AttributeProto *a = n->attr[k];
        if (!a->name || strcmp(a->name, "to") || !a->has_i || !is_half((dtype_t)a->i)) continue;
        Onnx__AttributeProto *c = xmalloc(sizeof *c);
        *c = *a;
        c->i = DT_FLOAT;
        g->attr_copies = xrealloc(g->attr_copies, (g->n_attr_copies + 1) * sizeof *g->attr_copies);
        g->attr_copies[g->n_attr_copies++] = c;
        n->attr[k] = c;
    }
}

int graph_widen_half(graph_t *g, perr_t *e)
{
    graph_index(g);
    if (!widenable(g)) return 0;
    for (int i = 0; i < g->n_nodes; i++) {
        node_t *n = &g->nodes[i];
        n->model_storage = (dtype_t)model_storage(g, n);
        if (!n->domain[0] && !strcmp(n->op_type, "Cast")) retarget_cast(g, n);
    }
    int widened = 0;
    for (int i = 0; i < g->n_vals; i++) {
        value_t *v = &g->vals[i];
        if (!is_half(v->t.dtype)) continue;
        v->half_typed = v->t.dtype;
        if (v->kind == VAL_CONST) {
            tensor_t wide = {0};
            if (tensor_cast(&v->t, DT_FLOAT, &wide, e)) return -1;
            tensor_free_data(&v->t);
            v->t = wide;
        } else {
            v->t.dtype = DT_FLOAT;
            widened++;
        }
    }
    g->widened = widened;
    return widened;
}
