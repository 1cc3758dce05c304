/* load.c — gathering a validation's results and judging them.
 *
 * Checks (plan.json lists which apply to each cell):
 *   compare   the cell's outputs match the reference cell within tolerance
 *   map_drop  the cell's AP is at most thresholds.max_map_drop points below the reference's
 *   min_map   the reference's AP reaches thresholds.min_map
 *   finite    the cell's outputs hold no NaN or Inf
 * Each failure carries its reason in words, taken from compare's layerwise
 * diagnosis when there is one. A check with nothing to judge (no compare or
 * mAP result, compare's "judged": false: no reference detection above the
 * score floor, only empty tensors) is "not judged": it fails, and no
 * expected failure excuses it. A report of no check at all fails too.
 *
 * Expected outcomes (pytest's xfail): a cell the config expects to fail is
 * XFAIL when some check fails (its failures are not failures of the run)
 * and XPASS when every check passes, which fails the run: a fixed bug or a
 * config that no longer shows what it claims. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report.h"
#include "util/fsutil.h"

static void note_kernels(report_t *r, const json_t *stats);

static json_t *load_json_opt(json_t *cell, const char *key, perr_t *e, int *rc)
{
    const char *path = json_string_value(json_object_get(cell, key));
    if (!path) return NULL;
    if (!file_exists(path)) return NULL;
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    if (!j) *rc = BAD(e, "%s:%d: %s", path, je.line, je.text);
    return j;
}

static double num(json_t *o, const char *a, const char *b)
{
    json_t *x = json_object_get(o, a);
    if (b) x = json_object_get(x, b);
    return json_is_number(x) ? json_number_value(x) : -1;
}

/* A judged output that fails, named once over the samples with its worst
 * figures, each labelled (the layerwise evidence that may follow is of one
 * sample): "d1 (max |a-b| 0.534, lowest SNR 0.0 dB, over all samples)", or
 * "d1 (missing)". */
static void note_failing(cell_t *c, json_t *ts, size_t upto, json_t *t)
{
    const char *name = json_string_value(json_object_get(t, "name"));
    const char *st = json_string_value(json_object_get(t, "status"));
    json_t *x;
    size_t i;
    if (!name || !st || !strcmp(st, "pass")) return;
    json_array_foreach(ts, i, x)   /* named already, for an earlier sample */
        if (i < upto && json_is_string(json_object_get(x, "name")) && !strcmp(json_string_value(json_object_get(x, "name")), name) &&
            !json_is_false(json_object_get(x, "judged")) && strcmp(json_string_value(json_object_get(x, "status")), "pass"))
            return;
    double a = -1, s = INFINITY;
    json_array_foreach(ts, i, x)
        if (json_is_string(json_object_get(x, "name")) && !strcmp(json_string_value(json_object_get(x, "name")), name)) {
            a = fmax(a, num(x, "abs", "max"));
            if (json_is_number(json_object_get(x, "snr_db"))) s = fmin(s, num(x, "snr_db", NULL));
        }
    size_t n = strlen(c->failing);
    if (c->n_failing++ == 4) snprintf(c->failing + n, sizeof c->failing - n, ", ...");
    if (c->n_failing > 4) return;
    if (strcmp(st, "fail")) snprintf(c->failing + n, sizeof c->failing - n, "%s%s (%s)", n ? ", " : "", name, st);
    else if (s < INFINITY)
        snprintf(c->failing + n, sizeof c->failing - n, "%s%s (max |a-b| %.3g, lowest SNR %.1f dB, over all samples)",
                 n ? ", " : "", name, a, s);
    else snprintf(c->failing + n, sizeof c->failing - n, "%s%s (max |a-b| %.3g)", n ? ", " : "", name, a);
}

/* The worst judged output tensor of a compare result: tensors compare did
 * not judge (outputs:, compare.ignore) are left out of the headline. */
