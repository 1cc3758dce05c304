/* lwdiag.c — the layerwise diagnosis: which failure to look at first, and
 * what it means, in three parts a user can act on.
 *
 * The failure ranked first is not the first in execution order (a slight
 * FP16 rounding error early on fails a tight tolerance long before the
 * layer that breaks the result) but the most severe: a tensor that turns
 * NaN/Inf where the reference does not; then a reduced-precision layer
 * whose reference values, or whose constants (build-engine's out_of_range),
 * lie beyond its type's range; then the largest SNR drop, the dB a layer
 * loses between its worst input and its output. Ties go to the earlier.
 *
 *   cause:    the layer, what happens there, and why;
 *   evidence: intermediate facts (the tensor that turns non-finite, the
 *             first diverging tensor) told apart from the graph outputs'
 *             (the worst output's SNR and NaN/Inf count);
 *   fix:      the precision config line that keeps the layer in FP32, and
 *             the make command that searches the fewest such layers. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "compare/layerwise.h"

/* An input's SNR counts as at most what rounding to the layer's precision
 * leaves (unit roundoff u, relative error uniform in [-u, u]: SNR =
 * 20 log10(sqrt(3) / u), 71 dB for FP16 and TF32, 53 dB for BF16, 149 dB for
 * FP32): a layer whose output is as good as its type allows has lost
 * nothing, however perfect its inputs. */
static double natural_snr(const lw_layer_t *l)
{
    double bits = l->half == 2 ? 8 : l->half == 1 || !strcmp(l->precision, "tf32") ? 11 : 24;
    return 20 * log10(sqrt(3.0)) + 20 * bits * log10(2.0);
}
#define SNR_CEILING_DB 150.0
/* A drop below this is error propagation, not a cause: a product or a
 * square doubles a relative error (6 dB); 10 dB is over three times the
 * RMS error the layer was given. */
#define SIGNIFICANT_DROP_DB 10.0

typedef struct text { char *s; size_t n; } text_t;

static void add(text_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(text_t *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    t->s = xrealloc(t->s, t->n + (size_t)k + 1);
    va_start(ap, fmt);
    vsnprintf(t->s + t->n, (size_t)k + 1, fmt, ap);
    va_end(ap);
    t->n += (size_t)k;
}

static char *take(text_t *t)
{
    return t->s ? t->s : xstrdup("");
}

static int64_t nonfinite_a(const lw_row_t *r)
{
    return r->res.st.a.nan + r->res.st.a.posinf + r->res.st.a.neginf;
}

static double snr_of(const lw_row_t *r)
{
    double v = r->res.st.snr_db;
    return isnan(v) ? -INFINITY : v;
}

/* Row index by tensor name (rows sorted by name once per sample). */
typedef struct by_name { const lw_sample_t *s; int *idx; } by_name_t;

static int cmp_row_name(const void *a, const void *b, void *ctx)
{
    const lw_sample_t *s = ctx;
    return strcmp(s->rows[*(const int *)a].res.name, s->rows[*(const int *)b].res.name);
}

static void index_rows(by_name_t *b, const lw_sample_t *s)
{
    b->s = s;
    b->idx = xmalloc((size_t)(s->n + 1) * sizeof *b->idx);
    for (int i = 0; i < s->n; i++) b->idx[i] = i;
    qsort_r(b->idx, (size_t)s->n, sizeof *b->idx, cmp_row_name, (void *)s);
}

static int find_row(const by_name_t *b, const char *name)
{
    int lo = 0, hi = b->s->n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2, c = strcmp(b->s->rows[b->idx[mid]].res.name, name);
        if (!c) return b->idx[mid];
        if (c < 0) lo = mid + 1; else hi = mid - 1;
    }
    return -1;
}

/* Producing layer by tensor name: (name, layer) pairs sorted by name. */
typedef struct producer { const char *name; int layer; } producer_t;
typedef struct producers { producer_t *p; int n; } producers_t;

static int cmp_producer(const void *a, const void *b)
{
    return strcmp(((const producer_t *)a)->name, ((const producer_t *)b)->name);
}

static void index_producers(producers_t *P, const lw_layers_t *L)
{
    int n = 0;
    for (int i = 0; i < L->n; i++) n += L->l[i].n_out;
    P->p = xmalloc((size_t)(n + 1) * sizeof *P->p);
    P->n = 0;
    for (int i = 0; i < L->n; i++)
        for (int k = 0; k < L->l[i].n_out; k++) P->p[P->n++] = (producer_t){L->l[i].outs[k], i};
    qsort(P->p, (size_t)P->n, sizeof *P->p, cmp_producer);
}

