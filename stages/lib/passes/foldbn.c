/* foldbn.c — BatchNormalization (inference) folded into the Conv,
 * ConvTranspose or Gemm whose output only it reads, as TensorRT and every
 * deploy engine do at build time: y = (conv(x) - mean) * s + bias with
 * s = scale / sqrt(var + eps) becomes one layer of weights w * s and bias
 * (b - mean) * s + bias. The fold runs before weights are cast to the
 * layer's precision (the precision pass rounds the folded float32 weights
 * once, afterwards), so a running variance beyond FP16's range — which as
 * its own FP16 layer becomes inf and zeroes the channel — never reaches
 * FP16. Folded values are computed in double and rounded to float32 once:
 * the same bytes on every machine. Float32 parameters only (a model whose
 * weights are already FLOAT16 keeps its BatchNormalization). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "passes/fuse_int.h"

static int is_op(const node_t *n, const char *op)
{
    return !n->domain[0] && !strcmp(n->op_type, op);
}

/* An inference-mode BatchNormalization with float32 constant parameters of
 * one value per channel; its channel count, or 0. */
static int64_t foldable_bn(const graph_t *g, const node_t *a)
{
    if (!is_op(a, "BatchNormalization") || a->n_in != 5 || a->n_out < 1 || a->in[0] < 0) return 0;
    for (int k = 1; k < a->n_out; k++)
        if (a->out[k] >= 0) return 0;
    if (a->opset >= 14 && attr_int(a, "training_mode", 0)) return 0;
    if (a->opset < 9 && !attr_int(a, "spatial", 1)) return 0;
    int64_t c = -1;
    for (int k = 1; k < 5; k++) {
        const value_t *v = a->in[k] >= 0 ? &g->vals[a->in[k]] : NULL;
        if (!v || v->kind != VAL_CONST || v->t.dtype != DT_FLOAT || !v->t.data) return 0;
        int64_t n = tensor_numel(&v->t);
        if (c >= 0 && n != c) return 0;
        c = n;
    }
    return c > 0 ? c : 0;
}

/* Where output channel o's weights lie: for each o, `per` runs of `run`
 * values, `stride` apart (Conv: one run per channel; ConvTranspose: one
 * per input channel of its group; Gemm: a row of B^T or a column of B).
 * Returns 0 when the layer's weights do not have c output channels. */
typedef struct wmap { int64_t c, per, run, stride; int kind; int64_t group_in, cout_g; } wmap_t;

static int weight_map(const graph_t *g, const node_t *c, int64_t ch, wmap_t *m)
{
    if (c->n_in < 2 || c->in[1] < 0 || c->act || c->n_out != 1) return 0;
    const value_t *w = &g->vals[c->in[1]];
    if (w->kind != VAL_CONST || w->t.dtype != DT_FLOAT || !w->t.data || !w->shape_known) return 0;
    memset(m, 0, sizeof *m);
    m->c = ch;
    if (is_op(c, "Conv")) {
        if (w->t.ndim < 3 || w->t.dims[0] != ch) return 0;
        m->kind = 0;
        m->run = tensor_numel(&w->t) / ch;
        return 1;
    }
    if (is_op(c, "ConvTranspose")) {
        int64_t grp = attr_int(c, "group", 1);
        if (w->t.ndim < 3 || grp < 1 || w->t.dims[1] * grp != ch || w->t.dims[0] % grp) return 0;
        m->kind = 1;
        m->group_in = w->t.dims[0] / grp;
        m->cout_g = w->t.dims[1];
        m->run = tensor_numel(&w->t) / (w->t.dims[0] * w->t.dims[1]);
        return 1;
    }
    if (is_op(c, "Gemm")) {
        if (w->t.ndim != 2 || attr_float(c, "beta", 1.0f) != 1.0f || c->opset < 7) return 0;
        int tb = (int)attr_int(c, "transB", 0);
        if (w->t.dims[tb ? 0 : 1] != ch) return 0;
        m->kind = tb ? 0 : 2;
        m->run = tb ? w->t.dims[1] : 1;
        m->per = tb ? 1 : w->t.dims[0];
        return 1;
    }
    return 0;
}

