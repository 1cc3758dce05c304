/* analyze.c — what the search starts from, measured once: the model's float
 * layers (unfused, by their ONNX node names) with their FLOPs, grouped into
 * units (a decomposed LayerNorm is one: pinning half of it leaves the other
 * half overflowing); per layer the largest value it reads or writes over the
 * calibration samples (AutoCast's statistics) and its own error at the
 * target precision when fed the FP32 reference's inputs (infer --reference),
 * with the sites that overflow or turn non-finite flagged first. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "engine/exec.h"
#include "fixp.h"

#define STAT_SAMPLES 8

static int is_float_out(const graph_t *g, const node_t *n)
{
    for (int k = 0; k < n->n_out; k++) {
        if (n->out[k] < 0) continue;
        dtype_t t = g->vals[n->out[k]].t.dtype;
        if (t == DT_FLOAT || t == DT_FLOAT16 || t == DT_BFLOAT16) return 1;
    }
    return 0;
}

static double numel_of(const graph_t *g, int v)
{
    if (v < 0) return 0;
    double n = 1;
    for (int d = 0; d < g->vals[v].t.ndim; d++) n *= (double)(g->vals[v].t.dims[d] > 0 ? g->vals[v].t.dims[d] : 1);
    return n;
}

/* Multiply-adds count two; every other layer one operation per element. */
static double flops_of(const graph_t *g, const node_t *n)
{
    double out = numel_of(g, n->out[0]);
    const char *op = n->op_type;
    if ((!strcmp(op, "Conv") || !strcmp(op, "ConvTranspose")) && n->n_in > 1 && n->in[1] >= 0) {
        const tensor_t *w = &g->vals[n->in[1]].t;
        double k = 1;
        for (int d = 1; d < w->ndim; d++) k *= (double)w->dims[d];
        return 2.0 * (!strcmp(op, "Conv") ? out : numel_of(g, n->in[0])) * k;
    }
    if ((!strcmp(op, "MatMul") || !strcmp(op, "Gemm")) && n->in[0] >= 0) {
        const tensor_t *a = &g->vals[n->in[0]].t;
        int trans = !strcmp(op, "Gemm") && attr_int(n, "transA", 0);
        double k = a->ndim ? (double)a->dims[trans ? a->ndim - 2 : a->ndim - 1] : 1;
        return 2.0 * out * k;
    }
    double in = n->n_in ? numel_of(g, n->in[0]) : 0;
    return in > out ? in : out;
}

/* ---- units ---- */

static int producer_op(const graph_t *g, int v, const char *op)
{
    if (v < 0 || g->vals[v].producer < 0) return -1;
    return strcmp(g->nodes[g->vals[v].producer].op_type, op) ? -1 : g->vals[v].producer;
}

/* The single reader of value v, or -1. */
static int sole_reader(const graph_t *g, int v)
{
    int r = -1;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_in; k++)
            if (g->nodes[i].in[k] == v) { if (r >= 0 && r != i) return -1; r = i; }
    return g->vals[v].is_output ? -1 : r;
}

static int has_const_input(const graph_t *g, const node_t *n)
{
    for (int k = 0; k < n->n_in; k++)
        if (n->in[k] >= 0 && g->vals[n->in[k]].kind == VAL_CONST) return 1;
    return 0;
}

/* x - mean(x), ((x - mean)^2 mean + eps)^0.5, their quotient, then an affine
 * Mul/Add by constants: the LayerNorm exporters write below opset 17. Fills
 * nodes[] (graph node indices) and returns their count, 0 if no match. */
