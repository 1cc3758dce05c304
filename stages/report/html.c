/* html.c — index.html: one self-contained page (no scripts, no external
 * files), the answer first: the verdict line, a variant x precision grid
 * coloured by the judged metric (AP points against the reference, or the
 * output check) with expected failures marked, one bullet per cause; then
 * the cells' numbers (detection-matched for detectors), AP per cell and PR
 * curves with a legend; then, collapsed, the details of each failing cell:
 * its per-layer SNR, its error histogram. Charts are inline SVG whose
 * labels are placed so they never overlap (tests/e2e/report_chromium.t
 * measures them). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report.h"
#include "util/fsutil.h"

#define W 720
#define PADL 60
#define PADR 20
#define PADT 14
#define PADB 40

static const char *const palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf"};

static void esc(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '<') fputs("&lt;", f);
        else if (*s == '>') fputs("&gt;", f);
        else if (*s == '&') fputs("&amp;", f);
        else if (*s == '"') fputs("&quot;", f);
        else fputc(*s, f);
    }
}

/* ---- axes ------------------------------------------------------------------------ */

typedef struct plot { int w, h; double x0, x1, y0, y1; int legend; } plot_t;   /* legend: room on the right */

static int padr(const plot_t *p) { return p->legend ? 200 : PADR; }

static double px(const plot_t *p, double x)
{
    double t = p->x1 > p->x0 ? (x - p->x0) / (p->x1 - p->x0) : 0;
    return PADL + fmin(fmax(t, 0), 1) * (p->w - PADL - padr(p));
}

static double py(const plot_t *p, double y)
{
    double t = p->y1 > p->y0 ? (y - p->y0) / (p->y1 - p->y0) : 0;
    return (p->h - PADB) - fmin(fmax(t, 0), 1) * (p->h - PADB - PADT);
}

static void svg_open(FILE *f, const char *id, const char *title, const plot_t *p)
{
    fprintf(f, "<figure><figcaption>");
    esc(f, title);
    fprintf(f, "</figcaption>\n<svg class=\"chart\" id=\"%s\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
               "xmlns=\"http://www.w3.org/2000/svg\" font-family=\"sans-serif\" font-size=\"11\">\n", id, p->w, p->h, p->w, p->h);
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>", PADL, p->h - PADB, p->w - padr(p), p->h - PADB);
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>\n", PADL, PADT, PADL, p->h - PADB);
}

static void svg_close(FILE *f) { fprintf(f, "</svg></figure>\n"); }

/* A step of 1, 2 or 5 x 10^k giving at most max ticks over [lo, hi]. */
static double nice_step(double lo, double hi, int max, int integer)
{
    double span = hi - lo, step = 1;
    if (!(span > 0)) return 1;
    double base = pow(10, floor(log10(span / max)));
    const double m[] = {1, 2, 5, 10};
    for (int i = 0; i < 4; i++) {
        step = base * m[i];
        if (span / step <= max) break;
    }
    return integer && step < 1 ? 1 : step;
}

/* Ticks on the y axis; log: the values are decades, labelled 10^k once each. */
static void y_ticks(FILE *f, const plot_t *p, int logscale, const char *unit)
{
    double step = nice_step(p->y0, p->y1, 5, logscale);
    for (double v = ceil(p->y0 / step) * step; v <= p->y1 + 1e-9; v += step) {
        double y = py(p, v);
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#eee\"/>", PADL, y, p->w - padr(p), y);
        fprintf(f, "<text class=\"tick\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">", PADL - 4, y + 4);
        if (logscale) fprintf(f, "10<tspan dy=\"-4\" font-size=\"8\">%.0f</tspan>", v);
        else fprintf(f, "%g%s", fabs(v) < 1e-12 ? 0 : v, unit);
        fprintf(f, "</text>");
    }
    fprintf(f, "\n");
}

static void x_ticks(FILE *f, const plot_t *p, const char *unit)
{
    double step = nice_step(p->x0, p->x1, 8, 0);
    for (double v = ceil(p->x0 / step) * step; v <= p->x1 + 1e-9; v += step)
        fprintf(f, "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g%s</text>", px(p, v), p->h - PADB + 14,
                fabs(v) < 1e-12 ? 0 : v, unit);
    fprintf(f, "\n");
}

static void axis_title(FILE *f, const plot_t *p, const char *text)
{
    fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" fill=\"#555\">", (PADL + p->w - padr(p)) / 2.0, p->h - 6);
    esc(f, text);
    fprintf(f, "</text>\n");
}

