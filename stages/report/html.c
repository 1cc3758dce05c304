/* html.c — index.html: one self-contained page (no scripts, no external
 * files) with inline SVG charts: mAP (or worst error) per variant x
 * precision, the error growing layer by layer for each precision cell,
 * error histograms, and PR curves. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "report.h"
#include "util/fsutil.h"

#define W 640
#define H 260
#define PADL 56
#define PADB 36

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

static void svg_open(FILE *f, const char *id, const char *title)
{
    fprintf(f, "<figure><figcaption>");
    esc(f, title);
    fprintf(f, "</figcaption>\n<svg class=\"chart\" id=\"%s\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
               "xmlns=\"http://www.w3.org/2000/svg\" font-family=\"sans-serif\" font-size=\"11\">\n", id, W, H, W, H);
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>", PADL, H - PADB, W - 10, H - PADB);
    fprintf(f, "<line x1=\"%d\" y1=\"10\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>\n", PADL, PADL, H - PADB);
}

static void svg_close(FILE *f) { fprintf(f, "</svg></figure>\n"); }

static double ypix(double v, double lo, double hi)
{
    if (hi <= lo) hi = lo + 1;
    if (v < lo) v = lo;
    if (v > hi) v = hi;
    return (H - PADB) - (v - lo) / (hi - lo) * (H - PADB - 10);
}

static void y_axis(FILE *f, double lo, double hi, int logscale)
{
    for (int i = 0; i <= 4; i++) {
        double v = lo + (hi - lo) * i / 4;
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">", PADL - 4, ypix(v, lo, hi) + 4);
        if (logscale) fprintf(f, "1e%.0f", v); else fprintf(f, "%.3g", v);
        fprintf(f, "</text>");
    }
    fprintf(f, "\n");
}

/* Bars of one value per cell, grouped by variant (AP, or log10 worst error). */
static void chart_cells(FILE *f, const report_t *r)
{
    int have_map = 0;
    for (int i = 0; i < r->n_cells; i++) have_map |= r->cells[i].ap >= 0;
    double lo = 0, hi = 1;
    if (!have_map) { lo = -8; hi = 1; }
    svg_open(f, "cells", have_map ? "COCO AP per variant x precision" : "Worst max |a-b| against the reference per cell (log10)");
    y_axis(f, have_map ? 0 : lo, have_map ? 100 : hi, !have_map);
    double bw = (double)(W - PADL - 20) / (r->n_cells ? r->n_cells : 1);
    for (int i = 0; i < r->n_cells; i++) {
        const cell_t *c = &r->cells[i];
        double v = have_map ? c->ap : (c->max_abs > 0 ? log10(c->max_abs) : (c->is_reference ? lo : lo));
        if (have_map && v < 0) continue;
        double y = ypix(have_map ? 100 * v : v, have_map ? 0 : lo, have_map ? 100 : hi);
        double x = PADL + 4 + i * bw;
        fprintf(f, "<rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>",
                x, y, bw * 0.8, (H - PADB) - y + 0.5, palette[i % 8]);
        esc(f, c->name);
        fprintf(f, ": %.4g</title></rect>", have_map ? 100 * v : v);
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" font-size=\"9\">", x + bw * 0.4, H - PADB + 12);
        esc(f, c->precision);
        fprintf(f, "</text><text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" font-size=\"9\">", x + bw * 0.4, H - PADB + 24);
        esc(f, c->variant);
        fprintf(f, "</text>\n");
    }
    svg_close(f);
}

