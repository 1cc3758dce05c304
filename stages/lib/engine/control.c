/* control.c — If, Loop and Scan: the executor runs their subgraphs
 * (exec_subgraph), binding each subgraph's captured outer values by name.
 * Loop's scan outputs and Scan's are stacked along a new axis once the
 * iterations are done; every step is a byte move or a subgraph run, so the
 * results are the same at any thread count. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine/exec_int.h"

/* Sanity bound on Loop iterations (a runaway condition is bad input). */
#define MAX_LOOP_TRIPS ((int64_t)1 << 24)

/* inputs[n_formal ..] = the outer tensors sub captures. */
static int bind_captures(const graph_t *g, const node_t *n, const graph_t *sub, tensor_t **rt, const tensor_t **inputs,
                         perr_t *e)
{
    for (int j = sub->n_formal_inputs; j < sub->n_inputs; j++) {
        const char *name = sub->vals[sub->inputs[j]].name;
        int v = graph_find(g, name);
        if (v < 0 || !rt[v]) return BAD(e, "node '%s' (%s): captured value '%s' has no value", n->name, n->op_type, name);
        inputs[j] = rt[v];
    }
    return 0;
}

static void set_out(tensor_t *o, tensor_t *t)
{
    if (!o) { tensor_free_data(t); return; }
    tensor_free_data(o);
    *o = *t;
    memset(t, 0, sizeof *t);
}

static int read_scalar_bool(const tensor_t *t, const node_t *n, const char *what, int *v, perr_t *e)
{
    if (!t || tensor_numel(t) != 1 || t->dtype != DT_BOOL)
        return BAD(e, "node '%s' (%s): %s must be one bool value", n->name, n->op_type, what);
    *v = ((const uint8_t *)t->data)[0] != 0;
    return 0;
}

/* Node n's subgraph attr; NULL with the error set where the node has none
 * (an engine file says which subgraphs a node has; it may lack one). */
static const graph_t *subgraph_of(const node_t *n, const char *attr, perr_t *e)
{
    const graph_t *b = node_sub(n, attr);
    if (!b) BAD(e, "node '%s' (%s): has no %s subgraph", n->name, n->op_type, attr);
    return b;
}

static int run_if(const graph_t *g, const node_t *n, const tensor_t *const *args, tensor_t **outs, tensor_t **rt,
                  exec_env_t *env, perr_t *e)
{
    int cond;
    if (read_scalar_bool(args[0], n, "the condition", &cond, e)) return -1;
    const char *attr = cond ? "then_branch" : "else_branch";
    const graph_t *b = subgraph_of(n, attr, e);
    if (!b) return -1;
    const tensor_t **inputs = xcalloc(b->n_inputs + 1, sizeof *inputs);
    tensor_t *res = xcalloc(b->n_outputs + 1, sizeof *res);
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", n->name, attr);
    int rc = bind_captures(g, n, b, rt, inputs, e);
    if (!rc) rc = exec_subgraph(b, inputs, env, path, res, e);
    for (int k = 0; k < b->n_outputs && !rc; k++) set_out(k < n->n_out ? outs[k] : NULL, &res[k]);
    free(inputs);
    free(res);
    return rc;
}

/* The stacked scan outputs: the per-iteration tensors joined along a new
 * axis; with no iteration, an empty tensor of the body's declared type. */
static int stack_scan(const tensor_t *list, int count, const value_t *decl, int axis, int reverse, tensor_t *out,
                      perr_t *e)
{
    if (!count) {
        int64_t d[TENSOR_MAX_DIMS] = {0};
        int nd = 1;
        if (decl->shape_known && decl->t.ndim < TENSOR_MAX_DIMS) {
            for (int i = 0; i < decl->t.ndim; i++) d[i + 1] = decl->t.dims[i];
            nd = decl->t.ndim + 1;
        }
        return tensor_alloc(out, decl->t.dtype ? decl->t.dtype : DT_FLOAT, nd, d, e);
    }
    const tensor_t **xs = xmalloc(count * sizeof *xs);
    for (int i = 0; i < count; i++) xs[i] = &list[reverse ? count - 1 - i : i];
    int rc = tensor_concat_axis(xs, count, axis, 1, out, e);
    free(xs);
    return rc;
}