/* A legend to the right of the plot, one row per series. */
static void legend(FILE *f, const plot_t *p, int i, const char *name, const char *colour, int dashed)
{
    double y = PADT + 6 + 15 * i, x = p->w - padr(p) + 12;
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"%s/>", x, y, x + 18, y, colour,
            dashed ? " stroke-dasharray=\"4 3\"" : "");
    fprintf(f, "<text class=\"legend\" x=\"%.1f\" y=\"%.1f\">", x + 22, y + 4);
    esc(f, name);
    fprintf(f, "</text>\n");
}

/* ---- the answer ------------------------------------------------------------------ */

static const char *grid_class(const cell_t *c, double max_drop)
{
    if (c->is_reference) return "ref";
    switch (c->outcome) {
    case OUT_XFAIL: return "xfail";
    case OUT_XPASS: return "xpass";
    case OUT_FAIL: return "fail";
    default: break;
    }
    /* passing: a lighter green where the loss comes near the allowance */
    return c->dap == c->dap && max_drop > 0 && -c->dap > max_drop / 2 ? "near" : "pass";
}

static void write_grid(FILE *f, const report_t *r)
{
    const char **vs, **ps;
    int nv, np, have_map = 0;
    report_axes(r, &vs, &nv, &ps, &np);
    for (int i = 0; i < r->n_cells; i++) have_map |= r->cells[i].ap >= 0;
    json_t *th = json_object_get(r->plan, "thresholds");
    double max_drop = json_is_number(json_object_get(th, "max_map_drop")) ? json_number_value(json_object_get(th, "max_map_drop")) : -1;
    json_t *allow = r->task_metric ? json_object_get(json_object_get(th, "max_metric_drop"), r->task_metric) : NULL;
    if (r->task_metric && strcmp(r->task_metric, "ap")) {
        fprintf(f, "<table id=\"grid\"><caption>%s against the reference", metric_label(r->task_metric));
        if (json_is_number(allow))
            fprintf(f, " (a cell may lose %g%s%s)", json_number_value(allow), *metric_unit(r, r->task_metric) ? " " : "",
                    metric_unit(r, r->task_metric));
    } else
        fprintf(f, "<table id=\"grid\"><caption>%s%s", have_map ? (r->ap_name ? r->ap_name : "AP") : "Outputs",
                have_map ? " points against the reference" : " against the reference");
    if (have_map && max_drop >= 0) fprintf(f, " (a cell may lose %.1f)", max_drop);
    fprintf(f, "</caption>\n<tr><th>variant \\ precision</th>");
    for (int b = 0; b < np; b++) { fprintf(f, "<th>"); esc(f, ps[b]); fprintf(f, "</th>"); }
    fprintf(f, "</tr>\n");
    for (int a = 0; a < nv; a++) {
        fprintf(f, "<tr><th>");
        esc(f, vs[a]);
        fprintf(f, "</th>");
        for (int b = 0; b < np; b++) {
            const cell_t *c = report_cell(r, vs[a], ps[b]);
            if (!c) { fprintf(f, "<td class=\"none\">not run</td>"); continue; }
            char t[64];
            grid_text(c, t, sizeof t);
            fprintf(f, "<td class=\"%s\" title=\"", grid_class(c, max_drop));
            esc(f, c->name);
            if (c->expected) { fprintf(f, ": expected to fail: "); esc(f, c->expected); }
            fprintf(f, "\">");
            esc(f, t);
            if (c->det) {
                long long miss = json_integer_value(json_object_get(c->det, "missed")), extra = json_integer_value(json_object_get(c->det, "extra"));
                fprintf(f, "<br><small>%lld missed, %lld extra</small>", miss, extra);
            }
            fprintf(f, "</td>");
        }
        fprintf(f, "</tr>\n");
    }
    fprintf(f, "</table>\n<p class=\"legend\"><span class=\"pass\">pass</span> <span class=\"near\">pass, near the limit</span> "
               "<span class=\"fail\">FAIL</span> <span class=\"xfail\">XFAIL: expected to fail, fails</span> "
               "<span class=\"xpass\">XPASS: expected to fail, passes</span> <span class=\"ref\">reference</span></p>\n");
    free(vs);
    free(ps);
}