/* log10 of max |a-b| along the execution order, own error dashed. */
static void chart_layers(FILE *f, const cell_t *c, int idx)
{
    json_t *rows = json_object_get(json_array_get(json_object_get(json_object_get(c->layerwise, "layerwise"), "samples"), 0), "rows");
    json_t *lrows = json_object_get(json_array_get(json_object_get(json_object_get(c->local, "layerwise"), "samples"), 0), "rows");
    size_t n = json_array_size(rows);
    if (!n) return;
    char id[64], title[512];
    snprintf(id, sizeof id, "layers-%d", idx);
    snprintf(title, sizeof title, "%s: max |a-b| per layer along the execution order (log10; dashed: own error with reference inputs)", c->name);
    svg_open(f, id, title);
    double lo = -9, hi = 3;
    y_axis(f, lo, hi, 1);
    for (int pass = 0; pass < 2; pass++) {
        json_t *rs = pass ? lrows : rows;
        size_t m = json_array_size(rs);
        if (!m) continue;
        fprintf(f, "<polyline class=\"series\" fill=\"none\" stroke=\"%s\" %s points=\"", pass ? "#ff7f0e" : "#1f77b4",
                pass ? "stroke-dasharray=\"4 3\"" : "stroke-width=\"1.5\"");
        for (size_t i = 0; i < m; i++) {
            json_t *row = json_array_get(rs, i);
            double a = json_number_value(json_object_get(json_object_get(row, "abs"), "max"));
            const char *st = json_string_value(json_object_get(row, "status"));
            double v = a > 0 ? log10(a) : lo;
            if (!isfinite(a) || (st && !strcmp(st, "nonfinite"))) v = hi;
            fprintf(f, "%.1f,%.1f ", PADL + 2 + (double)i / (n > 1 ? n - 1 : 1) * (W - PADL - 20), ypix(v, lo, hi));
        }
        fprintf(f, "\"/>\n");
    }
    json_t *ff = json_object_get(json_array_get(json_object_get(json_object_get(c->layerwise, "layerwise"), "samples"), 0), "first_failure");
    if (json_is_object(ff)) {
        double i = json_number_value(json_object_get(ff, "row"));
        double x = PADL + 2 + i / (n > 1 ? n - 1 : 1) * (W - PADL - 20);
        fprintf(f, "<line x1=\"%.1f\" y1=\"10\" x2=\"%.1f\" y2=\"%d\" stroke=\"#d62728\" stroke-dasharray=\"2 2\"/>"
                   "<text x=\"%.1f\" y=\"20\" fill=\"#d62728\">first failure: ", x, x, H - PADB, x + 3);
        esc(f, json_string_value(json_object_get(ff, "tensor")));
        fprintf(f, "</text>\n");
    }
    svg_close(f);
}

static void chart_histogram(FILE *f, const cell_t *c, int idx)
{
    json_t *t = json_array_get(json_object_get(c->compare, "tensors"), 0);
    json_t *counts = json_object_get(json_object_get(t, "histogram"), "counts");
    json_t *edges = json_object_get(json_object_get(t, "histogram"), "edges");
    size_t n = json_array_size(counts);
    if (!n) return;
    double mx = 1;
    for (size_t i = 0; i < n; i++) mx = fmax(mx, json_number_value(json_array_get(counts, i)));
    char id[64], title[512];
    snprintf(id, sizeof id, "hist-%d", idx);
    snprintf(title, sizeof title, "%s: histogram of |a-b| for %s (log10 count)", c->name,
             json_string_value(json_object_get(t, "name")) ? json_string_value(json_object_get(t, "name")) : "?");
    svg_open(f, id, title);
    double hi = log10(mx) + 0.1;
    y_axis(f, 0, hi, 1);
    double bw = (double)(W - PADL - 20) / n;
    for (size_t i = 0; i < n; i++) {
        double cnt = json_number_value(json_array_get(counts, i));
        double y = ypix(cnt > 0 ? log10(cnt) + 0.05 : 0, 0, hi);
        fprintf(f, "<rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#9467bd\"><title>%.0f</title></rect>",
                PADL + 2 + i * bw, y, bw * 0.9, (H - PADB) - y, cnt);
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" font-size=\"8\" text-anchor=\"middle\">%.2g</text>\n", PADL + 2 + (i + 0.5) * bw,
                H - PADB + 12, json_number_value(json_array_get(edges, i + 1)));
    }
    svg_close(f);
}

static void chart_pr(FILE *f, const report_t *r)
{
    int any = 0;
    for (int i = 0; i < r->n_cells; i++) any |= r->cells[i].map != NULL;
    if (!any) return;
    svg_open(f, "pr", "Precision-recall at IoU 0.50 (mean over categories, area all, 100 detections)");
    y_axis(f, 0, 1, 0);
    for (int i = 0; i < r->n_cells; i++) {
        json_t *pr = json_object_get(r->cells[i].map, "pr_curves");
        json_t *rec = json_object_get(pr, "recall"), *prec = json_object_get(pr, "precision_iou50");
        size_t n = json_array_size(prec);
        if (!n) continue;
        fprintf(f, "<polyline class=\"series\" fill=\"none\" stroke=\"%s\" points=\"", palette[i % 8]);
        for (size_t k = 0; k < n; k++) {
            double x = json_number_value(json_array_get(rec, k)), y = json_number_value(json_array_get(prec, k));
            fprintf(f, "%.1f,%.1f ", PADL + x * (W - PADL - 20), ypix(y < 0 ? 0 : y, 0, 1));
        }
        fprintf(f, "\"><title>");
        esc(f, r->cells[i].name);
        fprintf(f, "</title></polyline>\n");
    }
    svg_close(f);
}

