/* search.c — which layers to keep in FP32. Ours: the overflow sites first
 * (one measured step), then greedy addition of the unit with the best
 * measured gain among the next few in rank order (own error), until the
 * criterion holds on the search samples; then every chosen unit is tried
 * for removal, each removal re-verified; the answer is verified on the
 * held-out samples. The baselines: AutoCast's value-size rules and the
 * prefix/suffix bisection of `polygraphy debug precision`. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "search.h"

static int verify(fp_ctx_t *c, fp_result_t *r, perr_t *e);

static void progress(const fp_ctx_t *c, const char *what, int n_units, const fp_score_t *s)
{
    if (c->quiet) return;
    fprintf(stderr, "fix-precision: [%3d eval, %5.1fs] %-28s %3d %s in fp32: %s err %.4g%s\n", c->evals,
            fp_now() - c->t0, what, abs(n_units), n_units < 0 ? "layer(s)" : "unit(s)", s->pass ? "PASS" : "fail", s->err,
            c->crit.use_map ? " (mAP drop, points)" : " (-worst SNR, dB)");
}

static int eval_units(fp_ctx_t *c, const int *units, int nu, int lo, int hi, int counted, fp_score_t *s, perr_t *e)
{
    int n;
    char **names = fp_unit_names(c, units, nu, &n);
    int rc = fp_evaluate(c, names, n, lo, hi, counted, s, e);
    free(names);
    return rc;
}

/* Rank: overflow sites first, then the output tail and heads, then worst own error
 * (lowest SNR), then order. */
static const fp_ctx_t *rank_ctx;
static int by_rank(const void *pa, const void *pb)
{
    const fp_unit_t *a = &rank_ctx->units[*(const int *)pa], *b = &rank_ctx->units[*(const int *)pb];
    if (a->overflow != b->overflow) return b->overflow - a->overflow;
    if (a->tail != b->tail) return b->tail - a->tail;
    if (a->local_snr != b->local_snr) return a->local_snr < b->local_snr ? -1 : 1;
    return *(const int *)pa - *(const int *)pb;
}

int fp_score_result(fp_ctx_t *c, fp_result_t *r, perr_t *e)
{
    if (fp_evaluate(c, r->names, r->n_layers, 0, c->n_search, 0, &r->search, e)) return -1;
    return verify(c, r, e);
}

static int verify(fp_ctx_t *c, fp_result_t *r, perr_t *e)
{
    if (c->n_samples == c->n_search) { r->hold = r->search; r->has_hold = 0; return 0; }
    r->has_hold = 1;
    return fp_evaluate(c, r->names, r->n_layers, c->n_search, c->n_samples, 0, &r->hold, e);
}

static int contains(const int *v, int n, int x)
{
    for (int i = 0; i < n; i++) if (v[i] == x) return 1;
    return 0;
}

static int eval_layers(fp_ctx_t *c, const int *lay, int n, fp_score_t *s, perr_t *e)
{
    char **names = xmalloc((n + 1) * sizeof *names);
    for (int i = 0; i < n; i++) names[i] = c->layers[lay[i]].name;
    int rc = fp_evaluate(c, names, n, 0, c->n_search, 1, s, e);
    free(names);
    return rc;
}

/* Removes every chunk of layers the criterion does not need, halving the
 * chunk size down to single layers (delta debugging): each removal is
 * re-verified by an evaluation; cheap when most layers are not needed. */
static int shrink(fp_ctx_t *c, int *lay, int *n, fp_score_t *sc, const char *what, perr_t *e)
{
    int *trial = xmalloc((*n + 1) * sizeof *trial), rc = 0;
    fp_score_t s;
    for (int chunk = (*n + 1) / 2; chunk >= 1 && !rc; chunk = chunk == 1 ? 0 : (chunk + 1) / 2) {
        for (int i = 0; i < *n && !rc && fp_budget_left(c);) {
            int m = 0;
            for (int k = 0; k < *n; k++) if (k < i || k >= i + chunk) trial[m++] = lay[k];
            rc = eval_layers(c, trial, m, &s, e);
            if (!rc && s.pass) {
                progress(c, what, -m, &s);
                memcpy(lay, trial, m * sizeof *lay);
                *n = m;
                *sc = s;
            } else {
                i += chunk;
            }
        }
    }
    free(trial);
    return rc;
}

static void units_to_layers(const fp_ctx_t *c, const int *units, int nu, int *lay, int *n)
{
    *n = 0;
    for (int i = 0; i < nu; i++)
        for (int k = 0; k < c->units[units[i]].n; k++) lay[(*n)++] = c->units[units[i]].nodes[k];
}

/* The result's layers and, for the report, the units they belong to. */
static void layers_to_result(const fp_ctx_t *c, fp_result_t *r, const int *lay, int n, const char *reason)
{
    free(r->names);
    r->names = xmalloc((n + 1) * sizeof *r->names);
    r->n_layers = n;
    r->flops = 0;
    int nu = 0;
    int *units = xmalloc((n + 1) * sizeof *units);
    for (int i = 0; i < n; i++) {
        r->names[i] = c->layers[lay[i]].name;
        r->flops += c->layers[lay[i]].flops;
        int u = c->layers[lay[i]].unit;
        if (!contains(units, nu, u)) units[nu++] = u;
        if (reason && !r->reason[u]) r->reason[u] = reason;
    }
    free(r->units);
    r->units = units;
    r->n_units = nu;
}

