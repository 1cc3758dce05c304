/* load.c — gathering a validation's results and judging them.
 *
 * Checks (plan.json lists which apply to each cell):
 *   compare   the cell's outputs match the reference cell within tolerance
 *   map_drop  the cell's AP is at most thresholds.max_map_drop points below the reference's
 *   min_map   the reference's AP reaches thresholds.min_map
 *   finite    the cell's outputs hold no NaN or Inf
 * Each failure carries its reason in words, taken from compare's layerwise
 * diagnosis when there is one. */
#include <math.h>
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

/* The worst output tensor of a compare result. */
static void summarise_compare(cell_t *c)
{
    c->max_abs = c->max_rel_p99 = c->snr_db = -1;
    json_t *ts = json_object_get(c->compare, "tensors"), *t;
    size_t i;
    json_array_foreach(ts, i, t) {
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

int report_load(report_t *r, const char *plan_path, const char *cells, perr_t *e)
{
    memset(r, 0, sizeof *r);
    json_error_t je;
    r->plan = json_load_file(plan_path, 0, &je);
    if (!r->plan) return BAD(e, "%s:%d: %s", plan_path, je.line, je.text);
    r->model = json_string_value(json_object_get(r->plan, "model"));
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
        x->layerwise = load_json_opt(c, "layerwise", e, &rc);
        x->local = load_json_opt(c, "local", e, &rc);
        x->stats = load_json_opt(c, "stats", e, &rc);
        if (rc) return -1;
        x->ap = x->map ? num(json_object_get(x->map, "stats"), "AP", NULL) : -1;
        x->ap50 = x->map ? num(json_object_get(x->map, "stats"), "AP50", NULL) : -1;
        summarise_compare(x);
        json_t *s0 = json_array_get(json_object_get(x->stats, "samples"), 0);
        x->median_ms = s0 ? num(s0, "median_ms", NULL) : -1;
        note_kernels(r, x->stats);
    }
    return 0;
}

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

static check_t *add_check(report_t *r, const cell_t *c, const char *name, int passed)
{
    r->checks = xrealloc(r->checks, (r->n_checks + 1) * sizeof *r->checks);
    check_t *k = &r->checks[r->n_checks++];
    memset(k, 0, sizeof *k);
    snprintf(k->cell, sizeof k->cell, "%s", c->name);
    snprintf(k->name, sizeof k->name, "%s", name);
    k->passed = passed;
    if (!passed) r->failed++;
    return k;
}

/* compare's own diagnosis of the first diverging layer, and the layers
 * ranked by their own (local) error: what to pin to fp32 first. */
static void explain_divergence(const cell_t *c, char *out, size_t n)
{
    json_t *s = json_array_get(json_object_get(json_object_get(c->layerwise, "layerwise"), "samples"), 0);
    const char *diag = json_string_value(json_object_get(s, "diagnosis"));
    size_t k = strlen(out);
    if (diag) k += snprintf(out + k, n - k, " %s", diag);
    json_t *ls = json_array_get(json_object_get(json_object_get(c->local, "layerwise"), "samples"), 0);
    json_t *rank = json_object_get(ls, "ranking"), *row;
    size_t i;
    int shown = 0;
    json_array_foreach(rank, i, row) {
        if (shown == 5 || k >= n) break;
        const char *layer = json_string_value(json_object_get(row, "layer"));
        const char *st = json_string_value(json_object_get(row, "status"));
        if (!layer || !st || strcmp(st, "fail")) continue;
        k += snprintf(out + k, n - k, "%s%s", shown ? ", " : " Own error, worst first (pin to fp32 first): ", layer);
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
                if (!c->compare) snprintf(k->reason, sizeof k->reason, "%s: no compare result", c->precision);
                else if (!ok) {
                    snprintf(k->reason, sizeof k->reason, "%s: outputs differ from the reference beyond tolerance "
                             "(worst max |a-b| %.3g, p99 rel %.3g, SNR %.1f dB).", c->precision, c->max_abs, c->max_rel_p99, c->snr_db);
                    explain_divergence(c, k->reason, sizeof k->reason);
                }
            } else if (!strcmp(name, "map_drop")) {
                double drop = ref && ref->ap >= 0 && c->ap >= 0 ? 100 * (ref->ap - c->ap) : NAN;
                k = add_check(r, c, name, drop == drop && drop <= max_drop);
                if (!(drop == drop)) snprintf(k->reason, sizeof k->reason, "no mAP for this cell or the reference");
                else if (!k->passed)
                    snprintf(k->reason, sizeof k->reason, "%s/%s: AP %.1f is %.1f points below the reference %s (%.1f; allowed %.1f)%s",
                             c->variant, c->precision, 100 * c->ap, drop, ref->name, 100 * ref->ap, max_drop,
                             strcmp(c->variant, ref->variant) ? ": the preprocessing differs from the reference's" : "");
            } else if (!strcmp(name, "min_map")) {
                k = add_check(r, c, name, c->ap >= min_map);
                if (!k->passed) snprintf(k->reason, sizeof k->reason, "reference AP %.3f is below the required %.3f", c->ap, min_map);
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
}

void report_free(report_t *r)
{
    for (int i = 0; i < r->n_cells; i++) {
        cell_t *c = &r->cells[i];
        json_decref(c->compare); json_decref(c->map); json_decref(c->layerwise);
        json_decref(c->local); json_decref(c->stats);
    }
    free(r->cells);
    free(r->checks);
    json_decref(r->plan);
}
