/* report.c — the text summary and the JSON document of a comparison
 * (report.h). The text follows Polygraphy's vocabulary (PASSED/FAILED,
 * "minimum required tolerance", the error histogram) so its users read it
 * without a manual. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "compare/report.h"
#include "util/fsutil.h"

static const char *const status_names[] = {
    "pass", "fail", "missing", "extra", "shape_mismatch", "sample_missing", "sample_extra"
};

const char *status_name(res_status_t s) { return status_names[s]; }

const char *fmt_g(char *buf, size_t n, double v)
{
    if (isnan(v)) snprintf(buf, n, "nan");
    else if (isinf(v)) snprintf(buf, n, v > 0 ? "inf" : "-inf");
    else snprintf(buf, n, "%.5g", v);
    return buf;
}

void fmt_index(char *buf, size_t n, int64_t flat, int nd, const int64_t *dims)
{
    int64_t idx[TENSOR_MAX_DIMS];
    for (int i = nd - 1; i >= 0; i--) {
        idx[i] = dims[i] ? flat % dims[i] : 0;
        flat = dims[i] ? flat / dims[i] : 0;
    }
    size_t k = (size_t)snprintf(buf, n, "(");
    for (int i = 0; i < nd && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)idx[i]);
    if (k < n) snprintf(buf + k, n - k, ")");
}

static void shape_text(char *buf, size_t n, dtype_t dt, int nd, const int64_t *dims)
{
    char s[160];
    snprintf(buf, n, "%s[%s]", dtype_name(dt), shape_str(nd, dims, s, sizeof s));
}

/* ---- text ------------------------------------------------------------------ */

static void text_histogram(FILE *f, const cmp_stats_t *st)
{
    int64_t top = 0;
    for (int i = 0; i < CMP_HIST_BINS; i++) top = st->hist[i] > top ? st->hist[i] : top;
    if (!top) return;
    double step = (st->hist_hi - st->hist_lo) / CMP_HIST_BINS;
    fprintf(f, "        histogram of |a-b|:\n");
    for (int i = 0; i < CMP_HIST_BINS; i++) {
        char lo[32], hi[32], bar[41];
        double l = st->hist_lo + i * step, h = i + 1 == CMP_HIST_BINS ? st->hist_hi : st->hist_lo + (i + 1) * step;
        int w = (int)(40.0 * (double)st->hist[i] / (double)top);
        memset(bar, '#', (size_t)w);
        bar[w] = 0;
        fprintf(f, "          [%-10s, %-10s%c %10lld %s\n", fmt_g(lo, sizeof lo, l), fmt_g(hi, sizeof hi, h),
                i + 1 == CMP_HIST_BINS ? ']' : ')', (long long)st->hist[i], bar);
    }
    if (st->hist_nonfinite)
        fprintf(f, "          non-finite               %10lld\n", (long long)st->hist_nonfinite);
}

static void text_dist(FILE *f, const char *label, const cmp_dist_t *d, const cmp_result_t *r, int rel)
{
    char b[8][32], at[160];
    fmt_index(at, sizeof at, d->argmax, r->ndb, r->db);
    double av = rel ? r->st.a_at_relmax : r->st.a_at_absmax, bv = rel ? r->st.b_at_relmax : r->st.b_at_absmax;
    fprintf(f, "        %s: max %s at %s (a=%s, b=%s)  mean %s  median %s  p99 %s\n", label,
            fmt_g(b[0], 32, d->max), d->argmax >= 0 ? at : "-", fmt_g(b[1], 32, av), fmt_g(b[2], 32, bv),
            fmt_g(b[3], 32, d->mean), fmt_g(b[4], 32, d->median), fmt_g(b[5], 32, d->p99));
}

