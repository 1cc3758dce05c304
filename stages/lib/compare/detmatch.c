/* detmatch.c — detection-matched comparison of two detector runs (see
 * detmatch.h). Per sample: load labels, boxes and scores from both sides,
 * match per class greedily in A's score order (ties by index, so the result
 * does not depend on anything but the tensors), then count and measure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "compare/detmatch.h"
#include "compare/run.h"

/* ---- configuration ---------------------------------------------------------------- */

static int parse_double(const char *key, const char *v, double lo, double hi, double *out, perr_t *e)
{
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end || !(x >= lo && x <= hi))
        return BAD(e, "--detection: %s needs a number in [%g, %g], not '%s'", key, lo, hi, v);
    *out = x;
    return 0;
}

int dm_config_parse(dm_config_t *c, const char *spec, perr_t *e)
{
    memset(c, 0, sizeof *c);
    c->iou = 0.5;
    c->score_floor = 0.3;
    yolo_opts_init(&c->yolo);
    char *s = xstrdup(spec), *save = NULL;
    int rc = 0;
    for (char *kv = strtok_r(s, ",", &save); kv && !rc; kv = strtok_r(NULL, ",", &save)) {
        char *v = strchr(kv, '=');
        if (!v || !v[1]) { rc = BAD(e, "--detection: '%s' is not KEY=VALUE", kv); break; }
        *v++ = 0;
        if (!strcmp(kv, "labels")) { free(c->labels); c->labels = xstrdup(v); }
        else if (!strcmp(kv, "boxes")) { free(c->boxes); c->boxes = xstrdup(v); }
        else if (!strcmp(kv, "scores")) { free(c->scores); c->scores = xstrdup(v); }
        else if (!strcmp(kv, "iou")) rc = parse_double("iou", v, 0, 1, &c->iou, e);
        else if (!strcmp(kv, "score_floor")) rc = parse_double("score_floor", v, -INFINITY, INFINITY, &c->score_floor, e);
        else if (!strcmp(kv, "format")) {
            if (!strcmp(v, "xyxy")) c->format = DM_XYXY;
            else if (!strcmp(v, "xywh")) c->format = DM_XYWH;
            else if (!strcmp(v, "cxcywh")) c->format = DM_CXCYWH;
            else rc = BAD(e, "--detection: format '%s' is not xyxy, xywh or cxcywh", v);
        } else {
            int r = yolo_opt_set(&c->yolo, kv, v, e);
            if (r < 0) rc = perr_prefix(e, "--detection: ");
            else if (!r)
                rc = BAD(e, "--detection: unknown key '%s' (labels, boxes, scores, format, iou, score_floor; "
                         "head, output, conf_threshold, nms_iou, max_det, max_nms, multi_label, agnostic, "
                         "num_classes)", kv);
        }
    }
    free(s);
    int yolo = c->yolo.head != YOLO_NONE;
    if (!rc && yolo && (c->labels || c->boxes || c->scores))
        rc = BAD(e, "--detection: head= decodes a raw YOLO head: it takes output=, not labels=, boxes=, scores=");
    if (!rc && !yolo && (!c->labels || !c->boxes || !c->scores))
        rc = BAD(e, "--detection: labels=, boxes= and scores= name the output tensors (or head= a raw YOLO head)");
    if (rc) dm_config_free(c);
    return rc;
}

void dm_config_free(dm_config_t *c)
{
    free(c->labels);
    free(c->boxes);
    free(c->scores);
    yolo_opts_free(&c->yolo);
    memset(c, 0, sizeof *c);
}

/* ---- one side's detections ------------------------------------------------------- */

typedef struct dets {
    int64_t n;
    double *box;      /* xyxy, 4 per detection */
    double *score;
    int64_t *label;
} dets_t;

static void dets_free(dets_t *d)
{
    free(d->box);
    free(d->score);
    free(d->label);
    memset(d, 0, sizeof *d);
}

static int load_named(const cmp_set_t *set, const char *name, tensor_t *t, perr_t *e)
{
    int k = set_find(set, name);
    if (k < 0) return BAD(e, "%s: sample has no tensor '%s' (--detection names the outputs)", set->side->path, name);
    return set_load(set, k, t, e);
}