static void summarise_compare(cell_t *c)
{
    c->max_abs = c->max_rel_p99 = c->snr_db = -1;
    json_t *ts = json_object_get(c->compare, "tensors"), *t;
    size_t i;
    json_array_foreach(ts, i, t) {
        if (json_is_false(json_object_get(t, "judged"))) { c->n_unjudged++; continue; }
        note_failing(c, ts, i, t);
        double a = num(t, "abs", "max"), r = num(t, "rel", "p99"), s = num(t, "snr_db", NULL);
        if (a > c->max_abs) c->max_abs = a;
        if (r > c->max_rel_p99) c->max_rel_p99 = r;
        if (c->snr_db < 0 || (s >= 0 && s < c->snr_db)) c->snr_db = s;
        json_t *side = json_object_get(t, "a");
        c->nonfinite += (int)(num(side, "nan", NULL) > 0) + (int)(num(side, "posinf", NULL) > 0) + (int)(num(side, "neginf", NULL) > 0);
    }
}

static int in_list(const char *list, const char *name)
{
    if (!list) return 1;
    size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)); p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0)) return 1;
    return 0;
}

/* The tensors the config names as before postprocessing (TopK), compared
 * element-wise in query order by the layerwise run: their lowest SNR. */
static double pre_postprocess_snr(json_t *plan, json_t *layerwise)
{
    json_t *names = json_object_get(json_object_get(plan, "tolerances"), "pre_postprocess"), *nm, *row;
    json_t *rows = json_object_get(json_array_get(json_object_get(json_object_get(layerwise, "layerwise"), "samples"), 0), "rows");
    double worst = NAN;
    size_t i, k;
    json_array_foreach(names, i, nm)
        json_array_foreach(rows, k, row) {
            const char *t = json_string_value(json_object_get(row, "tensor"));
            if (!t || !json_string_value(nm) || strcmp(t, json_string_value(nm))) continue;
            json_t *v = json_object_get(row, "snr_db");
            double s = json_is_number(v) ? json_number_value(v) : INFINITY;   /* null: identical */
            if (!(s >= worst)) worst = s;
        }
    return worst;
}

/* Every name --cells gives is a cell of the plan (a misspelt one would
 * leave a report of nothing). */
static int check_cell_names(json_t *plan, const char *plan_path, const char *cells, perr_t *e)
{
    char *list = xstrdup(cells), *save = NULL;
    int rc = 0;
    for (char *w = strtok_r(list, " \t", &save); w && !rc; w = strtok_r(NULL, " \t", &save)) {
        json_t *c;
        size_t i;
        int found = 0;
        json_array_foreach(json_object_get(plan, "cells"), i, c)
            found |= json_string_value(json_object_get(c, "name")) && !strcmp(json_string_value(json_object_get(c, "name")), w);
        if (!found) rc = BAD(e, "%s: --cells: '%s' is not a cell of this plan", plan_path, w);
    }
    free(list);
    return rc;
}

int report_load(report_t *r, const char *plan_path, const char *cells, perr_t *e)
{
    memset(r, 0, sizeof *r);
    json_error_t je;
    r->plan = json_load_file(plan_path, 0, &je);
    if (!r->plan) return BAD(e, "%s:%d: %s", plan_path, je.line, je.text);
    r->model = json_string_value(json_object_get(r->plan, "model"));
    r->task = json_string_value(json_object_get(r->plan, "task"));
    r->task_metric = json_string_value(json_object_get(r->plan, "task_metric"));
    json_t *pc = json_object_get(r->plan, "cells"), *c;
    if (!r->model || !json_is_array(pc)) return BAD(e, "%s: not a plan (no model or cells)", plan_path);
    r->cells = xcalloc(json_array_size(pc) + 1, sizeof *r->cells);
    size_t i;
    int rc = 0;
    json_array_foreach(pc, i, c) {
        const char *name = json_string_value(json_object_get(c, "name"));
        if (!name) return BAD(e, "%s: cell %zu has no name", plan_path, i);
        if (!in_list(cells, name)) continue;
        cell_t *x = &r->cells[r->n_cells++];
        x->plan = c;
        x->name = name;
        x->variant = json_string_value(json_object_get(c, "variant"));
        x->precision = json_string_value(json_object_get(c, "precision"));
        x->is_reference = json_is_true(json_object_get(c, "is_reference"));
        x->compare = load_json_opt(c, "compare", e, &rc);
        x->map = load_json_opt(c, "map", e, &rc);
        x->task = load_json_opt(c, "task", e, &rc);
        x->layerwise = load_json_opt(c, "layerwise", e, &rc);
        x->local = load_json_opt(c, "local", e, &rc);
        x->stats = load_json_opt(c, "stats", e, &rc);
        if (rc) return -1;
        x->expected = json_string_value(json_object_get(c, "expected_failure"));
        x->det = json_object_get(x->compare, "detections");
        if (!json_is_object(x->det)) x->det = NULL;
        x->pre_snr = pre_postprocess_snr(r->plan, x->layerwise);
        x->ap = x->map ? num(json_object_get(x->map, "stats"), "AP", NULL) : -1;
        x->ap50 = x->map ? num(json_object_get(x->map, "stats"), "AP50", NULL) : -1;
        /* the cells' map.json name what their AP is of (map-eval --iou-type) */
        const char *iou = json_string_value(json_object_get(x->map, "iou_type"));
        if (iou && !strcmp(iou, "segm")) r->ap_name = "mask AP";
        if (iou && !strcmp(iou, "keypoints")) r->ap_name = "keypoint AP";
        summarise_compare(x);
        json_t *s0 = json_array_get(json_object_get(x->stats, "samples"), 0);
        /* a cell that reran only part of the graph on its twin's values
         * (infer's shared sets) has no latency of its own */
        x->median_ms = s0 && !json_object_get(x->stats, "shared_with") ? num(s0, "median_ms", NULL) : -1;
        note_kernels(r, x->stats);
    }
    return cells ? check_cell_names(r->plan, plan_path, cells, e) : 0;
}

