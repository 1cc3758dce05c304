/* fold.c — shape inference with constant folding: each node's output
 * shapes from its op's shape function, and a node whose inputs are all
 * constant run once at build time by its kernel (which is why this pass
 * lives above ops/, not in the IR). */
#include <stdlib.h>
#include <string.h>
#include "passes/passes.h"
#include "ops/run.h"

static int foldable_without_data(const node_t *n)
{
    return !n->domain[0] && (!strcmp(n->op_type, "Shape") || !strcmp(n->op_type, "Size"));
}

int graph_fold(graph_t *g, int64_t max_fold_bytes, perr_t *e)
{
    int folded = 0;
    scratch_pool_t pool = {0};
    for (int i = 0; i < g->n_nodes; i++) {
        node_t *n = &g->nodes[i];
        const tensor_t *in[MAX_NODE_IO];
        tensor_t out_t[MAX_NODE_IO];
        tensor_t *out[MAX_NODE_IO];
        /* Not an invariant but the model's own count (the loader takes any):
         * such a node is left unfolded, and the executor refuses it with a
         * message naming it (engine/exec.c), so no assert here. */
        if (n->n_in > MAX_NODE_IO || n->n_out > MAX_NODE_IO) continue;
        if (n->n_sub) {
            int r = graph_fold_control(g, i, max_fold_bytes, e);
            if (r < 0) { scratch_pool_free(&pool); return -1; }
            if (r == 1) { i--; folded++; }
            continue;
        }
        int known = 1, all_const = 1;
        for (int k = 0; k < n->n_in; k++) {
            in[k] = NULL;
            if (n->in[k] < 0) continue;
            value_t *v = &g->vals[n->in[k]];
            in[k] = &v->t;
            if (!v->shape_known) known = 0;
            if (v->kind != VAL_CONST) all_const = 0;
        }
        if (!known) continue;
        memset(out_t, 0, sizeof out_t);
        for (int k = 0; k < n->n_out; k++) out[k] = n->out[k] >= 0 ? &out_t[k] : NULL;
        /* activations pass no data to shape functions at build time */
        tensor_t shadow[MAX_NODE_IO];
        const tensor_t *sin[MAX_NODE_IO];
        for (int k = 0; k < n->n_in; k++) {
            sin[k] = in[k];
            if (in[k] && g->vals[n->in[k]].kind != VAL_CONST) {
                shadow[k] = *in[k];
                shadow[k].data = NULL;
                sin[k] = &shadow[k];
            }
        }
        int rc = node_infer_shapes(n, sin, out, e);
        if (rc == OP_ERROR) {
            scratch_pool_free(&pool);
            return perr_prefix(e, "%s: ", g->source);
        }
        if (rc == OP_DYNAMIC) continue;
        int64_t bytes = 0;
        for (int k = 0; k < n->n_out; k++) {
            if (!out[k]) continue;
            value_t *v = &g->vals[n->out[k]];
            v->t.dtype = out[k]->dtype;
            if (out[k]->dtype == DT_SEQUENCE) continue;   /* its contents exist at run time only */
            v->t.ndim = out[k]->ndim;
            memcpy(v->t.dims, out[k]->dims, sizeof v->t.dims);
            v->shape_known = 1;
            bytes += tensor_nbytes(out[k]);
        }
        int fold = (all_const || foldable_without_data(n)) && !n->op->no_fold && bytes <= max_fold_bytes;
        if (!fold) continue;
        memset(out_t, 0, sizeof out_t);
        if (node_run(n, all_const ? in : sin, out, 1, &pool, NULL, e)) {
            /* a kernel may fail after allocating some outputs: they are this
             * loop's to free, nobody else holds them */
            for (int k = 0; k < n->n_out; k++) tensor_free_data(&out_t[k]);
            scratch_pool_free(&pool);
            return perr_prefix(e, "%s: folding constants: ", g->source);
        }
        for (int k = 0; k < n->n_out; k++) {
            if (!out[k]) continue;
            value_t *v = &g->vals[n->out[k]];
            tensor_free_data(&v->t);
            v->t = *out[k];
            v->kind = VAL_CONST;
        }
        /* the node stays in the list until dead-node removal drops it */
        n->fused_from = xstrdup("folded");
        folded++;
    }
    scratch_pool_free(&pool);
    /* Folded nodes produce constants now: remove them from execution. */
    int w = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        node_t *n = &g->nodes[i];
        if (n->fused_from && !strcmp(n->fused_from, "folded")) {
            node_free(n);
            continue;
        }
        g->nodes[w++] = *n;
    }
    g->n_nodes = w;
    graph_index(g);
    return folded;
}