static void write_reasons(FILE *f, const report_t *r)
{
    reason_group_t *g;
    int n = report_reasons(r, &g);
    if (n) {
        fprintf(f, "<ul id=\"reasons\">\n");
        for (int i = 0; i < n; i++) {
            fprintf(f, "<li class=\"%s\">", g[i].expected ? "xfail" : "fail");
            esc(f, g[i].text);
            fprintf(f, "</li>\n");
        }
        fprintf(f, "</ul>\n");
    }
    free(g);
}

/* ---- every cell's numbers -------------------------------------------------------- */

static double jnum(json_t *o, const char *a, const char *b)
{
    json_t *x = json_object_get(o, a);
    if (b) x = json_object_get(x, b);
    return json_is_number(x) ? json_number_value(x) : NAN;
}

static void write_cells_table(FILE *f, const report_t *r)
{
    int det = 0;
    for (int i = 0; i < r->n_cells; i++) det |= r->cells[i].det != NULL;
    int task = r->task_metric && strcmp(r->task_metric, "ap");   /* the task metric in place of AP */
    if (task)
        fprintf(f, "<table id=\"cells\"><tr><th>variant</th><th>precision</th><th>outcome</th><th>%s (%s)</th><th>change</th>",
                metric_label(r->task_metric), metric_unit(r, r->task_metric));
    else
        fprintf(f, "<table id=\"cells\"><tr><th>variant</th><th>precision</th><th>outcome</th><th>AP</th><th>AP50</th>");
    if (det)
        fprintf(f, "<th>matched</th><th>missed</th><th>extra</th><th>label flips</th><th>IoU p1</th>"
                   "<th>score drift p99</th><th>box drift p99 (px)</th>");
    else
        fprintf(f, "<th>max |a-b|</th><th>p99 rel</th><th>SNR dB</th>");
    int pre = 0;
    for (int i = 0; i < r->n_cells; i++) pre |= r->cells[i].pre_snr == r->cells[i].pre_snr;
    if (pre) fprintf(f, "<th>before TopK: SNR dB</th>");
    fprintf(f, "<th>NaN/Inf</th><th>median ms</th></tr>\n");
    for (int i = 0; i < r->n_cells; i++) {
        const cell_t *c = &r->cells[i];
        fprintf(f, "<tr><td>");
        esc(f, c->variant);
        fprintf(f, "</td><td>");
        esc(f, c->precision);
        fprintf(f, "</td><td class=\"%s\">%s</td>", c->is_reference ? "ref" : grid_class(c, -1),
                c->is_reference ? "reference" : outcome_name(c->outcome));
        if (task && c->metric == c->metric)
            fprintf(f, "<td>%.6g</td><td>%+.4g</td>", c->metric, c->dmetric == c->dmetric ? c->dmetric : 0.0);
        else if (c->ap >= 0) fprintf(f, "<td>%.1f</td><td>%.1f</td>", 100 * c->ap, 100 * c->ap50);
        else fprintf(f, "<td>-</td><td>-</td>");
        if (det) {
            if (c->det)
                fprintf(f, "<td>%lld</td><td>%lld</td><td>%lld</td><td>%lld</td><td>%.4f</td><td>%.2g</td><td>%.2g</td>",
                        (long long)json_integer_value(json_object_get(c->det, "matched")),
                        (long long)json_integer_value(json_object_get(c->det, "missed")),
                        (long long)json_integer_value(json_object_get(c->det, "extra")),
                        (long long)json_integer_value(json_object_get(c->det, "label_flips")),
                        jnum(c->det, "iou", "p1"), jnum(c->det, "score_drift", "p99"), jnum(c->det, "box_drift", "p99"));
            else
                fprintf(f, "<td colspan=\"7\">-</td>");
        } else if (c->max_abs >= 0) {
            fprintf(f, "<td>%.3g</td><td>%.3g</td><td>%.1f</td>", c->max_abs, c->max_rel_p99, c->snr_db);
        } else {
            fprintf(f, "<td>-</td><td>-</td><td>-</td>");
        }
        if (pre && c->pre_snr == c->pre_snr) fprintf(f, isinf(c->pre_snr) ? "<td>identical</td>" : "<td>%.1f</td>", c->pre_snr);
        else if (pre) fprintf(f, "<td>-</td>");
        fprintf(f, "<td>%d</td>", c->nonfinite);
        if (c->median_ms >= 0) fprintf(f, "<td>%.1f</td></tr>\n", c->median_ms); else fprintf(f, "<td>-</td></tr>\n");
    }
    fprintf(f, "</table>\n");
    if (pre)
        fprintf(f, "<p class=\"note\">Before TopK: the tensors the config names as the model's outputs before "
                   "postprocessing (compare.pre_postprocess), element-wise in query order, from the layerwise run of the "
                   "cell's first sample.</p>\n");
    if (det)
        fprintf(f, "<p class=\"note\">Detections are matched to the reference cell's per class, greedily by score, at "
                   "IoU &ge; the threshold; missed and extra count those above the score floor; drifts are over matched "
                   "pairs. Outputs after TopK are ordered by score, so their element-wise differences compare different "
                   "objects; they stay in each cell's compare.json.</p>\n");
}