static void judge_cells(report_t *r);

/* snprintf at offset n of a buffer of cap bytes; the new length, clamped. */
static size_t cat(char *buf, size_t n, size_t cap, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static size_t cat(char *buf, size_t n, size_t cap, const char *fmt, ...)
{
    if (n >= cap) return cap - 1;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf + n, cap - n, fmt, ap);
    va_end(ap);
    return k < 0 ? n : n + (size_t)k >= cap ? cap - 1 : n + (size_t)k;
}
static void verdict_line(report_t *r);
static size_t failing_metrics(const report_t *r, char *v, size_t n, size_t cap);

/* "kernels: avx2" in the reports: the instruction set infer's stats name,
 * "blas on ..." where OpenBLAS did the products; every distinct one, in
 * the order the cells give them. */
static void note_kernels(report_t *r, const json_t *stats)
{
    const char *isa = json_string_value(json_object_get(stats, "isa"));
    const char *k = json_string_value(json_object_get(stats, "kernels"));
    if (!isa) return;
    char one[48];
    snprintf(one, sizeof one, "%s%s", k && !strcmp(k, "blas") ? "blas on " : "", isa);
    for (const char *p = r->kernels; (p = strstr(p, one)); p += strlen(one))
        if ((p == r->kernels || p[-1] == ' ') && (p[strlen(one)] == ',' || !p[strlen(one)])) return;
    size_t n = strlen(r->kernels);
    snprintf(r->kernels + n, sizeof r->kernels - n, "%s%s", n ? ", " : "", one);
}

check_t *add_check(report_t *r, const cell_t *c, const char *name, int passed)
{
    /* failures of a cell expected to fail are counted when the cell is judged */
    r->checks = xrealloc(r->checks, (r->n_checks + 1) * sizeof *r->checks);
    check_t *k = &r->checks[r->n_checks++];
    memset(k, 0, sizeof *k);
    snprintf(k->cell, sizeof k->cell, "%s", c->name);
    snprintf(k->name, sizeof k->name, "%s", name);
    k->passed = passed;
    k->judged = 1;
    return k;
}

/* The check had nothing to judge: it fails, with why. */
void not_judged(check_t *k, const char *why)
{
    k->passed = k->judged = 0;
    snprintf(k->reason, sizeof k->reason, "not judged: %s", why);
}

/* compare's own diagnosis of the first diverging layer, and the layers
 * ranked by their own (local) error: what to pin to fp32 first. */
