/* text.c — the machine and CI outputs: results.json, summary.md (a CI job
 * summary), junit.xml (one testcase per check), and the verdict line. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report.h"
#include "util/fsutil.h"
#include "util/jsonfile.h"

static json_t *num_or_null(double v) { return v < 0 ? json_null() : json_real(v); }

/* {"name": task, "metric": headline, "value", "delta", "unit", "metrics": {m: {value, delta, unit, better}}}. */
static json_t *task_json(const report_t *r, const cell_t *c)
{
    json_t *t = json_pack("{s:s, s:s?, s:o, s:o, s:s}", "name", r->task, "metric", r->task_metric,
                          "value", c->metric == c->metric ? json_real(c->metric) : json_null(),
                          "delta", c->dmetric == c->dmetric ? json_real(c->dmetric) : json_null(),
                          "unit", r->task_metric && strcmp(r->task_metric, "ap") ? metric_unit(r, r->task_metric) : "AP points");
    json_t *ms = json_object_get(c->task, "metrics");
    const cell_t *ref = NULL;
    for (int i = 0; i < r->n_cells; i++)
        if (r->cells[i].is_reference) ref = &r->cells[i];
    if (json_is_object(ms)) {
        json_t *all = json_object(), *m;
        const char *k;
        json_object_foreach(ms, k, m) {
            json_t *e = json_deep_copy(m), *v = json_object_get(m, "value");
            json_t *rv = ref ? json_object_get(json_object_get(json_object_get(ref->task, "metrics"), k), "value") : NULL;
            json_object_set_new(e, "delta", json_is_number(v) && json_is_number(rv)
                                                ? json_real(json_number_value(v) - json_number_value(rv)) : json_null());
            json_object_set_new(all, k, e);
        }
        json_object_set_new(t, "metrics", all);
    }
    return t;
}

int write_results_json(const report_t *r, const char *path, perr_t *e)
{
    json_t *root = json_object(), *cells = json_array(), *checks = json_array();
    json_object_set_new(root, "model", json_string(r->model));
    json_object_set_new(root, "verdict", json_string(r->failed ? "FAIL" : "PASS"));
    json_object_set_new(root, "verdict_line", json_string(r->verdict));
    json_object_set_new(root, "checks_total", json_integer(r->n_checks));
    if (r->reference_only) json_object_set_new(root, "reference_only", json_true());
    json_object_set_new(root, "checks_failed", json_integer(r->failed));
    json_object_set_new(root, "checks_not_judged", json_integer(r->n_unjudged));
    json_object_set_new(root, "expected_failures", json_integer(r->n_xfail));
    json_object_set_new(root, "unexpected_passes", json_integer(r->n_xpass));
    json_object_set_new(root, "reference", json_deep_copy(json_object_get(r->plan, "reference")));
    if (r->kernels[0]) json_object_set_new(root, "kernels", json_string(r->kernels));
    for (int i = 0; i < r->n_cells; i++) {
        const cell_t *c = &r->cells[i];
        /* a task cell's headline figures are its task's; element-wise statistics
         * (meaningless after TopK or NMS, e.g. 638 px on boxes that all match)
         * go under "elementwise" */
        json_t *ew = json_pack("{s:o, s:o, s:o}", "max_abs_error", num_or_null(c->max_abs), "p99_rel_error",
                               num_or_null(c->max_rel_p99), "snr_db", num_or_null(c->snr_db));
        json_t *x = json_pack("{s:s, s:s, s:s, s:b}", "name", c->name, "variant", c->variant, "precision", c->precision,
                              "is_reference", c->is_reference);
        if (r->task) {
            json_object_set_new(x, "task", task_json(r, c));
            json_object_set_new(x, "AP", num_or_null(c->ap));
            json_object_set_new(x, "AP50", num_or_null(c->ap50));
            json_object_set_new(x, "elementwise", ew);
        } else {
            json_object_set_new(x, "AP", num_or_null(c->ap));
            json_object_set_new(x, "AP50", num_or_null(c->ap50));
            json_object_update(x, ew);
            json_decref(ew);
        }
        json_object_set_new(x, "nonfinite_outputs", json_integer(c->nonfinite));
        json_object_set_new(x, "median_ms", num_or_null(c->median_ms));
        json_array_append_new(cells, x);
        json_object_set_new(x, "outcome", json_string(outcome_name(c->outcome)));
        json_object_set_new(x, "expected_failure", c->expected ? json_string(c->expected) : json_null());
        json_object_set_new(x, "delta_ap_points", c->dap == c->dap ? json_real(c->dap) : json_null());
        json_object_set_new(x, "detections", c->det ? json_deep_copy(c->det) : json_null());
        json_object_set_new(x, "failing_outputs", c->failing[0] ? json_string(c->failing) : json_null());
    }
    for (int i = 0; i < r->n_checks; i++)
        json_array_append_new(checks, json_pack("{s:s, s:s, s:b, s:b, s:b, s:s}", "cell", r->checks[i].cell, "check", r->checks[i].name,
                                                "passed", r->checks[i].passed, "judged", r->checks[i].judged,
                                                "expected", r->checks[i].expected, "reason", r->checks[i].reason));
    json_object_set_new(root, "cells", cells);
    json_object_set_new(root, "checks", checks);
    if (r->timing.runs) json_object_set_new(root, "timing", timing_json(&r->timing));
    int rc = write_json(path, root, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10), e);
    json_decref(root);
    return rc;
}