/* AP per cell: horizontal bars, one row each, labels left of the axis (they cannot overprint). */
static void chart_ap(FILE *f, const report_t *r)
{
    int n = 0;
    for (int i = 0; i < r->n_cells; i++) n += r->cells[i].ap >= 0;
    if (!n) return;
    const int row = 16, left = 210;
    plot_t p = {W, PADT + PADB + row * n, 0, 100, 0, 1, 0};
    fprintf(f, "<figure><figcaption>COCO AP per cell (the reference cell's as a line)</figcaption>\n"
               "<svg class=\"chart\" id=\"ap\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" xmlns=\"http://www.w3.org/2000/svg\" "
               "font-family=\"sans-serif\" font-size=\"11\">\n", p.w, p.h, p.w, p.h);
    double x0 = left, x1 = p.w - PADR;
    int k = 0;
    double ref = -1;
    for (int i = 0; i < r->n_cells; i++)
        if (r->cells[i].is_reference) ref = r->cells[i].ap;
    for (int v = 0; v <= 100; v += 10) {
        double x = x0 + (x1 - x0) * v / 100;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#eee\"/>"
                   "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%d</text>",
                x, PADT, x, p.h - PADB, x, p.h - PADB + 14, v);
    }
    for (int i = 0; i < r->n_cells; i++) {
        const cell_t *c = &r->cells[i];
        if (c->ap < 0) continue;
        double y = PADT + k++ * row;
        const char *col = c->outcome == OUT_XFAIL ? "#bbb" : c->outcome == OUT_PASS ? "#2ca02c" : "#d62728";
        fprintf(f, "<text class=\"label\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", x0 - 6, y + row - 4);
        esc(f, c->name);
        fprintf(f, "</text><rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\"><title>", x0, y + 2,
                (x1 - x0) * c->ap, row - 4, c->is_reference ? "#1f77b4" : col);
        esc(f, c->name);
        fprintf(f, ": AP %.1f</title></rect>\n", 100 * c->ap);
    }
    if (ref >= 0) {
        double x = x0 + (x1 - x0) * ref;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#1f77b4\" stroke-dasharray=\"3 2\"/>\n", x, PADT, x, p.h - PADB);
    }
    fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" fill=\"#555\">AP (%%)</text>\n", (x0 + x1) / 2, p.h - 6);
    svg_close(f);
}

