/* exec.c — running a graph: the execution session (what persists across
 * runs), binding inputs, running nodes in order through node_run(), freeing
 * activations at their last use, collecting outputs. */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "engine/exec.h"
#include "engine/exec_int.h"
#include "engine/share.h"

/* The clock of --profile's layer times: the wall clock, as trtexec's. A
 * build with -DPROFILE_CLOCK=CLOCK_THREAD_CPUTIME_ID times layers by the
 * running thread's CPU clock instead (one thread: what a layer costs on a
 * shared machine, whatever else runs there). */
#ifndef PROFILE_CLOCK
#define PROFILE_CLOCK CLOCK_MONOTONIC
#endif

struct exec_session {
    const graph_t *g;
    exec_config_t cfg;      /* cfg.dump points at dump */
    char *dump;
    char *arena;            /* every planned activation's bytes (arena_new) */
    scratch_pool_t scratch; /* the kernels' scratch blocks */
    void **node_cache;      /* per node of g: what its kernel keeps (packed weights) */
};

static int bind_inputs(const graph_t *g, const tensor_set_t *in, tensor_t **rt, perr_t *e)
{
    int next_pos = 0;
    for (int i = 0; i < in->n; i++) {
        int v = -1;
        if (in->names[i][0]) {
            v = graph_find(g, in->names[i]);
            int is_input = 0;
            for (int k = 0; k < g->n_inputs; k++) if (g->inputs[k] == v) is_input = 1;
            if (!is_input) return BAD(e, "input tensor '%s': the model has no input of that name", in->names[i]);
        } else {
            while (next_pos < g->n_inputs && rt[g->inputs[next_pos]]) next_pos++;
            if (next_pos == g->n_inputs) return BAD(e, "more unnamed input tensors than model inputs");
            v = g->inputs[next_pos];
        }
        if (rt[v]) return BAD(e, "input '%s' is given twice", g->vals[v].name);
        const value_t *want = &g->vals[v];
        const tensor_t *t = in->ts[i];
        if (want->t.dtype && t->dtype != want->t.dtype)
            return BAD(e, "input '%s': expected %s, got %s", want->name, dtype_name(want->t.dtype), dtype_name(t->dtype));
        int bad = want->t.ndim && t->ndim != want->t.ndim;
        for (int d = 0; !bad && d < want->t.ndim; d++)
            if (want->t.dims[d] >= 0 && want->t.dims[d] != t->dims[d]) bad = 1;
        if (bad) {
            char a[160], b[160];
            /* unknown dims print as -1 */
            return BAD(e, "input '%s': expected shape %s, got %s", want->name,
                       shape_str(want->t.ndim, want->t.dims, a, sizeof a), shape_str(t->ndim, t->dims, b, sizeof b));
        }
        rt[v] = (tensor_t *)t;
    }
    for (int k = 0; k < g->n_inputs; k++)
        if (!rt[g->inputs[k]]) return BAD(e, "input '%s' is missing", g->vals[g->inputs[k]].name);
    return 0;
}

static int wants_dump(const exec_config_t *cfg, const char *name)
{
    if (!cfg->dump) return 0;
    return !strcmp(cfg->dump, "all") || fnmatch(cfg->dump, name, 0) == 0;
}

/* The arena: one block for every activation the memory plan placed
 * (static shapes); values whose lifetimes do not overlap share bytes. */
static char *arena_new(const graph_t *g, int64_t *size)
{
    int64_t end = 0;
    for (int i = 0; i < g->n_vals; i++) {
        const value_t *v = &g->vals[i];
        if (v->offset >= 0 && v->shape_known) {
            int64_t b = v->offset + ((int64_t)tensor_nbytes(&v->t) + 63) / 64 * 64;
            if (b > end) end = b;
        }
    }
    *size = end;
    return end ? xmalloc_huge((size_t)end) : NULL;
}