static int match_layernorm(const graph_t *g, int div, int nodes[9])
{
    const node_t *d = &g->nodes[div];
    if (strcmp(d->op_type, "Div") || d->n_in != 2) return 0;
    int sub = producer_op(g, d->in[0], "Sub"), sq = producer_op(g, d->in[1], "Sqrt");
    if (sub < 0 || sq < 0) return 0;
    int add = producer_op(g, g->nodes[sq].in[0], "Add");
    int var = add < 0 ? -1 : producer_op(g, g->nodes[add].in[0], "ReduceMean");
    if (var < 0) return 0;
    int pw = producer_op(g, g->nodes[var].in[0], "Pow");
    if (pw < 0) pw = producer_op(g, g->nodes[var].in[0], "Mul");
    int mu = producer_op(g, g->nodes[sub].in[1], "ReduceMean");
    if (pw < 0 || mu < 0 || g->nodes[pw].in[0] != g->nodes[sub].out[0]) return 0;
    int n = 0;
    int list[] = {mu, sub, pw, var, add, sq, div};
    for (int i = 0; i < 7; i++) nodes[n++] = list[i];
    int mul = sole_reader(g, d->out[0]);
    if (mul >= 0 && !strcmp(g->nodes[mul].op_type, "Mul") && has_const_input(g, &g->nodes[mul])) {
        nodes[n++] = mul;
        int b = sole_reader(g, g->nodes[mul].out[0]);
        if (b >= 0 && !strcmp(g->nodes[b].op_type, "Add") && has_const_input(g, &g->nodes[b])) nodes[n++] = b;
    }
    return n;
}

static char *common_prefix(const graph_t *g, const int *nodes, int n)
{
    size_t l = strlen(g->nodes[nodes[0]].name);
    for (int i = 1; i < n; i++) {
        size_t k = 0;
        const char *a = g->nodes[nodes[0]].name, *b = g->nodes[nodes[i]].name;
        while (k < l && a[k] == b[k]) k++;
        l = k;
    }
    while (l > 0 && g->nodes[nodes[0]].name[l - 1] == '/') l--;
    return l ? xstrndup(g->nodes[nodes[0]].name, l) : xstrdup(g->nodes[nodes[0]].name);
}

static void add_unit(fp_ctx_t *c, const int *layers, int n, char *name, const char *kind)
{
    c->units = xrealloc(c->units, (c->n_units + 1) * sizeof *c->units);
    fp_unit_t *u = &c->units[c->n_units];
    memset(u, 0, sizeof *u);
    u->nodes = xmalloc(n * sizeof *u->nodes);
    memcpy(u->nodes, layers, n * sizeof *layers);
    u->n = n;
    u->name = name;
    u->local_snr = INFINITY;
    snprintf(u->why, sizeof u->why, "%s", kind);
    for (int i = 0; i < n; i++) {
        c->layers[layers[i]].unit = c->n_units;
        u->flops += c->layers[layers[i]].flops;
    }
    c->n_units++;
}

/* Float layers in execution order; lmap[node] = layer index or -1. */
static void list_layers(fp_ctx_t *c, const graph_t *g, int *lmap)
{
    for (int i = 0; i < g->n_nodes; i++) {
        lmap[i] = -1;
        if (!is_float_out(g, &g->nodes[i])) continue;
        c->layers = xrealloc(c->layers, (c->n_layers + 1) * sizeof *c->layers);
        fp_layer_t *l = &c->layers[c->n_layers];
        memset(l, 0, sizeof *l);
        l->name = xstrdup(g->nodes[i].name);
        l->op = xstrdup(g->nodes[i].op_type);
        l->exec_index = c->n_layers;
        l->flops = flops_of(g, &g->nodes[i]);
        l->unit = -1;
        c->total_flops += l->flops;
        lmap[i] = c->n_layers++;
    }
}

static int is_gemm(const char *op)
{
    return !strcmp(op, "Conv") || !strcmp(op, "ConvTranspose") || !strcmp(op, "MatMul") || !strcmp(op, "Gemm");
}

/* down[node]: what the node writes reaches a GEMM-class layer (nodes are
 * in execution order, so every reader is seen before its producer). */
static int *gemm_downstream(const graph_t *g)
{
    int *down = xcalloc(g->n_nodes + 1, sizeof *down);
    char *feeds = xcalloc(g->n_vals + 1, 1);   /* value read by a GEMM-class layer or by a node upstream of one */
    for (int i = g->n_nodes - 1; i >= 0; i--) {
        const node_t *d = &g->nodes[i];
        for (int k = 0; k < d->n_out; k++)
            if (d->out[k] >= 0 && feeds[d->out[k]]) down[i] = 1;
        if (down[i] || is_gemm(d->op_type))
            for (int k = 0; k < d->n_in; k++)
                if (d->in[k] >= 0) feeds[d->in[k]] = 1;
    }
    free(feeds);
    return down;
}

