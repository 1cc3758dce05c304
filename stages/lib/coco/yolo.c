/* yolo.c — decoding a YOLO raw head into detections (rules: yolo.h and
 * docs/metrics-detection.md). One linear pass thresholds every score; only
 * the candidates that pass are sorted and go through NMS, which stops once
 * max_det are kept (a later candidate cannot enter the first max_det). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "coco/coco_int.h"
#include "coco/yolo.h"

void yolo_opts_init(yolo_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->output = xstrdup("output0");
    o->conf = 0.001;
    o->iou = 0.7;
    o->max_det = 300;
    o->max_nms = 30000;
    o->multi_label = 1;
    o->protos = xstrdup("output1");
    o->mask_coefs = 32;
    o->keypoints = 17;
}

void yolo_opts_free(yolo_opts_t *o)
{
    free(o->output);
    free(o->protos);
    memset(o, 0, sizeof *o);
}

/* ---- settings ---- */

static int parse_num(const char *key, const char *v, double lo, double hi, double *out, perr_t *e)
{
    char *end;
    double x = strtod(v, &end);
    if (!*v || *end || !(x >= lo && x <= hi))
        return BAD(e, "%s: '%s' is not a number in [%g, %g]", key, v, lo, hi);
    *out = x;
    return 0;
}

static int parse_count(const char *key, const char *v, int64_t lo, int64_t *out, perr_t *e)
{
    char *end;
    long long x = strtoll(v, &end, 10);
    if (!*v || *end || x < lo || x > 100000000)
        return BAD(e, "%s: '%s' is not a whole number in [%lld, 100000000]", key, v, (long long)lo);
    *out = x;
    return 0;
}

static int parse_bool(const char *key, const char *v, int *out, perr_t *e)
{
    if (!strcmp(v, "true") || !strcmp(v, "1") || !*v) *out = 1;
    else if (!strcmp(v, "false") || !strcmp(v, "0")) *out = 0;
    else return BAD(e, "%s: '%s' is not true or false", key, v);
    return 0;
}

int yolo_opt_set(yolo_opts_t *o, const char *key, const char *v, perr_t *e)
{
    int rc = 0;
    if (!strcmp(key, "head")) {
        if (!strcmp(v, "yolov8")) o->head = YOLO_V8;
        else if (!strcmp(v, "yolov5")) o->head = YOLO_V5;
        else if (!strcmp(v, "yolov8-seg")) o->head = YOLO_V8_SEG;
        else if (!strcmp(v, "yolov8-pose")) o->head = YOLO_V8_POSE;
        else if (!strcmp(v, "none")) o->head = YOLO_NONE;
        else rc = BAD(e, "head: '%s' is not yolov8 ([4+nc, N]), yolov5 ([N, 5+nc]), yolov8-seg ([4+nc+nm, N] "
                      "and protos) or yolov8-pose ([4+nc+3K, N])", v);
    } else if (!strcmp(key, "output") || !strcmp(key, "protos")) {
        if (!*v) return BAD(e, "%s: the tensor name is empty", key);
        char **dst = !strcmp(key, "output") ? &o->output : &o->protos;
        free(*dst);
        *dst = xstrdup(v);
    }
    else if (!strcmp(key, "mask_coefs")) rc = parse_count(key, v, 1, &o->mask_coefs, e);
    else if (!strcmp(key, "keypoints")) rc = parse_count(key, v, 1, &o->keypoints, e); else if (!strcmp(key, "conf_threshold")) rc = parse_num(key, v, 0, 1, &o->conf, e);
    else if (!strcmp(key, "nms_iou")) rc = parse_num(key, v, 0, 1, &o->iou, e);
    else if (!strcmp(key, "max_det")) rc = parse_count(key, v, 1, &o->max_det, e);
    else if (!strcmp(key, "max_nms")) rc = parse_count(key, v, 1, &o->max_nms, e);
    else if (!strcmp(key, "num_classes")) rc = parse_count(key, v, 0, &o->num_classes, e);
    else if (!strcmp(key, "multi_label")) rc = parse_bool(key, v, &o->multi_label, e);
    else if (!strcmp(key, "agnostic")) rc = parse_bool(key, v, &o->agnostic, e);
    else if (!strcmp(key, "letterbox_inverse")) {
        if (!strcmp(v, "ultralytics")) o->letterbox = YOLO_LB_ULTRALYTICS;
        else if (!strcmp(v, "meta")) o->letterbox = YOLO_LB_META;
        else rc = BAD(e, "letterbox_inverse: '%s' is not ultralytics or meta", v);
    } else return 0;
    return rc ? -1 : 1;
}