static void free_list(tensor_t *list, int count)
{
    for (int i = 0; i < count; i++) tensor_free_data(&list[i]);
    free(list);
}

static int run_loop(const graph_t *g, const node_t *n, const tensor_t *const *args, tensor_t **outs, tensor_t **rt,
                    exec_env_t *env, perr_t *e)
{
    const graph_t *b = subgraph_of(n, "body", e);
    if (!b) return -1;
    int n_carried = b->n_formal_inputs - 2, n_scan = b->n_outputs - 1 - n_carried;
    int64_t trips = INT64_MAX;
    int cond = 1, rc = 0;
    if (args[0]) {
        if (tensor_numel(args[0]) != 1 || (args[0]->dtype != DT_INT64 && args[0]->dtype != DT_INT32))
            return BAD(e, "node '%s' (Loop): the trip count must be one int64 value", n->name);
        trips = tensor_get_i64(args[0], 0);
    }
    if (args[1] && read_scalar_bool(args[1], n, "the condition", &cond, e)) return -1;
    if (!args[1] && trips == INT64_MAX)
        return BAD(e, "node '%s' (Loop): has neither a trip count nor a condition (it would never end)", n->name);
    const tensor_t **inputs = xcalloc(b->n_inputs + 1, sizeof *inputs);
    tensor_t *carried = xcalloc(n_carried + 1, sizeof *carried), *res = xcalloc(b->n_outputs + 1, sizeof *res);
    tensor_t **scans = xcalloc(n_scan + 1, sizeof *scans);
    tensor_t iter = {0}, cond_t = {0};
    int64_t it = 0, cap = 0;
    char path[1024];
    snprintf(path, sizeof path, "%s/body", n->name);
    for (int k = 0; k < n_carried; k++) {
        tensor_t *c = tensor_clone(args[2 + k]);
        carried[k] = *c;
        free(c);
    }
    rc = bind_captures(g, n, b, rt, inputs, e);
    if (!rc) rc = tensor_alloc(&iter, DT_INT64, 0, NULL, e) || tensor_alloc(&cond_t, DT_BOOL, 0, NULL, e);
    for (; !rc && it < trips && cond; it++) {
        if (it >= MAX_LOOP_TRIPS) {
            rc = BAD(e, "node '%s' (Loop): more than %lld iterations (a runaway condition?)", n->name,
                     (long long)MAX_LOOP_TRIPS);
            break;
        }
        *(int64_t *)iter.data = it;
        *(uint8_t *)cond_t.data = (uint8_t)cond;
        inputs[0] = &iter;
        inputs[1] = &cond_t;
        for (int k = 0; k < n_carried; k++) inputs[2 + k] = &carried[k];
        if ((rc = exec_subgraph(b, inputs, env, path, res, e))) break;
        rc = read_scalar_bool(&res[0], n, "the body's condition output", &cond, e);
        for (int k = 0; k < n_carried && !rc; k++)
            if (res[1 + k].dtype != carried[k].dtype)
                rc = BAD(e, "node '%s' (Loop): carried value %d changes type from %s to %s in iteration %lld", n->name, k,
                         dtype_name(carried[k].dtype), dtype_name(res[1 + k].dtype), (long long)it);
        if (it == cap) {
            cap = cap ? 2 * cap : 8;
            for (int k = 0; k < n_scan; k++) scans[k] = xrealloc(scans[k], cap * sizeof **scans);
        }
        for (int k = 0; k < n_carried; k++) {
            tensor_free_data(&carried[k]);
            carried[k] = res[1 + k];
        }
        for (int k = 0; k < n_scan; k++) scans[k][it] = res[1 + n_carried + k];
        tensor_free_data(&res[0]);
        memset(res, 0, (b->n_outputs + 1) * sizeof *res);
    }
    for (int k = 0; k < n_carried && !rc; k++) set_out(k < n->n_out ? outs[k] : NULL, &carried[k]);
    for (int k = 0; k < n_scan && !rc; k++) {
        tensor_t st = {0};
        rc = stack_scan(scans[k], (int)it, &b->vals[b->outputs[1 + n_carried + k]], 0, 0, &st, e);
        if (!rc) set_out(n_carried + k < n->n_out ? outs[n_carried + k] : NULL, &st);
    }
    for (int k = 0; k < n_scan; k++) free_list(scans[k], scans[k] ? (int)it : 0);
    free(scans);
    free_list(carried, n_carried);
    free(res);
    free(inputs);
    tensor_free_data(&iter);
    tensor_free_data(&cond_t);
    return rc;
}

