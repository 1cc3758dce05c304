/* summarize.c — the evaluation driver and pycocotools' summarize(): the 12
 * stats (10 for keypoints: _summarizeKps) as numpy means of the entries > -1
 * (pairwise summation, so the last bits agree), per-category AP, and the
 * text and JSON renderings. */
#include <stdlib.h>
#include <string.h>
#include "coco/coco_int.h"
#include "util/fsutil.h"
#include "util/jsonfile.h"

const char *const coco_stat_names[COCO_NSTATS] = {
    "AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl",
};
static const char *const kp_stat_names[] = {
    "AP", "AP50", "AP75", "APm", "APl", "AR", "AR50", "AR75", "ARm", "ARl",
};
const char *const coco_area_names[COCO_A] = { "all", "small", "medium", "large" };
const int coco_max_dets[COCO_M] = { 1, 10, 100 };

/* np.linspace(.5, .95, 10): i * step + start, the last set to stop. */
double coco_iou_thr(int t)
{
    if (t == COCO_T - 1) return 0.95;
    return (double)t * ((0.95 - 0.5) / 9) + 0.5;
}

/* np.linspace(0, 1, 101) */
double coco_rec_thr(int r)
{
    if (r == COCO_R - 1) return 1.0;
    return (double)r * (1.0 / 100);
}

/* ---- numpy's summation ---- */

/* pairwise_sum from numpy's loops_utils: 8 accumulators over blocks of up
 * to 128, halves (rounded to a multiple of 8) above that. */
static double pairwise_sum(const double *a, int64_t n)
{
    if (n < 8) {
        double res = 0.;
        for (int64_t i = 0; i < n; i++) res += a[i];
        return res;
    }
    if (n <= 128) {
        double r[8];
        for (int k = 0; k < 8; k++) r[k] = a[k];
        int64_t i;
        for (i = 8; i < n - (n % 8); i += 8)
            for (int k = 0; k < 8; k++) r[k] += a[i + k];
        double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++) res += a[i];
        return res;
    }
    int64_t n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
}

/* add.reduce starts from 0 and adds the pairwise sum of each buffer of
 * 8192 elements in turn. */
double coco_np_sum(const double *a, int64_t n)
{
    double s = 0.;
    for (int64_t i = 0; i < n; i += 8192) s += pairwise_sum(a + i, n - i < 8192 ? n - i : 8192);
    return s;
}

double coco_np_mean(const double *v, int64_t n)
{
    double *sel = xmalloc((n ? n : 1) * sizeof *sel);
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++)
        if (v[i] > -1) sel[m++] = v[i];
    double r = m ? coco_np_sum(sel, m) / (double)m : -1;
    free(sel);
    return r;
}

/* ---- summarize ---- */

static int thr_index(double iou)
{
    for (int t = 0; t < COCO_T; t++)
        if (coco_iou_thr(t) == iou) return t;
    return -1;
}

/* _summarize(ap, iouThr, areaRng, maxDets): the slice flattened in C order
 * (t, r, k for precision; t, k for recall), values > -1, np.mean. */
static double summarize_one(const coco_eval_t *ev, int ap, double iou, int a, int m, double *buf)
{
    int t0 = 0, t1 = COCO_T;
    if (iou >= 0) {
        t0 = thr_index(iou);
        if (t0 < 0) return -1;              /* np.where found nothing */
        t1 = t0 + 1;
    }
    int64_t n = 0, K = ev->ncat;
    for (int t = t0; t < t1; t++) {
        if (ap) {
            for (int r = 0; r < COCO_R; r++)
                for (int64_t k = 0; k < K; k++) buf[n++] = COCO_PREC(ev, t, r, k, a, m);
        } else {
            for (int64_t k = 0; k < K; k++) buf[n++] = COCO_REC(ev, t, k, a, m);
        }
    }
    return coco_np_mean(buf, n);
}

typedef struct stat_spec { int ap; double iou; int a, m; } stat_spec_t;

/* _summarizeDets and _summarizeKps: (ap, iouThr, area slot, maxDets slot) */
static const stat_spec_t det_spec[COCO_NSTATS] = {
    {1, -1, 0, 2}, {1, .5, 0, 2}, {1, .75, 0, 2}, {1, -1, 1, 2}, {1, -1, 2, 2}, {1, -1, 3, 2},
    {0, -1, 0, 0}, {0, -1, 0, 1}, {0, -1, 0, 2}, {0, -1, 1, 2}, {0, -1, 2, 2}, {0, -1, 3, 2},
};
static const stat_spec_t kp_spec[10] = {
    {1, -1, 0, 2}, {1, .5, 0, 2}, {1, .75, 0, 2}, {1, -1, 2, 2}, {1, -1, 3, 2},
    {0, -1, 0, 2}, {0, .5, 0, 2}, {0, .75, 0, 2}, {0, -1, 2, 2}, {0, -1, 3, 2},
};