int fp_search(fp_ctx_t *c, int beam, const fp_result_t *seed, fp_result_t *r, perr_t *e)
{
    int nu = c->n_units, n = 0;
    int *rank = xmalloc(nu * sizeof *rank), *set = xmalloc((nu + 1) * sizeof *set), *trial = xmalloc((nu + 1) * sizeof *trial);
    for (int i = 0; i < nu; i++) rank[i] = i;
    rank_ctx = c;
    qsort(rank, nu, sizeof *rank, by_rank);
    fp_score_t cur, s;
    int rc = eval_units(c, set, 0, 0, c->n_search, 1, &cur, e);
    if (!rc) progress(c, "everything reduced", 0, &cur);
    /* step 0: every overflow site at once */
    for (int i = 0; i < nu && !rc; i++) if (c->units[rank[i]].overflow) trial[n++] = rank[i];
    if (!rc && n && !cur.pass && fp_budget_left(c)) {
        rc = eval_units(c, trial, n, 0, c->n_search, 1, &s, e);
        if (!rc) progress(c, "overflow sites", n, &s);
        if (!rc && s.err < cur.err) { memcpy(set, trial, n * sizeof *set); cur = s; for (int i = 0; i < n; i++) r->reason[set[i]] = "overflow"; }
        else n = 0;
    } else n = 0;
    /* greedy: the best measured gain among the next `beam` units by rank */
    while (!rc && !cur.pass && n < nu && fp_budget_left(c)) {
        int best = -1, tried = 0;
        fp_score_t bs = {0};
        for (int i = 0; i < nu && tried < beam && fp_budget_left(c) && !rc; i++) {
            if (contains(set, n, rank[i])) continue;
            memcpy(trial, set, n * sizeof *set);
            trial[n] = rank[i];
            rc = eval_units(c, trial, n + 1, 0, c->n_search, 1, &s, e);
            tried++;
            if (!rc && (best < 0 || s.err < bs.err)) { best = rank[i]; bs = s; }
        }
        if (rc || best < 0) break;
        set[n++] = best;
        r->reason[best] = bs.err < cur.err ? "metric gain" : "greedy (no measurable gain)";
        r->gain[best] = cur.err - bs.err;
        cur = bs;
        progress(c, c->units[best].name, n, &cur);
    }
    /* pruning: drop every unit the criterion does not need (re-verified) */
    for (int i = n - 1; i >= 0 && !rc && cur.pass && fp_budget_left(c); i--) {
        int m = 0;
        for (int k = 0; k < n; k++) if (k != i) trial[m++] = set[k];
        rc = eval_units(c, trial, m, 0, c->n_search, 1, &s, e);
        if (!rc && s.pass) {
            progress(c, "pruned unit", m, &s);
            memcpy(set, trial, m * sizeof *set);
            n = m;
            cur = s;
        }
    }
    int *lay = xmalloc((c->n_layers + 1) * sizeof *lay), *ulay = xmalloc((c->n_layers + 1) * sizeof *ulay), nl = 0, nul;
    units_to_layers(c, set, n, lay, &nl);
    memcpy(ulay, lay, nl * sizeof *lay);
    nul = nl;
    fp_score_t unit_level = cur;
    /* then layer by layer inside the chosen units */
    if (!rc && cur.pass) rc = shrink(c, lay, &nl, &cur, "pruned layers", e);
    /* backward elimination from the smallest baseline that passes, when the
     * greedy answer failed or is larger */
    int from_seed = 0;
    if (!rc && seed && seed->search.pass && (!cur.pass || seed->n_layers < nl)) {
        int *sl = xmalloc((seed->n_layers + 1) * sizeof *sl), ns = seed->n_layers;
        for (int i = 0; i < ns; i++) sl[i] = fp_layer_index(c, seed->names[i]);
        fp_score_t ss = seed->search;
        /* the search's margin applies to the seed too */
        if (c->crit.margin > 0 && fp_budget_left(c)) rc = eval_layers(c, sl, ns, &ss, e);
        else if (c->crit.margin > 0) ss.pass = 0;
        if (!rc && ss.pass && !c->quiet) fprintf(stderr, "fix-precision: eliminating from the baseline's %d layers\n", ns);
        if (!rc && ss.pass) rc = shrink(c, sl, &ns, &ss, "eliminated from baseline", e);
        /* even with no budget left to eliminate, a smaller passing set wins */
        if (!rc && ss.pass && (!cur.pass || ns < nl)) { memcpy(lay, sl, ns * sizeof *sl); nl = ns; cur = ss; from_seed = 1; }
        free(sl);
    }
    if (!rc) {
        layers_to_result(c, r, lay, nl, "kept by elimination from the smallest passing baseline");
        r->search = cur;
        if (from_seed) snprintf(r->note, sizeof r->note, "backward elimination from the smallest passing baseline");
        rc = verify(c, r, e);
        if (!rc) progress(c, "held-out verification", -nl, &r->hold);
        if (!rc && r->has_hold && !r->hold.pass && !from_seed && nl < nul && unit_level.pass) {
            /* the layer-level pruning fit the search samples only: back to whole units */
            layers_to_result(c, r, ulay, nul, NULL);
            r->search = unit_level;
            snprintf(r->note, sizeof r->note, "layer-level pruning failed the held-out samples: whole units kept");
            rc = verify(c, r, e);
            if (!rc) progress(c, "held-out, whole units", -nul, &r->hold);
        }
    }
    free(rank); free(set); free(trial); free(lay); free(ulay);
    return rc;
}

