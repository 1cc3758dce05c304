/* precision.c — per-layer precision assignment (see precision.h).
 *
 * Layers that produce no float tensor (shape arithmetic, indices, masks)
 * keep fp32: precision does not apply to them. Under tf32 only GEMM-class
 * layers (Conv, ConvTranspose, MatMul, Gemm) change; under fp16/bf16 every
 * float layer computes in that type and stores its outputs in it. Rules are
 * applied in file order, later ones winning, as trtexec's --layerPrecisions. */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include "precision/precision.h"
#include "passes/passes.h"
#include "config/config.h"
#include "config/schema.h"
#include "ops/ops.h"
#include "tensor/half.h"

static const char *const precision_names[] = {"fp32", "tf32", "fp16", "bf16", NULL};
static const char *const constraint_names[] = {"none", "prefer", "obey", NULL};
static const char *const accumulate_names[] = {"fp32", "fp16", NULL};

void precision_policy_free(precision_policy_t *pp)
{
    for (int i = 0; i < pp->n_rules; i++) {
        free(pp->rules[i].glob);
        free(pp->rules[i].op);
    }
    free(pp->rules);
    free(pp->source);
    memset(pp, 0, sizeof *pp);
}

static int add_rule(precision_policy_t *pp, const char *glob, const char *op, precision_t p, const char *where)
{
    pp->rules = xrealloc(pp->rules, (pp->n_rules + 1) * sizeof *pp->rules);
    precision_rule_t *r = &pp->rules[pp->n_rules++];
    memset(r, 0, sizeof *r);
    r->glob = glob ? xstrdup(glob) : NULL;
    r->op = op ? xstrdup(op) : NULL;
    r->p = p;
    snprintf(r->where, sizeof r->where, "%s", where);
    return 0;
}

/* One entry of `layers:`: {match: GLOB | op: OP | op: [OPS], precision: P}. */
static int load_rule(precision_policy_t *pp, const cfg_node_t *item, perr_t *e)
{
    char where[256];
    cfg_node_where(item, where, sizeof where);
    if (item->kind != CFG_MAP) return BAD(e, "%s: layers: each entry must be a mapping {match|op, precision}", where);
    for (int64_t k = 0; k < item->n; k++)
        if (strcmp(item->keys[k], "match") && strcmp(item->keys[k], "op") && strcmp(item->keys[k], "precision"))
            return BAD(e, "%s: layers: unknown key '%s' (expected match, op, precision)", where, item->keys[k]);
    const cfg_node_t *pn = cfg_map_get(item, "precision");
    const char *ps;
    if (!pn) return BAD(e, "%s: layers: entry has no precision", where);
    if (cfg_node_str(pn, "precision", &ps, e) < 0) return -1;
    int p = precision_from_name(ps);
    if (p < 0) {
        cfg_node_where(pn, where, sizeof where);
        return BAD(e, "%s: precision: unknown precision '%s' (expected fp32, tf32, fp16 or bf16)", where, ps);
    }
    const cfg_node_t *m = cfg_map_get(item, "match"), *o = cfg_map_get(item, "op");
    if (!m && !o) return BAD(e, "%s: layers: entry needs 'match' (a layer-name glob) or 'op'", where);
    if (m) {
        const char *glob;
        if (cfg_node_str(m, "match", &glob, e) < 0) return -1;
        cfg_node_where(m, where, sizeof where);
        add_rule(pp, glob, NULL, (precision_t)p, where);
    }
    if (o && o->kind == CFG_SEQ) {
        for (int64_t k = 0; k < o->n; k++) {
            const char *op;
            if (cfg_node_str(o->items[k], "op", &op, e) < 0) return -1;
            cfg_node_where(o->items[k], where, sizeof where);
            add_rule(pp, NULL, op, (precision_t)p, where);
        }
    } else if (o) {
        const char *op;
        if (cfg_node_str(o, "op", &op, e) < 0) return -1;
        cfg_node_where(o, where, sizeof where);
        add_rule(pp, NULL, op, (precision_t)p, where);
    }
    return 0;
}