static void explain_divergence(const cell_t *c, char *out, size_t n)
{
    json_t *s = json_array_get(json_object_get(json_object_get(c->layerwise, "layerwise"), "samples"), 0);
    const char *diag = json_string_value(json_object_get(s, "diagnosis"));
    size_t k = strlen(out);
    if (diag) k = cat(out, k, n, " %s", diag);
    json_t *ls = json_array_get(json_object_get(json_object_get(c->local, "layerwise"), "samples"), 0);
    json_t *rank = json_object_get(ls, "ranking"), *row;
    size_t i;
    int shown = 0;
    json_array_foreach(rank, i, row) {
        if (shown == 5 || k >= n) break;
        const char *layer = json_string_value(json_object_get(row, "layer"));
        const char *st = json_string_value(json_object_get(row, "status"));
        if (!layer || !st || strcmp(st, "fail")) continue;
        k = cat(out, k, n, "%s%s", shown ? ", " : " Own error, worst first (pin to fp32 first): ", layer);
        shown++;
    }
}

void report_evaluate(report_t *r)
{
    json_t *th = json_object_get(r->plan, "thresholds");
    double max_drop = num(th, "max_map_drop", NULL), min_map = num(th, "min_map", NULL);
    const cell_t *ref = NULL;
    for (int i = 0; i < r->n_cells; i++)
        if (r->cells[i].is_reference) ref = &r->cells[i];
    for (int i = 0; i < r->n_cells; i++) {
        const cell_t *c = &r->cells[i];
        json_t *checks = json_object_get(c->plan, "checks"), *ck;
        size_t j;
        json_array_foreach(checks, j, ck) {
            const char *name = json_string_value(ck);
            if (!name) continue;
            check_t *k;
            if (!strcmp(name, "compare")) {
                int ok = c->compare && json_is_true(json_object_get(c->compare, "passed"));
                k = add_check(r, c, name, ok);
                if (!c->compare) not_judged(k, "no compare result");
                else if (json_is_false(json_object_get(c->compare, "judged"))) {
                    const char *why = json_string_value(json_object_get(c->compare, "not_judged"));
                    not_judged(k, why ? why : "compare judged nothing");
                } else if (!ok) {
                    snprintf(k->reason, sizeof k->reason, "%s: outputs differ from the reference beyond tolerance%s%s "
                             "(at the %soutputs, over all samples: worst max |a-b| %.3g, p99 rel %.3g, lowest SNR %.1f dB).",
                             c->precision, c->failing[0] ? ": " : "", c->failing, c->n_unjudged ? "judged " : "", c->max_abs,
                             c->max_rel_p99, c->snr_db);
                    explain_divergence(c, k->reason, sizeof k->reason);
                }
            } else if (!strcmp(name, "map_drop")) {
                double drop = ref && ref->ap >= 0 && c->ap >= 0 ? 100 * (ref->ap - c->ap) : NAN;
                k = add_check(r, c, name, drop == drop && drop <= max_drop);
                if (!(drop == drop)) not_judged(k, "no mAP for this cell or the reference");
                else if (!k->passed)
                    snprintf(k->reason, sizeof k->reason, "%s/%s: AP %.1f is %.1f points below the reference %s (%.1f; allowed %.1f)%s",
                             c->variant, c->precision, 100 * c->ap, drop, ref->name, 100 * ref->ap, max_drop,
                             strcmp(c->variant, ref->variant) ? ": the preprocessing differs from the reference's" : "");
            } else if (!strcmp(name, "min_map")) {
                k = add_check(r, c, name, c->ap >= 0 && c->ap >= min_map);
                if (c->ap < 0) not_judged(k, "no mAP for the reference");
                else if (!k->passed) snprintf(k->reason, sizeof k->reason, "reference AP %.3f is below the required %.3f", c->ap, min_map);
            } else if (!strcmp(name, "metric_drop") || !strcmp(name, "min_metric")) {
                task_check(r, c, ref, name);
            } else if (!strcmp(name, "finite")) {
                if (!c->compare) continue;   /* the reference is what others are checked against */
                k = add_check(r, c, name, c->nonfinite == 0);
                if (!k->passed) {
                    snprintf(k->reason, sizeof k->reason, "%s: the outputs hold NaN or Inf.", c->precision);
                    explain_divergence(c, k->reason, sizeof k->reason);
                }
            }
        }
    }
    for (int i = 0; i < r->n_cells; i++) {
        cell_t *c = &r->cells[i];
        c->dap = ref && ref->ap >= 0 && c->ap >= 0 ? 100 * (c->ap - ref->ap) : NAN;
    }
    task_set_metrics(r, ref);
    judge_cells(r);
}

