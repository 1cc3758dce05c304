/* lwreport.c — the layerwise table (text) and its JSON: one row per
 * compared tensor in execution order, so the error can be watched growing
 * from layer to layer, then the findings and the diagnosis. */
#include <string.h>
#include "compare/layerwise.h"
#include "compare/report.h"

static const char *row_op(const lw_result_t *r, const lw_row_t *row)
{
    return row->layer >= 0 ? r->L->l[row->layer].op : "input";
}

static const char *row_prec(const lw_result_t *r, const lw_row_t *row)
{
    const char *p = row->layer >= 0 ? r->L->l[row->layer].prec : "";
    return p[0] ? p : "-";
}

static const char *row_status(const lw_row_t *row)
{
    switch (row->res.status) {
    case RES_PASS: return "PASS";
    case RES_FAIL: return "FAIL";
    case RES_SHAPE: return "SHAPE";
    case RES_MISSING: return "NODUMP";
    default: return "?";
    }
}

static void text_row(FILE *f, const lw_result_t *r, const lw_row_t *row)
{
    char idx[16], b[5][32];
    if (row->layer >= 0) snprintf(idx, sizeof idx, "%d", r->L->l[row->layer].index);
    else snprintf(idx, sizeof idx, "in");
    const cmp_stats_t *st = &row->res.st;
    int cmpd = row->res.status == RES_PASS || row->res.status == RES_FAIL;
    fprintf(f, "%5s %-18.18s %-9s %-6s %10s %10s %10s %9s %8s  %s\n", idx, row_op(r, row), row_prec(r, row),
            row_status(row), cmpd ? fmt_g(b[0], 32, st->abs.max) : "-", cmpd ? fmt_g(b[1], 32, st->abs.mean) : "-",
            cmpd ? fmt_g(b[2], 32, st->rel.max) : "-", cmpd ? fmt_g(b[3], 32, st->cosine) : "-",
            cmpd ? fmt_g(b[4], 32, st->snr_db) : "-", row->res.name);
}

static void text_finding(FILE *f, const char *what, const lw_result_t *r, const lw_sample_t *s, int row)
{
    if (row < 0) return;
    const lw_row_t *x = &s->rows[row];
    fprintf(f, "%s: %s (%s)", what, x->res.name, row_op(r, x));
    if (x->layer >= 0) fprintf(f, " in layer %s, %s", r->L->l[x->layer].name, row_prec(r, x));
    fputc('\n', f);
}

void lw_text(FILE *f, const lw_result_t *r, const cmp_report_t *hdr)
{
    fprintf(f, "A: %s (%s)\nB: %s (%s, the reference)\n", hdr->a->path, hdr->a->format, hdr->b->path, hdr->b->format);
    fprintf(f, "layers: %s (%d layers%s%s%s%s)%s\n", r->L->path, r->L->n, r->L->source[0] ? ", from " : "",
            r->L->source, r->L->precision[0] ? ", " : "", r->L->precision,
            r->local ? "; local mode: A ran each layer on the reference's inputs" : "");
    char b[2][32];
    const cmp_tol_t *t = &hdr->cfg->tol;
    fprintf(f, "rule %s, %s error, atol %s, rtol %s\n", cmp_rule_name(t->rule), cmp_stat_name(t->stat),
            fmt_g(b[0], 32, t->atol), fmt_g(b[1], 32, t->rtol));
    for (int i = 0; i < r->n; i++) {
        const lw_sample_t *s = &r->s[i];
        if (s->sample[0]) fprintf(f, "[sample %s]\n", s->sample);
        fprintf(f, "%5s %-18s %-9s %-6s %10s %10s %10s %9s %8s  %s\n", "#", "op", "prec", "status", "max|a-b|",
                "mean|a-b|", "max rel", "cosine", "SNR dB", "tensor");
        for (int k = 0; k < s->n; k++) text_row(f, r, &s->rows[k]);
        if (s->n_unlisted) fprintf(f, "(%d dumped tensors are not in the layer report)\n", s->n_unlisted);
        text_finding(f, "first failing", r, s, s->first_fail);
        if (s->worst >= 0 && s->worst != s->first_fail) {
            char what[64];
            snprintf(what, sizeof what, "worst failing (%s)", s->severity);
            text_finding(f, what, r, s, s->worst);
        }
        text_finding(f, "first non-finite", r, s, s->first_nonfinite);
        text_finding(f, "reference first non-finite", r, s, s->ref_nonfinite);
        if (r->local && s->n_rank) {
            fprintf(f, "layers by their own error, worst first:\n");
            for (int k = 0; k < s->n_rank && k < 20; k++) {
                const lw_row_t *x = &s->rows[s->rank[k]];
                fprintf(f, "  %2d. %-6s SNR %8s dB  max|a-b| %10s  %s (%s, %s)\n", k + 1, row_status(x),
                        fmt_g(b[0], 32, x->res.st.snr_db), fmt_g(b[1], 32, x->res.st.abs.max),
                        r->L->l[x->layer].name, row_op(r, x), row_prec(r, x));
            }
        }
        if (s->cause[0]) fprintf(f, "cause: %s\n", s->cause);
        if (s->evidence[0]) fprintf(f, "evidence: %s\n", s->evidence);
        if (s->fix[0]) fprintf(f, "fix: %s\n", s->fix);
        fprintf(f, "diagnosis: %s\n", s->diagnosis);
    }
    fprintf(f, "%s\n", lw_status(r) == EXIT_PASS ? "PASSED" : "FAILED");
}