static void text_failure(FILE *f, const cmp_result_t *r)
{
    const cmp_stats_t *st = &r->st;
    char b[10][32], at[160];
    text_dist(f, "abs", &st->abs, r, 0);
    text_dist(f, "rel", &st->rel, r, 1);
    fprintf(f, "        cosine %s  SNR %s dB  mismatched %lld of %lld (%s%%)", fmt_g(b[0], 32, st->cosine),
            fmt_g(b[1], 32, st->snr_db), (long long)st->mismatches, (long long)st->n,
            fmt_g(b[2], 32, st->n ? 100.0 * (double)st->mismatches / (double)st->n : 0));
    if (st->first_mismatch >= 0) {
        fmt_index(at, sizeof at, st->first_mismatch, r->ndb, r->db);
        fprintf(f, ", first at %s", at);
    }
    fputc('\n', f);
    fprintf(f, "        A: NaN %lld, +inf %lld, -inf %lld   B: NaN %lld, +inf %lld, -inf %lld   |B| > 65504 (fp16 max): %lld\n",
            (long long)st->a.nan, (long long)st->a.posinf, (long long)st->a.neginf, (long long)st->b.nan,
            (long long)st->b.posinf, (long long)st->b.neginf, (long long)st->beyond_fp16);
    fprintf(f, "        minimum required tolerance (%s error): atol %s or rtol %s", cmp_stat_name(r->tol.stat),
            fmt_g(b[3], 32, cmp_stat_value(&st->abs, &r->tol)), fmt_g(b[4], 32, cmp_stat_value(&st->rel, &r->tol)));
    if (r->tol.stat == CMP_STAT_ELEMWISE || r->tol.rule == CMP_RULE_ALLCLOSE)
        fprintf(f, "; atol %s at rtol %s, rtol %s at atol %s", fmt_g(b[5], 32, st->atol_at_rtol),
                fmt_g(b[6], 32, r->tol.rtol), fmt_g(b[7], 32, st->rtol_at_atol), fmt_g(b[8], 32, r->tol.atol));
    fputc('\n', f);
    text_histogram(f, st);
}

static void text_result(FILE *f, const cmp_result_t *r)
{
    char sa[200], sb[200], b[6][32];
    if (r->unjudged) {   /* --judge / --ignore: shown, not counted */
        if (r->status == RES_PASS || r->status == RES_FAIL)
            fprintf(f, "  SKIP    %s  max abs %s  SNR %s dB: not judged (would %s)\n", r->name, fmt_g(b[0], 32, r->st.abs.max),
                    fmt_g(b[1], 32, r->st.snr_db), r->status == RES_PASS ? "pass" : "fail");
        else
            fprintf(f, "  SKIP    %s: not judged (%s)\n", r->name, status_name(r->status));
        return;
    }
    switch (r->status) {
    case RES_SAMPLE_MISSING: fprintf(f, "  MISSING sample in A\n"); return;
    case RES_SAMPLE_EXTRA: fprintf(f, "  EXTRA sample in A (not in the reference)\n"); return;
    case RES_MISSING:
        shape_text(sb, sizeof sb, r->dtb, r->ndb, r->db);
        fprintf(f, "  MISSING %s %s: in the reference only\n", r->name, sb);
        return;
    case RES_EXTRA:
        shape_text(sa, sizeof sa, r->dta, r->nda, r->da);
        fprintf(f, "  EXTRA   %s %s: not in the reference\n", r->name, sa);
        return;
    case RES_SHAPE:
        shape_text(sa, sizeof sa, r->dta, r->nda, r->da);
        shape_text(sb, sizeof sb, r->dtb, r->ndb, r->db);
        fprintf(f, "  SHAPE   %s: A %s, B %s\n", r->name, sa, sb);
        return;
    default: break;
    }
    shape_text(sb, sizeof sb, r->dtb, r->ndb, r->db);
    if (r->dta != r->dtb) {
        char t[64];
        snprintf(t, sizeof t, " (A %s)", dtype_name(r->dta));
        strncat(sb, t, sizeof sb - strlen(sb) - 1);
    }
    fprintf(f, "  %s    %s%s%s %s  max abs %s  max rel %s  cosine %s  SNR %s dB  [atol %s rtol %s]\n",
            r->status == RES_PASS ? "PASS" : "FAIL", r->name, r->name_a ? " ~ " : "", r->name_a ? r->name_a : "", sb,
            fmt_g(b[0], 32, r->st.abs.max), fmt_g(b[1], 32, r->st.rel.max), fmt_g(b[2], 32, r->st.cosine),
            fmt_g(b[3], 32, r->st.snr_db), fmt_g(b[4], 32, r->tol.atol), fmt_g(b[5], 32, r->tol.rtol));
    if (r->status == RES_FAIL) text_failure(f, r);
}

typedef struct counts {
    int64_t compared, passed, failed, missing, extra, shape, smissing, sextra, unjudged;
} counts_t;

