/* pixels.c — the per-pixel tasks: semantic segmentation (MMSegmentation's
 * IoU metric over one confusion matrix of the whole run) and matting (MAE,
 * MSE, boundary-band MAE of soft masks); docs/metrics-segmentation.md. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "taskeval.h"
#include "metrics/labels.h"
#include "metrics/metrics.h"

/* The output of one sample as a class per pixel: logits [1, C, H, W] go
 * through argmax, an integer label map [1, H, W] is taken as it is. Sets
 * *nc from the logits (or checks it against them). */
static int predict(const te_opts_t *o, const char *sample, int64_t *nc, int64_t **pred, int64_t *h, int64_t *w,
                   perr_t *e)
{
    tensor_t t = {0};
    dtype_t dt;
    int64_t c;
    char what[1024];
    snprintf(what, sizeof what, "%s/%s", o->dt, sample);
    if (te_read_planes(o, sample, &t, &dt, &c, h, w, e)) return -1;
    int64_t npix = *h * *w;
    int rc = 0;
    *pred = xmalloc((size_t)npix * sizeof **pred);
    const float *v = t.data;
    if (!dtype_is_float(dt)) {
        if (c != 1) rc = BAD(e, "%s: an integer output with %lld channels: expected a label map [1, H, W]", what, (long long)c);
        else if (!*nc) rc = BAD(e, "%s: a label-map output: give the classes (--classes or --num-classes)", what);
        for (int64_t i = 0; !rc && i < npix; i++) (*pred)[i] = v[i] >= 0 && v[i] < *nc ? (int64_t)v[i] : -1;
    } else if (c < 2) {
        rc = BAD(e, "%s: a float output with one channel: expected logits [1, C, H, W] with C >= 2 "
                    "(a soft mask is task matting)", what);
    } else if (*nc && c != *nc) {
        rc = o->classes ? BAD(e, "%s: %lld class names, but the output of sample '%s' has %lld classes", o->classes,
                              (long long)*nc, sample, (long long)c)
                        : BAD(e, "%s: %lld classes, expected %lld", what, (long long)c, (long long)*nc);
    } else {
        *nc = c;
        seg_argmax(v, c, npix, *pred);
    }
    tensor_free_data(&t);
    return rc;
}

static int seg_sample(const te_opts_t *o, const char *sample, int64_t *nc, seg_cm_t *cm, perr_t *e)
{
    int64_t *pred = NULL, h, w;
    image_t gt = {0};
    char *path = NULL;
    int rc = predict(o, sample, nc, &pred, &h, &w, e);
    if (!rc) rc = te_read_png(o->gt_dir, sample, "GT label map", &gt, &path, e);
    if (!rc && gt.c != 1)
        rc = BAD(e, "%s: %d channels: a label map has one (gray or palette indices)", path, gt.c);
    if (!rc && (gt.w != w || gt.h != h))
        rc = BAD(e, "%s: GT is %lldx%lld (WxH), the output of sample '%s' is %lldx%lld", path, (long long)gt.w,
                 (long long)gt.h, sample, (long long)w, (long long)h);
    if (!rc) {
        if (!cm->cm) seg_cm_init(cm, *nc);
        rc = seg_cm_add(cm, pred, gt.data, h * w, o->ignore_index, path, e);
    }
    free(pred);
    free(path);
    image_free(&gt);
    return rc;
}

static json_t *num_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *seg_json(const te_opts_t *o, const seg_cm_t *cm, const classes_t *cls, int n)
{
    seg_scores_t s;
    seg_scores_compute(cm, &s);
    json_t *m = json_object(), *pc = json_array();
    json_object_set_new(m, "miou", te_metric(100.0 * s.miou, "%", 1));
    json_object_set_new(m, "aacc", te_metric(100.0 * s.aacc, "%", 1));
    json_object_set_new(m, "macc", te_metric(100.0 * s.macc, "%", 1));
    for (int64_t k = 0; k < cm->nc; k++) {
        json_t *c = json_pack("{s:I, s:o, s:o}", "class", (json_int_t)k, "iou", num_or_null(100.0 * s.iou[k]), "acc",
                              num_or_null(100.0 * s.acc[k]));
        if (cls->n) json_object_set_new(c, "name", json_string(cls->names[k]));
        json_array_append_new(pc, c);
    }
    json_t *r = json_pack("{s:s, s:i, s:I, s:I, s:I, s:o, s:{s:s, s:s}, s:o}", "task", "segmentation", "samples", n,
                          "classes", (json_int_t)cm->nc, "classes_present", (json_int_t)s.present, "ignored_pixels",
                          (json_int_t)cm->ignored, "metrics", m, "rules", "miou",
                          "MMSegmentation IoUMetric: one confusion matrix over every pixel; classes absent from "
                          "prediction and GT are NaN and left out of the mean",
                          "argmax", "lowest class index among equal maxima", "per_class", pc);
    json_object_set_new(r, "ignore_index", json_integer(o->ignore_index));
    seg_scores_free(&s);
    return r;
}