/* PR curves at IoU 0.5: one per variant at the reference precision (the
 * precisions' curves lie on top of each other), with a legend. */
static void chart_pr(FILE *f, const report_t *r)
{
    const char *refp = NULL;
    for (int i = 0; i < r->n_cells; i++)
        if (r->cells[i].is_reference) refp = r->cells[i].precision;
    int any = 0;
    for (int i = 0; i < r->n_cells; i++) any |= r->cells[i].map != NULL;
    if (!any || !refp) return;
    plot_t p = {W, 300, 0, 1, 0, 1, 1};
    svg_open(f, "pr", "Precision-recall at IoU 0.50 (mean over categories), one curve per variant at the reference precision", &p);
    y_ticks(f, &p, 0, "");
    x_ticks(f, &p, "");
    axis_title(f, &p, "recall");
    int k = 0;
    for (int i = 0; i < r->n_cells; i++) {
        const cell_t *c = &r->cells[i];
        if (strcmp(c->precision, refp)) continue;
        json_t *pr = json_object_get(c->map, "pr_curves");
        json_t *rec = json_object_get(pr, "recall"), *prec = json_object_get(pr, "precision_iou50");
        size_t n = json_array_size(prec);
        if (!n) continue;
        const char *col = palette[k % 8];
        fprintf(f, "<polyline class=\"series\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\"%s points=\"", col,
                k >= 8 ? " stroke-dasharray=\"4 3\"" : "");
        for (size_t j = 0; j < n; j++) {
            double x = json_number_value(json_array_get(rec, j)), y = json_number_value(json_array_get(prec, j));
            fprintf(f, "%.1f,%.1f ", px(&p, x), py(&p, y < 0 ? 0 : y));
        }
        fprintf(f, "\"><title>");
        esc(f, c->name);
        fprintf(f, "</title></polyline>\n");
        legend(f, &p, k, c->variant, col, k >= 8);
        k++;
    }
    svg_close(f);
}

/* ---- a failing cell's details ---------------------------------------------------- */

static json_t *first_sample(json_t *doc)
{
    return json_array_get(json_object_get(json_object_get(doc, "layerwise"), "samples"), 0);
}

/* SNR (dB) of each layer's output along the execution order: scale-free,
 * so one threshold line means the same for every tensor. Own error dashed. */