static counts_t count(const cmp_report_t *rep)
{
    counts_t c = {0};
    for (int i = 0; i < rep->n; i++) {
        if (rep->r[i].unjudged) { c.unjudged++; continue; }
        switch (rep->r[i].status) {
        case RES_PASS: c.compared++; c.passed++; break;
        case RES_FAIL: c.compared++; c.failed++; break;
        case RES_MISSING: c.missing++; break;
        case RES_EXTRA: c.extra++; break;
        case RES_SHAPE: c.shape++; break;
        case RES_SAMPLE_MISSING: c.smissing++; break;
        case RES_SAMPLE_EXTRA: c.sextra++; break;
        }
    }
    return c;
}

void report_text(FILE *f, const cmp_report_t *rep)
{
    const cmp_tol_t *t = &rep->cfg->tol;
    char b[3][32];
    fprintf(f, "A: %s (%s)\nB: %s (%s, the reference)\n", rep->a->path, rep->a->format, rep->b->path, rep->b->format);
    fprintf(f, "rule %s, %s error, atol %s, rtol %s", cmp_rule_name(t->rule), cmp_stat_name(t->stat),
            fmt_g(b[0], 32, t->atol), fmt_g(b[1], 32, t->rtol));
    if (t->stat == CMP_STAT_QUANTILE) fprintf(f, ", quantile %s", fmt_g(b[2], 32, t->quantile));
    fprintf(f, "%s%s\n", t->nan_equal ? ", NaN == NaN" : "", t->inf_equal ? ", inf == inf" : "");
    for (int i = 0; i < rep->cfg->n_over; i++)
        fprintf(f, "  %s: atol %s, rtol %s\n", rep->cfg->over[i].pattern, fmt_g(b[0], 32, rep->cfg->over[i].atol),
                fmt_g(b[1], 32, rep->cfg->over[i].rtol));
    const char *last = NULL;
    for (int i = 0; i < rep->n; i++) {
        const cmp_result_t *r = &rep->r[i];
        if (r->sample[0] && (!last || strcmp(last, r->sample))) fprintf(f, "[sample %s]\n", r->sample);
        last = r->sample;
        text_result(f, r);
    }
    counts_t c = count(rep);
    fprintf(f, "%lld compared: %lld passed, %lld failed", (long long)c.compared, (long long)c.passed, (long long)c.failed);
    if (c.missing) fprintf(f, "; %lld missing in A", (long long)c.missing);
    if (c.extra) fprintf(f, "; %lld extra in A", (long long)c.extra);
    if (c.shape) fprintf(f, "; %lld shape mismatch%s", (long long)c.shape, c.shape > 1 ? "es" : "");
    if (c.smissing) fprintf(f, "; %lld sample%s missing in A", (long long)c.smissing, c.smissing > 1 ? "s" : "");
    if (c.sextra) fprintf(f, "; %lld extra sample%s in A", (long long)c.sextra, c.sextra > 1 ? "s" : "");
    if (c.unjudged) fprintf(f, "; %lld not judged", (long long)c.unjudged);
    if (!cmp_report_judged(rep))
        fprintf(f, "\nnot judged: every compared tensor is empty (0 elements)");
    fprintf(f, "\n%s\n", cmp_report_status(rep) == EXIT_PASS ? "PASSED" : "FAILED");
}

/* ---- JSON ------------------------------------------------------------------ */

json_t *json_num(double v)
{
    if (isnan(v)) return json_string("nan");
    if (isinf(v)) return json_string(v > 0 ? "inf" : "-inf");
    return json_real(v);
}

static json_t *json_index(int64_t flat, int nd, const int64_t *dims)
{
    if (flat < 0) return json_null();
    json_t *a = json_array();
    int64_t idx[TENSOR_MAX_DIMS];
    for (int i = nd - 1; i >= 0; i--) {
        idx[i] = dims[i] ? flat % dims[i] : 0;
        flat = dims[i] ? flat / dims[i] : 0;
    }
    for (int i = 0; i < nd; i++) json_array_append_new(a, json_integer(idx[i]));
    return a;
}

static json_t *json_shape(int nd, const int64_t *dims)
{
    json_t *a = json_array();
    for (int i = 0; i < nd; i++) json_array_append_new(a, json_integer(dims[i]));
    return a;
}

