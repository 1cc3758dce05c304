/* search.c — from a failing cell to the smallest subgraph that still fails:
 * every tensor's reference value (the dump, completed by an unfused FP32
 * run in-process), the diagnosis (the cell's precision run in-process, the
 * first non-finite tensor, else the first failing one, in the model's
 * order), then the cut: bisection over the topological order of the
 * target's ancestors for the latest start that still fails, then trimming
 * side branches one node at a time (a removed node's outputs become inputs
 * holding their reference values). Every candidate is a standalone ONNX
 * built and run in-process at the cell's precision and judged by its rule. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine/build.h"
#include "engine/exec.h"
#include "reduce.h"
#include "util/fsutil.h"

static void say(const rd_ctx_t *c, const char *fmt, const char *a, int n)
{
    if (!c->quiet) { fputs("reduce: ", stderr); fprintf(stderr, fmt, a, n); fputc('\n', stderr); }
}

/* "NAME=DIMS" of each graph input the sample holds (dynamic dims resolved). */
static char **input_shapes(const rd_ctx_t *c, int *n)
{
    char **v = xcalloc(c->inputs.n + 1, sizeof *v);
    *n = 0;
    for (int i = 0; i < c->inputs.n; i++) {
        int id = sg_value(&c->sg, c->inputs.names[i]);
        const tensor_t *t = c->inputs.ts[i];
        if (id < 0 || !c->sg.is_input[id] || t->ndim == 0) continue;
        char dims[160];
        shape_str(t->ndim, t->dims, dims, sizeof dims);
        size_t l = strlen(c->inputs.names[i]) + strlen(dims) + 2;
        v[*n] = xmalloc(l);
        snprintf(v[(*n)++], l, "%s=%s", c->inputs.names[i], dims);
    }
    return v;
}

static graph_t *build_whole(rd_ctx_t *c, const char *precision, const char *config, int no_fusion, perr_t *e)
{
    int ns;
    char **shapes = input_shapes(c, &ns);
    build_opts_t o = {.input_shapes = (const char **)shapes, .n_input_shapes = ns, .precision = precision,
                      .precision_config = config, .no_fusion = no_fusion,
                      .quiet_rules = no_fusion};
    engine_meta_t m;
    graph_t *g = engine_build(c->cell->model, &o, &m, e);
    if (g && !no_fusion) c->global = m.precision;
    for (int i = 0; i < ns; i++) free(shapes[i]);
    free(shapes);
    return g;
}

static int run_dump(const rd_ctx_t *c, const graph_t *g, const tensor_set_t *in, const char *dump, tensor_set_t *out,
                    perr_t *e)
{
    const exec_config_t xc = {.threads = c->threads, .dump = dump};
    memset(out, 0, sizeof *out);
    return exec_once(g, &xc, in, NULL, out, e);
}

/* Moves t into the reference set unless a value of that name is there. */
static void ref_take(rd_ctx_t *c, const char *name, tensor_t *t)
{
    if (tensorset_get(&c->ref, name)) { tensor_free(t); return; }
    tensorset_add(&c->ref, name, t);
}

static int is_graph_output(const rd_ctx_t *c, int v);

/* A graph output the dump holds must be what the FP32 run of these inputs
 * gives (the same engine, up to kernel order): else the dump is another
 * sample's, or another model's. */
static int check_sample(const rd_ctx_t *c, const char *name, const tensor_t *a, perr_t *e)
{
    int v = sg_value(&c->sg, name);
    const tensor_t *b = tensorset_get(&c->ref, name);
    if (v < 0 || !b || !is_graph_output(c, v) || !dtype_is_float(a->dtype) || !dtype_is_float(b->dtype)) return 0;
    double diff = 0, mag = 0;
    int same = tensor_same_shape(a, b);
    for (int64_t i = 0, n = same ? tensor_numel(a) : 0; i < n; i++) {
        double x = tensor_get_f64(a, i), y = tensor_get_f64(b, i);
        if (isfinite(x) && isfinite(y)) { diff = fmax(diff, fabs(x - y)); mag = fmax(mag, fabs(y)); }
        else if (!(isnan(x) && isnan(y)) && x != y) diff = INFINITY;
    }
    if (same && diff <= 1e-4 * mag) return 0;
    return BAD(e, "reference dump '%s': output '%s' is not the FP32 result of inputs '%s' (%s): the dump of another "
                  "sample or model?", c->cell->dump, name, c->cell->inputs, same ? "values differ" : "shapes differ");
}