static void chart_layers(FILE *f, const report_t *r, const cell_t *c, int idx)
{
    json_t *rows = json_object_get(first_sample(c->layerwise), "rows");
    json_t *lrows = json_object_get(first_sample(c->local), "rows");
    size_t n = json_array_size(rows);
    if (!n) return;
    double thr = jnum(json_object_get(r->plan, "tolerances"), "layer_snr_db", NULL);
    char id[64], title[512];
    snprintf(id, sizeof id, "layers-%d", idx);
    snprintf(title, sizeof title, "%s: SNR against the reference per layer output, in execution order (higher is closer)", c->name);
    plot_t p = {W, 280, 0, (double)(n > 1 ? n - 1 : 1), 0, 140, 1};
    svg_open(f, id, title, &p);
    y_ticks(f, &p, 0, " dB");
    x_ticks(f, &p, "");
    axis_title(f, &p, "layer output (index in execution order; grey: after a TopK, order-dependent)");
    for (int pass = 0; pass < 2; pass++) {
        json_t *rs = pass ? lrows : rows;
        size_t m = json_array_size(rs);
        if (!m) continue;
        fprintf(f, "<polyline class=\"series\" fill=\"none\" stroke=\"%s\" %s points=\"", pass ? "#ff7f0e" : "#1f77b4",
                pass ? "stroke-dasharray=\"4 3\"" : "stroke-width=\"1.5\"");
        for (size_t i = 0; i < m; i++) {
            json_t *row = json_array_get(rs, i);
            json_t *sv = json_object_get(row, "snr_db");
            double v = json_is_number(sv) ? json_number_value(sv) : 140;   /* identical: null (infinite) */
            const char *st = json_string_value(json_object_get(row, "status"));
            if (st && !strcmp(st, "nonfinite")) v = 0;
            fprintf(f, "%.1f,%.1f ", px(&p, (double)i * (n > 1 ? n - 1 : 1) / (m > 1 ? m - 1 : 1)), py(&p, v));
        }
        fprintf(f, "\"/>\n");
    }
    for (size_t i = 0; i < n; i++)
        if (json_is_true(json_object_get(json_array_get(rows, i), "order_dependent"))) {
            fprintf(f, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"#999\" opacity=\"0.15\"/>\n", px(&p, (double)i),
                    PADT, px(&p, (double)(n - 1)) - px(&p, (double)i), p.h - PADB - PADT);
            break;
        }
    legend(f, &p, 0, "through the run", "#1f77b4", 0);
    if (json_array_size(lrows)) legend(f, &p, 1, "own error (reference inputs)", "#ff7f0e", 1);
    if (thr == thr) {
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#d62728\" stroke-dasharray=\"6 3\"/>", PADL, py(&p, thr),
                p.w - padr(&p), py(&p, thr));
        legend(f, &p, 2, "threshold", "#d62728", 1);
    }
    /* a cell whose outputs pass has no first failure, whatever a layer's absolute difference */
    json_t *ff = c->outcome == OUT_PASS ? NULL : json_object_get(first_sample(c->layerwise), "first_failure");
    if (json_is_object(ff)) {
        double x = px(&p, jnum(ff, "row", NULL));
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#d62728\" stroke-dasharray=\"2 2\"/>"
                   "<text class=\"marker\" x=\"%.1f\" y=\"%d\" fill=\"#d62728\" text-anchor=\"%s\">first failure: ",
                x, PADT, x, p.h - PADB, x < p.w / 2 ? x + 3 : x - 3, p.h - PADB - 6, x < p.w / 2 ? "start" : "end");
        esc(f, json_string_value(json_object_get(ff, "tensor")));
        fprintf(f, "</text>\n");
    }
    svg_close(f);
}

/* |a-b| of the cell's worst output tensor: counts per bin, log scale in decades. */
static void chart_histogram(FILE *f, const cell_t *c, int idx)
{
    json_t *ts = json_object_get(c->compare, "tensors"), *t = NULL, *x;
    size_t i;
    double worst = -1;
    json_array_foreach(ts, i, x)   /* of the judged outputs */
        if (!json_is_false(json_object_get(x, "judged")) && jnum(x, "abs", "max") > worst) { worst = jnum(x, "abs", "max"); t = x; }
    json_t *counts = json_object_get(json_object_get(t, "histogram"), "counts");
    json_t *edges = json_object_get(json_object_get(t, "histogram"), "edges");
    size_t n = json_array_size(counts);
    if (!n) return;
    double mx = 1;
    for (i = 0; i < n; i++) mx = fmax(mx, json_number_value(json_array_get(counts, i)));
    char id[64], title[512];
    snprintf(id, sizeof id, "hist-%d", idx);
    snprintf(title, sizeof title, "%s: histogram of |a-b| for %s, element-wise (count, log scale)", c->name,
             json_string_value(json_object_get(t, "name")) ? json_string_value(json_object_get(t, "name")) : "?");
    plot_t p = {W, 240, 0, (double)n, 0, ceil(log10(mx)), 0};
    if (p.y1 < 1) p.y1 = 1;
    svg_open(f, id, title, &p);
    y_ticks(f, &p, 1, "");
    double bw = (px(&p, 1) - px(&p, 0));
    for (i = 0; i < n; i++) {
        double cnt = json_number_value(json_array_get(counts, i));
        double y = cnt > 0 ? py(&p, log10(cnt) + 0.02 * p.y1) : p.h - PADB;
        fprintf(f, "<rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#9467bd\"><title>%.0f</title></rect>",
                px(&p, (double)i) + 1, y, bw * 0.9, (p.h - PADB) - y, cnt);
    }
    /* bin edges: as many as fit without touching (about 60 px each) */
    int every = (int)ceil(60.0 / (bw > 0 ? bw : 1));
    for (i = 0; i <= n; i += every)
        fprintf(f, "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%.2g</text>", px(&p, (double)i), p.h - PADB + 14,
                json_number_value(json_array_get(edges, i)));
    fprintf(f, "\n");
    axis_title(f, &p, "|a-b|");
    svg_close(f);
}

