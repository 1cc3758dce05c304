/* yolo_task.c — masks (YOLOv8-seg) and keypoints (YOLOv8-pose) of the
 * detections yolo_decode kept, in original image pixels (rules: yolo_task.h
 * and docs/metrics-detection.md). Only the box's part of the input-sized
 * mask is ever computed: outside the box crop_mask zeroes it anyway, so a
 * detection costs its box's area, not the image's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "coco/yolo_task.h"
#include "util/fsutil.h"

void yolo_geom_box(const yolo_geom_t *g, const float in[4], double out[4])
{
    for (int k = 0; k < 4; k++) {
        out[k] = k & 1 ? ((double)in[k] - g->oy) / g->sy : ((double)in[k] - g->ox) / g->sx;
        if (g->clip) out[k] = fmin(fmax(out[k], 0), k & 1 ? g->h : g->w);
    }
}

/* Value k (row of [4+nc+extra, N]) of anchor a, as float32. */
static float head_at(const tensor_t *t, int64_t k, int64_t a)
{
    return (float)tensor_get_f64(t, k * t->dims[t->ndim - 1] + a);
}

int yolo_protos_check(const tensor_t *p, const char *what, const yolo_opts_t *o, perr_t *e)
{
    if (!dtype_is_float(p->dtype))
        return BAD(e, "%s: the proto tensor is %s: float values expected", what, dtype_name(p->dtype));
    if (p->ndim < 3 || p->ndim > 4 || (p->ndim == 4 && p->dims[0] != 1))
        return BAD(e, "%s: the proto tensor has shape of rank %d%s: expected [1, nm, mh, mw]", what, p->ndim,
                   p->ndim == 4 ? " with a batch" : "");
    int64_t nm = p->dims[p->ndim - 3], mh = p->dims[p->ndim - 2], mw = p->dims[p->ndim - 1];
    if (nm != o->mask_coefs)
        return BAD(e, "%s: the proto tensor has %lld planes, but the head carries %lld mask coefficients "
                   "(mask_coefs)", what, (long long)nm, (long long)o->mask_coefs);
    if (mh < 1 || mw < 1) return BAD(e, "%s: the proto planes are %lldx%lld: empty", what, (long long)mh, (long long)mw);
    int64_t n = tensor_numel(p);
    for (int64_t i = 0; i < n; i++) {
        double v = tensor_get_f64(p, i);
        if (!isfinite(v))
            return BAD(e, "%s: proto plane %lld, row %lld, column %lld is %s", what, (long long)(i / (mh * mw)),
                       (long long)(i / mw % mh), (long long)(i % mw), isnan(v) ? "NaN" : "infinite");
    }
    return 0;
}

/* ---- bilinear resampling, one axis ---- */

typedef struct tap { int64_t i0, i1; double l0, l1; } tap_t;

/* The two source indices and weights of each of n destination indices
 * resampling m source ones, as PyTorch's bilinear (align_corners=False)
 * computes them in double: source s = (m / n) * (dst + 0.5) - 0.5 rounded
 * once (a fused multiply-add: PyTorch's build contracts it, and a tie such
 * as s = 31.5 against 31.500000000000004 decides a pixel), 0 when
 * negative; i0 = int(s), i1 = i0 + 1 unless i0 is the last; l1 = s - i0
 * (kept at the last index too, where both taps read i0), l0 = 1 - l1.
 * cv2's INTER_LINEAR clamps the same way. */
static tap_t *taps(int64_t m, int64_t n)
{
    tap_t *t = xmalloc((size_t)n * sizeof *t);
    double scale = (double)m / (double)n;
    for (int64_t d = 0; d < n; d++) {
        double s = fma(scale, (double)d + 0.5, -0.5);   /* one rounding, as PyTorch's CPU kernel */
        if (s < 0) s = 0;
        int64_t i0 = (int64_t)s;
        if (i0 > m - 1) i0 = m - 1;   /* cannot happen for n >= 1; kept as a guard */
        t[d].i0 = i0;
        t[d].i1 = i0 < m - 1 ? i0 + 1 : i0;
        t[d].l1 = s - (double)i0;
        t[d].l0 = 1 - t[d].l1;
    }
    return t;
}

static inline double lerp2(const tap_t *ty, const tap_t *tx, double v00, double v01, double v10, double v11)
{
    return ty->l0 * (tx->l0 * v00 + tx->l1 * v01) + ty->l1 * (tx->l0 * v10 + tx->l1 * v11);
}

/* ---- run-length output ---- */

typedef struct runs { uint32_t *c; int64_t n, cap; int cur; } runs_t;

static void run_open(runs_t *r)
{
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 64;
        r->c = xrealloc(r->c, (size_t)r->cap * sizeof *r->c);
    }
    r->c[r->n++] = 0;
}