static json_t *finding_json(const lw_result_t *r, const lw_sample_t *s, int row)
{
    if (row < 0) return json_null();
    const lw_row_t *x = &s->rows[row];
    json_t *o = json_object();
    json_object_set_new(o, "row", json_integer(row));
    json_object_set_new(o, "tensor", json_string(x->res.name));
    json_object_set_new(o, "op", json_string(row_op(r, x)));
    json_object_set_new(o, "layer", x->layer >= 0 ? json_string(r->L->l[x->layer].name) : json_null());
    json_object_set_new(o, "layer_index", x->layer >= 0 ? json_integer(r->L->l[x->layer].index) : json_null());
    json_object_set_new(o, "precision", json_string(row_prec(r, x)));
    return o;
}

json_t *lw_json(const lw_result_t *r)
{
    json_t *o = json_object(), *samples = json_array();
    json_object_set_new(o, "layers", json_string(r->L->path));
    json_object_set_new(o, "local", json_boolean(r->local));
    json_object_set_new(o, "passed", json_boolean(lw_status(r) == EXIT_PASS));
    for (int i = 0; i < r->n; i++) {
        const lw_sample_t *s = &r->s[i];
        json_t *js = json_object(), *rows = json_array();
        json_object_set_new(js, "sample", json_string(s->sample));
        json_object_set_new(js, "first_failure", finding_json(r, s, s->first_fail));
        json_object_set_new(js, "first_nonfinite", finding_json(r, s, s->first_nonfinite));
        json_object_set_new(js, "reference_nonfinite", finding_json(r, s, s->ref_nonfinite));
        json_object_set_new(js, "diagnosis", json_string(s->diagnosis));
        json_t *worst = finding_json(r, s, s->worst);
        if (s->worst >= 0) {
            json_object_set_new(worst, "severity", json_string(s->severity));
            json_object_set_new(worst, "snr_drop_db", json_num(s->snr_drop));
        }
        json_object_set_new(js, "worst_failure", worst);
        json_object_set_new(js, "worst_output", finding_json(r, s, s->worst_output));
        json_object_set_new(js, "worst_shown_only_output", finding_json(r, s, s->worst_shown));
        json_object_set_new(js, "cause", json_string(s->cause));
        json_object_set_new(js, "evidence", json_string(s->evidence));
        json_object_set_new(js, "fix", json_string(s->fix));
        json_object_set_new(js, "unlisted_tensors", json_integer(s->n_unlisted));
        for (int k = 0; k < s->n; k++) {
            const lw_row_t *x = &s->rows[k];
            json_t *row = finding_json(r, s, k), *res = result_json(&x->res);
            json_object_update(row, res);
            if (x->ordered) json_object_set_new(row, "order_dependent", json_true());
            if (x->shown_only) json_object_set_new(row, "shown_only", json_true());
            json_decref(res);
            json_array_append_new(rows, row);
        }
        json_object_set_new(js, "rows", rows);
        if (r->local) {
            json_t *rank = json_array();
            for (int k = 0; k < s->n_rank; k++) {
                const lw_row_t *x = &s->rows[s->rank[k]];
                json_t *y = finding_json(r, s, s->rank[k]);
                json_object_set_new(y, "status", json_string(status_name(x->res.status)));
                json_object_set_new(y, "snr_db", json_num(x->res.st.snr_db));
                json_object_set_new(y, "max_abs", json_num(x->res.st.abs.max));
                json_object_set_new(y, "new_nonfinite", json_integer(x->res.st.a.nan + x->res.st.a.posinf + x->res.st.a.neginf -
                                                                      x->res.st.b.nan - x->res.st.b.posinf - x->res.st.b.neginf));
                json_array_append_new(rank, y);
            }
            json_object_set_new(js, "ranking", rank);
        }
        json_array_append_new(samples, js);
    }
    json_object_set_new(o, "samples", samples);
    return o;
}