static void dets_alloc(dets_t *d, int64_t n)
{
    d->n = n;
    d->box = xmalloc((size_t)(4 * n + 1) * sizeof *d->box);
    d->score = xmalloc((size_t)(n + 1) * sizeof *d->score);
    d->label = xmalloc((size_t)(n + 1) * sizeof *d->label);
}

/* A raw YOLO head decoded (coco/yolo.h): boxes in input pixels, labels the class indices. */
static int load_yolo(const cmp_set_t *set, const char *sample, const dm_config_t *c, dets_t *d, perr_t *e)
{
    tensor_t t = {0};
    yolo_det_t *y = NULL;
    int64_t n = 0;
    char what[1200];
    snprintf(what, sizeof what, "%s: sample '%s': %s", set->side->path, sample, c->yolo.output);
    int rc = load_named(set, c->yolo.output, &t, e);
    if (!rc) rc = yolo_decode(&t, what, &c->yolo, 0, NULL, &y, &n, e);
    if (!rc) {
        dets_alloc(d, n);
        for (int64_t i = 0; i < n; i++) {
            for (int k = 0; k < 4; k++) d->box[4 * i + k] = y[i].box[k];
            d->score[i] = y[i].score;
            d->label[i] = y[i].cls;
        }
    }
    free(y);
    tensor_free_data(&t);
    return rc;
}

static int load_dets(const cmp_set_t *set, const char *sample, const dm_config_t *c, dets_t *d, perr_t *e)
{
    memset(d, 0, sizeof *d);
    if (c->yolo.head != YOLO_NONE) return load_yolo(set, sample, c, d, e);
    tensor_t tl = {0}, tb = {0}, ts = {0};
    int rc = load_named(set, c->labels, &tl, e);
    if (!rc) rc = load_named(set, c->boxes, &tb, e);
    if (!rc) rc = load_named(set, c->scores, &ts, e);
    int64_t n = rc ? 0 : tensor_numel(&ts);
    if (!rc && (tensor_numel(&tl) != n || tensor_numel(&tb) != 4 * n))
        rc = BAD(e, "%s: %s, %s and %s hold %lld, %lld and %lld values: expected N, 4N and N", set->side->path,
                 c->labels, c->boxes, c->scores, (long long)tensor_numel(&tl), (long long)tensor_numel(&tb), (long long)n);
    if (!rc) {
        dets_alloc(d, n);
        for (int64_t i = 0; i < n; i++) {
            double b[4];
            for (int k = 0; k < 4; k++) b[k] = tensor_get_f64(&tb, 4 * i + k);
            if (c->format == DM_XYWH) { b[2] += b[0]; b[3] += b[1]; }
            else if (c->format == DM_CXCYWH) {
                double w = b[2], h = b[3];
                b[0] -= w / 2; b[1] -= h / 2; b[2] = b[0] + w; b[3] = b[1] + h;
            }
            memcpy(d->box + 4 * i, b, sizeof b);
            d->score[i] = tensor_get_f64(&ts, i);
            d->label[i] = (int64_t)llround(tensor_get_f64(&tl, i));
        }
    }
    tensor_free_data(&tl);
    tensor_free_data(&tb);
    tensor_free_data(&ts);
    return rc;
}

/* ---- matching -------------------------------------------------------------------- */

/* One axis of the IoU: the overlap and the two lengths. An axis where both
 * boxes are flat at the same coordinate (x1 == x2: a box clipped to the
 * image border, or FCOS's ReLU'd distances of 0 around an anchor centre) is
 * left out: overlap and lengths 1, so two boxes on the same line compare by
 * their other axis, and two identical points have IoU 1 instead of 0/0. */
static void iou_axis(double p0, double p1, double q0, double q1, double *ov, double *lp, double *lq)
{
    if (p0 == p1 && q0 == q1 && p0 == q0) {
        *ov = *lp = *lq = 1;
        return;
    }
    *ov = fmin(p1, q1) - fmax(p0, q0);
    *lp = p1 - p0;
    *lq = q1 - q0;
}

