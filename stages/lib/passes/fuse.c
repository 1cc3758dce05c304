/* fuse.c — activation fusion: Conv/ConvTranspose/Gemm (and MatMul at
 * float32 storage) followed by its only reader Relu, Clip (constant
 * bounds), LeakyRelu or Sigmoid becomes one layer whose output gets the
 * activation before it is stored — what TensorRT and cuDNN do. Before
 * that, per-channel scales and shifts fold into a Conv, a per-column bias
 * Add into a MatMul, and a SiLU (Sigmoid and Mul) into its producer. The layer report lists the layer as fused from
 * both; the intermediate tensor no longer exists (as on the GPU), and
 * whether tensors are dumped never changes the plan. Only layers of the
 * same precision and storage are fused, so a per-layer constraint is never
 * lost. Results are bit-identical to the unfused graph in fp32 and at any
 * storage type, since the activation ran in float32 on the same values
 * before rounding anyway... except where rounding and the activation do not
 * commute (Sigmoid on an fp16 layer): there the fused form is the GPU's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "passes/passes.h"
#include "passes/fuse_int.h"

static int act_kind(const graph_t *g, const node_t *a, float *lo, float *hi)
{
    if (a->domain[0]) return ACT_NONE;
    if (!strcmp(a->op_type, "Relu")) return ACT_RELU;
    if (!strcmp(a->op_type, "Sigmoid")) return ACT_SIGMOID;
    if (!strcmp(a->op_type, "LeakyRelu")) { *lo = attr_float(a, "alpha", 0.01f); return ACT_LEAKY; }
    if (!strcmp(a->op_type, "Clip")) {
        *lo = -INFINITY;
        *hi = INFINITY;
        if (a->opset < 11) {
            *lo = attr_float(a, "min", -INFINITY);
            *hi = attr_float(a, "max", INFINITY);
            return ACT_CLIP;
        }
        for (int k = 1; k < a->n_in && k < 3; k++) {
            if (a->in[k] < 0) continue;
            const value_t *v = &g->vals[a->in[k]];
            if (v->kind != VAL_CONST || v->t.dtype != DT_FLOAT || tensor_numel(&v->t) != 1) return ACT_NONE;
            *(k == 1 ? lo : hi) = *(const float *)v->t.data;
        }
        return ACT_CLIP;
    }
    return ACT_NONE;
}

/* A MatMul fuses at float32 storage only (see fold_matmul_bias). */
static int fusable_producer(const node_t *n)
{
    return !n->domain[0] && !n->act &&
           (!strcmp(n->op_type, "Conv") || !strcmp(n->op_type, "ConvTranspose") || !strcmp(n->op_type, "Gemm") ||
            (!strcmp(n->op_type, "MatMul") && n->storage == DT_FLOAT));
}

/* Conv followed by its only reader Add(conv, constant of shape [C,1,...] or
 * [1,C,1,...]) — a bias the exporter left as a separate layer — becomes the
 * Conv's bias (added to an existing one), so an activation after the Add
 * can fuse too. Same precision and storage only, float32 constants only. */
static int channel_bias(const graph_t *g, const node_t *conv, const value_t *k, int64_t *channels)
{
    const value_t *w = &g->vals[conv->in[1]];
    if (w->kind != VAL_CONST || !w->shape_known || w->t.ndim < 3) return 0;
    int64_t C = w->t.dims[0];
    if (!strcmp(conv->op_type, "ConvTranspose")) return 0;
    if (k->kind != VAL_CONST || k->t.dtype != DT_FLOAT || tensor_numel(&k->t) != C) return 0;
    int rank = w->t.ndim, ch = 0;
    /* [C,1,1] or [1,C,1,1]: exactly one dimension of size C, at axis 1 of the output */
    if (k->t.ndim == rank - 1) ch = 0;
    else if (k->t.ndim == rank) ch = 1;
    else return 0;
    for (int d = 0; d < k->t.ndim; d++)
        if (k->t.dims[d] != (d == ch ? C : 1)) return 0;
    if (ch == 1 && k->t.dims[0] != 1) return 0;
    *channels = C;
    return 1;
}

/* Layers fuse when they store the same type and compute alike: equal
 * precisions, or a TF32 GEMM followed by an FP32 layer (TF32 only ever
 * changes the GEMM's operands; its epilogue runs in FP32 on the GPU too). */