static int cell_failed(const cell_t *c) { return c->outcome != OUT_PASS; }

static void write_details(FILE *f, const report_t *r)
{
    int any = 0;
    for (int i = 0; i < r->n_cells; i++) any |= cell_failed(&r->cells[i]) || r->cells[i].layerwise;
    if (!any) return;
    const char *match = json_string_value(json_object_get(json_object_get(r->plan, "tolerances"), "match"));
    int by_detection = match && !strcmp(match, "detections");
    fprintf(f, "<h2>Details</h2>\n");
    for (int i = 0; i < r->n_cells; i++) {
        const cell_t *c = &r->cells[i];
        if (!cell_failed(c) && !c->layerwise) continue;
        fprintf(f, "<details class=\"cell\"><summary><b>");
        esc(f, c->name);
        fprintf(f, "</b> %s", c->is_reference ? "reference" : outcome_name(c->outcome));
        json_t *ff = json_object_get(first_sample(c->layerwise), "first_failure");
        if (!c->is_reference && c->outcome != OUT_PASS && c->failing[0]) {
            fprintf(f, " — failing output%s: <code>", c->n_failing > 1 ? "s" : "");
            esc(f, c->failing);
            fprintf(f, "</code>");
        }
        if (c->is_reference || c->outcome == OUT_PASS) fprintf(f, " — outputs pass");
        else if (json_is_object(ff)) { fprintf(f, " — first diverging layer output: <code>"); esc(f, json_string_value(json_object_get(ff, "tensor"))); fprintf(f, "</code>"); }
        else if (c->layerwise) fprintf(f, " — no layer below the threshold");
        fprintf(f, "</summary>\n");
        for (int k = 0; k < r->n_checks; k++)
            if (!strcmp(r->checks[k].cell, c->name) && !r->checks[k].passed) {
                fprintf(f, "<p><code>%s</code>: ", r->checks[k].name);
                esc(f, r->checks[k].reason);
                fprintf(f, "</p>\n");
            }
        if (cell_failed(c) && !c->is_reference) { fprintf(f, "<p>Smallest failing subgraph: <code>make reduce MODEL="); esc(f, r->model);
            fprintf(f, " CELL="); esc(f, c->name); fprintf(f, "</code> (docs/reduce.md)</p>\n"); }
        const char *diag = json_string_value(json_object_get(first_sample(c->layerwise), "diagnosis"));
        if (diag && *diag && c->outcome != OUT_PASS) { fprintf(f, "<p>Layerwise: "); esc(f, diag); fprintf(f, "</p>\n"); }
        if (c->layerwise) chart_layers(f, r, c, i);
        /* element-wise histograms only where elements are the measure (not TopK-ordered detections) */
        if (c->compare && cell_failed(c) && !by_detection) chart_histogram(f, c, i);
        if (c->det) {
            fprintf(f, "<p>Detections against the reference: %lld matched, %lld missed, %lld extra, %lld label flips above "
                       "score %g; IoU min %.4f, p1 %.4f; box drift p99 %.3g px; score drift p99 %.3g.</p>\n",
                    (long long)json_integer_value(json_object_get(c->det, "matched")),
                    (long long)json_integer_value(json_object_get(c->det, "missed")),
                    (long long)json_integer_value(json_object_get(c->det, "extra")),
                    (long long)json_integer_value(json_object_get(c->det, "label_flips")), jnum(c->det, "score_floor", NULL),
                    jnum(c->det, "iou", "min"), jnum(c->det, "iou", "p1"), jnum(c->det, "box_drift", "p99"),
                    jnum(c->det, "score_drift", "p99"));
        }
        fprintf(f, "</details>\n");
    }
}