static void group_units(fp_ctx_t *c, const graph_t *g, const int *lmap)
{
    int nodes[9], lay[9];
    for (int i = 0; i < g->n_nodes; i++) {
        int n = match_layernorm(g, i, nodes), ok = n > 0;
        for (int k = 0; k < n; k++) {
            lay[k] = lmap[nodes[k]];
            if (lay[k] < 0 || c->layers[lay[k]].unit >= 0) ok = 0;
        }
        if (ok) add_unit(c, lay, n, common_prefix(g, nodes, n), "decomposed LayerNorm");
    }
    /* the output tail: every layer whose result reaches no GEMM-class layer
     * (box decoding, scaling, Sigmoid, TopK...), nearly free, its error
     * landing on the outputs directly; and the output heads: the GEMM-class
     * layers that feed no other (a detector's class and box projections),
     * whose rounding lands there too. One candidate each. */
    int *down = gemm_downstream(g);
    int *tail = xmalloc((c->n_layers + 1) * sizeof *tail), *head = xmalloc((c->n_layers + 1) * sizeof *head), nt = 0, nh = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        int l = lmap[i];
        if (l < 0 || c->layers[l].unit >= 0 || down[i]) continue;
        if (is_gemm(c->layers[l].op)) head[nh++] = l;
        else tail[nt++] = l;
    }
    if (nt > 1 && nt < c->n_layers) {
        add_unit(c, tail, nt, xstrdup("output tail"), "output tail: its results reach no GEMM-class layer");
        c->units[c->n_units - 1].tail = 2;
    }
    if (nh && nh < c->n_layers) {
        add_unit(c, head, nh, xstrdup(nh > 1 ? "output heads" : c->layers[head[0]].name),
                 "output head: a GEMM-class layer that feeds no other");
        c->units[c->n_units - 1].tail = 1;
    }
    free(tail);
    free(head);
    free(down);
    for (int l = 0; l < c->n_layers; l++)
        if (c->layers[l].unit < 0) add_unit(c, &l, 1, xstrdup(c->layers[l].name), "");
}

/* ---- statistics over the calibration (search) samples ---- */

static double absmax(const tensor_t *t)
{
    double m = 0;
    if (!t || !dtype_is_float(t->dtype) || !t->data) return 0;
    int64_t n = tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        double v = fabs(tensor_get_f64(t, i));
        if (v > m || isnan(v)) m = isnan(v) ? INFINITY : v;
    }
    return m;
}

static const tensor_t *value_of(const graph_t *g, const tensor_set_t *in, const tensor_set_t *dump, int v)
{
    if (v < 0) return NULL;
    if (g->vals[v].kind == VAL_CONST) return &g->vals[v].t;
    const tensor_t *t = tensorset_get(dump, g->vals[v].name);
    return t ? t : tensorset_get(in, g->vals[v].name);
}

static void collect_stats(fp_ctx_t *c, const graph_t *g, const int *lmap, const fp_sample_t *s,
                          const tensor_set_t *dump)
{
    for (int i = 0; i < g->n_nodes; i++) {
        if (lmap[i] < 0) continue;
        fp_layer_t *l = &c->layers[lmap[i]];
        const node_t *n = &g->nodes[i];
        for (int k = 0; k < n->n_in + n->n_out; k++) {
            int v = k < n->n_in ? n->in[k] : n->out[k - n->n_in];
            double m = absmax(value_of(g, &s->in, dump, v));
            double *dst = v >= 0 && g->vals[v].kind == VAL_CONST ? &l->absmax_init : &l->absmax_io;
            if (m > *dst) *dst = m;
        }
    }
}

static double range_of(const char *p)
{
    return !strcmp(p, "fp16") ? 65504.0 : 3.3895313892515355e38;
}