int fuse_same_precision(const node_t *c, const node_t *a)
{
    if (c->storage != a->storage) return 0;
    return c->precision == a->precision || (c->precision == PREC_TF32 && a->precision == PREC_FP32);
}

/* Records in the layer report that layer a now lives inside layer c. */
static void note_fused(node_t *c, const node_t *a)
{
    const char *before = c->fused_from ? c->fused_from : c->name;
    size_t len = strlen(before) + strlen(a->name) + 2;
    char *ff = xmalloc(len);
    snprintf(ff, len, "%s,%s", before, a->name);
    free(c->fused_from);
    c->fused_from = ff;
}

/* The node producing side `side` of two-input node a, when that value has
 * a as its only reader and the other side exists; -1 otherwise. */
int fuse_sole_producer(const graph_t *g, const node_t *a, int side, const int *readers, const char *drop)
{
    int v = a->in[side];
    if (v < 0 || a->in[1 - side] < 0) return -1;
    int p = g->vals[v].producer;
    if (p < 0 || drop[p] || readers[v] != 1 || g->vals[v].is_output) return -1;
    return p;
}

/* Layer p takes over node i's output; node i is dropped. */
void fuse_absorb(graph_t *g, int p, int i, char *drop)
{
    node_t *c = &g->nodes[p], *a = &g->nodes[i];
    c->out[0] = a->out[0];
    g->vals[a->out[0]].producer = p;
    note_fused(c, a);
    drop[i] = 1;
}

/* A new constant holding `count` floats, named after the layer. */
float *fuse_new_const(graph_t *g, const char *layer, const char *what, int ndim, const int64_t *dims, int *index)
{
    char name[1024];
    snprintf(name, sizeof name, "%s/%s", layer, what);
    int v = graph_value(g, name);
    perr_t e = {0};
    if (tensor_alloc(&g->vals[v].t, DT_FLOAT, ndim, dims, &e)) return NULL;
    g->vals[v].kind = VAL_CONST;
    g->vals[v].shape_known = 1;
    *index = v;
    return g->vals[v].t.data;
}

void fuse_set_bias(node_t *c, int bias)
{
    if (c->n_in < 3) {
        c->in = xrealloc(c->in, 4 * sizeof *c->in);
        c->n_in = 3;
    }
    c->in[2] = bias;
}

/* Folds one per-channel Mul (scale) or Add (shift) into the Conv. */
static int fold_into_conv(graph_t *g, node_t *c, int is_mul, const float *k, int64_t C)
{
    const value_t *w = &g->vals[c->in[1]];
    const float *old_b = c->n_in > 2 && c->in[2] >= 0 ? g->vals[c->in[2]].t.data : NULL;
    int bi, wi;
    float *b = fuse_new_const(g, c->name, is_mul ? "bias_scaled" : "bias_shifted", 1, &C, &bi);
    if (!b) return -1;
    w = &g->vals[c->in[1]];   /* graph_value may have moved the array */
    old_b = c->n_in > 2 && c->in[2] >= 0 ? g->vals[c->in[2]].t.data : NULL;
    for (int64_t j = 0; j < C; j++) b[j] = is_mul ? (old_b ? old_b[j] * k[j] : 0.0f) : (old_b ? old_b[j] : 0.0f) + k[j];
    if (is_mul) {
        tensor_t wt = w->t;
        float *nw = fuse_new_const(g, c->name, "weight_scaled", wt.ndim, wt.dims, &wi);
        if (!nw) return -1;
        const float *ow = g->vals[c->in[1]].t.data;
        int64_t per = tensor_numel(&wt) / C;
        for (int64_t j = 0; j < C; j++)
            for (int64_t q = 0; q < per; q++) nw[j * per + q] = ow[j * per + q] * k[j];
        c->in[1] = wi;
    }
    fuse_set_bias(c, bi);
    return 0;
}

/* Conv followed by its only reader Mul or Add with a per-channel constant
 * (a frozen BatchNorm exported as x * scale + shift, or a bias left as its
 * own layer) folds into the Conv's weights and bias, as TensorRT does, so
 * an activation after it can fuse too. Layers of equal precision only; the
 * folding is done in float32 and the result rounded once, afterwards, as a
 * GPU engine converts folded weights. */
