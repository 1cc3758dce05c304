/* layerwise.c — the walk in execution order, the first failing and first
 * non-finite tensors, the local-error ranking and the diagnosis sentence
 * (layerwise.h). The text and JSON renderings are in lwreport.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "compare/layerwise.h"

/* ---- the layer report ------------------------------------------------------ */

static char *jstr(const json_t *o, const char *key, const char *dflt)
{
    const json_t *v = json_object_get(o, key);
    return xstrdup(json_is_string(v) ? json_string_value(v) : dflt);
}

/* A list of tensor names: strings, or objects with a "name". */
static int read_names(const json_t *arr, char ***out, int *n)
{
    *n = 0;
    *out = NULL;
    if (!arr) return 0;
    if (!json_is_array(arr)) return -1;
    *out = xcalloc(json_array_size(arr) + 1, sizeof **out);
    size_t i;
    const json_t *v;
    json_array_foreach(arr, i, v) {
        const json_t *s = json_is_object(v) ? json_object_get(v, "name") : v;
        if (!json_is_string(s)) return -1;
        if (json_string_value(s)[0]) (*out)[(*n)++] = xstrdup(json_string_value(s));
    }
    return 0;
}

/* What the layer computes and stores in, for the table and the diagnosis. */
static void describe_precision(lw_layer_t *l)
{
    const char *st = !strcmp(l->storage, "float16") ? "fp16" : !strcmp(l->storage, "bfloat16") ? "bf16" : "";
    size_t n = strlen(l->precision) + 8;
    l->prec = xmalloc(n);
    if (st[0] && strcmp(st, l->precision)) snprintf(l->prec, n, "%s/%s", l->precision[0] ? l->precision : "?", st);
    else snprintf(l->prec, n, "%s", l->precision);
    l->half = !strcmp(l->precision, "fp16") || !strcmp(st, "fp16") ? 1 : !strcmp(l->precision, "bf16") || st[0] ? 2 : 0;
    l->reduced = l->half || (l->precision[0] && strcmp(l->precision, "fp32"));
}

/* Which of the layer's outputs the graph outputs (the report's list). */
static void mark_graph_outputs(lw_layer_t *l, const json_t *names)
{
    l->graph_out = xcalloc((size_t)l->n_out + 1, 1);
    size_t i;
    const json_t *v;
    json_array_foreach(names, i, v)
        for (int k = 0; k < l->n_out; k++)
            if (json_is_string(v) && !strcmp(json_string_value(v), l->outs[k])) l->graph_out[k] = 1;
}

/* A validation's layer report, DIR/engines/CELL.layers.json, lies beside
 * CELL.args, build-engine's arguments (plan/emit.c). Its --config is the
 * plan's copy of an inline config, DIR/configs/precision-CELL.yaml, when
 * the cell's config is written in the model config's precisions: entry
 * (configs/models/MODEL.yaml, MODEL the name of DIR), else a config file.
 * Sets L->cell and L->cell_config (in words, for the fix line); an
 * unreadable or foreign arguments file leaves them NULL: it is context for
 * a message, never a reason to fail. */
static void lw_cell_config(lw_layers_t *L)
{
    const char *p = L->path, *eng = strstr(p, "/engines/"), *sfx = ".layers.json";
    size_t n = strlen(p), ns = strlen(sfx);
    if (!eng || n <= ns || strcmp(p + n - ns, sfx) || strchr(eng + 9, '/')) return;
    const char *model = eng;
    while (model > p && model[-1] != '/') model--;
    if (model == eng) return;
    char *cell = xstrndup(eng + 9, (size_t)(p + n - ns - (eng + 9)));
    char *args = xmalloc(n + 8), *inline_path = xmalloc(n + strlen(cell) + 32);
    snprintf(args, n + 8, "%.*s.args", (int)(n - ns), p);
    snprintf(inline_path, n + strlen(cell) + 32, "%.*s/configs/precision-%s.yaml", (int)(eng - p), p, cell);
    json_t *a = json_load_file(args, 0, NULL);
    const char *cfg = NULL;
    for (size_t i = 0; json_is_array(a) && i + 1 < json_array_size(a); i++)
        if (json_is_string(json_array_get(a, i)) && !strcmp(json_string_value(json_array_get(a, i)), "--config"))
            cfg = json_string_value(json_array_get(a, i + 1));
    if (cfg) {
        int inl = !strcmp(cfg, inline_path) || (strlen(cfg) < strlen(inline_path) &&
                                                !strcmp(inline_path + strlen(inline_path) - strlen(cfg), cfg) &&
                                                inline_path[strlen(inline_path) - strlen(cfg) - 1] == '/');
        size_t l = strlen(cfg) + 2 * (size_t)(eng - model) + 2 * strlen(cell) + 96;
        L->cell_config = xmalloc(l);
        if (inl)
            snprintf(L->cell_config, l, "the config of precision '%s' in configs/models/%.*s.yaml (its config: entry)",
                     cell, (int)(eng - model), model);
        else
            snprintf(L->cell_config, l, "%s (the config of precision '%s' in configs/models/%.*s.yaml)", cfg, cell,
                     (int)(eng - model), model);
        L->cell = cell;
        cell = NULL;
    }
    json_decref(a);
    free(cell);
    free(args);
    free(inline_path);
}

