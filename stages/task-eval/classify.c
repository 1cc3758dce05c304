/* classify.c — top-1 / top-5 accuracy of a classifier's run against its
 * labels file, and the fraction of samples whose top-1 differs from the
 * reference cell's (docs/metrics-classification.md). */
#include <stdlib.h>
#include <string.h>
#include "taskeval.h"
#include "metrics/labels.h"
#include "metrics/metrics.h"

/* The class scores of one sample: the output with every axis but the last 1. */
static int read_scores(const te_opts_t *o, const char *dir, const char *sample, tensor_t *t, int64_t *nc, perr_t *e)
{
    if (te_read_output(o, dir, sample, t, NULL, e)) return -1;
    for (int i = 0; i + 1 < t->ndim; i++)
        if (t->dims[i] != 1) {
            char buf[128];
            shape_str(t->ndim, t->dims, buf, sizeof buf);
            return BAD(e, "%s/%s: output shape %s: expected class scores [1, C]", dir, sample, buf);
        }
    *nc = t->ndim ? t->dims[t->ndim - 1] : 1;
    return 0;
}

/* Checks one sample's class count against the others' and the class file's. */
static int check_width(const te_opts_t *o, const classes_t *cls, const char *sample, int64_t nc, int64_t *want,
                       perr_t *e)
{
    if (cls->n && nc != cls->n)
        return BAD(e, "%s: %lld class names, but the output of sample '%s' has %lld classes", o->classes,
                   (long long)cls->n, sample, (long long)nc);
    if (*want && nc != *want)
        return BAD(e, "%s/%s: %lld classes, the samples before it have %lld", o->dt, sample, (long long)nc,
                   (long long)*want);
    *want = nc;
    return 0;
}

static int eval_sample(const te_opts_t *o, const labels_t *lab, const classes_t *cls, const char *sample, int64_t *nc,
                       int64_t counts[3], json_t *per, perr_t *e)
{
    tensor_t t = {0}, r = {0};
    int64_t w, rw;
    int rc = read_scores(o, o->dt, sample, &t, &w, e);
    if (!rc) rc = check_width(o, cls, sample, w, nc, e);
    int64_t label = rc ? -1 : labels_find(lab, sample);
    if (!rc && label < 0) rc = BAD(e, "%s: no label for sample '%s'", o->labels, sample);
    if (!rc && label >= w)
        rc = BAD(e, "%s: sample '%s': class %lld is outside the output's %lld classes", o->labels, sample,
                 (long long)label, (long long)w);
    if (rc) { tensor_free_data(&t); return -1; }
    int64_t rank = cls_rank(t.data, w, label), top1 = cls_top1(t.data, w);
    counts[0] += rank == 0;
    counts[1] += rank >= 0 && rank < 5;
    json_t *s = json_pack("{s:s, s:I, s:I, s:I}", "sample", sample, "label", (json_int_t)label, "top1", (json_int_t)top1,
                          "rank", (json_int_t)rank);
    if (o->ref) {
        rc = read_scores(o, o->ref, sample, &r, &rw, e);
        if (!rc && rw != w)
            rc = BAD(e, "%s/%s: %lld classes, the run evaluated has %lld", o->ref, sample, (long long)rw, (long long)w);
        if (!rc) {
            int64_t rtop = cls_top1(r.data, rw);
            counts[2] += rtop != top1;
            json_object_set_new(s, "ref_top1", json_integer(rtop));
        }
        tensor_free_data(&r);
    }
    json_array_append_new(per, s);
    tensor_free_data(&t);
    return rc;
}

json_t *eval_classification(const te_opts_t *o, perr_t *e)
{
    labels_t lab;
    classes_t cls = {0};
    char **samples = NULL;
    int n = 0;
    if (labels_load(o->labels, &lab, e)) return NULL;
    if ((o->classes && classes_load(o->classes, &cls, e)) || te_samples(o->dt, &samples, &n, e)) {
        labels_free(&lab);
        return NULL;
    }
    int64_t nc = 0, counts[3] = {0};
    json_t *per = json_array();
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) rc = eval_sample(o, &lab, &cls, samples[i], &nc, counts, per, e);
    json_t *r = NULL;
    if (!rc) {
        json_t *m = json_object();
        json_object_set_new(m, "top1", te_metric(100.0 * (double)counts[0] / n, "%", 1));
        json_object_set_new(m, "top5", te_metric(100.0 * (double)counts[1] / n, "%", 1));
        if (o->ref) json_object_set_new(m, "top1_flips", te_metric(100.0 * (double)counts[2] / n, "%", 0));
        r = json_pack("{s:s, s:i, s:I, s:o, s:{s:s, s:s}, s:o}", "task", "classification", "samples", n, "classes",
                      (json_int_t)nc, "metrics", m, "rules", "ties", "lower class index first (numpy.argsort(-s, kind='stable'))",
                      "nan", "a NaN score makes the sample wrong at every k", "per_sample", per);
    } else {
        json_decref(per);
    }

    for (int i = 0; i < n; i++) free(samples[i]);
    free(samples);
    labels_free(&lab);
    classes_free(&cls);
    return r;
}