json_t *eval_segmentation(const te_opts_t *o, perr_t *e)
{
    classes_t cls = {0};
    char **samples = NULL;
    int n = 0;
    if ((o->classes && classes_load(o->classes, &cls, e)) || te_samples(o->dt, &samples, &n, e)) {
        classes_free(&cls);
        return NULL;
    }
    int64_t nc = cls.n ? cls.n : o->num_classes;
    int rc = 0;
    if (o->classes && o->num_classes && o->num_classes != cls.n)
        rc = BAD(e, "%s: %lld class names, --num-classes says %lld", o->classes, (long long)cls.n, (long long)o->num_classes);
    seg_cm_t cm = {0};
    for (int i = 0; i < n && !rc; i++) rc = seg_sample(o, samples[i], &nc, &cm, e);
    json_t *r = rc ? NULL : seg_json(o, &cm, &cls, n);
    seg_cm_free(&cm);
    for (int i = 0; i < n; i++) free(samples[i]);
    free(samples);
    classes_free(&cls);
    return r;
}

static int mat_sample(const te_opts_t *o, const char *sample, mat_sums_t *s, perr_t *e)
{
    tensor_t t = {0};
    image_t gt = {0};
    char what[1024], *path = NULL;
    int64_t c, h, w;
    snprintf(what, sizeof what, "%s/%s", o->dt, sample);
    int rc = te_read_planes(o, sample, &t, NULL, &c, &h, &w, e);
    if (!rc && c != 1) rc = BAD(e, "%s: %lld channels: expected an alpha matte [1, 1, H, W]", what, (long long)c);
    if (!rc) rc = te_read_png(o->gt_dir, sample, "GT alpha matte", &gt, &path, e);
    if (!rc && gt.c == 3) rc = BAD(e, "%s: an RGB image: the alpha matte is gray or the alpha channel", path);
    if (!rc && (gt.w != w || gt.h != h))
        rc = BAD(e, "%s: GT is %lldx%lld (WxH), the output of sample '%s' is %lldx%lld", path, (long long)gt.w,
                 (long long)gt.h, sample, (long long)w, (long long)h);
    if (!rc) {
        float *a = xmalloc((size_t)(h * w) * sizeof *a);
        for (int64_t i = 0; i < h * w; i++) a[i] = (float)gt.data[i * gt.c + gt.c - 1] / 255.0f;   /* gray, or alpha last */
        rc = mat_add(s, t.data, a, h, w, o->band_radius, e);
        free(a);
    }
    tensor_free_data(&t);
    image_free(&gt);
    free(path);
    return rc;
}

json_t *eval_matting(const te_opts_t *o, perr_t *e)
{
    char **samples = NULL;
    int n = 0, rc = 0;
    if (te_samples(o->dt, &samples, &n, e)) return NULL;
    mat_sums_t s = {0};
    for (int i = 0; i < n && !rc; i++) rc = mat_sample(o, samples[i], &s, e);
    json_t *r = NULL;
    if (!rc) {
        json_t *m = json_object();
        json_object_set_new(m, "mae", te_metric(s.abs_sum / (double)s.n, "", 0));
        json_object_set_new(m, "mse", te_metric(s.sq_sum / (double)s.n, "", 0));
        json_object_set_new(m, "boundary_mae", te_metric(s.band_n ? s.band_abs_sum / (double)s.band_n : NAN, "", 0));
        r = json_pack("{s:s, s:i, s:I, s:I, s:i, s:o, s:{s:s}}", "task", "matting", "samples", n, "pixels",
                      (json_int_t)s.n, "band_pixels", (json_int_t)s.band_n, "band_radius", o->band_radius, "metrics", m,
                      "rules", "boundary", "pixels within band_radius (Chebyshev) of a pixel whose 3x3 neighbourhood "
                      "holds GT alpha both <= 0.5 and > 0.5; prediction clipped to [0, 1]");
    }
    for (int i = 0; i < n; i++) free(samples[i]);
    free(samples);
    return r;
}