/* fold: {batchnorm: B, scale_bias: B, activation: B, residual: B}: each build-time fold
 * a deploy engine does may be turned off (all on by default). */
static int load_folds(precision_policy_t *pp, const config_t *c, perr_t *e)
{
    static const char *const keys[] = {"fold.batchnorm", "fold.scale_bias", "fold.activation", "fold.residual"};
    static const unsigned bits[] = {FOLD_BATCHNORM, FOLD_SCALE_BIAS, FOLD_ACTIVATION, FOLD_RESIDUAL};
    const cfg_node_t *f = config_get(c, "fold");
    if (f && f->kind != CFG_MAP) {
        char where[256];
        return BAD(e, "%s: fold: expected a mapping such as {batchnorm: false}", cfg_node_where(f, where, sizeof where));
    }
    for (int i = 0; i < 4; i++) {
        int on;
        int r = config_bool(c, keys[i], &on, e);
        if (r < 0) return -1;
        if (r == 1 && !on) pp->folds &= ~bits[i];
    }
    return 0;
}

int precision_policy_load(precision_policy_t *pp, const char *path, const char *cli_precision, perr_t *e)
{
    memset(pp, 0, sizeof *pp);
    pp->folds = FOLD_ALL;
    pp->constraints = CONSTRAINTS_OBEY;
    pp->source = xstrdup(path ? path : "");
    if (path) {
        config_t *c = config_load_nonempty(path, e);
        if (!c) {
            precision_policy_free(pp);
            return -1;
        }
        int idx, rc = 0;
        if (config_check_keys(c, precision_config_keys, e)) rc = -1;
        if (!rc && config_enum(c, "precision", precision_names, &idx, e) == 1) pp->global = (precision_t)idx;
        else if (e->code) rc = -1;
        if (!rc && config_enum(c, "constraints", constraint_names, &idx, e) == 1) pp->constraints = (constraints_t)idx;
        else if (e->code) rc = -1;
        if (!rc && config_enum(c, "accumulate", accumulate_names, &idx, e) == 1) pp->accumulate_fp16 = idx == 1;
        else if (e->code) rc = -1;
        if (!rc && config_bool(c, "strongly_typed", &pp->strongly_typed, e) < 0) rc = -1;
        if (!rc) rc = load_folds(pp, c, e);
        const cfg_node_t *layers = rc ? NULL : config_get(c, "layers");
        if (layers && layers->kind != CFG_SEQ) {
            char where[256];
            rc = BAD(e, "%s: layers: expected a list of {match|op, precision}", cfg_node_where(layers, where, sizeof where));
        }
        for (int64_t i = 0; !rc && layers && i < layers->n; i++) rc = load_rule(pp, layers->items[i], e);
        config_free(c);
        if (rc) {
            precision_policy_free(pp);
            return -1;
        }
    }
    if (cli_precision) {
        int p = precision_from_name(cli_precision);
        if (p < 0) return BAD(e, "--precision '%s': expected fp32, tf32, fp16 or bf16", cli_precision);
        pp->global = (precision_t)p;
    }
    return 0;
}

static int is_float_type(dtype_t t)
{
    return t == DT_FLOAT || t == DT_FLOAT16 || t == DT_BFLOAT16 || t == DT_DOUBLE || t == DT_UNDEFINED;
}

static int produces_float(const graph_t *g, const node_t *n)
{
    for (int k = 0; k < n->n_out; k++)
        if (n->out[k] >= 0 && is_float_type(g->vals[n->out[k]].t.dtype) && g->vals[n->out[k]].t.dtype != DT_DOUBLE)
            return 1;
    return 0;
}

static void set_reason(node_t *n, const char *fmt, const char *a, const char *b)
{
    char buf[512];
    snprintf(buf, sizeof buf, fmt, a, b);
    free(n->reason);
    n->reason = xstrdup(buf);
}

static dtype_t storage_of(precision_t p)
{
    return p == PREC_FP16 ? DT_FLOAT16 : p == PREC_BF16 ? DT_BFLOAT16 : DT_FLOAT;
}