/* The layer's bias as c values (absent: zeros); 0 when it has another shape. */
static int read_bias(const graph_t *g, const node_t *c, int64_t ch, double *b)
{
    for (int64_t o = 0; o < ch; o++) b[o] = 0;
    if (c->n_in < 3 || c->in[2] < 0) return 1;
    const value_t *v = &g->vals[c->in[2]];
    if (v->kind != VAL_CONST || v->t.dtype != DT_FLOAT || !v->t.data || tensor_numel(&v->t) != ch) return 0;
    if (v->t.ndim > 2 || (v->t.ndim == 2 && v->t.dims[0] != 1)) return 0;
    for (int64_t o = 0; o < ch; o++) b[o] = ((const float *)v->t.data)[o];
    return 1;
}

static void scale_weights(const wmap_t *m, const float *w, float *nw, int64_t numel, const double *s)
{
    if (m->kind == 0) {
        for (int64_t o = 0; o < m->c; o++)
            for (int64_t q = 0; q < m->run; q++) nw[o * m->run + q] = (float)(w[o * m->run + q] * s[o]);
    } else if (m->kind == 1) {
        /* ConvTranspose [Cin, Cout/g, k...]: input channel ci of group ci / (Cin/g) */
        for (int64_t ci = 0; ci < numel / (m->cout_g * m->run); ci++)
            for (int64_t j = 0; j < m->cout_g; j++) {
                int64_t o = ci / m->group_in * m->cout_g + j, base = (ci * m->cout_g + j) * m->run;
                for (int64_t q = 0; q < m->run; q++) nw[base + q] = (float)(w[base + q] * s[o]);
            }
    } else {
        /* Gemm B [K, N]: column o */
        for (int64_t k = 0; k < m->per; k++)
            for (int64_t o = 0; o < m->c; o++) nw[k * m->c + o] = (float)(w[k * m->c + o] * s[o]);
    }
}

/* Rewrites layer c's weights and bias with BatchNormalization a folded in. */
static int fold_one(graph_t *g, node_t *c, const node_t *a, const wmap_t *m, const double *bias)
{
    int64_t ch = m->c;
    const float *sc = g->vals[a->in[1]].t.data, *bb = g->vals[a->in[2]].t.data;
    const float *mu = g->vals[a->in[3]].t.data, *va = g->vals[a->in[4]].t.data;
    double eps = attr_float(a, "epsilon", 1e-5f);
    double *s = xmalloc(ch * sizeof *s);
    for (int64_t o = 0; o < ch; o++) s[o] = sc[o] / sqrt((double)va[o] + eps);
    tensor_t wt = g->vals[c->in[1]].t;
    int wi, bi;
    float *nw = fuse_new_const(g, c->name, "weight_bn_folded", wt.ndim, wt.dims, &wi);
    float *nb = nw ? fuse_new_const(g, c->name, "bias_bn_folded", 1, &ch, &bi) : NULL;
    if (!nb) {
        free(s);
        return -1;
    }
    /* g->vals may have moved: the parameters are re-read from it */
    bb = g->vals[a->in[2]].t.data;
    mu = g->vals[a->in[3]].t.data;
    scale_weights(m, g->vals[c->in[1]].t.data, nw, tensor_numel(&wt), s);
    for (int64_t o = 0; o < ch; o++) nb[o] = (float)((bias[o] - mu[o]) * s[o] + bb[o]);
    free(s);
    c->in[1] = wi;
    fuse_set_bias(c, bi);
    return 0;
}

int fold_batchnorm(graph_t *g, const int *readers, char *drop)
{
    int folded = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        node_t *a = &g->nodes[i];
        int64_t ch = drop[i] ? 0 : foldable_bn(g, a);
        if (!ch) continue;
        int p = fuse_sole_producer(g, a, 0, readers, drop);
        if (p < 0) continue;
        node_t *c = &g->nodes[p];
        wmap_t m;
        if (!fuse_same_precision(c, a) || !weight_map(g, c, ch, &m)) continue;
        double *bias = xmalloc(ch * sizeof *bias);
        int ok = read_bias(g, c, ch, bias) && !fold_one(g, c, a, &m, bias);
        free(bias);
        if (!ok) continue;
        fuse_absorb(g, p, i, drop);
        folded++;
    }
    return folded;
}
