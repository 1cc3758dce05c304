/* task.c — the task metric in the report: each cell's headline metric
 * (task-eval's task.json, or map-eval's AP for detection) and its change
 * against the reference, the metric_drop and min_metric checks on
 * plan.json's thresholds.max_metric_drop / min_metric / max_metric, and
 * the words a verdict uses for a change ("−6.1 dB PSNR"). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "report.h"

static json_t *metric_entry(const cell_t *c, const char *metric)
{
    return json_object_get(json_object_get(c->task, "metrics"), metric);
}

static double task_value(const cell_t *c, const char *metric)
{
    json_t *v = json_object_get(metric_entry(c, metric), "value");
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* From the first cell whose task.json names the metric. */
static const char *metric_field(const report_t *r, const char *metric, const char *field)
{
    for (int i = 0; metric && i < r->n_cells; i++) {
        const char *s = json_string_value(json_object_get(metric_entry(&r->cells[i], metric), field));
        if (s) return s;
    }
    return NULL;
}

const char *metric_unit(const report_t *r, const char *metric)
{
    const char *u = metric_field(r, metric, "unit");
    return u ? u : "";
}

static int metric_higher(const report_t *r, const char *metric)
{
    const char *b = metric_field(r, metric, "better");
    return !b || strcmp(b, "lower");
}

/* "PSNR", "SSIM", "mIoU": the names people write; others as task-eval names them. */
const char *metric_label(const char *metric)
{
    static const char *const names[][2] = {{"psnr", "PSNR"}, {"ssim", "SSIM"}, {"miou", "mIoU"}, {"aacc", "pixel acc"},
                                           {"macc", "mAcc"}, {"mae", "MAE"}, {"mse", "MSE"}, {"boundary_mae", "boundary MAE"},
                                           {"top1", "top-1"}, {"top5", "top-5"}, {"top1_flips", "top-1 flips"}};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(names[i][0], metric)) return names[i][1];
    return metric;
}

static void value_text(const report_t *r, const char *metric, double v, int sign, char *b, size_t n)
{
    const char *u = metric_unit(r, metric);
    /* dB and % to 0.1 like AP points; unitless ratios (SSIM, alpha errors) need digits */
    const char *fmt = *u ? "%s%.2f%s%s %s" : "%s%.4g%s%s %s";
    snprintf(b, n, fmt, !sign ? "" : v < 0 ? "\u2212" : "+", sign ? fabs(v) : v, *u ? " " : "", u, metric_label(metric));
}

void metric_delta_text(const report_t *r, double d, char *b, size_t n)
{
    if (!r->task_metric || !strcmp(r->task_metric, "ap"))
        snprintf(b, n, "%s%.1f %s", d < 0 ? "\u2212" : "+", fabs(d), r->ap_name ? r->ap_name : "AP");
    else value_text(r, r->task_metric, d, 1, b, n);
}

void task_set_metrics(report_t *r, const cell_t *ref)
{
    for (int i = 0; i < r->n_cells; i++) {
        cell_t *c = &r->cells[i];
        if (!r->task_metric || !strcmp(r->task_metric, "ap")) {   /* AP where map-eval ran, else none */
            c->metric = c->ap >= 0 ? 100 * c->ap : NAN;
            c->dmetric = c->dap;
        } else {
            c->metric = task_value(c, r->task_metric);
            c->dmetric = ref ? c->metric - task_value(ref, r->task_metric) : NAN;
            char t[80];
            if (c->is_reference && c->metric == c->metric) {
                value_text(r, r->task_metric, c->metric, 0, t, sizeof t);
                snprintf(c->mtext, sizeof c->mtext, "ref %s", t);
            } else if (c->dmetric == c->dmetric) {
                metric_delta_text(r, c->dmetric, c->mtext, sizeof c->mtext);
            }
        }
    }
}

/* metric_drop: every metric of thresholds.max_metric_drop within its
 * allowance against the reference; min_metric (the reference): every
 * min_metric reached, every max_metric not exceeded. */
void task_check(report_t *r, const cell_t *c, const cell_t *ref, const char *name)
{
    json_t *th = json_object_get(r->plan, "thresholds");
    int drop = !strcmp(name, "metric_drop");
    const char *keys[2] = {drop ? "max_metric_drop" : "min_metric", drop ? NULL : "max_metric"};
    for (int k = 0; k < 2; k++) {
        const char *metric;
        json_t *bound;
        json_object_foreach(json_object_get(th, keys[k] ? keys[k] : ""), metric, bound) {
            double b = json_number_value(bound), v = task_value(c, metric), rv = ref ? task_value(ref, metric) : NAN;
            int higher = metric_higher(r, metric);
            char vt[96], rt[96], dt[96];
            value_text(r, metric, v, 0, vt, sizeof vt);
            check_t *x;
            if (drop) {
                double worse = higher ? rv - v : v - rv;
                x = add_check(r, c, name, worse <= b);   /* NaN fails */
                value_text(r, metric, rv, 0, rt, sizeof rt);
                value_text(r, metric, v - rv, 1, dt, sizeof dt);
                if (!(worse == worse)) {
                    char why[160];
                    snprintf(why, sizeof why, "%s/%s: no %s for this cell or the reference", c->variant, c->precision,
                             metric_label(metric));
                    not_judged(x, why);
                }
                else if (!x->passed)
                    snprintf(x->reason, sizeof x->reason, "%s: %s: %s against the reference %s (%s; allowed %.4g)%s", c->precision,
                             dt, vt, ref->name, rt, b,
                             strcmp(c->variant, ref->variant) ? ": the preprocessing differs from the reference's" : "");
            } else {
                int is_min = k == 0;
                x = add_check(r, c, name, is_min ? v >= b : v <= b);
                if (!(v == v)) not_judged(x, "no value of this metric for the reference");
                else if (!x->passed)
                    snprintf(x->reason, sizeof x->reason, "reference %s is %s the required %.4g", vt, is_min ? "below" : "above", b);
            }
        }
    }
}