static const stat_spec_t *stat_specs(const coco_eval_t *ev)
{
    return ev->type == COCO_KEYPOINTS ? kp_spec : det_spec;
}

static void summarize(coco_eval_t *ev)
{
    const stat_spec_t *spec = stat_specs(ev);
    int64_t K = ev->ncat;
    double *buf = xmalloc(((int64_t)COCO_T * COCO_R * (K ? K : 1)) * sizeof *buf);
    for (int i = 0; i < ev->nstats; i++)
        ev->stats[i] = summarize_one(ev, spec[i].ap, spec[i].iou, spec[i].a, spec[i].m, buf);
    ev->cat_ap = xmalloc((K ? K : 1) * sizeof *ev->cat_ap);
    for (int64_t k = 0; k < K; k++) {
        int64_t n = 0;
        for (int t = 0; t < COCO_T; t++)
            for (int r = 0; r < COCO_R; r++) buf[n++] = COCO_PREC(ev, t, r, k, 0, 2);
        ev->cat_ap[k] = coco_np_mean(buf, n);
    }
    free(buf);
}

int coco_evaluate(const coco_gt_t *gt, const coco_dets_t *d, int nthreads, coco_eval_t *ev,
                  perr_t *e)
{
    memset(ev, 0, sizeof *ev);
    ev->type = gt->task.type;
    int kp = ev->type == COCO_KEYPOINTS;
    ev->nstats = kp ? 10 : COCO_NSTATS;
    ev->stat_names = kp ? kp_stat_names : coco_stat_names;
    for (int m = 0; m < COCO_M; m++) ev->max_dets[m] = kp ? (m == COCO_M - 1 ? 20 : 0) : coco_max_dets[m];
    coco_work_t w;
    int64_t dropped = 0;
    if (coco_work_build(&w, gt, d, nthreads, &dropped, e)) {
        coco_work_free(&w);
        return -1;
    }
    ev->ndets_dropped = dropped;
    ev->ndets_used = d->n - dropped;
    coco_accumulate(&w, ev);
    coco_work_free(&w);
    summarize(ev);
    return 0;
}

void coco_eval_free(coco_eval_t *ev)
{
    free(ev->precision);
    free(ev->recall);
    free(ev->cat_ap);
    memset(ev, 0, sizeof *ev);
}

/* ---- text ---- */

void coco_print_stats(FILE *f, const coco_eval_t *ev)
{
    const stat_spec_t *spec = stat_specs(ev);
    for (int i = 0; i < ev->nstats; i++) {
        int ap = spec[i].ap;
        const char *iou = spec[i].iou < 0 ? "0.50:0.95" : spec[i].iou == .5 ? "0.50" : "0.75";
        fprintf(f, " %-18s %s @[ IoU=%-9s | area=%6s | maxDets=%3d ] = %0.3f\n",
                ap ? "Average Precision" : "Average Recall", ap ? "(AP)" : "(AR)", iou,
                coco_area_names[spec[i].a], ev->max_dets[spec[i].m], ev->stats[i]);
    }
}

void coco_print_per_category(FILE *f, const coco_gt_t *gt, const coco_eval_t *ev)
{
    fprintf(f, "%12s  %-24s %8s\n", "category_id", "name", "AP");
    for (int64_t k = 0; k < ev->ncat; k++)
        fprintf(f, "%12lld  %-24s %8.3f\n", (long long)gt->cat_ids[k],
                gt->cat_names[k] ? gt->cat_names[k] : "", ev->cat_ap[k]);
}

/* ---- JSON ---- */

static json_t *real_array(const double *v, int64_t n)
{
    json_t *a = json_array();
    for (int64_t i = 0; i < n; i++) json_array_append_new(a, json_real(v[i]));
    return a;
}

/* Mean precision over categories at each recall threshold (area all,
 * maxDets 100) for IoU index t, or over all IoUs when t < 0. */
static json_t *mean_curve(const coco_eval_t *ev, int t)
{
    int64_t K = ev->ncat;
    double *buf = xmalloc(((int64_t)COCO_T * (K ? K : 1)) * sizeof *buf), q[COCO_R];
    for (int r = 0; r < COCO_R; r++) {
        int64_t n = 0;
        for (int tt = t < 0 ? 0 : t; tt < (t < 0 ? COCO_T : t + 1); tt++)
            for (int64_t k = 0; k < K; k++) buf[n++] = COCO_PREC(ev, tt, r, k, 0, 2);
        q[r] = coco_np_mean(buf, n);
    }
    free(buf);
    return real_array(q, COCO_R);
}