static double iou_xyxy(const double *p, const double *q)
{
    double w, pw, qw, h, ph, qh;
    iou_axis(p[0], p[2], q[0], q[2], &w, &pw, &qw);
    iou_axis(p[1], p[3], q[1], q[3], &h, &ph, &qh);
    if (!(w > 0 && h > 0)) return 0;
    double inter = w * h, u = pw * ph + qw * qh - inter;
    return u > 0 ? inter / u : 0;
}

/* A's detections by score, best first; ties by index. */
static int by_score(const void *x, const void *y, void *ctx)
{
    const double *score = ctx;
    int64_t i = *(const int64_t *)x, j = *(const int64_t *)y;
    double a = score[i], b = score[j];
    if (a != b) return a > b ? -1 : 1;
    return (i > j) - (i < j);
}

/* A matched pair where either side is above the floor: counted as matched and measured. */
static void push_pair(dm_result_t *r, const dets_t *A, int64_t i, const dets_t *B, int64_t j, double iou)
{
    r->iou = xrealloc(r->iou, (size_t)(r->n + 1) * sizeof *r->iou);
    r->dscore = xrealloc(r->dscore, (size_t)(r->n + 1) * sizeof *r->dscore);
    r->dbox = xrealloc(r->dbox, (size_t)(r->n + 1) * sizeof *r->dbox);
    double m = 0;
    for (int k = 0; k < 4; k++) m = fmax(m, fabs(A->box[4 * i + k] - B->box[4 * j + k]));
    r->iou[r->n] = iou;
    r->dscore[r->n] = fabs(A->score[i] - B->score[j]);
    r->dbox[r->n++] = m;
}

/* Greedy: each of A's detections in score order takes the best unmatched B
 * detection of the same class (of another class: flip) with IoU >= threshold. Only
 * detections whose flag is 0 take part; matched ones get flag 1. */
static void greedy(const dets_t *A, const dets_t *B, const int64_t *order, char *fa, char *fb, double thr,
                   int flip, dm_result_t *r, double floor)
{
    for (int64_t oi = 0; oi < A->n; oi++) {
        int64_t i = order[oi];
        if (fa[i]) continue;
        int64_t best = -1;
        double bi = thr;
        for (int64_t j = 0; j < B->n; j++) {
            if (fb[j] || (flip ? B->label[j] == A->label[i] : B->label[j] != A->label[i])) continue;
            double v = iou_xyxy(A->box + 4 * i, B->box + 4 * j);
            if (v >= bi && (best < 0 || v > bi)) { bi = v; best = j; }
        }
        if (best < 0) continue;
        fa[i] = fb[best] = 1;
        if (!flip) {
            r->matched++;
            if (A->score[i] >= floor || B->score[best] >= floor) push_pair(r, A, i, B, best, bi);
        } else {
            r->label_flips++;
        }
    }
}

static void match_sample(const dets_t *A, const dets_t *B, const dm_config_t *c, dm_result_t *r)
{
    int64_t *order = xmalloc((size_t)(A->n + 1) * sizeof *order);
    for (int64_t i = 0; i < A->n; i++) order[i] = i;
    qsort_r(order, (size_t)A->n, sizeof *order, by_score, A->score);
    char *fa = xcalloc((size_t)A->n + 1, 1), *fb = xcalloc((size_t)B->n + 1, 1);
    greedy(A, B, order, fa, fb, c->iou, 0, r, c->score_floor);
    /* unmatched detections above the floor: missed / extra; a missed and an
     * extra one on the same object with different classes is a label flip */
    for (int64_t i = 0; i < A->n; i++) fa[i] = fa[i] || A->score[i] < c->score_floor;
    for (int64_t j = 0; j < B->n; j++) fb[j] = fb[j] || B->score[j] < c->score_floor;
    for (int64_t i = 0; i < A->n; i++) r->extra += !fa[i];
    for (int64_t j = 0; j < B->n; j++) r->missed += !fb[j];
    int64_t before = r->label_flips;
    greedy(A, B, order, fa, fb, c->iou, 1, r, c->score_floor);
    r->extra -= r->label_flips - before;
    r->missed -= r->label_flips - before;
    for (int64_t i = 0; i < A->n; i++) r->a_above += A->score[i] >= c->score_floor;
    for (int64_t j = 0; j < B->n; j++) r->ref_above += B->score[j] >= c->score_floor;
    free(fa);
    free(fb);
    free(order);
}