/* The time-by-stage table, as text (md 0) or a Markdown table (md 1): one
 * row per stage, longest first; CPU is user + system time, so CPU / wall
 * above 1 is a stage's own threads and below 1 waiting (disk, other load). */
static void timing_table(FILE *f, const timing_t *t, int md)
{
    const char *row = md ? "| %s | %d | %.1f | %.1f | %.1f %%%s |\n" : "  %-14s %5d %8.1f %8.1f %6.1f %%%s\n";
    fprintf(f, md ? "| stage | runs | wall s | CPU s | share of wall |\n|---|---:|---:|---:|---:|\n"
                  : "  %-14s %5s %8s %8s %8s\n", "stage", "runs", "wall s", "CPU s", "share");
    for (int i = 0; i < t->n; i++) {
        const timing_row_t *x = &t->rows[i];
        char failed[32] = "";
        if (x->failed) snprintf(failed, sizeof failed, " (%d failed)", x->failed);
        fprintf(f, row, x->stage, x->runs, x->wall, x->cpu, t->wall > 0 ? 100 * x->wall / t->wall : 0.0, failed);
    }
    fprintf(f, row, md ? "**all**" : "all", t->runs, t->wall, t->cpu, t->wall > 0 ? 100.0 : 0.0, "");
}

/* The sentence above the table: how long the run took, how busy it kept the CPUs. */
static void timing_line(FILE *f, const timing_t *t)
{
    fprintf(f, "%d stage runs in %.1f s from the first start to the last end; %.1f s of CPU (%.2f cores busy on average)",
            t->runs, t->elapsed, t->cpu, t->elapsed > 0 ? t->cpu / t->elapsed : 0.0);
}

void print_timing(FILE *f, const timing_t *t)
{
    if (!t->runs) { fprintf(f, "validate: time by stage: no stage ran\n"); return; }
    fprintf(f, "validate: time by stage: ");
    timing_line(f, t);
    fprintf(f, "\n");
    timing_table(f, t, 0);
}

static void fmt_pct(char *b, size_t n, double v) { if (v < 0) snprintf(b, n, "-"); else snprintf(b, n, "%.1f", 100 * v); }

/* The grid cell's text: the judged metric (AP points against the
 * reference, or the output check), with the outcome when it is not PASS. */
void grid_text(const cell_t *c, char *b, size_t n)
{
    size_t k = 0;
    if (c->mtext[0]) k = snprintf(b, n, "%s", c->mtext);
    else if (c->is_reference) k = snprintf(b, n, c->ap >= 0 ? "ref %.1f AP" : "reference", 100 * c->ap);
    else if (c->dap == c->dap) k = snprintf(b, n, "%s%.1f", c->dap < 0 ? "\u2212" : "+", fabs(c->dap));
    else if (c->compare) k = snprintf(b, n, "%s", json_is_true(json_object_get(c->compare, "passed")) ? "outputs ok" : "outputs differ");
    else k = snprintf(b, n, "-");
    if (k < n && c->outcome != OUT_PASS && !c->is_reference) snprintf(b + k, n - k, " %s", outcome_name(c->outcome));
}

