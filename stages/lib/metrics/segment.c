/* segment.c — semantic segmentation by MMSegmentation's IoU metric (one
 * confusion matrix over every pixel of the data set, ignore_index left out,
 * classes absent from both prediction and GT NaN and left out of the mean)
 * and matting errors of soft masks (docs/metrics-segmentation.md). Counts are
 * integers, so the totals do not depend on the order samples come in. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "metrics/metrics.h"

void seg_cm_init(seg_cm_t *c, int64_t nc)
{
    c->nc = nc;
    c->cm = xcalloc((size_t)(nc * (nc + 1)), sizeof *c->cm);
    c->ignored = 0;
}

void seg_cm_free(seg_cm_t *c)
{
    free(c->cm);
    c->cm = NULL;
}

int seg_cm_add(seg_cm_t *c, const int64_t *pred, const uint8_t *gt, int64_t n, int ignore, const char *what,
               perr_t *e)
{
    /* checked before anything is counted: a bad map adds nothing */
    for (int64_t i = 0; i < n; i++)
        if (gt[i] != ignore && gt[i] >= c->nc)
            return BAD(e, "%s: pixel %lld (row-major) holds class %d, not one of the %lld classes nor ignore_index %d",
                       what, (long long)i, gt[i], (long long)c->nc, ignore);
    for (int64_t i = 0; i < n; i++) {
        if (gt[i] == ignore) { c->ignored++; continue; }
        /* a prediction outside the classes (a pixel whose scores are all NaN)
         * goes to the extra column: a false negative of its GT class and no
         * class's false positive, as MMSegmentation's histc drops it */
        int64_t p = pred[i] >= 0 && pred[i] < c->nc ? pred[i] : c->nc;
        c->cm[gt[i] * (c->nc + 1) + p]++;
    }
    return 0;
}

void seg_scores_compute(const seg_cm_t *c, seg_scores_t *s)
{
    int64_t nc = c->nc;
    s->iou = xmalloc((size_t)nc * sizeof *s->iou);
    s->acc = xmalloc((size_t)nc * sizeof *s->acc);
    uint64_t tp_all = 0, gt_all = 0;
    double iou_sum = 0, acc_sum = 0;
    int64_t n_iou = 0, n_acc = 0;
    for (int64_t k = 0; k < nc; k++) {
        uint64_t tp = c->cm[k * (nc + 1) + k], gt = 0, pr = 0;
        for (int64_t j = 0; j <= nc; j++) gt += c->cm[k * (nc + 1) + j];
        for (int64_t j = 0; j < nc; j++) pr += c->cm[j * (nc + 1) + k];
        uint64_t uni = gt + pr - tp;
        s->iou[k] = uni ? (double)tp / (double)uni : NAN;
        s->acc[k] = gt ? (double)tp / (double)gt : NAN;
        if (uni) { iou_sum += s->iou[k]; n_iou++; }
        if (gt) { acc_sum += s->acc[k]; n_acc++; }
        tp_all += tp;
        gt_all += gt;
    }
    s->present = n_iou;
    s->miou = n_iou ? iou_sum / (double)n_iou : NAN;
    s->macc = n_acc ? acc_sum / (double)n_acc : NAN;
    s->aacc = gt_all ? (double)tp_all / (double)gt_all : NAN;
}

void seg_scores_free(seg_scores_t *s)
{
    free(s->iou);
    free(s->acc);
    s->iou = s->acc = NULL;
}

void seg_argmax(const float *logits, int64_t nc, int64_t npix, int64_t *out)
{
    for (int64_t i = 0; i < npix; i++) {
        int64_t best = -1;
        float bv = 0;
        for (int64_t k = 0; k < nc; k++) {
            float v = logits[k * npix + i];
            if (isnan(v)) continue;
            if (best < 0 || v > bv) { best = k; bv = v; }
        }
        out[i] = best;
    }
}

/* 1 where the 3x3 neighbourhood of (y, x) (clipped at the image's edges)
 * holds alpha on both sides of 0.5. */
static int is_edge(const float *gt, int64_t h, int64_t w, int64_t y, int64_t x)
{
    int lo = 0, hi = 0;
    for (int64_t dy = -1; dy <= 1; dy++)
        for (int64_t dx = -1; dx <= 1; dx++) {
            int64_t yy = y + dy, xx = x + dx;
            if (yy < 0 || yy >= h || xx < 0 || xx >= w) continue;
            if (gt[yy * w + xx] > 0.5f) hi = 1; else lo = 1;
        }
    return lo && hi;
}

int mat_add(mat_sums_t *m, const float *pred, const float *gt, int64_t h, int64_t w, int radius, perr_t *e)
{
    int64_t n = h * w;
    uint8_t *edge = xcalloc((size_t)n, 1), *band = xcalloc((size_t)n, 1);
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++) edge[y * w + x] = (uint8_t)is_edge(gt, h, w, y, x);
    /* dilate by radius (Chebyshev): rows, then columns */
    uint8_t *tmp = xcalloc((size_t)n, 1);
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++)
            for (int64_t d = -radius; d <= radius && !tmp[y * w + x]; d++)
                if (x + d >= 0 && x + d < w && edge[y * w + x + d]) tmp[y * w + x] = 1;
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++)
            for (int64_t d = -radius; d <= radius && !band[y * w + x]; d++)
                if (y + d >= 0 && y + d < h && tmp[(y + d) * w + x]) band[y * w + x] = 1;
    for (int64_t i = 0; i < n; i++) {
        double p = pred[i];
        if (!(p >= 0)) p = 0;   /* also NaN: the mask is clipped to [0, 1] */
        if (p > 1) p = 1;
        double d = fabs(p - (double)gt[i]);
        m->abs_sum += d;
        m->sq_sum += d * d;
        m->n++;
        if (band[i]) { m->band_abs_sum += d; m->band_n++; }
    }
    free(edge); free(band); free(tmp);
    (void)e;
    return 0;
}