/* An output may share bytes with an input in the plan (graph_plan_memory: a
 * view, a Slice that is one run of its input, an elementwise layer in place,
 * a Concat's inputs in its output). With reference inputs the node reads a
 * reference tensor instead, and writing that into the shared bytes would
 * change what the input's other readers see: such an output gets bytes of
 * its own. */
static int detached(const graph_t *g, const node_t *n, int k, const exec_run_opts_t *ro)
{
    if (!ro->reference) return 0;
    const value_t *y = &g->vals[n->out[k]];
    int64_t y0 = y->offset, y1 = y0 + (int64_t)tensor_nbytes(&y->t);
    for (int i = 0; i < n->n_in; i++) {
        if (n->in[i] < 0) continue;
        const value_t *x = &g->vals[n->in[i]];
        if (x->offset < 0 || !x->shape_known) continue;
        int64_t x0 = x->offset, x1 = x0 + (int64_t)tensor_nbytes(&x->t);
        if (x0 < y1 && y0 < x1) return 1;
    }
    return 0;
}

/* A dumped tensor: a subgraph's value is dumped once per run of the
 * subgraph, the last one stays (Loop and Scan bodies run many times). */
static void dump_put(tensor_set_t *out, const char *name, const tensor_t *t)
{
    for (int i = 0; i < out->n; i++)
        if (!strcmp(out->names[i], name)) {
            tensor_free(out->ts[i]);
            out->ts[i] = tensor_clone(t);
            return;
        }
    tensorset_add(out, name, tensor_clone(t));
}

/* Node i's slot of the memory kept across runs: for a node of the
 * session's graph (not of a subgraph) whose inputs past the first are all
 * constants (what a kernel keeps there depends on those alone; input 2 may
 * vary for ops marked cache_in1; a fused residual, the last input of a
 * residual Conv, is added in the epilogue and never kept). */
static void **node_cache(const graph_t *g, int i, const exec_env_t *env, const char *path)
{
    if (path) return NULL;
    const node_t *n = &g->nodes[i];
    for (int k = 1; k < n->n_in - (n->residual != 0); k++)
        if (n->in[k] >= 0 && g->vals[n->in[k]].kind != VAL_CONST && !(k == 2 && n->op && n->op->cache_in1))
            return NULL;
    return &env->node_cache[i];
}