int write_summary_md(const report_t *r, const char *path, perr_t *e)
{
    atomic_file_t af;
    if (atomic_open(&af, path, e)) return -1;
    FILE *f = af.f;
    fprintf(f, "## parity: %s — %s\n\n", r->model, r->verdict);
    if (r->kernels[0]) fprintf(f, "kernels: %s.\n\n", r->kernels);
    const char **vs, **ps;
    int nv, np;
    report_axes(r, &vs, &nv, &ps, &np);
    int have_map = 0;
    for (int i = 0; i < r->n_cells; i++) have_map |= r->cells[i].ap >= 0;
    fprintf(f, "%s%s against the reference cell `%s` (XFAIL: expected to fail; XPASS: expected to fail but passed).\n\n",
            r->task_metric && strcmp(r->task_metric, "ap") ? metric_label(r->task_metric) : have_map ? (r->ap_name ? r->ap_name : "AP") : "Output check",
            r->task_metric && strcmp(r->task_metric, "ap") ? "" : have_map ? " points" : "",
            json_string_value(json_object_get(r->plan, "reference")));
    fprintf(f, "| variant |");
    for (int b = 0; b < np; b++) fprintf(f, " %s |", ps[b]);
    fprintf(f, "\n|---|");
    for (int b = 0; b < np; b++) fprintf(f, "---:|");
    fprintf(f, "\n");
    for (int a = 0; a < nv; a++) {
        fprintf(f, "| %s |", vs[a]);
        for (int b = 0; b < np; b++) {
            const cell_t *c = report_cell(r, vs[a], ps[b]);
            char t[64] = "";
            if (c) grid_text(c, t, sizeof t);
            fprintf(f, " %s%s%s |", c && (c->outcome == OUT_FAIL || c->outcome == OUT_XPASS) ? "**" : "", t,
                    c && (c->outcome == OUT_FAIL || c->outcome == OUT_XPASS) ? "**" : "");
        }
        fprintf(f, "\n");
    }
    free(vs);
    free(ps);
    reason_group_t *g;
    int ng = report_reasons(r, &g);
    if (ng) {
        fprintf(f, "\n### Why\n\n");
        for (int i = 0; i < ng; i++) fprintf(f, "- %s\n", g[i].text);
    }
    free(g);
    fprintf(f, "\n<details><summary>Every cell</summary>\n\n");
    int task = r->task_metric && strcmp(r->task_metric, "ap");   /* the task metric in place of AP */
    if (task)
        fprintf(f, "| variant | precision | %s (%s) | change | detections matched / missed / extra | NaN/Inf | median ms |\n",
                metric_label(r->task_metric), metric_unit(r, r->task_metric));
    else
        fprintf(f, "| variant | precision | AP | AP50 | detections matched / missed / extra | NaN/Inf | median ms |\n");
    fprintf(f, "|---|---|---:|---:|---:|---:|---:|\n");
    for (int i = 0; i < r->n_cells; i++) {
        const cell_t *c = &r->cells[i];
        char ap[16], ap50[16], ms[16], dm[64] = "-";
        fmt_pct(ap, sizeof ap, c->ap); fmt_pct(ap50, sizeof ap50, c->ap50);
        if (task && c->metric == c->metric) {
            snprintf(ap, sizeof ap, "%.6g", c->metric);
            snprintf(ap50, sizeof ap50, "%+.4g", c->dmetric == c->dmetric ? c->dmetric : 0.0);
        }
        if (c->median_ms < 0) snprintf(ms, sizeof ms, "-"); else snprintf(ms, sizeof ms, "%.1f", c->median_ms);
        if (c->det) snprintf(dm, sizeof dm, "%lld / %lld / %lld", (long long)json_integer_value(json_object_get(c->det, "matched")),
                             (long long)json_integer_value(json_object_get(c->det, "missed")),
                             (long long)json_integer_value(json_object_get(c->det, "extra")));
        fprintf(f, "| %s | %s%s | %s | %s | %s | %d | %s |\n", c->variant, c->precision,
                c->is_reference ? " (reference)" : "", ap, ap50, dm, c->nonfinite, ms);
    }
    fprintf(f, "\n</details>\n");
    if (r->timing.runs) {
        fprintf(f, "\n### Time by stage\n\n");
        timing_line(f, &r->timing);
        fprintf(f, " (this report's own run not included).\n\n");
        timing_table(f, &r->timing, 1);
    }
    return atomic_commit(&af, e);
}

static void xml_escape(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&apos;", f); break;
        default: fputc(*s, f);
        }
    }
}

