/* kept.c — which FP16/BF16-stored layers may skip the rounding of their
 * outputs because the rounding cannot change them (issue 41: that rounding
 * pass was 5.7% of an FP16 RT-DETR inference, a third of it on layers that
 * only move values: Reshape, Transpose, Concat, Slice, ...).
 *
 * A layer whose every float output element is one of its float input
 * elements (or 0, for Relu) outputs values of its input's type. When each
 * float input is itself held in the layer's storage type (written by a layer
 * of that storage, which rounded it, or a constant exactly representable
 * there), rounding the output again returns the same bits: rounding to
 * float16 or bfloat16 is idempotent, NaNs included (the first rounding
 * already quieted and truncated them). So skipping it changes no bit.
 *
 * Decided once per loaded engine (engine_read): nothing in the engine file
 * changes, and a graph that never went through here keeps rounding
 * everything. Conservative on purpose: graph inputs, control-flow results,
 * layers rounding their inputs at a precision boundary and layers with a
 * fused activation or residual always round. */
#include <stdlib.h>
#include <string.h>
#include "precision/precision.h"
#include "tensor/half.h"
#include "util/err.h"

/* Ops whose float outputs hold only elements of their float inputs (Relu:
 * or zero; TopK/MaxPool: their second output is int64). */
static int moves_values(const node_t *n)
{
    static const char *const ops[] = {
        "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Concat", "Slice", "Split",
        "Gather", "GatherElements", "GatherND", "Tile", "Expand", "Identity", "DepthToSpace",
        "SpaceToDepth", "MaxPool", "Relu", "Max", "Min", "Where", "Neg", "Abs", "ReduceMax",
        "ReduceMin", "TopK",
    };
    if (n->domain[0]) return 0;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (!strcmp(n->op_type, ops[i])) return 1;
    return 0;
}

/* Does every element of float32 constant t survive rounding to storage s
 * bit for bit? */
static int const_in_storage(const tensor_t *t, dtype_t s)
{
    int64_t count = tensor_numel(t);
    if (!t->data || count == 0) return count == 0;
    float *r = xmalloc((size_t)count * sizeof *r);
    if (s == DT_FLOAT16) round_f16_copy(r, t->data, count);
    else round_bf16_copy(r, t->data, count);
    int same = !memcmp(r, t->data, (size_t)count * sizeof *r);
    free(r);
    return same;
}

/* Is float value v already held in storage type s when node n reads it? */
static int value_in_storage(const graph_t *g, int v, dtype_t s)
{
    const value_t *val = &g->vals[v];
    if (val->kind == VAL_CONST) return const_in_storage(&val->t, s);
    if (val->producer < 0) return 0;   /* a graph input: the caller's float32 */
    const node_t *p = &g->nodes[val->producer];
    return p->storage == s && !p->n_sub;   /* If, Loop, Scan: results not rounded here */
}

static int keeps_storage(const graph_t *g, const node_t *n)
{
    if (n->storage != DT_FLOAT16 && n->storage != DT_BFLOAT16) return 0;
    if (!moves_values(n) || n->act || n->residual || n->round_inputs || n->n_sub) return 0;
    for (int k = 0; k < n->n_in; k++) {
        int v = n->in[k];
        if (v < 0) continue;
        dtype_t t = g->vals[v].t.dtype;
        if (dtype_is_signed_int(t) || dtype_is_unsigned_int(t) || t == DT_BOOL) continue;   /* indices, shapes, conditions */
        /* a float input (an unknown type counts as one) */
        if (t != DT_FLOAT || !value_in_storage(g, v, n->storage)) return 0;
    }
    return 1;
}

int precision_mark_kept_storage(graph_t *g)
{
    int kept = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        node_t *n = &g->nodes[i];
        n->keeps_storage = keeps_storage(g, n);
        kept += n->keeps_storage;
    }
    return kept;
}