/* Own error of every layer at the target precision on the reference's inputs. */
static int local_error(fp_ctx_t *c, const int *lmap, const fp_sample_t *s, tensor_set_t *dump, perr_t *e)
{
    graph_t *g = fp_build(c, c->low, NULL, 1, e);
    if (!g) return -1;
    const exec_config_t xc = {.threads = c->threads, .dump = "all"};
    const exec_run_opts_t ro = {.reference = dump};
    tensor_set_t out = {0};
    int rc = exec_once(g, &xc, &s->in, &ro, &out, e);
    cmp_work_t *w = cmp_work_new();
    double lim = range_of(c->low);
    for (int i = 0; i < g->n_nodes && !rc; i++) {
        const node_t *n = &g->nodes[i];
        int li = lmap[i];
        if (li < 0 || strcmp(n->name, c->layers[li].name)) continue;   /* same build, same order */
        fp_unit_t *u = &c->units[c->layers[li].unit];
        for (int k = 0; k < n->n_out; k++) {
            if (n->out[k] < 0) continue;
            tensor_t *a = tensorset_get(&out, g->vals[n->out[k]].name), *b = tensorset_get(dump, g->vals[n->out[k]].name);
            if (!a || !b || !dtype_is_float(b->dtype) || !tensor_same_shape(a, b)) continue;
            cmp_tol_t tol = {.atol = 1e-5, .rtol = 1e-5};
            cmp_stats_t st;
            if ((rc = cmp_pair(a, b, &tol, w, &st, e))) break;
            int64_t extra = st.a.nan + st.a.posinf + st.a.neginf - st.b.nan - st.b.posinf - st.b.neginf;
            double snr = extra > 0 ? -INFINITY : st.snr_db;
            if (snr < u->local_snr) u->local_snr = snr;
            if (!u->overflow && (extra > 0 || c->layers[li].absmax_io > lim)) {
                u->overflow = 1;
                snprintf(u->why + strlen(u->why), sizeof u->why - strlen(u->why), "%s%s at %s (%s)",
                         u->why[0] ? "; " : "", extra > 0 ? "non-finite in its own computation" : "values beyond the range",
                         n->name, n->op_type);
            }
        }
    }
    cmp_work_free(w);
    tensorset_free(&out);
    graph_free(g);
    return rc;
}

int fp_analyze(fp_ctx_t *c, perr_t *e)
{
    graph_t *g = fp_build(c, "fp32", NULL, 1, e);
    if (!g) return -1;
    int *lmap = xmalloc((g->n_nodes + 1) * sizeof *lmap);
    list_layers(c, g, lmap);
    int rc = 0;
    if (!c->n_layers) { rc = BAD(e, "%s: no float layer: nothing to run in reduced precision", c->model); goto done; }
    group_units(c, g, lmap);
    tensor_set_t dump0 = {0};
    /* value ranges over the first STAT_SAMPLES search samples (a dump of
     * every tensor is ~100 MB per RT-DETR image) */
    const exec_config_t xc = {.threads = c->threads, .dump = "all"};
    for (int i = 0; i < c->n_search && i < STAT_SAMPLES && !rc; i++) {
        tensor_set_t dump = {0};
        rc = exec_once(g, &xc, &c->s[i].in, NULL, &dump, e);
        if (!rc) collect_stats(c, g, lmap, &c->s[i], &dump);
        if (i == 0) dump0 = dump;
        else tensorset_free(&dump);
    }
    if (!rc) rc = local_error(c, lmap, &c->s[0], &dump0, e);
    tensorset_free(&dump0);
done:
    free(lmap);
    graph_free(g);
    return rc;
}

char **fp_unit_names(const fp_ctx_t *c, const int *units, int nu, int *n)
{
    int total = 0;
    for (int i = 0; i < nu; i++) total += c->units[units[i]].n;
    char **v = xmalloc((total + 1) * sizeof *v);
    *n = 0;
    for (int i = 0; i < nu; i++)
        for (int k = 0; k < c->units[units[i]].n; k++) v[(*n)++] = c->layers[c->units[units[i]].nodes[k]].name;
    return v;
}

double fp_units_flops(const fp_ctx_t *c, const int *units, int nu)
{
    double f = 0;
    for (int i = 0; i < nu; i++) f += c->units[units[i]].flops;
    return f;
}

int fp_layer_index(const fp_ctx_t *c, const char *name)
{
    for (int i = 0; i < c->n_layers; i++) if (!strcmp(c->layers[i].name, name)) return i;
    return 0;
}