static json_t *json_side(dtype_t dt, int nd, const int64_t *dims, const cmp_values_t *v)
{
    json_t *o = json_object();
    json_object_set_new(o, "dtype", json_string(dtype_name(dt)));
    json_object_set_new(o, "shape", json_shape(nd, dims));
    if (v) {
        json_object_set_new(o, "nan", json_integer(v->nan));
        json_object_set_new(o, "posinf", json_integer(v->posinf));
        json_object_set_new(o, "neginf", json_integer(v->neginf));
        json_object_set_new(o, "min", json_num(v->min));
        json_object_set_new(o, "max", json_num(v->max));
        json_object_set_new(o, "mean", json_num(v->mean));
    }
    return o;
}

static json_t *json_dist(const cmp_dist_t *d, const cmp_result_t *r, double a_at, double b_at)
{
    json_t *o = json_object();
    json_object_set_new(o, "max", json_num(d->max));
    json_object_set_new(o, "argmax", json_index(d->argmax, r->ndb, r->db));
    json_object_set_new(o, "a_at_max", json_num(a_at));
    json_object_set_new(o, "b_at_max", json_num(b_at));
    json_object_set_new(o, "min", json_num(d->min));
    json_object_set_new(o, "mean", json_num(d->mean));
    json_object_set_new(o, "std", json_num(d->std));
    json_object_set_new(o, "median", json_num(d->median));
    json_object_set_new(o, "p90", json_num(d->p90));
    json_object_set_new(o, "p95", json_num(d->p95));
    json_object_set_new(o, "p99", json_num(d->p99));
    json_object_set_new(o, "quantile", json_num(d->q));
    json_object_set_new(o, "nan", json_integer(d->nan));
    json_object_set_new(o, "inf", json_integer(d->inf));
    return o;
}

static json_t *json_tol(const cmp_tol_t *t)
{
    json_t *o = json_object();
    json_object_set_new(o, "atol", json_num(t->atol));
    json_object_set_new(o, "rtol", json_num(t->rtol));
    json_object_set_new(o, "rule", json_string(cmp_rule_name(t->rule)));
    json_object_set_new(o, "check_error_stat", json_string(cmp_stat_name(t->stat)));
    json_object_set_new(o, "quantile", json_num(t->quantile));
    json_object_set_new(o, "nan_equal", json_boolean(t->nan_equal));
    json_object_set_new(o, "inf_equal", json_boolean(t->inf_equal));
    return o;
}

json_t *result_json(const cmp_result_t *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "sample", json_string(r->sample));
    json_object_set_new(o, "name", r->name ? json_string(r->name) : json_null());
    if (r->name_a) json_object_set_new(o, "name_in_a", json_string(r->name_a));
    json_object_set_new(o, "status", json_string(status_name(r->status)));
    if (r->unjudged) json_object_set_new(o, "judged", json_false());
    int stats = r->status == RES_PASS || r->status == RES_FAIL;
    if (r->status != RES_MISSING && r->status != RES_SAMPLE_MISSING && r->status != RES_SAMPLE_EXTRA)
        json_object_set_new(o, "a", json_side(r->dta, r->nda, r->da, stats ? &r->st.a : NULL));
    if (r->status != RES_EXTRA && r->status != RES_SAMPLE_MISSING && r->status != RES_SAMPLE_EXTRA)
        json_object_set_new(o, "b", json_side(r->dtb, r->ndb, r->db, stats ? &r->st.b : NULL));
    if (!stats) return o;
    const cmp_stats_t *st = &r->st;
    json_object_set_new(o, "tolerance", json_tol(&r->tol));
    json_object_set_new(o, "elements", json_integer(st->n));
    json_object_set_new(o, "compute_dtype", json_string(dtype_name(st->compute)));
    json_object_set_new(o, "abs", json_dist(&st->abs, r, st->a_at_absmax, st->b_at_absmax));
    json_object_set_new(o, "rel", json_dist(&st->rel, r, st->a_at_relmax, st->b_at_relmax));
    json_object_set_new(o, "cosine", json_num(st->cosine));
    json_object_set_new(o, "snr_db", json_num(st->snr_db));
    json_object_set_new(o, "finite_pairs", json_integer(st->finite_pairs));
    json_object_set_new(o, "mismatches", json_integer(st->mismatches));
    json_object_set_new(o, "first_mismatch", json_index(st->first_mismatch, r->ndb, r->db));
    json_object_set_new(o, "beyond_fp16", json_integer(st->beyond_fp16));
    json_t *h = json_object(), *edges = json_array(), *counts = json_array();
    double step = (st->hist_hi - st->hist_lo) / CMP_HIST_BINS;
    for (int i = 0; i <= CMP_HIST_BINS; i++)
        json_array_append_new(edges, json_num(i == CMP_HIST_BINS ? st->hist_hi : st->hist_lo + i * step));
    for (int i = 0; i < CMP_HIST_BINS; i++) json_array_append_new(counts, json_integer(st->hist[i]));
    json_object_set_new(h, "of", json_string("abs"));
    json_object_set_new(h, "edges", edges);
    json_object_set_new(h, "counts", counts);
    json_object_set_new(h, "nonfinite", json_integer(st->hist_nonfinite));
    json_object_set_new(o, "histogram", h);
    json_t *m = json_object();
    json_object_set_new(m, "atol", json_num(cmp_stat_value(&st->abs, &r->tol)));
    json_object_set_new(m, "rtol", json_num(cmp_stat_value(&st->rel, &r->tol)));
    json_object_set_new(m, "atol_at_rtol", json_num(st->atol_at_rtol));
    json_object_set_new(m, "rtol_at_atol", json_num(st->rtol_at_atol));
    json_object_set_new(o, "min_tolerance", m);
    return o;
}