json_t *coco_eval_json(const coco_gt_t *gt, const coco_eval_t *ev)
{
    json_t *root = json_object(), *stats = json_object(), *cat = json_object();
    for (int i = 0; i < ev->nstats; i++) json_object_set_new(stats, ev->stat_names[i], json_real(ev->stats[i]));
    json_object_set_new(root, "stats", stats);
    for (int64_t k = 0; k < ev->ncat; k++) {
        char key[32];
        snprintf(key, sizeof key, "%lld", (long long)gt->cat_ids[k]);
        json_object_set_new(cat, key, json_real(ev->cat_ap[k]));
    }
    json_object_set_new(root, "per_category_AP", cat);
    json_t *counts = json_object();
    json_object_set_new(counts, "images", json_integer(gt->nimg));
    json_object_set_new(counts, "categories", json_integer(gt->ncat));
    json_object_set_new(counts, "ground_truth", json_integer(gt->nann));
    json_object_set_new(counts, "detections", json_integer(ev->ndets_used));
    json_object_set_new(counts, "detections_unknown_category", json_integer(ev->ndets_dropped));
    json_object_set_new(root, "counts", counts);
    double rec[COCO_R];
    for (int r = 0; r < COCO_R; r++) rec[r] = coco_rec_thr(r);
    json_t *pr = json_object();
    json_object_set_new(pr, "area", json_string("all"));
    json_object_set_new(pr, "max_dets", json_integer(ev->max_dets[COCO_M - 1]));
    json_object_set_new(pr, "recall", real_array(rec, COCO_R));
    json_object_set_new(pr, "precision_iou50", mean_curve(ev, 0));
    json_object_set_new(pr, "precision_iou75", mean_curve(ev, 5));
    json_object_set_new(pr, "precision_iou50_95", mean_curve(ev, -1));
    json_object_set_new(root, "pr_curves", pr);
    char sem[64];
    snprintf(sem, sizeof sem, "pycocotools COCOeval(iouType=%s)", coco_iou_type_name(ev->type));
    json_object_set_new(root, "iou_type", json_string(coco_iou_type_name(ev->type)));
    json_object_set_new(root, "oracle_semantics", json_string(sem));
    return root;
}

int coco_write_pr_curves(const char *dir, const coco_gt_t *gt, const coco_eval_t *ev, perr_t *e)
{
    if (mkdir_p(dir, e)) return -1;
    json_t *root = json_object(), *cats = json_array();
    double v[COCO_R];
    for (int t = 0; t < COCO_T; t++) v[t] = coco_iou_thr(t);
    json_object_set_new(root, "iou_thresholds", real_array(v, COCO_T));
    for (int r = 0; r < COCO_R; r++) v[r] = coco_rec_thr(r);
    json_object_set_new(root, "recall_thresholds", real_array(v, COCO_R));
    json_object_set_new(root, "area", json_string("all"));
    json_object_set_new(root, "max_dets", json_integer(ev->max_dets[COCO_M - 1]));
    char *csvp = path_join(dir, "pr-curves.csv");
    atomic_file_t af;
    if (atomic_open(&af, csvp, e)) {
        free(csvp);
        json_decref(root);
        json_decref(cats);
        return -1;
    }
    fputs("category_id,iou_threshold,recall_threshold,precision\n", af.f);
    for (int64_t k = 0; k < ev->ncat; k++) {
        json_t *c = json_object(), *prec = json_array();
        json_object_set_new(c, "id", json_integer(gt->cat_ids[k]));
        json_object_set_new(c, "name", json_string(gt->cat_names[k] ? gt->cat_names[k] : ""));
        json_object_set_new(c, "AP", json_real(ev->cat_ap[k]));
        for (int t = 0; t < COCO_T; t++) v[t] = COCO_REC(ev, t, k, 0, 2);
        json_object_set_new(c, "recall", real_array(v, COCO_T));
        for (int t = 0; t < COCO_T; t++) {
            for (int r = 0; r < COCO_R; r++) {
                v[r] = COCO_PREC(ev, t, r, k, 0, 2);
                fprintf(af.f, "%lld,%.2f,%.2f,%.17g\n", (long long)gt->cat_ids[k],
                        coco_iou_thr(t), coco_rec_thr(r), v[r]);
            }
            json_array_append_new(prec, real_array(v, COCO_R));
        }
        json_object_set_new(c, "precision", prec);
        json_array_append_new(cats, c);
    }
    json_object_set_new(root, "categories", cats);
    int rc = atomic_commit(&af, e);
    free(csvp);
    if (!rc) {
        char *jp = path_join(dir, "pr-curves.json");
        rc = write_json(jp, root, COCO_JSON_FLAGS, e);
        free(jp);
    }
    json_decref(root);
    return rc;
}