/* The run's time by stage (report --timing), longest first; this report's own run is not in it yet. */
static void write_timing(FILE *f, const report_t *r)
{
    const timing_t *t = &r->timing;
    if (!t->runs) return;
    fprintf(f, "<h2>Time by stage</h2>\n<table id=\"timing\"><caption>%d stage runs in %.1f s from the first start to the last "
               "end; %.1f s of CPU (%.2f cores busy on average); this report not included</caption>\n"
               "<tr><th>stage</th><th>runs</th><th>wall s</th><th>CPU s</th><th>share of wall</th></tr>\n",
            t->runs, t->elapsed, t->cpu, t->elapsed > 0 ? t->cpu / t->elapsed : 0.0);
    for (int i = 0; i < t->n; i++) {
        fprintf(f, "<tr><td>");
        esc(f, t->rows[i].stage);
        fprintf(f, "</td><td>%d</td><td>%.1f</td><td>%.1f</td><td>%.1f %%</td></tr>\n", t->rows[i].runs, t->rows[i].wall,
                t->rows[i].cpu, t->wall > 0 ? 100 * t->rows[i].wall / t->wall : 0.0);
    }
    fprintf(f, "</table>\n");
}

int write_html(const report_t *r, const char *path, perr_t *e)
{
    atomic_file_t af;
    if (atomic_open(&af, path, e)) return -1;
    FILE *f = af.f;
    fprintf(f, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>parity: ");
    esc(f, r->model);
    fprintf(f, "</title>\n<style>body{font-family:sans-serif;margin:1.5em;max-width:1100px}table{border-collapse:collapse;margin:.5em 0}"
               "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}td:first-child,td:nth-child(2){text-align:left}"
               "#grid td{text-align:center;min-width:6em}#grid th{text-align:left}caption{text-align:left;color:#555;padding:.2em 0}"
               ".pass{background:#c7e9c0}.near{background:#e5f5b0}.fail{background:#f4a6a6;font-weight:bold}"
               ".xfail{background:#e6e6e6;color:#555}.xpass{background:#f4a6a6;font-weight:bold;outline:2px solid #d62728}"
               ".ref{background:#c6dbef}.none{color:#999}p.legend span{padding:1px 6px;margin-right:.3em}"
               "#verdict.PASS{color:#1a7f1a}#verdict.FAIL{color:#c62828}#reasons li.xfail{background:none;color:#555}"
               "#reasons li.fail{background:none;color:#c62828}figure{margin:1em 0}li{margin:.3em 0}.note{color:#555;font-size:90%%}"
               "details.cell{margin:.4em 0;border:1px solid #ddd;padding:.3em .6em}summary{cursor:pointer}"
               "#cells{font-size:85%%}#cells td{white-space:nowrap}</style></head><body>\n");
    fprintf(f, "<h1>parity: ");
    esc(f, r->model);
    fprintf(f, "</h1>\n<p id=\"verdict\" class=\"%s\"><b>", r->failed ? "FAIL" : "PASS");
    esc(f, r->verdict);
    fprintf(f, "</b></p>\n<p>Reference cell <code>");
    esc(f, json_string_value(json_object_get(r->plan, "reference")));
    fprintf(f, "</code>; model <code>");
    esc(f, json_string_value(json_object_get(r->plan, "onnx")));
    fprintf(f, "</code>; %d checks, %d unexpected failure%s, %d expected-failure cell%s, %d unexpected pass%s.</p>\n", r->n_checks,
            r->failed, r->failed == 1 ? "" : "s", r->n_xfail, r->n_xfail == 1 ? "" : "s", r->n_xpass, r->n_xpass == 1 ? "" : "es");
    if (r->kernels[0]) {
        fprintf(f, "<p class=\"note\">Kernels: <code>");
        esc(f, r->kernels);
        fprintf(f, "</code>.</p>\n");
    }
    write_grid(f, r);
    write_reasons(f, r);
    fprintf(f, "<h2>Cells</h2>\n");
    write_cells_table(f, r);
    chart_ap(f, r);
    chart_pr(f, r);
    write_details(f, r);
    write_timing(f, r);
    fprintf(f, "</body></html>\n");
    return atomic_commit(&af, e);
}