/* Chooses one node's precision: global policy, then rules (later wins). */
static void choose_precision(node_t *n, const precision_policy_t *pp, precision_rule_t *rules)
{
    static const char *const cnames[] = {"none", "prefer", "obey"};
    precision_t p = pp->global;
    if (p == PREC_TF32 && !n->op->gemm_class) {
        p = PREC_FP32;
        set_reason(n, "tf32 applies to Conv/ConvTranspose/MatMul/Gemm only%s%s", "", "");
    } else {
        set_reason(n, "global precision %s%s", precision_name(p), "");
    }
    for (int r = 0; r < pp->n_rules; r++) {
        precision_rule_t *rule = &rules[r];
        int hit = rule->glob ? fnmatch(rule->glob, n->name, 0) == 0 : !strcmp(rule->op, n->op_type);
        if (!hit) continue;
        rule->matched++;
        if (pp->constraints == CONSTRAINTS_NONE) {
            set_reason(n, "rule at %s ignored: constraints: none (as TensorRT without precisionConstraints)%s",
                       rule->where, "");
            continue;
        }
        precision_t rp = rule->p;
        if (rp == PREC_TF32 && !n->op->gemm_class) rp = PREC_FP32;
        p = rp;
        char what[300];
        snprintf(what, sizeof what, "%s -> %s", rule->glob ? rule->glob : rule->op, precision_name(rule->p));
        set_reason(n, "rule at %s (%s)", rule->where, what);
        size_t l = strlen(n->reason);
        char *r2 = xmalloc(l + 16);
        sprintf(r2, "%s, %s", n->reason, cnames[pp->constraints]);
        free(n->reason);
        n->reason = r2;
    }
    n->precision = p;
    n->storage = storage_of(p);
}

/* Rounds a float constant in place to a precision (done once at build time
 * when every reader of the constant wants that rounding). */
static void round_constant(tensor_t *t, precision_t p)
{
    if (t->dtype != DT_FLOAT || !t->data) return;
    int64_t n = tensor_numel(t);
    if (p == PREC_TF32) round_tf32_inplace(t->data, n);
    else if (p == PREC_FP16) round_f16_inplace(t->data, n);
    else if (p == PREC_BF16) round_bf16_inplace(t->data, n);
}

/* Does input value v need rounding when read by node n? */
static int needs_rounding(const graph_t *g, const node_t *n, int k, int v)
{
    if (n->precision == PREC_FP32) return 0;
    const value_t *val = &g->vals[v];
    if (val->t.dtype != DT_FLOAT && val->t.dtype != DT_UNDEFINED) return 0;
    /* a value the model types as half (carried as float32, passes/widen.c)
     * is not rounded further, as when it ran as a half tensor */
    if (val->half_typed) return 0;
    /* TF32 rounds the two multiplied operands; a bias is added in fp32 */
    if (n->precision == PREC_TF32) return k < 2;
    /* fp16/bf16: values already stored in that type need nothing */
    if (val->producer >= 0 && g->nodes[val->producer].storage == n->storage) return 0;
    return 1;
}

static void mark_boundaries(graph_t *g)
{
    graph_index(g);
    /* per constant: the single precision all its readers want, or -1 */
    int *want = xmalloc((g->n_vals + 1) * sizeof *want);
    for (int i = 0; i < g->n_vals; i++) want[i] = -2;   /* -2: no reader yet */
    for (int i = 0; i < g->n_nodes; i++) {
        node_t *n = &g->nodes[i];
        n->round_inputs = 0;
        for (int k = 0; k < n->n_in && k < 64; k++) {
            int v = n->in[k];
            if (v < 0) continue;
            int r = needs_rounding(g, n, k, v);
            if (r) n->round_inputs |= (uint64_t)1 << k;
            if (g->vals[v].kind == VAL_CONST) {
                int p = r ? (int)n->precision : -1;
                want[v] = want[v] == -2 || want[v] == p ? p : -1;
            }
        }
    }
    /* constants read only in one narrower precision are rounded once, here */
    for (int v = 0; v < g->n_vals; v++) {
        if (g->vals[v].kind != VAL_CONST || want[v] < 0) continue;
        round_constant(&g->vals[v].t, (precision_t)want[v]);
        for (int i = 0; i < g->n_nodes; i++)
            for (int k = 0; k < g->nodes[i].n_in && k < 64; k++)
                if (g->nodes[i].in[k] == v) g->nodes[i].round_inputs &= ~((uint64_t)1 << k);
    }
    free(want);
}