int write_html(const report_t *r, const char *path, perr_t *e)
{
    atomic_file_t af;
    if (atomic_open(&af, path, e)) return -1;
    FILE *f = af.f;
    fprintf(f, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>parity: ");
    esc(f, r->model);
    fprintf(f, "</title>\n<style>body{font-family:sans-serif;margin:2em;max-width:1100px}table{border-collapse:collapse}"
               "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}td:first-child,td:nth-child(2){text-align:left}"
               ".PASS{color:#2ca02c}.FAIL{color:#d62728}figure{margin:1em 0}li{margin:.3em 0}</style></head><body>\n");
    fprintf(f, "<h1>parity: ");
    esc(f, r->model);
    fprintf(f, " — <span class=\"%s\">%s</span></h1>\n", r->failed ? "FAIL" : "PASS", r->failed ? "FAIL" : "PASS");
    fprintf(f, "<p>%d of %d checks passed. Reference cell: <code>", r->n_checks - r->failed, r->n_checks);
    esc(f, json_string_value(json_object_get(r->plan, "reference")));
    fprintf(f, "</code>. Model: <code>");
    esc(f, json_string_value(json_object_get(r->plan, "onnx")));
    fprintf(f, "</code>.");
    if (r->kernels[0]) {
        fprintf(f, " Kernels: <code>");
        esc(f, r->kernels);
        fprintf(f, "</code>.");
    }
    fprintf(f, "</p>\n");
    if (r->failed) {
        fprintf(f, "<h2>Why it fails</h2><ul>\n");
        for (int i = 0; i < r->n_checks; i++) {
            if (r->checks[i].passed) continue;
            fprintf(f, "<li><b>");
            esc(f, r->checks[i].cell);
            fprintf(f, "</b> <code>%s</code>: ", r->checks[i].name);
            esc(f, r->checks[i].reason);
            fprintf(f, "</li>\n");
        }
        fprintf(f, "</ul>\n");
    }
    fprintf(f, "<h2>Cells</h2><table><tr><th>variant</th><th>precision</th><th>AP</th><th>AP50</th><th>max |a-b|</th>"
               "<th>p99 rel</th><th>SNR dB</th><th>NaN/Inf</th><th>median ms</th></tr>\n");
    for (int i = 0; i < r->n_cells; i++) {
        const cell_t *c = &r->cells[i];
        fprintf(f, "<tr><td>");
        esc(f, c->variant);
        fprintf(f, "</td><td>");
        esc(f, c->precision);
        fprintf(f, "%s</td>", c->is_reference ? " (reference)" : "");
        if (c->ap >= 0) fprintf(f, "<td>%.1f</td><td>%.1f</td>", 100 * c->ap, 100 * c->ap50); else fprintf(f, "<td>-</td><td>-</td>");
        if (c->max_abs >= 0) fprintf(f, "<td>%.3g</td><td>%.3g</td><td>%.1f</td>", c->max_abs, c->max_rel_p99, c->snr_db);
        else fprintf(f, "<td>-</td><td>-</td><td>-</td>");
        fprintf(f, "<td>%d</td>", c->nonfinite);
        if (c->median_ms >= 0) fprintf(f, "<td>%.1f</td></tr>\n", c->median_ms); else fprintf(f, "<td>-</td></tr>\n");
    }
    fprintf(f, "</table>\n<h2>Charts</h2>\n");
    chart_cells(f, r);
    chart_pr(f, r);
    for (int i = 0; i < r->n_cells; i++)
        if (r->cells[i].layerwise) chart_layers(f, &r->cells[i], i);
    for (int i = 0; i < r->n_cells; i++)
        if (r->cells[i].compare) chart_histogram(f, &r->cells[i], i);
    fprintf(f, "</body></html>\n");
    return atomic_commit(&af, e);
}