/* The shortest %.15g/%.16g/%.17g text that reads back as v. */
static void shortest(char *buf, size_t n, double v)
{
    for (int p = 15; p <= 17; p++) {
        snprintf(buf, n, "%.*g", p, v);
        if (strtod(buf, NULL) == v) return;
    }
}

const char *yolo_head_name(yolo_head_t h)
{
    static const char *const names[] = { "none", "yolov8", "yolov5", "yolov8-seg", "yolov8-pose" };
    return names[h];
}

int64_t yolo_extra(const yolo_opts_t *o)
{
    return o->head == YOLO_V8_SEG ? o->mask_coefs : o->head == YOLO_V8_POSE ? 3 * o->keypoints : 0;
}

char *yolo_opts_spec(const yolo_opts_t *o)
{
    if (o->head == YOLO_NONE) return NULL;
    size_t n = strlen(o->output) + strlen(o->protos) + 400;
    char *s = xmalloc(n), conf[32], iou[32];
    shortest(conf, sizeof conf, o->conf);
    shortest(iou, sizeof iou, o->iou);
    snprintf(s, n, "head=%s,output=%s,conf_threshold=%s,nms_iou=%s,max_det=%lld,max_nms=%lld,"
             "multi_label=%d,agnostic=%d,num_classes=%lld", yolo_head_name(o->head), o->output,
             conf, iou, (long long)o->max_det, (long long)o->max_nms, o->multi_label, o->agnostic,
             (long long)o->num_classes);
    size_t l = strlen(s);
    /* the layout keys only where they apply: a plain head's spec is as before */
    if (o->head == YOLO_V8_SEG)
        snprintf(s + l, n - l, ",protos=%s,mask_coefs=%lld", o->protos, (long long)o->mask_coefs);
    else if (o->head == YOLO_V8_POSE)
        snprintf(s + l, n - l, ",keypoints=%lld", (long long)o->keypoints);
    return s;
}

/* ---- the head as float32 ---- */

const float *yolo_f32(const tensor_t *t, float **own)
{
    *own = NULL;
    if (t->dtype == DT_FLOAT) return t->data;
    int64_t m = tensor_numel(t);
    *own = xmalloc((size_t)(m ? m : 1) * sizeof **own);
    for (int64_t i = 0; i < m; i++) (*own)[i] = (float)tensor_get_f64(t, i);
    return *own;
}

typedef struct head {
    const float *f;           /* the values, float32 */
    float *own;               /* f when converted here */
    int64_t n, nc;            /* anchors, classes */
    int v5;
} head_t;

/* v8: [4+nc, N], value k of anchor a at k*N + a; v5: [N, 5+nc] at a*C + k. */
static inline float at(const head_t *h, int64_t a, int64_t k)
{
    return h->v5 ? h->f[a * (h->nc + 5) + k] : h->f[k * h->n + a];
}