static int find_producer(const producers_t *P, const char *name)
{
    producer_t key = {name, -1};
    const producer_t *f = bsearch(&key, P->p, (size_t)P->n, sizeof *P->p, cmp_producer);
    return f ? f->layer : -1;
}

/* The lowest SNR among the layer's compared inputs (the ceiling if none);
 * an input the reference lacks (a Cast of A's own) counts as the inputs of
 * the layer making it, a few layers up at most. */
static double input_snr(const lw_layers_t *L, const lw_layer_t *l, const lw_sample_t *s, const by_name_t *b,
                        const producers_t *P, int depth)
{
    double worst = SNR_CEILING_DB;
    for (int k = 0; k < l->n_in; k++) {
        int r = find_row(b, l->ins[k]), p;
        if (r >= 0 && lw_compared(&s->rows[r])) worst = fmin(worst, snr_of(&s->rows[r]));
        else if (r < 0 && depth < 8 && (p = find_producer(P, l->ins[k])) >= 0)
            worst = fmin(worst, input_snr(L, &L->l[p], s, b, P, depth + 1));
    }
    return worst;
}

/* A layer with constants beyond its range among those making the layer's
 * inputs that the reference has no tensor for (layers the reference fused
 * away, such as a BatchNormalization folded there and not here); -1. */
static int hidden_out_of_range(const lw_layers_t *L, const lw_layer_t *l, const by_name_t *b, const producers_t *P,
                               int depth)
{
    for (int k = 0; k < l->n_in && depth < 8; k++) {
        int p = find_row(b, l->ins[k]) < 0 ? find_producer(P, l->ins[k]) : -1;
        if (p < 0) continue;
        if (L->l[p].reduced && L->l[p].out_of_range) return p;
        int q = hidden_out_of_range(L, &L->l[p], b, P, depth + 1);
        if (q >= 0) return q;
    }
    return -1;
}

/* Severity tier of a failing row and the layer to blame for it. */
static int tier_of(const lw_layers_t *L, const lw_row_t *r, const by_name_t *b, const producers_t *P, int *blame)
{
    const lw_layer_t *l = &L->l[r->layer];
    *blame = r->layer;
    if (lw_new_nonfinite(r)) return 3;
    if ((l->half == 1 && r->res.st.beyond_fp16) || (l->reduced && l->out_of_range)) return 2;
    int h = hidden_out_of_range(L, l, b, P, 0);
    if (h >= 0) {
        *blame = h;
        return 2;
    }
    return 1;
}

static void rank_worst(lw_sample_t *s, const lw_layers_t *L, const by_name_t *b, const producers_t *P)
{
    int best_tier = -1;
    double best_drop = -INFINITY;
    s->worst = -1;
    for (int i = 0; i < s->n; i++) {
        const lw_row_t *r = &s->rows[i];
        if (r->layer < 0 || r->ordered || r->shown_only) continue;
        if (!(r->res.status == RES_FAIL || r->res.status == RES_SHAPE || lw_new_nonfinite(r))) continue;
        const lw_layer_t *l = &L->l[r->layer];
        int blame, tier = tier_of(L, r, b, P, &blame);
        double drop = fmin(input_snr(L, l, s, b, P, 0), natural_snr(l)) - fmin(snr_of(r), SNR_CEILING_DB);
        if (tier == 1 && !(drop >= SIGNIFICANT_DROP_DB)) tier = 0;
        /* non-finite: the first is the origin, the rest inherit it; no
         * significant drop anywhere: the first failure in execution order */
        if (tier > best_tier || (tier == best_tier && tier == 1 && drop > best_drop)) {
            best_tier = tier;
            best_drop = drop;
            s->worst = i;
            s->blame = blame;
        }
    }
    static const char *const names[] = {"first in order", "snr drop", "range", "non-finite"};
    s->severity = s->worst >= 0 ? names[best_tier] : NULL;
    s->snr_drop = s->worst >= 0 ? best_drop : NAN;
}

