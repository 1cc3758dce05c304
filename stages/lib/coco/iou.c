/* iou.c — the measures segm and keypoints evaluation match with, and the
 * task settings (iou type, OKS sigmas).
 *
 * OKS follows cocoeval.py's computeOks in its float64 order of operations:
 * per keypoint e = (dx^2 + dy^2) / (2 sigma)^2 / (area + eps) / 2, then
 * sum(exp(-e)) / count with numpy's summation, over the GT's labelled
 * keypoints (v > 0); a GT with none labelled measures, for every keypoint,
 * the distance outside its box enlarged by its size on each side. exp is
 * the C library's, which numpy uses too except on AVX512F CPUs, where its
 * own may differ in the last bit (docs/metrics-coco.md).
 */
#include <float.h>
#include <math.h>
#include <string.h>
#include "coco/iou.h"

/* cocoeval.py's Params.setKpParams: COCO's 17 person keypoints, / 10 */
static const double coco_person_sigmas[17] = {
    .26 / 10.0, .25 / 10.0, .25 / 10.0, .35 / 10.0, .35 / 10.0, .79 / 10.0, .79 / 10.0,
    .72 / 10.0, .72 / 10.0, .62 / 10.0, .62 / 10.0, 1.07 / 10.0, 1.07 / 10.0, .87 / 10.0,
    .87 / 10.0, .89 / 10.0, .89 / 10.0,
};

void coco_task_init(coco_task_t *t, coco_iou_type_t type)
{
    memset(t, 0, sizeof *t);
    t->type = type;
    t->nkpt = 17;
    memcpy(t->sigmas, coco_person_sigmas, sizeof coco_person_sigmas);
}

static const char *const type_names[] = { "bbox", "segm", "keypoints" };

int coco_iou_type_parse(const char *s)
{
    for (int i = 0; i < 3; i++)
        if (!strcmp(s, type_names[i])) return i;
    return -1;
}

const char *coco_iou_type_name(coco_iou_type_t t)
{
    return type_names[t];
}

double coco_mask_iou(const coco_mask_t *dt, const coco_mask_t *gt, int crowd, double min_iou)
{
    if (!coco_rle_may_reach(dt, gt, crowd, min_iou)) return 0;
    return coco_rle_iou(dt, gt, crowd);
}

static double pos(double v)
{
    return v > 0 ? v : 0;
}

double coco_oks(const double *d, const double *g, const double *gbox, double garea,
                const coco_task_t *t)
{
    int K = t->nkpt, labelled = 0;
    for (int k = 0; k < K; k++) labelled += g[3 * k + 2] > 0;
    double x0 = gbox[0] - gbox[2], x1 = gbox[0] + gbox[2] * 2;
    double y0 = gbox[1] - gbox[3], y1 = gbox[1] + gbox[3] * 2;
    double ex[COCO_MAX_KPTS];
    int n = 0;
    for (int k = 0; k < K; k++) {
        double xd = d[3 * k], yd = d[3 * k + 1], dx, dy;
        if (labelled) {
            if (!(g[3 * k + 2] > 0)) continue;
            dx = xd - g[3 * k];
            dy = yd - g[3 * k + 1];
        } else {
            dx = pos(x0 - xd) + pos(xd - x1);
            dy = pos(y0 - yd) + pos(yd - y1);
        }
        double s2 = t->sigmas[k] * 2, var = s2 * s2;
        double e = (dx * dx + dy * dy) / var / (garea + DBL_EPSILON) / 2;
        ex[n++] = exp(-e);
    }
    return coco_np_sum(ex, n) / (double)n;
}