static int open_head(const tensor_t *t, const char *what, const yolo_opts_t *o, int64_t nlabels,
                     const char *labels_src, head_t *h, perr_t *e)
{
    memset(h, 0, sizeof *h);
    h->v5 = o->head == YOLO_V5;
    int64_t extra = yolo_extra(o);
    char layout[96], more[64] = "";
    if (o->head == YOLO_V8_SEG) snprintf(more, sizeof more, " + %lld mask coefficients", (long long)extra);
    if (o->head == YOLO_V8_POSE) snprintf(more, sizeof more, " + %lld keypoint values (3 x %lld)", (long long)extra,
                                          (long long)o->keypoints);
    if (h->v5) snprintf(layout, sizeof layout, "[1, N, 5+nc] (yolov5)");
    else snprintf(layout, sizeof layout, "[1, 4+nc%s, N] (%s)", extra ? (o->head == YOLO_V8_SEG ? "+nm" : "+3K") : "",
                  yolo_head_name(o->head));
    if (!dtype_is_float(t->dtype))
        return BAD(e, "%s: the YOLO head is %s: float values expected", what, dtype_name(t->dtype));
    if (t->ndim < 2 || t->ndim > 3)
        return BAD(e, "%s: the YOLO head has rank %d: expected %s", what, t->ndim, layout);
    if (t->ndim == 3 && t->dims[0] != 1)
        return BAD(e, "%s: the YOLO head holds a batch of %lld: one image per sample expected", what,
                   (long long)t->dims[0]);
    int64_t r = t->dims[t->ndim - 2], c = t->dims[t->ndim - 1];
    int64_t width = h->v5 ? c : r, fixed = h->v5 ? 5 : 4;
    h->n = h->v5 ? r : c;
    h->nc = width - fixed - extra;
    if (h->nc < 1)
        return BAD(e, "%s: the YOLO head's width is %lld: expected %s with nc >= 1, i.e. more than %lld%s", what,
                   (long long)width, layout, (long long)(fixed + extra), more);
    if (!o->num_classes && h->n < width)
        return BAD(e, "%s: the YOLO head [.., %lld, %lld] read as %s has fewer anchors (%lld) than values per "
                   "anchor (%lld): the other layout? (setting num_classes accepts it)", what, (long long)r,
                   (long long)c, layout, (long long)h->n, (long long)width);
    if (o->num_classes && h->nc != o->num_classes)
        return BAD(e, "%s: the YOLO head's width %lld is %lld + %lld classes%s, but num_classes is %lld", what,
                   (long long)width, (long long)fixed, (long long)h->nc, more, (long long)o->num_classes);
    if (nlabels && h->nc != nlabels)
        return BAD(e, "%s: the YOLO head's width %lld is %lld + %lld classes%s, but the label map%s%s%s has %lld", what,
                   (long long)width, (long long)fixed, (long long)h->nc, more, labels_src ? " (" : "",
                   labels_src ? labels_src : "", labels_src ? ")" : "", (long long)nlabels);
    h->f = yolo_f32(t, &h->own);
    return 0;
}

/* ---- candidates ---- */

typedef struct cands {
    int64_t n, cap;
    yolo_det_t *d;
} cands_t;

static void push(cands_t *c, int64_t a, int64_t cls, float s)
{
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 256;
        c->d = xrealloc(c->d, (size_t)c->cap * sizeof *c->d);
    }
    c->d[c->n++] = (yolo_det_t){ .score = s, .cls = cls, .anchor = a };
}

static int bad_value(const char *what, int64_t a, const char *part, int64_t cls, float v, perr_t *e)
{
    char k[48] = "";
    if (cls >= 0) snprintf(k, sizeof k, " of class %lld", (long long)cls);
    return BAD(e, "%s: anchor %lld: %s%s is %s", what, (long long)a, part, k, isnan(v) ? "NaN" : "infinite");
}

/* Per-anchor best class score (v8), checking every score is finite: a
 * pass over contiguous rows. */
static int v8_best(const head_t *h, const char *what, float *best, perr_t *e)
{
    for (int64_t a = 0; a < h->n; a++) best[a] = -INFINITY;
    for (int64_t c = 0; c < h->nc; c++) {
        const float *row = h->f + (4 + c) * h->n;
        for (int64_t a = 0; a < h->n; a++) {
            float v = row[a];
            if (!isfinite(v)) return bad_value(what, a, "the score", c, v, e);
            if (v > best[a]) best[a] = v;
        }
    }
    return 0;
}

/* v5: the products objectness x class score (float32), checking the
 * anchor's values are finite; *obj_ok: objectness > conf. */