static int fold_affine(graph_t *g, const int *readers, char *drop)
{
    int folded = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        node_t *a = &g->nodes[i];
        int is_mul = !strcmp(a->op_type, "Mul");
        if (a->domain[0] || (!is_mul && strcmp(a->op_type, "Add")) || a->n_in != 2 || a->n_out != 1 || drop[i]) continue;
        for (int side = 0; side < 2; side++) {
            int p = fuse_sole_producer(g, a, side, readers, drop), kv = a->in[1 - side];
            if (p < 0) continue;
            node_t *c = &g->nodes[p];
            if (c->domain[0] || strcmp(c->op_type, "Conv") || c->act || c->n_out != 1 || c->n_in < 2) continue;
            if (!fuse_same_precision(c, a)) continue;
            int64_t C;
            if (!channel_bias(g, c, &g->vals[kv], &C)) continue;
            if (fold_into_conv(g, c, is_mul, g->vals[kv].t.data, C)) break;
            fuse_absorb(g, p, i, drop);
            folded++;
            break;
        }
    }
    return folded;
}

/* Whether constant k is a bias for MatMul mm's output y: float32, one
 * value per column (shape [N] or [1,..,1,N], no longer than y's), both
 * operands of rank 2 or more (a 1-D operand changes which axis is N). */
static int matmul_bias(const graph_t *g, const node_t *mm, const value_t *y, const value_t *k)
{
    const value_t *a = &g->vals[mm->in[0]], *b = &g->vals[mm->in[1]];
    if (!a->shape_known || !b->shape_known || !y->shape_known || a->t.ndim < 2 || b->t.ndim < 2) return 0;
    if (y->t.dtype != DT_FLOAT || k->kind != VAL_CONST || k->t.dtype != DT_FLOAT) return 0;
    int64_t n = y->t.dims[y->t.ndim - 1];
    return k->t.ndim >= 1 && k->t.ndim <= y->t.ndim && k->t.dims[k->t.ndim - 1] == n && tensor_numel(&k->t) == n;
}

/* MatMul followed by its only reader Add of a per-column constant (a
 * Linear layer's bias) takes the bias as a third input, added in the
 * GEMM's epilogue as TensorRT does, so an activation after it can fuse
 * too. Float32 storage only: there nothing is rounded between the product
 * and the addition, so the result is bit-identical; at fp16/bf16 storage
 * the separate Add reads the rounded product, which parity keeps. */
static int fold_matmul_bias(graph_t *g, const int *readers, char *drop)
{
    int folded = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        node_t *a = &g->nodes[i];
        if (a->domain[0] || strcmp(a->op_type, "Add") || a->n_in != 2 || a->n_out != 1 || drop[i]) continue;
        for (int side = 0; side < 2; side++) {
            int p = fuse_sole_producer(g, a, side, readers, drop), kv = a->in[1 - side];
            if (p < 0) continue;
            node_t *c = &g->nodes[p];
            if (c->domain[0] || strcmp(c->op_type, "MatMul") || c->act || c->n_in != 2 || c->n_out != 1) continue;
            if (!fuse_same_precision(c, a) || c->storage != DT_FLOAT || a->round_inputs) continue;
            if (!matmul_bias(g, c, &g->vals[a->in[side]], &g->vals[kv])) continue;
            c->in = xrealloc(c->in, 3 * sizeof *c->in);
            c->in[2] = kv;
            c->n_in = 3;
            fuse_absorb(g, p, i, drop);
            folded++;
            break;
        }
    }
    return folded;
}

/* Elementwise arithmetic writes a fresh float32 output (never a view of
 * an input), so the SiLU after it can run on that output in one pass
 * instead of two layers (what ONNX Runtime's QuickGelu fusion does). */
static int silu_producer(const node_t *n)
{
    return !n->domain[0] && !n->act && n->n_out == 1 &&
           (!strcmp(n->op_type, "Add") || !strcmp(n->op_type, "Sub") || !strcmp(n->op_type, "Mul") ||
            !strcmp(n->op_type, "Div"));
}

/* Layer c, then Sigmoid s of its output v, then Mul m of v and s's output
 * (SiLU, as exporters write it: v read by exactly those two) becomes one
 * layer with the SiLU applied before its output is stored. Float32
 * storage only, all three alike: there the fused form computes the same
 * Sigmoid and product on the same values, bit-identical; at fp16/bf16
 * storage the separate layers read rounded values, which parity keeps. */