/* Graph outputs: as the layer report marks them, else tensors no layer reads. */
static int is_graph_output(const lw_layers_t *L, const lw_row_t *r)
{
    if (r->layer < 0) return 0;
    const lw_layer_t *l = &L->l[r->layer];
    if (L->marks_outputs) {
        for (int k = 0; k < l->n_out; k++)
            if (!strcmp(l->outs[k], r->res.name)) return l->graph_out[k];
        return 0;
    }
    for (int i = r->layer + 1; i < L->n; i++)
        for (int k = 0; k < L->l[i].n_in; k++)
            if (!strcmp(L->l[i].ins[k], r->res.name)) return 0;
    return 1;
}

/* The graph outputs with the lowest SNR: among the judged ones (the
 * headline), and among those shown only (named as such, never a finding). */
static void find_worst_output(lw_sample_t *s, const lw_layers_t *L)
{
    s->worst_output = s->worst_shown = -1;
    for (int i = 0; i < s->n; i++) {
        const lw_row_t *r = &s->rows[i];
        if (!lw_compared(r) || !is_graph_output(L, r)) continue;
        int *w = r->shown_only || r->res.unjudged ? &s->worst_shown : &s->worst_output;
        if (*w < 0 || snr_of(r) < snr_of(&s->rows[*w])) *w = i;
    }
}

/* With an output selection (--judge, --ignore), the layers that feed a
 * judged graph output are found by walking back from those outputs through
 * the producers of each layer's inputs; every other layer's rows are shown
 * only. A graph output not judged is marked unjudged even when its layer
 * feeds a judged one (its own figures are never the outputs' headline). */
void lw_mark_shown_only(lw_sample_t *s, const lw_layers_t *L, const cmp_config_t *cfg)
{
    if (!name_sel_narrows(&cfg->sel)) return;
    char *feeds = xcalloc((size_t)L->n + 1, 1);
    int *stack = xmalloc((size_t)(L->n + 1) * sizeof *stack), top = 0;
    for (int i = 0; i < s->n; i++) {
        lw_row_t *r = &s->rows[i];
        if (r->layer < 0 || !is_graph_output(L, r)) continue;
        r->res.unjudged = !cmp_config_judged(cfg, r->res.name);
        if (!r->res.unjudged && !feeds[r->layer]) feeds[stack[top++] = r->layer] = 1;
    }
    if (top) {
        producers_t P;
        index_producers(&P, L);
        while (top > 0) {   /* each layer is pushed once: linear in the graph's edges (times a log) */
            const lw_layer_t *l = &L->l[stack[--top]];
            for (int k = 0; k < l->n_in; k++) {
                int p = find_producer(&P, l->ins[k]);
                if (p >= 0 && !feeds[p]) feeds[stack[top++] = p] = 1;
            }
        }
        free(P.p);
        for (int i = 0; i < s->n; i++) s->rows[i].shown_only = s->rows[i].layer >= 0 && !feeds[s->rows[i].layer];
    }
    free(stack);
    free(feeds);
}

/* A layer name as a YAML single-quoted glob matching only itself. */
static void add_glob(text_t *t, const char *name)
{
    add(t, "'");
    for (const char *p = name; *p; p++) {
        if (*p == '\'') add(t, "''");
        else if (*p == '*' || *p == '?' || *p == '[' || *p == '\\') add(t, "\\%c", *p);
        else add(t, "%c", *p);
    }
    add(t, "'");
}

/* MODEL and PRECISION of `make fix-precision` when the layer report is a
 * validation's (build/MODEL/engines/NAME.layers.json) at a precision the
 * search takes; 0 otherwise. Plain names only: the text is shown, never run. */