static int v5_scores(const head_t *h, const char *what, int64_t a, float conf, float *s, int *obj_ok, perr_t *e)
{
    float obj = at(h, a, 4);
    if (!isfinite(obj)) return bad_value(what, a, "the objectness", -1, obj, e);
    *obj_ok = obj > conf;
    for (int64_t c = 0; c < h->nc; c++) {
        float v = at(h, a, 5 + c);
        if (!isfinite(v)) return bad_value(what, a, "the score", c, v, e);
        s[c] = v * obj;
    }
    return 0;
}

/* The candidates of one anchor from its nc scores s: multi-label every
 * class above conf, else the first class of the highest score. */
static void anchor_cands(cands_t *c, int64_t a, const float *s, int64_t nc, float conf, int multi)
{
    if (multi) {
        for (int64_t k = 0; k < nc; k++)
            if (s[k] > conf) push(c, a, k, s[k]);
        return;
    }
    int64_t j = 0;
    for (int64_t k = 1; k < nc; k++)
        if (s[k] > s[j]) j = k;
    if (s[j] > conf) push(c, a, j, s[j]);
}

static int collect(const head_t *h, const char *what, const yolo_opts_t *o, cands_t *c, perr_t *e)
{
    float conf = (float)o->conf;
    int multi = o->multi_label && h->nc > 1;
    float *s = xmalloc((size_t)h->nc * sizeof *s);
    int rc = 0;
    if (!h->v5) {
        float *best = xmalloc((size_t)(h->n ? h->n : 1) * sizeof *best);
        rc = v8_best(h, what, best, e);
        for (int64_t a = 0; !rc && a < h->n; a++) {
            if (!(best[a] > conf)) continue;
            for (int64_t k = 0; k < h->nc; k++) s[k] = at(h, a, 4 + k);
            anchor_cands(c, a, s, h->nc, conf, multi);
        }
        free(best);
    } else {
        for (int64_t a = 0; !rc && a < h->n; a++) {
            int obj_ok = 0;
            rc = v5_scores(h, what, a, conf, s, &obj_ok, e);
            if (!rc && obj_ok) anchor_cands(c, a, s, h->nc, conf, multi);
        }
    }
    free(s);
    return rc;
}

/* xywh to corners in float32 (Ultralytics' xywh2xyxy). */
static int set_box(const head_t *h, const char *what, yolo_det_t *d, perr_t *e)
{
    float cx = at(h, d->anchor, 0), cy = at(h, d->anchor, 1), w = at(h, d->anchor, 2), ht = at(h, d->anchor, 3);
    if (!isfinite(cx) || !isfinite(cy) || !isfinite(w) || !isfinite(ht))
        return BAD(e, "%s: anchor %lld: the box (%g, %g, %g, %g) is not finite", what, (long long)d->anchor, cx,
                   cy, w, ht);
    float hw = w / 2.0f, hh = ht / 2.0f;
    d->box[0] = cx - hw;
    d->box[1] = cy - hh;
    d->box[2] = cx + hw;
    d->box[3] = cy + hh;
    for (int k = 0; k < 4; k++)
        if (!isfinite(d->box[k]))
            return BAD(e, "%s: anchor %lld: the box's corners overflow float32", what, (long long)d->anchor);
    return 0;
}

/* ---- NMS ---- */

static inline float fmax_cpp(float a, float b) { return a < b ? b : a; }   /* std::max */
static inline float fmin_cpp(float a, float b) { return b < a ? b : a; }   /* std::min */

/* torchvision's nms_kernel_impl: float32 IoU of kept box p and candidate
 * q, compared with the threshold in double. */
static int overlaps(const yolo_det_t *p, float pa, const yolo_det_t *q, float qa, double thr)
{
    float xx1 = fmax_cpp(p->box[0], q->box[0]), yy1 = fmax_cpp(p->box[1], q->box[1]);
    float xx2 = fmin_cpp(p->box[2], q->box[2]), yy2 = fmin_cpp(p->box[3], q->box[3]);
    float w = fmax_cpp(0.0f, xx2 - xx1), h = fmax_cpp(0.0f, yy2 - yy1);
    float inter = w * h;
    float ovr = inter / (pa + qa - inter);
    return (double)ovr > thr;
}