int exec_nodes(const graph_t *g, tensor_t **rt, tensor_t *owned, char *arena, exec_env_t *env, const char *path,
               perr_t *e)
{
    const exec_run_opts_t *ro = env->ro;
    int rc = 0;
    char dname[1024];
    for (int i = 0; i < g->n_nodes && !rc; i++) {
        const node_t *n = &g->nodes[i];
        if (!path && env->reuse && !share_runs(env->reuse, i)) continue;   /* its values are the kept run's */
        node_t unkept;
        if (ro->reference && n->keeps_storage) {
            /* reference inputs are float32, not in the layer's storage type:
             * its outputs need their rounding (precision/kept.c) */
            unkept = *n;
            unkept.keeps_storage = 0;
            n = &unkept;
        }
        const tensor_t *args[MAX_NODE_IO];
        tensor_t *outs[MAX_NODE_IO];
        if (n->n_in > MAX_NODE_IO || n->n_out > MAX_NODE_IO) { rc = BAD(e, "node '%s': too many inputs/outputs", n->name); break; }
        for (int k = 0; k < n->n_in; k++) {
            int v = n->in[k];
            args[k] = v >= 0 ? rt[v] : NULL;
            if (!path && ro->reference && v >= 0 && g->vals[v].kind == VAL_ACTIVATION) {
                const tensor_t *r = tensorset_get(ro->reference, g->vals[v].name);
                if (r) args[k] = r;
            }
            if (v >= 0 && !args[k]) { rc = BAD(e, "node '%s': input '%s' has no value", n->name, g->vals[v].name); break; }
        }
        if (rc) break;
        for (int k = 0; k < n->n_out; k++) {
            int v = n->out[k];
            outs[k] = v >= 0 ? &owned[v] : NULL;
            if (v >= 0 && arena && g->vals[v].offset >= 0 && g->vals[v].shape_known && !detached(g, n, k, ro)) {
                tensor_free_data(&owned[v]);
                owned[v].data = arena + g->vals[v].offset;
                owned[v].owns = 0;
                owned[v].cap = tensor_nbytes(&g->vals[v].t);
            }
        }
        struct timespec t0, t1;
        int timed = !path && ro->layer_ms;
        if (timed) clock_gettime(PROFILE_CLOCK, &t0);
        if (n->op->control) {
            if (exec_control(g, n, args, outs, rt, env, e)) { rc = -1; break; }
        } else if (node_run(n, args, outs, env->cfg->threads, env->pool, node_cache(g, i, env, path), e)) {
            rc = -1;
            break;
        }
        if (timed) {
            clock_gettime(PROFILE_CLOCK, &t1);
            ro->layer_ms[i] += (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
        }
        for (int k = 0; k < n->n_out; k++) {
            int v = n->out[k];
            if (v < 0) continue;
            rt[v] = &owned[v];
            if (!path && env->n_keep) share_keep_value(env->keep, env->n_keep, v, &owned[v]);
            if (path) snprintf(dname, sizeof dname, "%s/%s", path, g->vals[v].name);
            if (wants_dump(env->cfg, path ? dname : g->vals[v].name) && (path || !g->vals[v].is_output) &&
                owned[v].dtype != DT_SEQUENCE)
                dump_put(env->out, path ? dname : g->vals[v].name, &owned[v]);
        }
        /* free activations nobody reads after this node */
        for (int k = 0; k < n->n_in; k++) {
            int v = n->in[k];
            if (v >= 0 && g->vals[v].kind == VAL_ACTIVATION && g->vals[v].last_use == i && !g->vals[v].is_output) {
                tensor_free_data(&owned[v]);
                rt[v] = NULL;
            }
        }
        for (int k = 0; k < n->n_out; k++) {
            int v = n->out[k];
            if (v >= 0 && g->vals[v].last_use < 0 && !g->vals[v].is_output) {
                tensor_free_data(&owned[v]);
                rt[v] = NULL;
            }
        }
    }
    return rc;
}

int exec_subgraph(const graph_t *sub, const tensor_t *const *inputs, exec_env_t *env, const char *path,
                  tensor_t *results, perr_t *e)
{
    tensor_t **rt = xcalloc(sub->n_vals + 1, sizeof *rt);
    tensor_t *owned = xcalloc(sub->n_vals + 1, sizeof *owned);
    for (int i = 0; i < sub->n_vals; i++)
        if (sub->vals[i].kind == VAL_CONST) rt[i] = (tensor_t *)&sub->vals[i].t;
    int rc = 0;
    for (int k = 0; k < sub->n_inputs && !rc; k++) {
        if (!inputs[k] && k < sub->n_formal_inputs) continue;   /* an omitted optional input */
        if (!inputs[k]) rc = BAD(e, "%s: captured value '%s' has no value", path, sub->vals[sub->inputs[k]].name);
        rt[sub->inputs[k]] = (tensor_t *)inputs[k];
    }
    if (!rc) rc = exec_nodes(sub, rt, owned, NULL, env, path, e);
    for (int k = 0; k < sub->n_outputs && !rc; k++) {
        int v = sub->outputs[k];
        if (!rt[v]) { rc = BAD(e, "%s: output '%s' was not computed", path, sub->vals[v].name); break; }
        tensor_t *c = tensor_clone(rt[v]);
        results[k] = *c;
        free(c);
    }
    if (rc) for (int k = 0; k < sub->n_outputs; k++) tensor_free_data(&results[k]);
    for (int i = 0; i < sub->n_vals; i++) tensor_free_data(&owned[i]);
    free(owned);
    free(rt);
    return rc;
}

exec_session_t *exec_session_open(const graph_t *g, const exec_config_t *cfg, perr_t *e)
{
    if (cfg && cfg->threads < 0) {
        BAD(e, "execution session: %d threads (0 or more: 0 is one)", cfg->threads);
        return NULL;
    }
    exec_session_t *s = xcalloc(1, sizeof *s);
    s->g = g;
    if (cfg) s->cfg = *cfg;
    if (s->cfg.threads < 1) s->cfg.threads = 1;
    if (cfg && cfg->dump) s->cfg.dump = s->dump = xstrdup(cfg->dump);
    int64_t arena_size;
    /* the arena lives as long as the session: no page faults on every run */
    s->arena = arena_new(g, &arena_size);
    s->node_cache = xcalloc((size_t)g->n_nodes + 1, sizeof *s->node_cache);
    return s;
}

void exec_session_close(exec_session_t *s)
{
    if (!s) return;
    for (int i = 0; i < s->g->n_nodes; i++) free(s->node_cache[i]);
    free(s->node_cache);
    scratch_pool_free(&s->scratch);
    free(s->arena);
    free(s->dump);
    free(s);
}

int exec_session_run(exec_session_t *s, const tensor_set_t *in, const exec_run_opts_t *ro, tensor_set_t *out,
                     perr_t *e)
{
    static const exec_run_opts_t none = {0};
    const graph_t *g = s->g;
    tensor_t **rt = xcalloc(g->n_vals + 1, sizeof *rt);       /* current tensor per value */
    tensor_t *owned = xcalloc(g->n_vals + 1, sizeof *owned);  /* storage of activations */
    exec_env_t env = {.cfg = &s->cfg, .ro = ro ? ro : &none, .out = out,
                      .pool = &s->scratch, .node_cache = s->node_cache};
    int rc = 0;
    for (int i = 0; i < g->n_vals; i++)
        if (g->vals[i].kind == VAL_CONST) rt[i] = (tensor_t *)&g->vals[i].t;
    if (bind_inputs(g, in, rt, e)) { rc = -1; goto done; }
    /* partial reruns (share.c): never with dumps (every layer's tensor is
     * wanted) or reference inputs (local error is per layer, whole) */
    if (!s->cfg.dump && !env.ro->reference) {
        env.keep = env.ro->keep;
        env.n_keep = env.ro->keep ? env.ro->n_keep : 0;
        env.reuse = env.ro->reuse && share_reuse_bind(env.ro->reuse, g, rt) ? env.ro->reuse : NULL;
    }
    if (env.n_keep) share_keep_begin(env.keep, env.n_keep, g, rt);
    rc = exec_nodes(g, rt, owned, s->arena, &env, NULL, e);
    if (env.n_keep) share_keep_end(env.keep, env.n_keep, rc == 0);
    if (env.ro->layers_run) *env.ro->layers_run = env.reuse ? exec_share_layers(env.reuse) : g->n_nodes;
    for (int i = 0; i < g->n_outputs && !rc; i++) {
        int v = g->outputs[i];
        if (!rt[v]) { rc = BAD(e, "output '%s' was not computed", g->vals[v].name); break; }
        if (rt[v]->dtype == DT_SEQUENCE) {
            rc = BAD(e, "output '%s' is a sequence: parity writes tensor outputs only", g->vals[v].name);
            break;
        }
        tensorset_add(out, g->vals[v].name, tensor_clone(rt[v]));
    }
done:
    for (int i = 0; i < g->n_vals; i++) tensor_free_data(&owned[i]);
    free(owned);
    free(rt);
    return rc;
}

int exec_once(const graph_t *g, const exec_config_t *cfg, const tensor_set_t *in, const exec_run_opts_t *ro,
              tensor_set_t *out, perr_t *e)
{
    exec_session_t *s = exec_session_open(g, cfg, e);
    if (!s) return -1;
    int rc = exec_session_run(s, in, ro, out, e);
    exec_session_close(s);
    return rc;
}