/* Outcomes, the run's failure count and its verdict line. */
static void judge_cells(report_t *r)
{
    int n0 = r->n_checks;
    for (int i = 0; i < r->n_cells; i++) {
        cell_t *c = &r->cells[i];
        int failed = 0;
        for (int k = 0; k < n0; k++)
            if (!strcmp(r->checks[k].cell, c->name) && !r->checks[k].passed) failed = 1;
        if (!c->expected) {
            c->outcome = failed ? OUT_FAIL : OUT_PASS;
        } else if (failed) {
            c->outcome = OUT_XFAIL;
            r->n_xfail++;
            for (int k = 0; k < n0; k++)   /* a check that judged nothing stays a failure */
                if (!strcmp(r->checks[k].cell, c->name) && r->checks[k].judged) r->checks[k].expected = 1;
        } else {
            c->outcome = OUT_XPASS;
            r->n_xpass++;
            check_t *k = add_check(r, c, "expected_failure", 0);
            snprintf(k->reason, sizeof k->reason, "XPASS: %s/%s was expected to fail (%s) but every check passed: "
                     "remove the expectation or find out what changed", c->variant, c->precision, c->expected);
        }
    }
    for (int k = 0; k < r->n_checks; k++) {
        r->failed += !r->checks[k].passed && !r->checks[k].expected;
        r->n_unjudged += !r->checks[k].judged;
    }
    /* Nothing judged is never a PASS, a run of the reference alone (make
     * validate PRECISIONS=fp32 on a one-variant model) included: what the
     * others are judged against had nothing to be compared with, and the
     * verdict says that, and how to judge something, rather than a bare
     * "nothing judged". */
    if (!r->n_checks) {
        r->reference_only = r->n_cells > 0;
        for (int i = 0; i < r->n_cells; i++) r->reference_only &= r->cells[i].is_reference;
        r->failed = 1;
    }
    verdict_line(r);
}

/* " (fp16: −6.1 dB PSNR, bgr/fp16: −0.4 AP)": the failing cells' task metric
 * against the reference, named by precision (and variant when it is not
 * the reference's). */
static size_t failing_metrics(const report_t *r, char *v, size_t n, size_t cap)
{
    const char *refv = NULL;
    int k = 0;
    for (int i = 0; i < r->n_cells; i++)
        if (r->cells[i].is_reference) refv = r->cells[i].variant;
    for (int i = 0; i < r->n_cells; i++) {
        const cell_t *c = &r->cells[i];
        if (c->outcome != OUT_FAIL || c->is_reference || !(c->dmetric == c->dmetric)) continue;
        char d[96];
        metric_delta_text(r, c->dmetric, d, sizeof d);
        n = cat(v, n, cap, "%s", k++ ? ", " : " (");
        if (refv && strcmp(c->variant, refv)) n = cat(v, n, cap, "%s/", c->variant);
        n = cat(v, n, cap, "%s: %s", c->precision, d);
    }
    return k ? cat(v, n, cap, ")") : n;
}

/* "PASS — 2 expected failures: letterbox-naive (−60.2 AP), imagenet-norm (−12.3 AP)":
 * expected failures grouped by variant (or cell, when not every precision of it is expected). */