int lw_layers_read(const char *path, lw_layers_t *L, perr_t *e)
{
    memset(L, 0, sizeof *L);
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root) return BAD(e, "%s:%d:%d: %s", path, je.line, je.column, je.text);
    const json_t *layers = json_object_get(root, "layers");
    int rc = 0;
    if (!json_is_array(layers)) {
        rc = BAD(e, "%s: not a layer report (no \"layers\" array)", path);
    } else {
        L->path = xstrdup(path);
        L->source = jstr(root, "source", "");
        L->precision = jstr(root, "precision", "");
        L->marks_outputs = json_is_array(json_object_get(root, "graph_outputs"));
        lw_cell_config(L);
        L->l = xcalloc(json_array_size(layers) + 1, sizeof *L->l);
        size_t i;
        const json_t *row;
        json_array_foreach(layers, i, row) {
            lw_layer_t *l = &L->l[L->n++];
            const json_t *idx = json_object_get(row, "index");
            l->index = json_is_integer(idx) ? (int)json_integer_value(idx) : (int)i;
            l->name = jstr(row, "name", "");
            l->op = jstr(row, "op", "?");
            l->precision = jstr(row, "precision", "");
            l->storage = jstr(row, "storage", "");
            l->reason = jstr(row, "reason", "");
            const json_t *oor = json_object_get(row, "out_of_range");
            l->out_of_range = json_is_string(oor) ? xstrdup(json_string_value(oor)) : NULL;
            describe_precision(l);
            if (!json_is_object(row) || read_names(json_object_get(row, "inputs"), &l->ins, &l->n_in) ||
                read_names(json_object_get(row, "outputs"), &l->outs, &l->n_out)) {
                rc = BAD(e, "%s: layers[%zu]: \"inputs\"/\"outputs\" must be lists of tensor names", path, i);
                break;
            }
            mark_graph_outputs(l, json_object_get(root, "graph_outputs"));
        }
    }
    json_decref(root);
    if (rc) lw_layers_free(L);
    return rc;
}

void lw_layers_free(lw_layers_t *L)
{
    for (int i = 0; i < L->n; i++) {
        lw_layer_t *l = &L->l[i];
        for (int k = 0; k < l->n_in; k++) free(l->ins[k]);
        for (int k = 0; k < l->n_out; k++) free(l->outs[k]);
        free(l->ins);
        free(l->outs);
        free(l->name);
        free(l->op);
        free(l->precision);
        free(l->storage);
        free(l->reason);
        free(l->prec);
        free(l->graph_out);
        free(l->out_of_range);
    }
    free(L->l);
    free(L->path);
    free(L->source);
    free(L->precision);
    free(L->cell);
    free(L->cell_config);
    memset(L, 0, sizeof *L);
}

/* ---- the walk ------------------------------------------------------------------ */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int64_t nonfinite(const cmp_values_t *v)
{
    return v->nan + v->posinf + v->neginf;
}

static lw_row_t *add_row(lw_sample_t *s, int layer, const char *sample, const char *name, res_status_t st)
{
    s->rows = xrealloc(s->rows, (size_t)(s->n + 1) * sizeof *s->rows);
    lw_row_t *r = &s->rows[s->n++];
    memset(r, 0, sizeof *r);
    r->layer = layer;
    r->res.sample = xstrdup(sample);
    r->res.name = xstrdup(name);
    r->res.status = st;
    return r;
}