int dm_run(const cmp_side_t *a, const cmp_side_t *b, const dm_config_t *c, dm_result_t *r, perr_t *e)
{
    memset(r, 0, sizeof *r);
    int *ia, *ib;
    int m = match_samples(a, b, &ia, &ib, e);
    if (m < 0) return -1;
    int rc = 0;
    for (int k = 0; k < m && !rc; k++) {
        if (ia[k] < 0 || ib[k] < 0) {
            rc = BAD(e, "detections: sample '%s' is in %s only", ia[k] < 0 ? b->s[ib[k]].id : a->s[ia[k]].id,
                     ia[k] < 0 ? b->path : a->path);
            break;
        }
        cmp_set_t sa, sb;
        dets_t A, B;
        if (set_open(b, ib[k], &sb, e)) { rc = -1; break; }
        if (set_open(a, ia[k], &sa, e)) { set_close(&sb); rc = -1; break; }
        rc = load_dets(&sa, a->s[ia[k]].id, c, &A, e);
        if (!rc) {
            rc = load_dets(&sb, b->s[ib[k]].id, c, &B, e);
            if (!rc) match_sample(&A, &B, c, r);
            dets_free(&B);
        }
        dets_free(&A);
        set_close(&sa);
        set_close(&sb);
        r->samples++;
    }
    free(ia);
    free(ib);
    return rc;
}

int dm_passed(const dm_result_t *r)
{
    return r->missed == 0 && r->extra == 0 && r->label_flips == 0;
}

/* ---- reporting ------------------------------------------------------------------- */

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Quantiles by the nearest rank on a sorted copy (numpy's 'lower' would
 * differ by one rank at most; these are for people, not for checks). */
static json_t *dist_json(const double *v, int64_t n, int worst_high)
{
    if (!n) return json_null();
    double *s = xmalloc((size_t)n * sizeof *s);
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    double sum = 0;
    for (int64_t i = 0; i < n; i++) sum += s[i];
    const double q[] = {0.01, 0.5, 0.99};
    const char *qn[] = {"p1", "p50", "p99"};
    json_t *o = json_pack("{s:f, s:f, s:f}", "min", s[0], "max", s[n - 1], "mean", sum / n);
    for (int k = 0; k < 3; k++) json_object_set_new(o, qn[k], json_real(s[(int64_t)floor(q[k] * (n - 1) + 0.5)]));
    json_object_set_new(o, "worst", json_real(worst_high ? s[n - 1] : s[0]));
    free(s);
    return o;
}

json_t *dm_json(const dm_result_t *r, const dm_config_t *c)
{
    static const char *const fmt[] = {"xyxy", "xywh", "cxcywh"};
    json_t *o = json_pack("{s:s?, s:s?, s:s?, s:s, s:f, s:f, s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
                          "labels", c->labels, "boxes", c->boxes, "scores", c->scores, "format", fmt[c->format],
                          "iou_threshold", c->iou, "score_floor", c->score_floor, "samples", r->samples,
                          "reference_above_floor", (json_int_t)r->ref_above, "above_floor", (json_int_t)r->a_above,
                          "matched", (json_int_t)r->n, "missed", (json_int_t)r->missed,
                          "extra", (json_int_t)r->extra, "label_flips", (json_int_t)r->label_flips,
                          "matched_all", (json_int_t)r->matched);
    if (c->yolo.head != YOLO_NONE) {
        char *spec = yolo_opts_spec(&c->yolo);
        json_object_set_new(o, "decoded", json_string(spec));
        free(spec);
    }
    json_object_set_new(o, "iou", dist_json(r->iou, r->n, 0));
    json_object_set_new(o, "score_drift", dist_json(r->dscore, r->n, 1));
    json_object_set_new(o, "box_drift", dist_json(r->dbox, r->n, 1));
    json_object_set_new(o, "passed", json_boolean(dm_passed(r)));
    return o;
}

void dm_result_free(dm_result_t *r)
{
    free(r->iou);
    free(r->dscore);
    free(r->dbox);
    memset(r, 0, sizeof *r);
}