/* A layer whose float outputs the model types as half stores them in that
 * type whatever its compute precision, as the executor narrows them: the
 * storage column then says what the tensors hold. */
static void keep_model_storage(const graph_t *g, node_t *n)
{
    dtype_t half = n->model_storage;
    for (int k = 0; k < n->n_out && !half; k++)
        if (n->out[k] >= 0 && (g->vals[n->out[k]].t.dtype == DT_FLOAT16 || g->vals[n->out[k]].t.dtype == DT_BFLOAT16))
            half = g->vals[n->out[k]].t.dtype;
    if (!half || half == n->storage) return;
    n->storage = half;
    size_t l = strlen(n->reason) + 64;
    char *r = xmalloc(l);
    snprintf(r, l, "%s; stores %s, the model's type", n->reason, dtype_name(half));
    free(n->reason);
    n->reason = r;
}

/* One graph, then the subgraphs of its control-flow nodes (their layers
 * are named by subgraph path, so the rules' globs reach inside). */
static void assign_graph(graph_t *g, const precision_policy_t *pp, precision_rule_t *rules)
{
    for (int i = 0; i < g->n_nodes; i++) {
        node_t *n = &g->nodes[i];
        for (int k = 0; k < n->n_sub; k++) assign_graph(n->sub[k], pp, rules);
        if (!produces_float(g, n)) {
            n->precision = PREC_FP32;
            n->storage = DT_FLOAT;
            set_reason(n, "no float output: precision does not apply%s%s", "", "");
            continue;
        }
        if (pp->strongly_typed) {
            /* the model's own types decide: FLOAT16 tensors are half, Casts are exact */
            n->precision = PREC_FP32;
            dtype_t out = n->model_storage ? n->model_storage : n->out[0] >= 0 ? g->vals[n->out[0]].t.dtype : DT_FLOAT;
            n->storage = out == DT_FLOAT16 || out == DT_BFLOAT16 ? out : DT_FLOAT;
            set_reason(n, "strongly typed: computes in its tensors' types (%s)%s", dtype_name(n->storage), "");
            continue;
        }
        choose_precision(n, pp, rules);
        keep_model_storage(g, n);
    }
}

int precision_assign(graph_t *g, const precision_policy_t *pp, FILE *warn)
{
    precision_rule_t *rules = pp->rules;
    for (int r = 0; r < pp->n_rules; r++) rules[r].matched = 0;
    assign_graph(g, pp, rules);
    int unmatched = 0;
    for (int r = 0; r < pp->n_rules && !pp->strongly_typed; r++) {
        if (rules[r].matched) continue;
        unmatched++;
        if (warn)
            fprintf(warn, "build-engine: warning: %s: rule '%s' matches no layer\n", rules[r].where,
                    rules[r].glob ? rules[r].glob : rules[r].op);
    }
    return unmatched;
}

/* The subgraphs first, then the graph, as assign_graph: the range notes
 * after the folds (what the engine casts), before constants are rounded. */
static void boundaries_graph(graph_t *g, FILE *warn, int *found)
{
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_sub; k++) boundaries_graph(g->nodes[i].sub[k], warn, found);
    *found += precision_check_range(g, warn, *found);
    mark_boundaries(g);
}

int precision_mark_boundaries(graph_t *g, const precision_policy_t *pp, FILE *warn)
{
    if (pp->strongly_typed) return 0;   /* the model's Casts are its boundaries */
    int found = 0;
    boundaries_graph(g, warn, &found);
    if (warn && found > RANGE_SHOWN)
        fprintf(warn, "build-engine: warning: %d more layers read constants beyond their precision's range "
                      "(out_of_range in the layer report)\n", found - RANGE_SHOWN);
    return found;
}