/* count pixels of value v; the runs start with background (maskApi). */
static void run_add(runs_t *r, int v, uint32_t count)
{
    if (r->n == 0) run_open(r), r->cur = 0;
    if (v != r->cur) run_open(r), r->cur = v;
    r->c[r->n - 1] += count;
}

/* ---- masks ---- */

typedef struct win { int64_t r0, r1, c0, c1; } win_t;   /* rows [r0, r1), columns [c0, c1) */

/* The input pixels crop_mask keeps: c >= x1, c < x2 (float32), within the input. */
static void box_window(const float box[4], int64_t in_w, int64_t in_h, win_t *b)
{
    b->c0 = in_w, b->c1 = 0, b->r0 = in_h, b->r1 = 0;
    for (int64_t c = 0; c < in_w; c++)
        if ((float)c >= box[0] && (float)c < box[2]) { if (c < b->c0) b->c0 = c; b->c1 = c + 1; }
    for (int64_t r = 0; r < in_h; r++)
        if ((float)r >= box[1] && (float)r < box[3]) { if (r < b->r0) b->r0 = r; b->r1 = r + 1; }
}

/* scale_masks/scale_image's cut of the image part: [int(pad), int(n - pad)). */
static int cut(double n, double pad, int64_t *lo, int64_t *hi)
{
    if (!(pad > -1 && pad < n)) return -1;
    *lo = (int64_t)pad;
    *hi = (int64_t)(n - pad);
    return *hi > *lo ? 0 : -1;
}

/* Step 1-2 inside the box window b: bits[(r - r0) * width + c - c0] = the
 * resized logit > 0. Proto logits are computed only where a tap reads them. */
static void input_mask(const float *proto, int64_t nm, int64_t mh, int64_t mw, const double *coef, const win_t *pc,
                       const tap_t *ty, const tap_t *tx, const win_t *b, uint8_t *bits)
{
    int64_t y0 = ty[b->r0].i0, y1 = ty[b->r1 - 1].i1, x0 = tx[b->c0].i0, x1 = tx[b->c1 - 1].i1;
    int64_t lw = x1 - x0 + 1, lh = y1 - y0 + 1;
    double *L = xcalloc((size_t)(lw * lh), sizeof *L);
    for (int64_t j = 0; j < nm; j++)
        for (int64_t y = y0; y <= y1; y++) {
            const float *row = proto + (j * mh + pc->r0 + y) * mw + pc->c0;
            double *lr = L + (y - y0) * lw - x0;
            for (int64_t x = x0; x <= x1; x++) lr[x] += coef[j] * (double)row[x];
        }
    int64_t width = b->c1 - b->c0;
    for (int64_t r = b->r0; r < b->r1; r++) {
        const tap_t *t = &ty[r];
        const double *a = L + (t->i0 - y0) * lw - x0, *c = L + (t->i1 - y0) * lw - x0;
        for (int64_t k = b->c0; k < b->c1; k++) {
            const tap_t *s = &tx[k];
            bits[(r - b->r0) * width + k - b->c0] = lerp2(t, s, a[s->i0], a[s->i1], c[s->i0], c[s->i1]) > 0;
        }
    }
    free(L);
}

/* Step 3: the input mask (nonzero only in window b) through the cut
 * [img] resized to h x w, column by column into runs. */
static void original_runs(const uint8_t *bits, const win_t *b, const win_t *img, int64_t h, int64_t w, runs_t *out)
{
    tap_t *ty = taps(img->r1 - img->r0, h), *tx = taps(img->c1 - img->c0, w);
    int64_t width = b->c1 - b->c0;
#define IN(r, c) ((r) >= b->r0 && (r) < b->r1 && (c) >= b->c0 && (c) < b->c1 ? (double)bits[((r) - b->r0) * width + (c) - b->c0] : 0.0)
    for (int64_t x = 0; x < w; x++) {
        int64_t c0 = tx[x].i0 + img->c0, c1 = tx[x].i1 + img->c0;
        if (!((c0 >= b->c0 && c0 < b->c1) || (c1 >= b->c0 && c1 < b->c1))) {
            run_add(out, 0, (uint32_t)h);
            continue;
        }
        for (int64_t y = 0; y < h; y++) {
            int64_t r0 = ty[y].i0 + img->r0, r1 = ty[y].i1 + img->r0;
            double v = lerp2(&ty[y], &tx[x], IN(r0, c0), IN(r0, c1), IN(r1, c0), IN(r1, c1));
            run_add(out, v >= 0.5, 1);
        }
    }
#undef IN
    free(ty);
    free(tx);
}

