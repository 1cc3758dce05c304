/* text.c — the machine and CI outputs: results.json, summary.md (a CI job
 * summary), junit.xml (one testcase per check), and the verdict line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report.h"
#include "util/fsutil.h"

static json_t *num_or_null(double v) { return v < 0 ? json_null() : json_real(v); }

int write_results_json(const report_t *r, const char *path, perr_t *e)
{
    json_t *root = json_object(), *cells = json_array(), *checks = json_array();
    json_object_set_new(root, "model", json_string(r->model));
    json_object_set_new(root, "verdict", json_string(r->failed ? "FAIL" : "PASS"));
    json_object_set_new(root, "checks_total", json_integer(r->n_checks));
    json_object_set_new(root, "checks_failed", json_integer(r->failed));
    json_object_set_new(root, "reference", json_deep_copy(json_object_get(r->plan, "reference")));
    if (r->kernels[0]) json_object_set_new(root, "kernels", json_string(r->kernels));
    for (int i = 0; i < r->n_cells; i++) {
        const cell_t *c = &r->cells[i];
        json_array_append_new(cells, json_pack("{s:s, s:s, s:s, s:b, s:o, s:o, s:o, s:o, s:o, s:i, s:o}",
            "name", c->name, "variant", c->variant, "precision", c->precision, "is_reference", c->is_reference,
            "AP", num_or_null(c->ap), "AP50", num_or_null(c->ap50), "max_abs_error", num_or_null(c->max_abs),
            "p99_rel_error", num_or_null(c->max_rel_p99), "snr_db", num_or_null(c->snr_db), "nonfinite_outputs", c->nonfinite,
            "median_ms", num_or_null(c->median_ms)));
    }
    for (int i = 0; i < r->n_checks; i++)
        json_array_append_new(checks, json_pack("{s:s, s:s, s:b, s:s}", "cell", r->checks[i].cell, "check", r->checks[i].name,
                                                "passed", r->checks[i].passed, "reason", r->checks[i].reason));
    json_object_set_new(root, "cells", cells);
    json_object_set_new(root, "checks", checks);
    char *text = json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    json_decref(root);
    int rc = atomic_write(path, text, strlen(text), e);
    free(text);
    return rc;
}

static void fmt_pct(char *b, size_t n, double v) { if (v < 0) snprintf(b, n, "-"); else snprintf(b, n, "%.1f", 100 * v); }
static void fmt_g(char *b, size_t n, double v) { if (v < 0) snprintf(b, n, "-"); else snprintf(b, n, "%.3g", v); }

int write_summary_md(const report_t *r, const char *path, perr_t *e)
{
    atomic_file_t af;
    if (atomic_open(&af, path, e)) return -1;
    FILE *f = af.f;
    fprintf(f, "## parity: %s — %s\n\n", r->model, r->failed ? "FAIL" : "PASS");
    fprintf(f, "%d of %d checks passed; reference cell `%s`.\n\n", r->n_checks - r->failed, r->n_checks,
            json_string_value(json_object_get(r->plan, "reference")));
    if (r->kernels[0]) fprintf(f, "kernels: %s.\n\n", r->kernels);
    fprintf(f, "| variant | precision | AP | AP50 | max abs err | p99 rel err | SNR dB | NaN/Inf | median ms |\n");
    fprintf(f, "|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int i = 0; i < r->n_cells; i++) {
        const cell_t *c = &r->cells[i];
        char ap[16], ap50[16], ma[16], mr[16], sn[16], ms[16];
        fmt_pct(ap, sizeof ap, c->ap); fmt_pct(ap50, sizeof ap50, c->ap50);
        fmt_g(ma, sizeof ma, c->max_abs); fmt_g(mr, sizeof mr, c->max_rel_p99);
        if (c->snr_db < 0) snprintf(sn, sizeof sn, "-"); else snprintf(sn, sizeof sn, "%.1f", c->snr_db);
        if (c->median_ms < 0) snprintf(ms, sizeof ms, "-"); else snprintf(ms, sizeof ms, "%.1f", c->median_ms);
        fprintf(f, "| %s | %s%s | %s | %s | %s | %s | %s | %d | %s |\n", c->variant, c->precision,
                c->is_reference ? " (reference)" : "", ap, ap50, ma, mr, sn, c->nonfinite, ms);
    }
    if (r->failed) {
        fprintf(f, "\n### Failing checks\n\n");
        for (int i = 0; i < r->n_checks; i++)
            if (!r->checks[i].passed) fprintf(f, "- **%s** `%s`: %s\n", r->checks[i].cell, r->checks[i].name, r->checks[i].reason);
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
    fprintf(f, "\" tests=\"%d\" failures=\"%d\">\n", r->n_checks, r->failed);
    for (int i = 0; i < r->n_checks; i++) {
        const check_t *k = &r->checks[i];
        fprintf(f, "  <testcase classname=\"");
        xml_escape(f, r->model);
        fprintf(f, ".");
        xml_escape(f, k->cell);
        fprintf(f, "\" name=\"");
        xml_escape(f, k->name);
        if (k->passed) { fprintf(f, "\"/>\n"); continue; }
        fprintf(f, "\">\n    <failure message=\"");
        xml_escape(f, k->reason);
        fprintf(f, "\"/>\n  </testcase>\n");
    }
    fprintf(f, "</testsuite>\n</testsuites>\n");
    return atomic_commit(&af, e);
}

int print_verdict(const char *results_path)
{
    json_error_t je;
    json_t *j = json_load_file(results_path, 0, &je);
    if (!j) {
        fprintf(stderr, "report: %s:%d: %s\n", results_path, je.line, je.text);
        return 2;
    }
    const char *model = json_string_value(json_object_get(j, "model"));
    const char *verdict = json_string_value(json_object_get(j, "verdict"));
    long long total = json_integer_value(json_object_get(j, "checks_total"));
    long long failed = json_integer_value(json_object_get(j, "checks_failed"));
    int pass = verdict && !strcmp(verdict, "PASS");
    printf("validate: %s: %s (%lld of %lld checks passed)\n", model ? model : "?", pass ? "PASS" : "FAIL", total - failed, total);
    json_t *checks = json_object_get(j, "checks"), *k;
    size_t i;
    json_array_foreach(checks, i, k)
        if (!json_is_true(json_object_get(k, "passed")))
            printf("  %s %s: %s\n", json_string_value(json_object_get(k, "cell")),
                   json_string_value(json_object_get(k, "check")), json_string_value(json_object_get(k, "reason")));
    json_decref(j);
    return pass ? 0 : 1;
}