static void verdict_line(report_t *r)
{
    size_t n = 0, cap = sizeof r->verdict;
    char *v = r->verdict;
    int fails = r->failed - r->n_xpass;   /* XPASS adds one failing check per cell */
    if (r->reference_only) {
        n = cat(v, n, cap, "FAIL — nothing judged, reference only: %s is what the other cells are judged against, and "
                "no other cell ran, so nothing was compared", r->cells[0].name);
        if (r->cells[0].mtext[0]) n = cat(v, n, cap, " (%s)", r->cells[0].mtext);
        else if (r->cells[0].ap >= 0) n = cat(v, n, cap, " (its %s: %.1f)", r->ap_name ? r->ap_name : "AP", 100 * r->cells[0].ap);
        cat(v, n, cap, "; add a precision or variant to judge one");
        return;
    }
    if (!r->n_checks) {
        snprintf(v, cap, "FAIL — nothing judged: no check applies to the %d cell%s given", r->n_cells, r->n_cells == 1 ? "" : "s");
        return;
    }
    n = cat(v, n, cap, "%s", r->failed ? "FAIL" : "PASS");
    if (fails) n = cat(v, n, cap, " — %d check%s failed", fails, fails == 1 ? "" : "s");
    if (fails) n = failing_metrics(r, v, n, cap);
    if (r->n_unjudged) n = cat(v, n, cap, " (%d not judged)", r->n_unjudged);
    if (r->n_xpass) {
        n = cat(v, n, cap, "%s%d unexpected pass%s (XPASS):", fails ? "; " : " — ", r->n_xpass, r->n_xpass == 1 ? "" : "es");
        for (int i = 0, k = 0; i < r->n_cells; i++)
            if (r->cells[i].outcome == OUT_XPASS) n = cat(v, n, cap, "%s %s", k++ ? "," : "", r->cells[i].name);
    }
    if (!r->n_xfail) {
        if (!r->failed) snprintf(v + n, cap - n, " — %d of %d checks passed", r->n_checks, r->n_checks);
        return;
    }
    const char **vs, **ps;
    int nv, np, groups = 0;
    report_axes(r, &vs, &nv, &ps, &np);
    char list[900] = "";
    size_t ln = 0;
    for (int a = 0; a < nv; a++) {
        int xf = 0, cells = 0;
        double worst = NAN;
        const char *one = NULL;
        for (int b = 0; b < np; b++) {
            const cell_t *c = report_cell(r, vs[a], ps[b]);
            if (!c) continue;
            cells++;
            if (c->outcome != OUT_XFAIL) continue;
            xf++;
            one = c->precision;
            if (c->dmetric == c->dmetric && !(c->dmetric >= worst)) worst = c->dmetric;
        }
        if (!xf) continue;
        groups++;
        ln = cat(list, ln, sizeof list, "%s%s", ln ? ", " : "", vs[a]);
        if (xf == 1 && cells > 1) ln = cat(list, ln, sizeof list, "/%s", one);
        else if (xf < cells) ln = cat(list, ln, sizeof list, " (%d cells)", xf);
        if (worst == worst) {
            char d[96];
            metric_delta_text(r, worst, d, sizeof d);
            ln = cat(list, ln, sizeof list, " (%s)", d);
        }
        if (ln >= sizeof list) ln = sizeof list - 1;
    }
    free(vs);
    free(ps);
    snprintf(v + n, cap - n, "%s%d expected failure%s: %s", r->failed ? "; " : " — ", groups, groups == 1 ? "" : "s", list);
}

const char *outcome_name(outcome_t o)
{
    static const char *const names[] = {"PASS", "FAIL", "XFAIL", "XPASS"};
    return names[o];
}

static int add_name(const char **list, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(list[i], s)) return n;
    list[n] = s;
    return n + 1;
}

int report_axes(const report_t *r, const char ***variants, int *nv, const char ***precisions, int *np)
{
    *variants = xcalloc((size_t)r->n_cells + 1, sizeof **variants);
    *precisions = xcalloc((size_t)r->n_cells + 1, sizeof **precisions);
    *nv = *np = 0;
    json_t *pv = json_object_get(r->plan, "variants"), *pp = json_object_get(r->plan, "precisions"), *x;
    size_t i;
    /* plan order, keeping only what the report holds */
    json_array_foreach(pv, i, x)
        for (int k = 0; k < r->n_cells; k++)
            if (json_string_value(x) && !strcmp(r->cells[k].variant, json_string_value(x))) { *nv = add_name(*variants, *nv, r->cells[k].variant); break; }
    json_array_foreach(pp, i, x) {
        const char *nm = json_string_value(json_object_get(x, "name"));
        for (int k = 0; nm && k < r->n_cells; k++)
            if (!strcmp(r->cells[k].precision, nm)) { *np = add_name(*precisions, *np, r->cells[k].precision); break; }
    }
    for (int k = 0; k < r->n_cells; k++) {
        *nv = add_name(*variants, *nv, r->cells[k].variant);
        *np = add_name(*precisions, *np, r->cells[k].precision);
    }
    return 0;
}