int rd_reference(rd_ctx_t *c, perr_t *e)
{
    if (!is_dir(c->cell->inputs)) return BAD(e, "inputs '%s': not a folder of tensors", c->cell->inputs);
    if (tensorset_read(c->cell->inputs, &c->inputs, e)) return -1;
    if (c->cell->dump) {
        if (!is_dir(c->cell->dump))
            return BAD(e, "reference dump '%s': not found (infer --dump all on the reference engine writes it)", c->cell->dump);
        tensor_set_t d;
        if (tensorset_read(c->cell->dump, &d, e)) return -1;
        if (!d.n) { tensorset_free(&d); return BAD(e, "reference dump '%s': holds no tensor", c->cell->dump); }
        for (int i = 0; i < d.n; i++) { ref_take(c, d.names[i], d.ts[i]); free(d.names[i]); }
        free(d.names); free(d.ts);
    }
    /* the dump lacks what fusion hides and what it was not asked for:
     * an unfused FP32 run fills the rest (fusing at FP32 changes no bit) */
    graph_t *g = build_whole(c, "fp32", NULL, 1, e);
    if (!g) return perr_prefix(e, "%s: ", c->cell->model);
    tensor_set_t r;
    int rc = run_dump(c, g, &c->inputs, "all", &r, e);
    graph_free(g);
    if (rc) return perr_prefix(e, "%s: the FP32 reference run: ", c->cell->model);
    for (int i = 0; i < r.n && !rc; i++) rc = check_sample(c, r.names[i], r.ts[i], e);
    for (int i = 0; i < r.n; i++) { ref_take(c, r.names[i], r.ts[i]); free(r.names[i]); }
    free(r.names); free(r.ts);
    if (rc) return -1;
    for (int i = 0; i < c->inputs.n; i++) ref_take(c, c->inputs.names[i], tensor_clone(c->inputs.ts[i]));
    c->refv = xcalloc(c->sg.n_vals + 1, sizeof *c->refv);
    c->have = xcalloc(c->sg.n_vals + 1, 1);
    for (int i = 0; i < c->ref.n; i++) {
        int v = sg_value(&c->sg, c->ref.names[i]);
        if (v < 0 || c->ref.ts[i]->dtype == DT_SEQUENCE || c->ref.ts[i]->dtype == DT_STRING) continue;
        c->refv[v] = c->ref.ts[i];
        c->have[v] = 1;
    }
    return 0;
}

/* Values computed from a TopK's result: near-ties reorder them, so with a
 * scale-free (SNR) rule they are never a first failure (as layerwise). */
static unsigned char *ordered_values(const rd_ctx_t *c)
{
    unsigned char *ord = xcalloc(c->sg.n_vals + 1, 1);
    for (int i = 0; i < c->sg.n_nodes; i++) {
        int o = !strcmp(c->sg.m->graph->node[i]->op_type, "TopK");
        for (int k = 0; k < c->sg.n_in[i] && !o; k++) o = ord[c->sg.in[i][k]];
        for (int k = 0; k < c->sg.n_out[i] && o; k++) ord[c->sg.out[i][k]] = 1;
    }
    return ord;
}

static int is_graph_output(const rd_ctx_t *c, int v)
{
    const Onnx__GraphProto *g = c->sg.m->graph;
    for (size_t i = 0; i < g->n_output; i++) if (!strcmp(g->output[i]->name, c->sg.val[v])) return 1;
    return 0;
}

int rd_diagnose(rd_ctx_t *c, perr_t *e)
{
    graph_t *g = build_whole(c, c->cell->precision, c->cell->config, 0, e);
    if (!g) return perr_prefix(e, "%s: ", c->cell->model);
    tensor_set_t a;
    int rc = run_dump(c, g, &c->inputs, "all", &a, e);
    graph_free(g);
    if (rc) return perr_prefix(e, "%s: the cell's run: ", c->cell->model);
    unsigned char *ord = c->cell->rule.layer_snr_db > 0 ? ordered_values(c) : xcalloc(c->sg.n_vals + 1, 1);
    int first_fail = -1, first_nf = -1;
    rd_check_t cf = {0}, cn = {0};
    for (int i = 0; i < c->sg.n_nodes && first_nf < 0; i++)
        for (int k = 0; k < c->sg.n_out[i]; k++) {
            int v = c->sg.out[i][k];
            const tensor_t *t = tensorset_get(&a, c->sg.val[v]);
            if (!t || !c->have[v]) continue;
            rd_check_t r;
            rd_check_tensor(c->cell, c->sg.val[v], is_graph_output(c, v), t, c->refv[v], &r, e);
            if (r.nonfinite && first_nf < 0) { first_nf = v; cn = r; }
            if (r.fail && !ord[v] && first_fail < 0) { first_fail = v; cf = r; }
        }
    free(ord);
    tensorset_free(&a);
    if (first_nf < 0 && first_fail < 0) return 0;
    c->target = first_nf >= 0 ? first_nf : first_fail;
    c->target_full = first_nf >= 0 ? cn : cf;
    c->start_reason = first_nf >= 0 ? "first non-finite tensor" : "first failing tensor";
    return 1;
}