static int fuse_silu(graph_t *g, const int *readers, char *drop)
{
    int fused = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        node_t *m = &g->nodes[i];
        if (m->domain[0] || strcmp(m->op_type, "Mul") || m->n_in != 2 || m->n_out != 1 || drop[i]) continue;
        for (int side = 0; side < 2; side++) {
            int sv = m->in[side], v = m->in[1 - side];
            if (sv < 0 || v < 0 || readers[sv] != 1 || readers[v] != 2) continue;
            if (g->vals[sv].is_output || g->vals[v].is_output || g->vals[v].t.dtype != DT_FLOAT) continue;
            int si = g->vals[sv].producer, p = g->vals[v].producer;
            if (si < 0 || p < 0 || drop[si] || drop[p]) continue;
            node_t *s = &g->nodes[si], *c = &g->nodes[p];
            if (s->domain[0] || strcmp(s->op_type, "Sigmoid") || s->n_in != 1 || s->in[0] != v) continue;
            if (!(fusable_producer(c) || silu_producer(c)) || c->n_out != 1 || c->out[0] != v) continue;
            if (c->storage != DT_FLOAT || !fuse_same_precision(c, s) || !fuse_same_precision(c, m) || m->round_inputs) continue;
            c->act = ACT_SILU;
            note_fused(c, s);
            drop[si] = 1;
            fuse_absorb(g, p, i, drop);
            fused++;
            break;
        }
    }
    return fused;
}

/* Removes the nodes marked in drop (their work now lives in another node). */
static void compact(graph_t *g, const char *drop)
{
    int w = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        node_t *n = &g->nodes[i];
        if (drop[i]) {
            node_free(n);
            continue;
        }
        g->nodes[w++] = *n;
    }
    g->n_nodes = w;
    graph_index(g);
}

static int *count_readers(const graph_t *g)
{
    int *readers = xcalloc(g->n_vals + 1, sizeof *readers);
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_in; k++)
            if (g->nodes[i].in[k] >= 0) readers[g->nodes[i].in[k]]++;
    return readers;
}

/* An activation into the Conv/ConvTranspose/Gemm (MatMul at float32) that
 * feeds only it. */
static int fuse_act(graph_t *g, const int *readers, char *drop)
{
    int fused = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        node_t *a = &g->nodes[i];
        if (a->n_in < 1 || a->in[0] < 0 || a->n_out != 1 || a->out[0] < 0) continue;
        int v = a->in[0], p = g->vals[v].producer;
        if (p < 0 || drop[p] || readers[v] != 1 || g->vals[v].is_output) continue;
        node_t *c = &g->nodes[p];
        if (!fusable_producer(c) || c->n_out != 1 || c->out[0] != v) continue;
        if (!fuse_same_precision(c, a)) continue;
        if (g->vals[v].t.dtype != DT_FLOAT) continue;
        float lo = 0, hi = 0;
        int kind = act_kind(g, a, &lo, &hi);
        if (!kind) continue;
        c->act = kind;
        c->act_a = lo;
        c->act_b = hi;
        c->out[0] = a->out[0];
        note_fused(c, a);
        drop[i] = 1;
        fused++;
    }
    return fused;
}

/* One round of a fusion: the nodes fused (marked in drop) are removed once
 * it is over, so the next round sees the graph as rewritten and counts
 * readers afresh. The subgraphs of control-flow nodes first, each a graph
 * of its own. */
typedef int round_fn(graph_t *g, const int *readers, char *drop);

static int fuse_round(graph_t *g, round_fn *fn)
{
    int fused = 0;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_sub; k++) fused += fuse_round(g->nodes[i].sub[k], fn);
    graph_index(g);
    int *readers = count_readers(g);
    char *drop = xcalloc(g->n_nodes + 1, 1);
    fused += fn(g, readers, drop);
    compact(g, drop);
    free(drop);
    free(readers);
    return fused;
}

/* Per-channel scales and shifts into a Conv, then per-column bias Adds
 * into a MatMul: one round, as the MatMul rule never meets a Conv's. */
static int fold_scale_bias(graph_t *g, const int *readers, char *drop)
{
    return fold_affine(g, readers, drop) + fold_matmul_bias(g, readers, drop);
}

int graph_fold_batchnorm(graph_t *g) { return fuse_round(g, fold_batchnorm); }
int graph_fold_scale_bias(graph_t *g) { return fuse_round(g, fold_scale_bias); }
int graph_fuse_silu(graph_t *g) { return fuse_round(g, fuse_silu); }
int graph_fold_residual(graph_t *g) { return fuse_round(g, fold_residual); }
int graph_fuse_activations(graph_t *g) { return fuse_round(g, fuse_act); }
