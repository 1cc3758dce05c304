/* fuseres.c — a Conv followed by its only reader Add(conv, r), r an
 * activation of the same shape (a residual connection), becomes one layer
 * that adds r to the convolution's float32 result before its activation
 * and its storage rounding: TensorRT's Conv + ElementWise(sum) + activation
 * fusion. At float32 storage the bits are those of the two layers (the same
 * single addition); at FP16/BF16 storage the sum is rounded once instead of
 * the convolution's result and then the sum, as on the GPU. The fused layer
 * runs where the Add ran (r may be computed after the Conv), reads r as its
 * last input (node->residual) and keeps the Conv's name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "passes/fuse_int.h"

static int same_shape(const value_t *a, const value_t *b)
{
    if (!a->shape_known || !b->shape_known || a->t.ndim != b->t.ndim) return 0;
    for (int d = 0; d < a->t.ndim; d++)
        if (a->t.dims[d] != b->t.dims[d]) return 0;
    return 1;
}

static int residual_conv(const node_t *c)
{
    return !c->domain[0] && !strcmp(c->op_type, "Conv") && !c->act && !c->residual && !c->n_implicit &&
           c->n_out == 1 && c->n_in >= 2 && c->n_in <= 3;
}

/* Gives Conv c the residual input r: inputs become [X, W, B or none, r]. */
static void add_residual_input(node_t *c, int r)
{
    int *in = xmalloc(5 * sizeof *in);
    in[0] = c->in[0];
    in[1] = c->in[1];
    in[2] = c->n_in > 2 ? c->in[2] : -1;
    in[3] = r;
    free(c->in);
    c->in = in;
    c->n_in = 4;
    c->residual = 1;
}

/* An activation already fused into the Add (a SiLU) moves with it. */
static void take_activation(node_t *c, const node_t *a)
{
    c->act = a->act;
    c->act_a = a->act_a;
    c->act_b = a->act_b;
}

/* The layers fused into the Add before (after its own name) join c's list. */
static void extend_fused_from(node_t *c, const node_t *a)
{
    const char *rest = a->fused_from ? strchr(a->fused_from, ',') : NULL;
    if (!rest) return;
    size_t n = strlen(c->fused_from) + strlen(rest) + 1;
    char *ff = xmalloc(n);
    snprintf(ff, n, "%s%s", c->fused_from, rest);
    free(c->fused_from);
    c->fused_from = ff;
}

int fold_residual(graph_t *g, const int *readers, char *drop)
{
    int fused = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        node_t *a = &g->nodes[i];
        if (a->domain[0] || strcmp(a->op_type, "Add") || a->n_in != 2 || a->n_out != 1 || drop[i]) continue;
        for (int side = 0; side < 2; side++) {
            int p = fuse_sole_producer(g, a, side, readers, drop), r = a->in[1 - side], v = a->in[side];
            if (p < 0 || r == v || !residual_conv(&g->nodes[p]) || !fuse_same_precision(&g->nodes[p], a)) continue;
            const value_t *rv = &g->vals[r], *vv = &g->vals[v];
            if (rv->kind == VAL_CONST || rv->t.dtype != DT_FLOAT || vv->t.dtype != DT_FLOAT || !same_shape(rv, vv))
                continue;
            add_residual_input(&g->nodes[p], r);
            take_activation(&g->nodes[p], a);
            fuse_absorb(g, p, i, drop);
            extend_fused_from(&g->nodes[p], a);
            /* the fused layer takes the Add's place in the order */
            node_t t = g->nodes[p];
            g->nodes[p] = g->nodes[i];
            g->nodes[i] = t;
            drop[p] = 1;
            drop[i] = 0;
            g->vals[g->nodes[i].out[0]].producer = i;
            fused++;
            break;
        }
    }
    return fused;
}