int fp_adopt_baseline(fp_ctx_t *c, fp_result_t *r, const fp_result_t *b, const char *what, perr_t *e)
{
    int *lay = xmalloc((b->n_layers + 1) * sizeof *lay);
    for (int i = 0; i < b->n_layers; i++) lay[i] = fp_layer_index(c, b->names[i]);
    for (int u = 0; u < c->n_units; u++) r->reason[u] = NULL;
    layers_to_result(c, r, lay, b->n_layers, what);
    free(lay);
    r->search = b->search;
    r->hold = b->hold;
    r->has_hold = b->has_hold;
    snprintf(r->note, sizeof r->note, "the search's own answers failed the held-out samples: %s", what);
    (void)e;
    return 0;
}

/* AutoCast: FP32 where a layer reads or writes a value beyond data_max or
 * reads an initializer beyond init_max (statistics over the search samples). */
int fp_autocast(fp_ctx_t *c, double data_max, double init_max, fp_result_t *r, perr_t *e)
{
    int *set = xmalloc((c->n_units + 1) * sizeof *set), n = 0;
    for (int u = 0; u < c->n_units; u++) {
        int hit = 0;
        for (int k = 0; k < c->units[u].n; k++) {
            const fp_layer_t *l = &c->layers[c->units[u].nodes[k]];
            hit |= l->absmax_io > data_max || l->absmax_init > init_max;
        }
        if (hit) set[n++] = u;
    }
    /* per layer, not per unit: AutoCast knows no units */
    free(r->names);
    r->names = xmalloc((c->n_layers + 1) * sizeof *r->names);
    r->n_layers = 0;
    r->flops = 0;
    for (int l = 0; l < c->n_layers; l++)
        if (c->layers[l].absmax_io > data_max || c->layers[l].absmax_init > init_max) {
            r->names[r->n_layers++] = c->layers[l].name;
            r->flops += c->layers[l].flops;
        }
    free(set);
    return fp_score_result(c, r, e);
}

/* Layers [a, b) of the execution order in FP32. */
static int eval_range(fp_ctx_t *c, int a, int b, fp_score_t *s, perr_t *e)
{
    char **names = xmalloc((c->n_layers + 1) * sizeof *names);
    for (int i = a; i < b; i++) names[i - a] = c->layers[i].name;
    int rc = fp_evaluate(c, names, b - a, 0, c->n_search, 0, s, e);
    free(names);
    return rc;
}

/* Bisection for the shortest prefix (or suffix) in FP32 that passes, as
 * `polygraphy debug precision --mode bisect` (it assumes monotonicity). */
static int bisect(fp_ctx_t *c, int suffix, int *best_k, fp_score_t *best, int *evals, perr_t *e)
{
    int lo = 0, hi = c->n_layers;   /* hi passes (all FP32 is the reference) */
    fp_score_t s;
    if (eval_range(c, 0, c->n_layers, best, e)) return -1;
    (*evals)++;
    *best_k = hi;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (suffix ? eval_range(c, c->n_layers - mid, c->n_layers, &s, e) : eval_range(c, 0, mid, &s, e)) return -1;
        (*evals)++;
        if (s.pass) { hi = mid; *best_k = mid; *best = s; }
        else lo = mid + 1;
    }
    return 0;
}

int fp_prefix_suffix(fp_ctx_t *c, fp_result_t *r, perr_t *e)
{
    int kp, ks;
    fp_score_t sp, ss;
    r->evals = 0;
    if (bisect(c, 0, &kp, &sp, &r->evals, e) || bisect(c, 1, &ks, &ss, &r->evals, e)) return -1;
    int suffix = ks < kp, k = suffix ? ks : kp, a = suffix ? c->n_layers - k : 0;
    free(r->names);
    r->names = xmalloc((c->n_layers + 1) * sizeof *r->names);
    r->n_layers = k;
    r->flops = 0;
    for (int i = a; i < a + k; i++) { r->names[i - a] = c->layers[i].name; r->flops += c->layers[i].flops; }
    r->search = suffix ? ss : sp;
    snprintf(r->note, sizeof r->note, "%s %d of %d layers (prefix %d, suffix %d)", suffix ? "last" : "first", k,
             c->n_layers, kp, ks);
    return verify(c, r, e);
}

void fp_result_free(fp_result_t *r)
{
    free(r->units); free(r->names);
    free(r->reason); free(r->gain);
}