/* ---- one candidate ---------------------------------------------------------- */

/* 0: evaluated (r filled), 1: not a runnable candidate (r->fail 0), -1: error. */
int rd_eval(rd_ctx_t *c, unsigned char *keep, int out, rd_check_t *r, tensor_set_t *dump, perr_t *e)
{
    memset(r, 0, sizeof *r);
    perr_t pe = {0};
    int *cut, ncut;
    if (sg_close(&c->sg, keep, c->have, out, &cut, &ncut, &pe) < 0) return 1;
    const tensor_t **in_t = xcalloc(ncut + 1, sizeof *in_t);
    for (int i = 0; i < ncut; i++) in_t[i] = c->refv[cut[i]];
    const tensor_t *out_t = c->refv[out];
    uint8_t *buf;
    size_t len;
    char *path = path_join(c->work, "candidate.onnx");
    int rc = sg_pack(&c->sg, keep, cut, in_t, ncut, &out, &out_t, 1, "reduced", &buf, &len, &pe);
    if (!rc) { rc = atomic_write(path, buf, len, e); free(buf); if (rc) { free(path); free(in_t); free(cut); return -1; } }
    build_opts_t o = {.precision = c->cell->precision, .precision_config = c->cell->config, .quiet_rules = 1};
    engine_meta_t m;
    graph_t *g = rc ? NULL : engine_build(path, &o, &m, &pe);
    free(path);
    c->evals++;
    if (!g) { free(in_t); free(cut); return 1; }
    tensor_set_t in = {.n = ncut, .cap = ncut, .names = xcalloc(ncut + 1, sizeof(char *)),
                       .ts = xcalloc(ncut + 1, sizeof(tensor_t *))};
    for (int i = 0; i < ncut; i++) { in.names[i] = c->sg.val[cut[i]]; in.ts[i] = (tensor_t *)in_t[i]; }
    tensor_set_t res;
    rc = run_dump(c, g, &in, dump ? "all" : NULL, &res, &pe);
    graph_free(g);
    free(in.names); free(in.ts); free(in_t); free(cut);
    if (rc) { tensorset_free(&res); return 1; }
    const tensor_t *t = tensorset_get(&res, c->sg.val[out]);
    if (t) rd_check_tensor(c->cell, c->sg.val[out], 1, t, c->refv[out], r, e);
    if (dump) *dump = res;
    else tensorset_free(&res);
    return t ? 0 : 1;
}

/* Evaluates a kept set (closed in place); 1 when it fails the rule. */
static int reproduces(rd_ctx_t *c, unsigned char *keep, rd_check_t *r, perr_t *e)
{
    int rc = rd_eval(c, keep, c->target, r, NULL, e);
    return rc < 0 ? -1 : rc == 0 && r->fail;
}

static int count(const rd_ctx_t *c, const unsigned char *keep)
{
    int n = 0;
    for (int i = 0; i < c->sg.n_nodes; i++) n += keep[i] != 0;
    return n;
}

/* keep = the ancestors at positions [from, na) of the order. */
static void window(const rd_ctx_t *c, const int *ord, int na, int from, unsigned char *keep)
{
    memset(keep, 0, c->sg.n_nodes);
    for (int t = from; t < na; t++) keep[ord[t]] = 1;
}

/* The latest start of the window that still fails: a single layer first,
 * then bisection (the whole ancestry fails: it is the cell's own run). */
static int bisect(rd_ctx_t *c, const int *ord, int na, unsigned char *keep, perr_t *e)
{
    rd_check_t r;
    window(c, ord, na, na - 1, keep);
    int f = reproduces(c, keep, &r, e);
    if (f) return f < 0 ? -1 : 0;
    window(c, ord, na, 0, keep);
    if ((f = reproduces(c, keep, &r, e)) < 0) return -1;
    if (!f)
        return BAD(e, "'%s' fails in the whole model but not in its own ancestry cut at the graph inputs "
                      "(the failure needs more than this tensor's ancestors)", c->sg.val[c->target]);
    int lo = 0, hi = na - 1;
    while (hi - lo > 1) {
        int mid = lo + (hi - lo) / 2;
        window(c, ord, na, mid, keep);
        if ((f = reproduces(c, keep, &r, e)) < 0) return -1;
        if (f) lo = mid; else hi = mid;
    }
    window(c, ord, na, lo, keep);
    return reproduces(c, keep, &r, e) < 0 ? -1 : 0;
}