int write_junit(const report_t *r, const char *path, perr_t *e)
{
    atomic_file_t af;
    if (atomic_open(&af, path, e)) return -1;
    FILE *f = af.f;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n<testsuite name=\"parity.");
    xml_escape(f, r->model);
    int skipped = 0;
    for (int i = 0; i < r->n_checks; i++) skipped += !r->checks[i].passed && r->checks[i].expected;
    fprintf(f, "\" tests=\"%d\" failures=\"%d\" skipped=\"%d\">\n", r->n_checks ? r->n_checks : 1, r->failed, skipped);
    if (!r->n_checks) {   /* a run that judged nothing is one failing test, not an empty suite */
        fprintf(f, "  <testcase classname=\"");
        xml_escape(f, r->model);
        fprintf(f, "\" name=\"%s\">\n    <failure type=\"not-judged\" message=\"",
                r->reference_only ? "reference_only" : "nothing_judged");
        xml_escape(f, r->verdict);
        fprintf(f, "\"/>\n  </testcase>\n");
    }
    for (int i = 0; i < r->n_checks; i++) {
        const check_t *k = &r->checks[i];
        fprintf(f, "  <testcase classname=\"");
        xml_escape(f, r->model);
        fprintf(f, ".");
        xml_escape(f, k->cell);
        fprintf(f, "\" name=\"");
        xml_escape(f, k->name);
        if (k->passed) { fprintf(f, "\"/>\n"); continue; }
        if (k->expected) {
            /* as pytest writes an xfail: skipped, with the reason */
            const cell_t *c = NULL;
            for (int j = 0; j < r->n_cells; j++)
                if (!strcmp(r->cells[j].name, k->cell)) c = &r->cells[j];
            fprintf(f, "\">\n    <skipped type=\"pytest.xfail\" message=\"expected failure: ");
            xml_escape(f, c && c->expected && c->expected[0] ? c->expected : k->reason);
            fprintf(f, "\">");
            xml_escape(f, k->reason);
            fprintf(f, "</skipped>\n  </testcase>\n");
            continue;
        }
        fprintf(f, "\">\n    <failure%s message=\"", k->judged ? "" : " type=\"not-judged\"");
        xml_escape(f, k->reason);
        fprintf(f, "\"/>\n  </testcase>\n");
    }
    fprintf(f, "</testsuite>\n</testsuites>\n");
    return atomic_commit(&af, e);
}

/* A results.json as write_results_json writes it: the verdict agrees with
 * the counts, every check is an object naming its cell and check. NULL when
 * it is, else what is wrong. */
static const char *results_malformed(json_t *j)
{
    json_t *checks = json_object_get(j, "checks"), *k;
    const char *verdict = json_string_value(json_object_get(j, "verdict"));
    json_t *total = json_object_get(j, "checks_total"), *failed = json_object_get(j, "checks_failed");
    if (!json_is_object(j)) return "not a JSON object";
    if (!json_string_value(json_object_get(j, "model"))) return "no \"model\" string";
    if (!verdict || (strcmp(verdict, "PASS") && strcmp(verdict, "FAIL"))) return "\"verdict\" is not PASS or FAIL";
    if (!json_is_integer(total) || !json_is_integer(failed) || json_integer_value(total) < 0 || json_integer_value(failed) < 0)
        return "\"checks_total\" and \"checks_failed\" are not counts";
    if (!json_is_array(checks) || (json_int_t)json_array_size(checks) != json_integer_value(total))
        return "\"checks\" is not an array of checks_total checks";
    if (!json_is_array(json_object_get(j, "cells"))) return "\"cells\" is not an array";
    size_t i;
    json_array_foreach(checks, i, k)
        if (!json_string_value(json_object_get(k, "cell")) || !json_string_value(json_object_get(k, "check")) ||
            !json_is_boolean(json_object_get(k, "passed")))
            return "a check without its cell, check name or passed";
    int pass = !strcmp(verdict, "PASS");
    if (pass != (json_integer_value(failed) == 0 && json_integer_value(total) > 0))
        return "the verdict disagrees with checks_total and checks_failed";
    return NULL;
}

int print_verdict(const char *results_path)
{
    json_error_t je;
    json_t *j = json_load_file(results_path, 0, &je);
    if (!j) {
        fprintf(stderr, "report: %s:%d: %s\n", results_path, je.line, je.text);
        return 2;
    }
    const char *bad = results_malformed(j);
    if (bad) {
        fprintf(stderr, "report: %s: not a results.json: %s\n", results_path, bad);
        json_decref(j);
        return 2;
    }
    const char *model = json_string_value(json_object_get(j, "model"));
    const char *verdict = json_string_value(json_object_get(j, "verdict"));
    const char *line = json_string_value(json_object_get(j, "verdict_line"));
    long long total = json_integer_value(json_object_get(j, "checks_total"));
    long long failed = json_integer_value(json_object_get(j, "checks_failed"));
    int pass = !strcmp(verdict, "PASS");
    if (line) printf("validate: %s: %s\n", model, line);
    else printf("validate: %s: %s (%lld of %lld checks passed)\n", model, pass ? "PASS" : "FAIL", total - failed, total);
    json_t *checks = json_object_get(j, "checks"), *k;
    size_t i;
    json_array_foreach(checks, i, k)
        if (!json_is_true(json_object_get(k, "passed")) && !json_is_true(json_object_get(k, "expected"))) {
            const char *why = json_string_value(json_object_get(k, "reason"));
            printf("  %s %s: %s\n", json_string_value(json_object_get(k, "cell")),
                   json_string_value(json_object_get(k, "check")), why ? why : "");
        }
    json_decref(j);
    return pass ? 0 : 1;
}
