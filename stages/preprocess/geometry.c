/* geometry.c — where the original image goes in the network input, for the
 * three resize modes, computed as the reference implementations do so the
 * pixels line up exactly:
 *   stretch      resize to W x H.
 *   letterbox    Ultralytics' LetterBox (auto=False): r = min(H/h, W/w),
 *                new size round(w*r) x round(h*r) (Python round: half to even),
 *                padding split as round(d/2 - 0.1) before and round(d/2 + 0.1) after.
 *   center-crop  torchvision Resize(shorter) + CenterCrop((H, W)): shorter side
 *                to `shorter`, the other int(shorter * long / short), then the
 *                window at round((size - crop) / 2).
 *   fit-height   the text recognizers' resize (PaddleOCR's resize_norm_img):
 *                height H, width min(W, ceil(H * (w / h))) in double as Python
 *                computes it, placed top-left, padded on the right to W.
 * The map for map-eval: input = original * scale + offset, per axis. */
#include <math.h>
#include "prep.h"

/* Python's round() on a double: to nearest, ties to even. */
static int64_t py_round(double v)
{
    return (int64_t)nearbyint(v);
}

int prep_geometry(const prep_cfg_t *p, int64_t w, int64_t h, prep_geom_t *g, perr_t *e)
{
    *g = (prep_geom_t){ 0 };
    if (p->mode == MODE_STRETCH) {
        g->rw = p->w;
        g->rh = p->h;
    } else if (p->mode == MODE_LETTERBOX) {
        double ry = (double)p->h / (double)h, rx = (double)p->w / (double)w;
        double r = ry < rx ? ry : rx;
        g->rw = py_round((double)w * r);
        g->rh = py_round((double)h * r);
        if (g->rw < 1)
            g->rw = 1;
        if (g->rh < 1)
            g->rh = 1;
        double dw = (double)(p->w - g->rw) / 2, dh = (double)(p->h - g->rh) / 2;
        g->top = py_round(dh - 0.1);
        g->bottom = py_round(dh + 0.1);
        g->left = py_round(dw - 0.1);
        g->right = py_round(dw + 0.1);
    } else if (p->mode == MODE_FIT_HEIGHT) {
        double ratio = (double)w / (double)h, cw = ceil((double)p->h * ratio);
        g->rh = p->h;
        g->rw = cw > (double)p->w ? p->w : (int64_t)cw;
        if (g->rw < 1)
            g->rw = 1;
        g->right = p->w - g->rw;
    } else {
        int64_t s = p->shorter;
        if (w <= h) {
            g->rw = s;
            g->rh = (int64_t)((double)s * (double)h / (double)w);
        } else {
            g->rh = s;
            g->rw = (int64_t)((double)s * (double)w / (double)h);
        }
        if (g->rw < p->w || g->rh < p->h)
            return BAD(e, "center-crop: the image resized to %lldx%lld (resize.shorter %lld) "
                          "is smaller than the %lldx%lld crop",
                       (long long)g->rw, (long long)g->rh, (long long)s, (long long)p->w,
                       (long long)p->h);
        g->crop_x = py_round((double)(g->rw - p->w) / 2.0);
        g->crop_y = py_round((double)(g->rh - p->h) / 2.0);
    }
    if (g->rw > 1000000 || g->rh > 1000000 || g->rw > IMAGE_MAX_PIXELS / g->rh)
        return BAD(e, "resized image of %lldx%lld is too large", (long long)g->rw,
                   (long long)g->rh);
    g->scale_x = (double)g->rw / (double)w;
    g->scale_y = (double)g->rh / (double)h;
    g->offset_x = (double)(g->left - g->crop_x);
    g->offset_y = (double)(g->top - g->crop_y);
    return 0;
}