/* Drops kept nodes one at a time, last first, while the rest still fails. */
static int trim(rd_ctx_t *c, unsigned char *keep, perr_t *e)
{
    int n = c->sg.n_nodes, p = c->sg.producer[c->target];
    unsigned char *k2 = xmalloc(n + 1);
    for (int i = p - 1; i >= 0; i--) {
        if (!keep[i]) continue;
        memcpy(k2, keep, n);
        k2[i] = 0;
        rd_check_t r;
        int f = reproduces(c, k2, &r, e);
        if (f < 0) { free(k2); return -1; }
        if (f && !k2[i]) memcpy(keep, k2, n);
    }
    free(k2);
    return 0;
}

/* The first float output of a node that has a reference value, -1 none. */
static int node_value(const rd_ctx_t *c, int i)
{
    for (int k = 0; k < c->sg.n_out[i]; k++) {
        int v = c->sg.out[i][k];
        if (c->have[v] && dtype_is_float(c->refv[v]->dtype)) return v;
    }
    return -1;
}

/* Each kept layer alone (its own error) and inside the answer (the error
 * it carries there): the profile, and whether one layer is guilty. */
static int profile(rd_ctx_t *c, perr_t *e)
{
    int n = c->sg.n_nodes;
    tensor_set_t dump;
    unsigned char *k2 = xmalloc(n + 1);
    memcpy(k2, c->keep, n);
    int rc = rd_eval(c, k2, c->target, &c->measured, &dump, e);
    if (rc) { free(k2); return rc < 0 ? -1 : INTERNAL(e, "the reduced model no longer runs"); }
    c->rows = xcalloc(c->n_keep + 1, sizeof *c->rows);
    c->guilty = xcalloc(c->n_keep + 1, sizeof *c->guilty);
    for (int i = 0; i < n; i++) {
        if (!c->keep[i]) continue;
        rd_row_t *row = &c->rows[c->n_rows++];
        row->node = i;
        int v = node_value(c, i);
        if (v < 0) continue;
        const tensor_t *t = tensorset_get(&dump, c->sg.val[v]);
        if (t) { rd_check_tensor(c->cell, c->sg.val[v], 0, t, c->refv[v], &row->acc, e); row->has_acc = 1; }
        memset(k2, 0, n);
        k2[i] = 1;
        int f = rd_eval(c, k2, v, &row->own, NULL, e);
        if (f < 0) { tensorset_free(&dump); free(k2); return -1; }
        row->has_own = f == 0;
        if (row->has_own && row->own.fail) c->guilty[c->n_guilty++] = i;
    }
    tensorset_free(&dump);
    free(k2);
    c->accumulating = c->n_guilty == 0;
    return 0;
}

int rd_search(rd_ctx_t *c, perr_t *e)
{
    int n = c->sg.n_nodes;
    unsigned char *anc = xmalloc(n + 1);
    sg_ancestors(&c->sg, c->target, anc);
    int *ord = xmalloc((n + 1) * sizeof *ord), na = 0;
    for (int i = 0; i < n; i++) if (anc[i]) ord[na++] = i;
    free(anc);
    c->keep = xcalloc(n + 1, 1);
    say(c, "target '%s', %d ancestor layer(s): bisecting", c->sg.val[c->target], na);
    if (bisect(c, ord, na, c->keep, e)) { free(ord); return -1; }
    free(ord);
    c->window_nodes = count(c, c->keep);
    /* trimming costs an evaluation per node: a window this large is an
     * accumulation through most of the model, handed back as it is */
    c->trimmed = c->window_nodes <= RD_MAX_TRIM;
    say(c, c->trimmed ? "window '%s': %d layer(s): trimming side branches" : "window '%s': %d layer(s): too many to trim",
        c->sg.val[c->target], c->window_nodes);
    if (c->trimmed && trim(c, c->keep, e)) return -1;
    rd_check_t r;
    if (reproduces(c, c->keep, &r, e) != 1) return INTERNAL(e, "the trimmed subgraph no longer fails");
    c->n_keep = count(c, c->keep);
    if (sg_close(&c->sg, c->keep, c->have, c->target, &c->cut, &c->n_cut, e) < 0) return -1;
    return profile(c, e);
}

void rd_ctx_free(rd_ctx_t *c)
{
    tensorset_free(&c->inputs);
    tensorset_free(&c->ref);
    free(c->refv); free(c->have); free(c->keep); free(c->cut); free(c->guilty); free(c->rows);
    sg_free(&c->sg);
}