/* Compares one tensor if the dumps hold it; marks B's entry as used. */
static int walk_tensor(lw_sample_t *s, int layer, const char *name, const cmp_set_t *sa, const cmp_set_t *sb,
                       char *used, const cmp_config_t *cfg, cmp_work_t *w, perr_t *e)
{
    int kb = set_find(sb, name), ka = set_find(sa, name);
    if (kb < 0 || used[kb]) return 0;
    used[kb] = 1;
    if (ka < 0) {
        add_row(s, layer, s->sample, name, RES_MISSING);
        return 0;
    }
    lw_row_t *r = add_row(s, layer, s->sample, name, RES_PASS);
    if (cmp_one(sa, ka, sb, kb, cfg, w, &r->res, NULL, e)) return -1;
    /* scale-free: the signal-to-noise ratio against the reference, whatever
     * the tensor's magnitude (NaN: no finite pair, judged by the NaN checks) */
    if (cfg->layer_snr_db > 0 && (r->res.status == RES_PASS || r->res.status == RES_FAIL))
        r->res.status = r->res.st.snr_db < cfg->layer_snr_db ? RES_FAIL : RES_PASS;
    return 0;
}

static int name_in(char *const *names, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], name)) return 1;
    return 0;
}

/* Layers computed from a TopK's result, directly or not. */
static char *ordered_layers(const lw_layers_t *L)
{
    char *ord = xcalloc((size_t)L->n + 1, 1);
    char **outs = NULL;
    int n = 0;
    for (int i = 0; i < L->n; i++) {
        const lw_layer_t *l = &L->l[i];
        ord[i] = !strcmp(l->op, "TopK");
        for (int k = 0; k < l->n_in && !ord[i]; k++) ord[i] = name_in(outs, n, l->ins[k]);
        if (!ord[i]) continue;
        outs = xrealloc(outs, (size_t)(n + l->n_out) * sizeof *outs);
        for (int k = 0; k < l->n_out; k++) outs[n++] = l->outs[k];
    }
    free(outs);
    return ord;
}

static int walk(lw_sample_t *s, const lw_layers_t *L, const cmp_set_t *sa, const cmp_set_t *sb,
                const cmp_config_t *cfg, cmp_work_t *w, perr_t *e)
{
    /* names some layer produces: the rest of the inputs are graph inputs
     * (or weights, which dumps do not hold) */
    int np = 0;
    for (int i = 0; i < L->n; i++) np += L->l[i].n_out;
    char **produced = xmalloc((size_t)(np + 1) * sizeof *produced);
    np = 0;
    for (int i = 0; i < L->n; i++)
        for (int k = 0; k < L->l[i].n_out; k++) produced[np++] = L->l[i].outs[k];
    qsort(produced, (size_t)np, sizeof *produced, cmp_str);
    char *used = xcalloc((size_t)sb->n + 1, 1);
    int rc = 0;
    for (int i = 0; i < L->n && !rc; i++)
        for (int k = 0; k < L->l[i].n_in && !rc; k++) {
            char *nm = L->l[i].ins[k];
            if (!bsearch(&nm, produced, (size_t)np, sizeof *produced, cmp_str))
                rc = walk_tensor(s, -1, nm, sa, sb, used, cfg, w, e);
        }
    char *ord = ordered_layers(L);
    for (int i = 0; i < L->n && !rc; i++) {
        const char *a_only = NULL;
        for (int k = 0; k < L->l[i].n_in && !a_only; k++)
            if (set_find(sb, L->l[i].ins[k]) < 0 && set_find(sa, L->l[i].ins[k]) >= 0) a_only = L->l[i].ins[k];
        for (int k = 0; k < L->l[i].n_out && !rc; k++) {
            int before = s->n;
            rc = walk_tensor(s, i, L->l[i].outs[k], sa, sb, used, cfg, w, e);
            if (s->n > before) {
                s->rows[s->n - 1].a_only_input = a_only;
                s->rows[s->n - 1].ordered = ord[i] && cfg->layer_snr_db > 0;
            }
        }
    }
    free(ord);
    for (int k = 0; k < sb->n; k++) s->n_unlisted += !used[k];
    free(used);
    free(produced);
    return rc;
}

/* ---- findings ----------------------------------------------------------------------- */

int lw_compared(const lw_row_t *r)
{
    return r->res.status == RES_PASS || r->res.status == RES_FAIL;
}

int lw_new_nonfinite(const lw_row_t *r)
{
    return lw_compared(r) && nonfinite(&r->res.st.a) > nonfinite(&r->res.st.b);
}