static inline float area(const yolo_det_t *d)
{
    return (d->box[2] - d->box[0]) * (d->box[3] - d->box[1]);
}

/* Greedy NMS over the candidates in `order`; the kept ones (at most
 * max_det) go to out in order. A candidate is checked against the kept
 * boxes of its class only (a linked list per class). */
static int64_t nms(const cands_t *c, const int64_t *order, int64_t n, int64_t nc, const yolo_opts_t *o,
                   yolo_det_t *out)
{
    int64_t ngroups = o->agnostic ? 1 : nc;
    int64_t *first = xmalloc((size_t)ngroups * sizeof *first), *last = xmalloc((size_t)ngroups * sizeof *last);
    int64_t cap = n < o->max_det ? n : o->max_det;
    int64_t *next = xmalloc((size_t)(cap + 1) * sizeof *next);
    float *areas = xmalloc((size_t)(cap + 1) * sizeof *areas);
    for (int64_t g = 0; g < ngroups; g++) first[g] = last[g] = -1;
    int64_t kept = 0;
    for (int64_t r = 0; r < n && kept < cap; r++) {
        const yolo_det_t *q = &c->d[order[r]];
        int64_t g = o->agnostic ? 0 : q->cls;
        float qa = area(q);
        int drop = 0;
        for (int64_t k = first[g]; k >= 0 && !drop; k = next[k]) drop = overlaps(&out[k], areas[k], q, qa, o->iou);
        if (drop) continue;
        out[kept] = *q;
        areas[kept] = qa;
        next[kept] = -1;
        if (last[g] >= 0) next[last[g]] = kept;
        else first[g] = kept;
        last[g] = kept++;
    }
    free(first);
    free(last);
    free(next);
    free(areas);
    return kept;
}

int yolo_decode(const tensor_t *t, const char *what, const yolo_opts_t *o, int64_t nlabels, const char *labels_src,
                yolo_det_t **out, int64_t *nout, perr_t *e)
{
    *out = NULL;
    *nout = 0;
    if (o->head == YOLO_NONE) return INTERNAL(e, "yolo_decode: no head");
    head_t h;
    if (open_head(t, what, o, nlabels, labels_src, &h, e)) return -1;
    cands_t c = { 0 };
    int rc = collect(&h, what, o, &c, e);
    for (int64_t i = 0; !rc && i < c.n; i++) rc = set_box(&h, what, &c.d[i], e);
    int64_t *order = NULL, *tmp = NULL;
    uint64_t *key = NULL, *tkey = NULL;
    if (!rc) {
        int64_t n = c.n;
        order = xmalloc((size_t)(n + 1) * sizeof *order);
        tmp = xmalloc((size_t)(n + 1) * sizeof *tmp);
        key = xmalloc((size_t)(n + 1) * sizeof *key);
        tkey = xmalloc((size_t)(n + 1) * sizeof *tkey);
        /* candidate scores are > conf >= 0, finite: for positive floats the
         * bit pattern orders as the value, so its complement sorts them
         * best first; the radix sort is stable, ties keep candidate order */
        for (int64_t i = 0; i < n; i++) {
            uint32_t bits;
            memcpy(&bits, &c.d[i].score, sizeof bits);
            order[i] = i;
            key[i] = 0xffffffffu - bits;
        }
        coco_radix_sort(key, order, n, tkey, tmp);
        if (n > o->max_nms) n = o->max_nms;
        *out = xmalloc((size_t)((n < o->max_det ? n : o->max_det) + 1) * sizeof **out);   /* what the input backs */
        *nout = nms(&c, order, n, h.nc, o, *out);
    }
    free(order);
    free(tmp);
    free(key);
    free(tkey);
    free(c.d);
    free(h.own);
    return rc;
}