/* One Scan over states and scan inputs (opset 9 semantics). */
static int scan_once(const node_t *n, const graph_t *b, const tensor_t *const *states, const tensor_t *const *xs,
                     const tensor_t **inputs, exec_env_t *env, tensor_t *final, tensor_t *stacked, perr_t *e)
{
    int n_scan_in = (int)attr_int(n, "num_scan_inputs", 0);
    int n_state = b->n_formal_inputs - n_scan_in, n_scan_out = b->n_outputs - n_state;
    const int64_t *in_axes = NULL, *in_dirs = NULL, *out_axes = NULL, *out_dirs = NULL;
    int n_in_axes = attr_ints(n, "scan_input_axes", &in_axes), n_in_dirs = attr_ints(n, "scan_input_directions", &in_dirs);
    int n_out_axes = attr_ints(n, "scan_output_axes", &out_axes);
    int n_out_dirs = attr_ints(n, "scan_output_directions", &out_dirs);
    int64_t T = -1;
    int axis[64];
    if (n_scan_in > 64) return BAD(e, "node '%s' (Scan): too many scan inputs", n->name);
    for (int k = 0; k < n_scan_in; k++) {
        int64_t a = k < n_in_axes ? in_axes[k] : 0;
        if (a < 0) a += xs[k]->ndim;
        if (a < 0 || a >= xs[k]->ndim) return BAD(e, "node '%s' (Scan): scan input %d has no axis %lld", n->name, k, (long long)a);
        axis[k] = (int)a;
        if (T >= 0 && xs[k]->dims[a] != T)
            return BAD(e, "node '%s' (Scan): scan inputs differ in length (%lld and %lld)", n->name, (long long)T,
                       (long long)xs[k]->dims[a]);
        T = xs[k]->dims[a];
    }
    if (T < 0) T = 0;
    tensor_t *cur = xcalloc(n_state + 1, sizeof *cur), *res = xcalloc(b->n_outputs + 1, sizeof *res);
    tensor_t *slices = xcalloc(n_scan_in + 1, sizeof *slices);
    tensor_t **outs = xcalloc(n_scan_out + 1, sizeof *outs);
    for (int k = 0; k < n_scan_out; k++) outs[k] = xcalloc(T + 1, sizeof **outs);
    char path[1024];
    snprintf(path, sizeof path, "%s/body", n->name);
    int rc = 0;
    for (int k = 0; k < n_state; k++) {
        tensor_t *c = tensor_clone(states[k]);
        cur[k] = *c;
        free(c);
    }
    int64_t t = 0;
    for (; t < T && !rc; t++) {
        for (int k = 0; k < n_scan_in && !rc; k++) {
            int rev = k < n_in_dirs && in_dirs[k];
            rc = tensor_slice_axis(xs[k], axis[k], rev ? T - 1 - t : t, 1, 0, &slices[k], e);
        }
        if (rc) break;
        for (int k = 0; k < n_state; k++) inputs[k] = &cur[k];
        for (int k = 0; k < n_scan_in; k++) inputs[n_state + k] = &slices[k];
        if ((rc = exec_subgraph(b, inputs, env, path, res, e))) break;
        for (int k = 0; k < n_state; k++) {
            tensor_free_data(&cur[k]);
            cur[k] = res[k];
        }
        for (int k = 0; k < n_scan_out; k++) outs[k][t] = res[n_state + k];
        memset(res, 0, (b->n_outputs + 1) * sizeof *res);
        for (int k = 0; k < n_scan_in; k++) tensor_free_data(&slices[k]);
    }
    for (int k = 0; k < n_state && !rc; k++) { final[k] = cur[k]; memset(&cur[k], 0, sizeof cur[k]); }
    for (int k = 0; k < n_scan_out && !rc; k++) {
        const value_t *decl = &b->vals[b->outputs[n_state + k]];
        int64_t a = k < n_out_axes ? out_axes[k] : 0;
        int rank = (T ? outs[k][0].ndim : decl->t.ndim) + 1;
        if (a < 0) a += rank;
        rc = stack_scan(outs[k], (int)T, decl, (int)a, k < n_out_dirs && out_dirs[k], &stacked[k], e);
    }
    for (int k = 0; k < n_scan_out; k++) free_list(outs[k], (int)T);
    free(outs);
    free_list(cur, n_state);
    free_list(slices, n_scan_in);
    free(res);
    return rc;
}