static void find_firsts(lw_sample_t *s)
{
    s->first_fail = s->first_nonfinite = s->ref_nonfinite = -1;
    for (int i = 0; i < s->n; i++) {
        const lw_row_t *r = &s->rows[i];
        if (r->shown_only) continue;
        if (s->first_fail < 0 && !r->ordered && (r->res.status == RES_FAIL || r->res.status == RES_SHAPE)) s->first_fail = i;
        if (s->first_nonfinite < 0 && lw_new_nonfinite(r)) s->first_nonfinite = i;
        if (s->ref_nonfinite < 0 && lw_compared(r) && nonfinite(&r->res.st.b)) s->ref_nonfinite = i;
    }
}

/* Own error, worst first: layers that create NaN/Inf, then lowest SNR. */

static double snr_key(const lw_row_t *r)
{
    double v = r->res.st.snr_db;
    return isnan(v) ? -INFINITY : v;
}

static int cmp_rank(const void *x, const void *y, void *ctx)
{
    const lw_sample_t *s = ctx;
    const lw_row_t *a = &s->rows[*(const int *)x], *b = &s->rows[*(const int *)y];
    int na = lw_new_nonfinite(a), nb = lw_new_nonfinite(b);
    if (na != nb) return nb - na;
    double sa = snr_key(a), sb = snr_key(b);
    if (sa != sb) return sa < sb ? -1 : 1;
    return *(const int *)x - *(const int *)y;
}

static void rank_rows(lw_sample_t *s)
{
    s->rank = xmalloc((size_t)(s->n + 1) * sizeof *s->rank);
    s->n_rank = 0;
    for (int i = 0; i < s->n; i++)
        if (lw_compared(&s->rows[i]) && s->rows[i].layer >= 0 && !s->rows[i].shown_only) s->rank[s->n_rank++] = i;
    qsort_r(s->rank, (size_t)s->n_rank, sizeof *s->rank, cmp_rank, s);
}

int lw_run(const cmp_side_t *a, const cmp_side_t *b, const lw_layers_t *L, const cmp_config_t *cfg, int local,
           lw_result_t *out, perr_t *e)
{
    memset(out, 0, sizeof *out);
    out->L = L;
    out->local = local;
    int *ia, *ib;
    int m = match_samples(a, b, &ia, &ib, e);
    if (m < 0) return -1;
    out->s = xcalloc((size_t)m + 1, sizeof *out->s);
    cmp_work_t *w = cmp_work_new();
    int rc = 0;
    for (int k = 0; k < m && !rc; k++) {
        if (ia[k] < 0 || ib[k] < 0) {
            rc = BAD(e, "layerwise: sample '%s' is in %s only", ia[k] < 0 ? b->s[ib[k]].id : a->s[ia[k]].id,
                     ia[k] < 0 ? b->path : a->path);
            break;
        }
        lw_sample_t *s = &out->s[out->n++];
        s->sample = xstrdup(b->s[ib[k]].id[0] ? b->s[ib[k]].id : a->s[ia[k]].id);
        cmp_set_t sa, sb;
        if (set_open(b, ib[k], &sb, e)) { rc = -1; break; }
        if (set_open(a, ia[k], &sa, e)) { set_close(&sb); rc = -1; break; }
        rc = walk(s, L, &sa, &sb, cfg, w, e);
        set_close(&sa);
        set_close(&sb);
        if (rc) break;
        lw_mark_shown_only(s, L, cfg);
        find_firsts(s);
        if (local) rank_rows(s);
        lw_diagnose(s, L, local);
    }
    cmp_work_free(w);
    free(ia);
    free(ib);
    return rc;
}

void lw_result_free(lw_result_t *r)
{
    for (int i = 0; i < r->n; i++) {
        lw_sample_t *s = &r->s[i];
        for (int k = 0; k < s->n; k++) {
            free(s->rows[k].res.sample);
            free(s->rows[k].res.name);
            free(s->rows[k].res.name_a);
        }
        free(s->rows);
        free(s->rank);
        free(s->sample);
        free(s->diagnosis);
        free(s->cause);
        free(s->evidence);
        free(s->fix);
    }
    free(r->s);
    memset(r, 0, sizeof *r);
}

int lw_status(const lw_result_t *r)
{
    for (int i = 0; i < r->n; i++)
        if (r->s[i].first_fail >= 0 || r->s[i].first_nonfinite >= 0) return EXIT_CHECK;
    return EXIT_PASS;
}