const cell_t *report_cell(const report_t *r, const char *variant, const char *precision)
{
    for (int i = 0; i < r->n_cells; i++)
        if (!strcmp(r->cells[i].variant, variant) && !strcmp(r->cells[i].precision, precision)) return &r->cells[i];
    return NULL;
}

/* Failing checks grouped by (variant, check): one bullet per cause. */
int report_reasons(const report_t *r, reason_group_t **out)
{
    reason_group_t *g = xcalloc((size_t)r->n_checks + 1, sizeof *g);
    int n = 0;
    char *done = xcalloc((size_t)r->n_checks + 1, 1);
    for (int i = 0; i < r->n_checks; i++) {
        const check_t *k = &r->checks[i];
        if (k->passed || done[i]) continue;
        const cell_t *c = NULL;
        for (int j = 0; j < r->n_cells; j++)
            if (!strcmp(r->cells[j].name, k->cell)) c = &r->cells[j];
        if (!c) continue;
        /* the same check failing in other cells of this variant */
        char precs[512] = "";
        size_t pl = 0;
        int count = 0, cells = 0;
        double lo = NAN, hi = NAN;
        const cell_t *last = NULL;
        for (int j = i; j < r->n_checks; j++) {
            const check_t *q = &r->checks[j];
            const cell_t *d = NULL;
            for (int m = 0; m < r->n_cells; m++)
                if (!strcmp(r->cells[m].name, q->cell)) d = &r->cells[m];
            if (q->passed || done[j] || !d || strcmp(d->variant, c->variant) || strcmp(q->name, k->name) || q->expected != k->expected)
                continue;
            done[j] = 1;
            if (last == d) continue;   /* one cell failing the check for several metrics */
            last = d;
            count++;
            pl = cat(precs, pl, sizeof precs, "%s%s", pl ? ", " : "", d->precision);
            if (pl >= sizeof precs) pl = sizeof precs - 1;
            if (d->dmetric == d->dmetric) { lo = lo == lo ? fmin(lo, d->dmetric) : d->dmetric; hi = hi == hi ? fmax(hi, d->dmetric) : d->dmetric; }
        }
        for (int m = 0; m < r->n_cells; m++) cells += !strcmp(r->cells[m].variant, c->variant);
        reason_group_t *x = &g[n++];
        x->expected = k->expected;
        x->variant = c->variant;
        size_t tl = 0;
        tl = cat(x->text, tl, sizeof x->text, "%s%s: ", k->expected ? "expected failure, " : "", c->variant);
        if (!strcmp(k->name, "map_drop") && lo == lo)
            tl = cat(x->text, tl, sizeof x->text, lo == hi || fabs(lo - hi) < 0.05 ? "\u2212%.1f AP" : "\u2212%.1f to \u2212%.1f AP",
                           -hi, -lo);
        else if (!strcmp(k->name, "metric_drop") && lo == lo) {
            char d[96];
            metric_delta_text(r, lo, d, sizeof d);   /* the worst */
            tl = cat(x->text, tl, sizeof x->text, "%s", d);
        } else
            tl = cat(x->text, tl, sizeof x->text, "%s", k->name);
        if (count == cells && cells > 1) tl = cat(x->text, tl, sizeof x->text, " at every precision");
        else tl = cat(x->text, tl, sizeof x->text, " at %s", precs);
        if (tl < sizeof x->text) {
            const char *why = k->expected && c->expected && c->expected[0] ? c->expected : k->reason;
            snprintf(x->text + tl, sizeof x->text - tl, " \u2014 %s", why);
        }
    }
    free(done);
    *out = g;
    return n;
}

void report_free(report_t *r)
{
    for (int i = 0; i < r->n_cells; i++) {
        cell_t *c = &r->cells[i];
        json_decref(c->compare); json_decref(c->map); json_decref(c->layerwise); json_decref(c->task);
        json_decref(c->local); json_decref(c->stats);
    }
    free(r->cells);
    free(r->checks);
    timing_free(&r->timing);
    json_decref(r->plan);
}