static int run_scan(const graph_t *g, const node_t *n, const tensor_t *const *args, tensor_t **outs, tensor_t **rt,
                    exec_env_t *env, perr_t *e)
{
    const graph_t *b = subgraph_of(n, "body", e);
    if (!b) return -1;
    int n_scan_in = (int)attr_int(n, "num_scan_inputs", 0);
    int n_state = b->n_formal_inputs - n_scan_in, n_scan_out = b->n_outputs - n_state;
    if (n_scan_in < 1 || n_state < 0 || n_scan_out < 0 || n->n_out != b->n_outputs)
        return BAD(e, "node '%s' (Scan): num_scan_inputs %d does not fit a body of %d inputs and %d outputs", n->name,
                   n_scan_in, b->n_formal_inputs, b->n_outputs);
    const tensor_t **inputs = xcalloc(b->n_inputs + 1, sizeof *inputs);
    tensor_t *final = xcalloc(n_state + 1, sizeof *final), *stacked = xcalloc(n_scan_out + 1, sizeof *stacked);
    int rc = bind_captures(g, n, b, rt, inputs, e);
    if (!rc && n->opset >= 9) {
        rc = scan_once(n, b, args, args + n_state, inputs, env, final, stacked, e);
    } else if (!rc) {
        /* opset 8: input 0 is sequence_lens, every input has a batch axis 0
         * and scans along axis 1: one scan per batch entry, restacked */
        const tensor_t *const *st = args + 1, *const *xs = args + 1 + n_state;
        if (args[0]) rc = BAD(e, "node '%s' (Scan, opset 8): sequence_lens is not supported", n->name);
        int64_t B = n_state ? st[0]->dims[0] : xs[0]->dims[0];
        tensor_t *per = xcalloc((B + 1) * (b->n_outputs + 1), sizeof *per);
        tensor_t *sl = xcalloc(n_state + n_scan_in + 1, sizeof *sl);
        for (int64_t bi = 0; bi < B && !rc; bi++) {
            const tensor_t *ps[64], *px[64];
            for (int k = 0; k < n_state + n_scan_in && !rc; k++)
                rc = tensor_slice_axis(k < n_state ? st[k] : xs[k - n_state], 0, bi, 1, 0, &sl[k], e);
            for (int k = 0; k < n_state; k++) ps[k] = &sl[k];
            for (int k = 0; k < n_scan_in; k++) px[k] = &sl[n_state + k];
            tensor_t *row = &per[bi * (b->n_outputs + 1)];
            if (!rc) rc = scan_once(n, b, ps, px, inputs, env, row, row + n_state, e);
            for (int k = 0; k < n_state + n_scan_in; k++) tensor_free_data(&sl[k]);
        }
        for (int k = 0; k < b->n_outputs && !rc; k++) {
            const tensor_t **col = xmalloc((B + 1) * sizeof *col);
            for (int64_t bi = 0; bi < B; bi++) col[bi] = &per[bi * (b->n_outputs + 1) + k];
            rc = tensor_concat_axis(col, (int)B, 0, 1, k < n_state ? &final[k] : &stacked[k - n_state], e);
            free(col);
        }
        free_list(per, (int)((B + 1) * (b->n_outputs + 1)));
        free(sl);
    }
    for (int k = 0; k < n_state && !rc; k++) set_out(outs[k], &final[k]);
    for (int k = 0; k < n_scan_out && !rc; k++) set_out(outs[n_state + k], &stacked[k]);
    free_list(final, n_state);
    free_list(stacked, n_scan_out);
    free(inputs);
    return rc;
}

int exec_control(const graph_t *g, const node_t *n, const tensor_t *const *args, tensor_t **outs, tensor_t **rt,
                 exec_env_t *env, perr_t *e)
{
    if (!strcmp(n->op_type, "If")) return run_if(g, n, args, outs, rt, env, e);
    if (!strcmp(n->op_type, "Loop")) return run_loop(g, n, args, outs, rt, env, e);
    return run_scan(g, n, args, outs, rt, env, e);
}