json_t *report_json(const cmp_report_t *rep)
{
    json_t *o = json_object(), *sa = json_object(), *sb = json_object();
    json_object_set_new(sa, "path", json_string(rep->a->path));
    json_object_set_new(sa, "format", json_string(rep->a->format));
    json_object_set_new(sb, "path", json_string(rep->b->path));
    json_object_set_new(sb, "format", json_string(rep->b->format));
    json_object_set_new(o, "a", sa);
    json_object_set_new(o, "b", sb);
    json_object_set_new(o, "tolerance", json_tol(&rep->cfg->tol));
    json_t *over = json_array();
    for (int i = 0; i < rep->cfg->n_over; i++) {
        json_t *x = json_object();
        json_object_set_new(x, "name", json_string(rep->cfg->over[i].pattern));
        json_object_set_new(x, "atol", json_num(rep->cfg->over[i].atol));
        json_object_set_new(x, "rtol", json_num(rep->cfg->over[i].rtol));
        json_array_append_new(over, x);
    }
    json_object_set_new(o, "per_tensor", over);
    json_t *jg = json_array(), *ig = json_array();
    const name_sel_t *sel = &rep->cfg->sel;
    for (int i = 0; i < sel->n_judge; i++) json_array_append_new(jg, json_string(sel->judge[i]));
    for (int i = 0; i < sel->n_ignore; i++) json_array_append_new(ig, json_string(sel->ignore[i]));
    json_object_set_new(o, "judge", jg);
    json_object_set_new(o, "ignore", ig);
    counts_t c = count(rep);
    json_t *k = json_object();
    json_object_set_new(k, "compared", json_integer(c.compared));
    json_object_set_new(k, "passed", json_integer(c.passed));
    json_object_set_new(k, "failed", json_integer(c.failed));
    json_object_set_new(k, "missing", json_integer(c.missing));
    json_object_set_new(k, "extra", json_integer(c.extra));
    json_object_set_new(k, "shape_mismatch", json_integer(c.shape));
    json_object_set_new(k, "samples_missing", json_integer(c.smissing));
    json_object_set_new(k, "samples_extra", json_integer(c.sextra));
    json_object_set_new(k, "not_judged", json_integer(c.unjudged));
    json_object_set_new(o, "passed", json_boolean(cmp_report_status(rep) == EXIT_PASS));
    json_object_set_new(o, "judged", json_boolean(cmp_report_judged(rep)));
    if (!cmp_report_judged(rep)) json_object_set_new(o, "not_judged", json_string("every compared tensor is empty (0 elements)"));
    json_object_set_new(o, "counts", k);
    json_t *arr = json_array();
    for (int i = 0; i < rep->n; i++) json_array_append_new(arr, result_json(&rep->r[i]));
    json_object_set_new(o, "tensors", arr);
    return o;
}