int yolo_seg_mask(const tensor_t *t, const tensor_t *protos, int64_t nc, const yolo_det_t *d, const yolo_geom_t *g,
                  const char *what, coco_mask_t *m, perr_t *e)
{
    memset(m, 0, sizeof *m);
    int64_t nm = protos->dims[protos->ndim - 3], mh = protos->dims[protos->ndim - 2], mw = protos->dims[protos->ndim - 1];
    int64_t in_w = (int64_t)g->in_w, in_h = (int64_t)g->in_h, w = (int64_t)g->w, h = (int64_t)g->h;
    double gain = fmin((double)mh / g->in_h, (double)mw / g->in_w);
    win_t pc, img;
    if (cut((double)mh, ((double)mh - g->in_h * gain) / 2, &pc.r0, &pc.r1) ||
        cut((double)mw, ((double)mw - g->in_w * gain) / 2, &pc.c0, &pc.c1))
        return BAD(e, "%s: the proto planes (%lldx%lld) hold no part of the %lldx%lld input", what, (long long)mh,
                   (long long)mw, (long long)in_h, (long long)in_w);
    if (cut(g->in_h, g->oy, &img.r0, &img.r1) || cut(g->in_w, g->ox, &img.c0, &img.c1))
        return BAD(e, "%s: masks need letterbox or stretch preprocessing: the image's part of the %lldx%lld input "
                   "(offset %g, %g) is empty", what, (long long)in_h, (long long)in_w, g->ox, g->oy);
    double *coef = xmalloc((size_t)nm * sizeof *coef);
    for (int64_t j = 0; j < nm; j++) {
        float v = head_at(t, 4 + nc + j, d->anchor);
        if (!isfinite(v)) {
            free(coef);
            return BAD(e, "%s: anchor %lld: mask coefficient %lld is %s", what, (long long)d->anchor, (long long)j,
                       isnan(v) ? "NaN" : "infinite");
        }
        coef[j] = v;
    }
    float *own;
    const float *pv = yolo_f32(protos, &own);
    win_t b;
    box_window(d->box, in_w, in_h, &b);
    runs_t r = { 0 };
    int rc = 0;
    if (b.c1 > b.c0 && b.r1 > b.r0) {
        tap_t *ty = taps(pc.r1 - pc.r0, in_h), *tx = taps(pc.c1 - pc.c0, in_w);
        uint8_t *bits = xmalloc((size_t)((b.r1 - b.r0) * (b.c1 - b.c0)));
        input_mask(pv, nm, mh, mw, coef, &pc, ty, tx, &b, bits);
        original_runs(bits, &b, &img, h, w, &r);
        free(bits);
        free(ty);
        free(tx);
    } else {
        for (int64_t x = 0; x < w; x++) run_add(&r, 0, (uint32_t)h);
    }
    rc = coco_rle_from_counts(m, r.c, (uint32_t)r.n, (uint32_t)h, (uint32_t)w, what, e);
    free(r.c);
    free(own);
    free(coef);
    return rc;
}

int yolo_pose_kpts(const tensor_t *t, int64_t nc, int64_t K, const yolo_det_t *d, const yolo_geom_t *g,
                   const char *what, double *out, perr_t *e)
{
    for (int64_t k = 0; k < K; k++) {
        float v[3];
        for (int q = 0; q < 3; q++) {
            v[q] = head_at(t, 4 + nc + 3 * k + q, d->anchor);
            if (!isfinite(v[q]))
                return BAD(e, "%s: anchor %lld: keypoint %lld's %s is %s", what, (long long)d->anchor, (long long)k,
                           q == 0 ? "x" : q == 1 ? "y" : "confidence", isnan(v[q]) ? "NaN" : "infinite");
        }
        double x = ((double)v[0] - g->ox) / g->sx, y = ((double)v[1] - g->oy) / g->sy;
        out[3 * k] = fmin(fmax(x, 0), g->w);          /* clip_coords */
        out[3 * k + 1] = fmin(fmax(y, 0), g->h);
        out[3 * k + 2] = v[2];
    }
    return 0;
}

void coco_dets_push_shape(coco_dets_t *d, const coco_det_t *det, coco_mask_t *mask, const double *kpts)
{
    int64_t cap = d->cap;
    coco_dets_push(d, det);
    if (d->cap != cap) {
        d->area = xrealloc(d->area, (size_t)d->cap * sizeof *d->area);
        if (d->type == COCO_SEGM) d->masks = xrealloc(d->masks, (size_t)d->cap * sizeof *d->masks);
        if (d->type == COCO_KEYPOINTS) d->kpts = xrealloc(d->kpts, (size_t)(d->cap * 3 * d->nkpt) * sizeof *d->kpts);
    }
    int64_t i = d->n - 1;
    d->area[i] = det->bbox[2] * det->bbox[3];
    if (d->type == COCO_SEGM) {
        d->masks[i] = *mask;
        memset(mask, 0, sizeof *mask);
    }
    if (d->type == COCO_KEYPOINTS) memcpy(d->kpts + i * 3 * d->nkpt, kpts, (size_t)(3 * d->nkpt) * sizeof *kpts);
}