static int make_args(const lw_layers_t *L, char *model, size_t n)
{
    const char *p = L->path, *e = strstr(p, "/engines/");
    if (!e || (strcmp(L->precision, "fp16") && strcmp(L->precision, "bf16") && strcmp(L->precision, "tf32"))) return 0;
    const char *b = e;
    while (b > p && b[-1] != '/') b--;
    if (b == e || (size_t)(e - b) >= n) return 0;
    for (const char *q = b; q < e; q++)
        if (!(*q == '-' || *q == '_' || *q == '.' || (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') ||
              (*q >= '0' && *q <= '9')))
            return 0;
    memcpy(model, b, (size_t)(e - b));
    model[e - b] = 0;
    return 1;
}

static void write_cause(text_t *c, const lw_sample_t *s, const lw_layers_t *L)
{
    const lw_row_t *r = &s->rows[s->worst];
    const lw_layer_t *l = &L->l[s->blame];
    if (s->blame != r->layer) {
        add(c, "precision issue in layer %s (%s, %s), whose output the reference has no tensor for: its constant %s; "
               "the first compared tensor after it, %s, falls to SNR %.1f dB", l->name, l->op, l->prec, l->out_of_range,
            r->res.name, r->res.st.snr_db);
        return;
    }
    if (!l->reduced) {
        add(c, "layer %s (%s) runs in fp32 and its output %s diverges (SNR %.1f dB): reduced precision does not "
               "explain it here (compare its inputs, or the kernel)", l->name, l->op, r->res.name, r->res.st.snr_db);
        return;
    }
    if (l->half == 1 && r->res.st.beyond_fp16)
        add(c, "precision issue (FP16 overflow) in layer %s (%s, %s): the reference holds %lld values beyond the FP16 "
               "range (65504) in %s%s", l->name, l->op, l->prec, (long long)r->res.st.beyond_fp16, r->res.name,
            lw_new_nonfinite(r) ? ", which become inf" : "");
    else if (lw_new_nonfinite(r))
        add(c, "precision issue (%s overflow or invalid operation) in layer %s (%s, %s): %s holds %lld NaN/Inf the "
               "reference does not", l->prec, l->name, l->op, l->prec, r->res.name, (long long)nonfinite_a(r));
    else if (!strcmp(s->severity, "snr drop"))
        add(c, "precision issue in layer %s (%s, %s): the error grows most there, SNR %.1f dB at its output %s, "
               "%.1f dB lower than at its inputs", l->name, l->op, l->prec, r->res.st.snr_db, r->res.name, s->snr_drop);
    else
        add(c, "first failing tensor: %s (%s, layer %s, %s): precision issue: the divergence starts in a layer computed "
               "or stored in %s, SNR %.1f dB there, and no later layer loses %g dB or more on its own", r->res.name,
            l->op, l->name, l->prec, l->prec, r->res.st.snr_db, SIGNIFICANT_DROP_DB);
    if (l->out_of_range) add(c, "; its constant %s", l->out_of_range);
    if (l->reason[0]) add(c, " (%s)", l->reason);
}

static void write_evidence(text_t *v, const lw_sample_t *s, const lw_layers_t *L)
{
    if (s->first_nonfinite >= 0) {
        const lw_row_t *r = &s->rows[s->first_nonfinite];
        add(v, "%s tensor %s (%s) is the first to hold NaN/Inf the reference does not (%lld); ",
            is_graph_output(L, r) ? "output" : "intermediate", r->res.name, r->layer >= 0 ? L->l[r->layer].op : "input",
            (long long)nonfinite_a(r));
    }
    if (s->first_fail >= 0 && s->first_fail != s->worst) {
        const lw_row_t *r = &s->rows[s->first_fail];
        add(v, "the first tensor to fail in execution order is %s (%s, SNR %.1f dB), a smaller error before it; ",
            r->res.name, r->layer >= 0 ? L->l[r->layer].op : "input", r->res.st.snr_db);
    }
    if (s->worst >= 0 && s->rows[s->worst].a_only_input)
        add(v, "its input %s exists in A only (the reference has no such tensor): the difference may enter there; ",
            s->rows[s->worst].a_only_input);
    if (s->worst_output >= 0) {
        const lw_row_t *r = &s->rows[s->worst_output];
        add(v, "at the %soutputs of the sample compared layer by layer%s%s%s: %s, SNR %.1f dB, %lld NaN/Inf",
            s->worst_shown >= 0 ? "judged " : "", s->sample[0] ? " (" : "", s->sample, s->sample[0] ? ")" : "",
            r->res.name, r->res.st.snr_db, (long long)nonfinite_a(r));
        if (!nonfinite_a(r) && s->first_nonfinite >= 0) add(v, " (the non-finite values stay inside the graph)");
    }
    if (s->worst_shown >= 0) {
        const lw_row_t *r = &s->rows[s->worst_shown];
        add(v, "%sshown only, not judged: %s, SNR %.1f dB", s->worst_output >= 0 ? "; " : "", r->res.name, r->res.st.snr_db);
    }
    if (v->n > 2 && v->s[v->n - 2] == ';') v->s[v->n -= 2] = 0;
}

static void write_fix(text_t *f, const lw_sample_t *s, const lw_layers_t *L)
{
    const lw_layer_t *l = &L->l[s->blame];
    if (!l->reduced) {
        add(f, "no precision setting: find what differs at the layer's inputs");
        return;
    }
    if (!strncmp(l->reason, "strongly typed", 14)) {
        add(f, "the layer computes in the model's own types (strongly typed): keep its inputs in float32 in the model "
               "(the Cast to float16 before it), or build without strongly_typed and pin it: ");
        add(f, "`layers: [{match: ");
        add_glob(f, l->name);
        add(f, ", precision: fp32}]`");
        return;
    }
    /* where the cell's precision is configured, when the layer report is a
     * validation's: the fix names that place, not only the global precision */
    const char *where = L->cell_config ? L->cell_config : "the precision config";
    if (!strcmp(l->op, "BatchNormalization") && l->out_of_range)
        add(f, "a deploy engine folds a BatchNormalization into the Conv before it in FP32 at build time: set "
               "fold: {batchnorm: true} (the default) in %s, or ", where);
    add(f, "run layer %s in fp32: in %s, the line `layers: [{match: ", l->name, where);
    add_glob(f, l->name);
    add(f, ", precision: fp32}]`");
    if (strstr(l->name, "LayerNorm") || !strcmp(l->op, "Pow"))
        add(f, " (a decomposed LayerNorm: pin its layers to fp32, or export with opset >= 17 LayerNormalization)");
    char model[256];
    if (!make_args(L, model, sizeof model)) return;
    add(f, "; the fewest layers to keep in fp32: `make fix-precision MODEL=%s PRECISION=%s`", model, L->precision);
    if (L->cell && strcmp(L->cell, L->precision))
        add(f, " (it searches from the global %s precision, not from the config of precision '%s')", L->precision, L->cell);
}

static void pin_list(text_t *d, const lw_sample_t *s, const lw_layers_t *L)
{
    int shown = 0;
    for (int i = 0; i < s->n_rank && shown < 10; i++) {
        const lw_row_t *r = &s->rows[s->rank[i]];
        const lw_layer_t *l = &L->l[r->layer];
        if (r->res.status != RES_FAIL || !l->reduced) continue;
        int dup = 0;
        for (int j = 0; j < i; j++) dup |= s->rows[s->rank[j]].layer == r->layer && s->rows[s->rank[j]].res.status == RES_FAIL;
        if (dup) continue;
        add(d, "%s%s", shown++ ? ", " : " pin to fp32 first (own error, worst first): ", l->name);
    }
    if (shown) add(d, ".");
}

void lw_diagnose(lw_sample_t *s, const lw_layers_t *L, int local)
{
    by_name_t b;
    index_rows(&b, s);
    producers_t P;
    index_producers(&P, L);
    rank_worst(s, L, &b, &P);
    free(b.idx);
    free(P.p);
    find_worst_output(s, L);
    text_t c = {0}, v = {0}, f = {0}, d = {0};
    const lw_row_t *ff = s->first_fail >= 0 ? &s->rows[s->first_fail] : NULL;
    if (s->ref_nonfinite >= 0 && (s->first_nonfinite < 0 || s->ref_nonfinite <= s->first_nonfinite)) {
        add(&c, "the reference itself holds NaN/Inf from %s on", s->rows[s->ref_nonfinite].res.name);
        add(&f, "fix the reference run first");
    } else if (ff && ff->layer < 0) {
        add(&c, "the inputs differ (preprocessing), not the engine: %s, a graph input, fails", ff->res.name);
        add(&f, "make the preprocessing match the reference's");
    } else if (s->worst >= 0) {
        write_cause(&c, s, L);
        write_fix(&f, s, L);
    }
    if (s->worst >= 0 || s->first_nonfinite >= 0 || s->worst_output >= 0) write_evidence(&v, s, L);
    s->cause = take(&c);
    s->evidence = take(&v);
    s->fix = take(&f);
    if (!s->cause[0] && s->first_nonfinite < 0) add(&d, "every compared tensor is within tolerance.");
    if (s->cause[0]) add(&d, "cause: %s.", s->cause);
    if (s->evidence[0] && (s->cause[0] || s->first_nonfinite >= 0)) add(&d, "%sevidence: %s.", d.n ? " " : "", s->evidence);
    if (s->fix[0]) add(&d, " fix: %s.", s->fix);
    if (local && s->n_rank) pin_list(&d, s, L);
    s->diagnosis = take(&d);
}
