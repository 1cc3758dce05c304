/* restore.c — PSNR and SSIM of restored images, in the two conventions
 * published numbers use: scikit-image's (Wang et al. 2004 with a Gaussian
 * window, scipy's reflect border, the window's radius cropped before the
 * mean) and BasicSR's (crop_border, optional BT.601 Y computed with its
 * float32 steps, SSIM over the valid region of an 11x11 window). The rules
 * are in docs/metrics-restoration.md; tests/stage/task_eval_restore.t
 * compares both against their references. All sums run in double in a fixed
 * order, so the result does not depend on threads or ISA. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "metrics/metrics.h"

#define SSIM_R 5          /* radius: int(3.5 * 1.5 + 0.5) in skimage, 11 taps in BasicSR */
#define SSIM_TAPS (2 * SSIM_R + 1)

void img_from_chw(const float *chw, int64_t c, int64_t h, int64_t w, int max, int no_round, uint8_t *hwc)
{
    int64_t plane = h * w;
    float top = (float)max;                      /* exact: max <= 65535 */
    for (int64_t ch = 0; ch < c; ch++)
        for (int64_t i = 0; i < plane; i++) {
            float x = chw[ch * plane + i];
            if (!(x >= 0.0f)) x = 0.0f;          /* also NaN */
            if (x > top) x = top;
            if (max != 1) x = x / top;           /* (x - 0) / (max - 0): tensor2img's min_max */
            float y = x * 255.0f;                /* float32, as the tensor is */
            hwc[i * c + ch] = (uint8_t)(no_round ? y : rintf(y));   /* nearest, ties to even */
        }
}

static double psnr_of_mse(double mse)
{
    if (mse == 0) return INFINITY;
    return 10.0 * log10(255.0 * 255.0 / mse);
}

double psnr_skimage(const uint8_t *a, const uint8_t *b, size_t n)
{
    /* squared differences of bytes are integers: their sum is exact, as
     * numpy's float64 sum of them is (below 2^53) */
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++) {
        int d = (int)a[i] - (int)b[i];
        s += (uint64_t)(d * d);
    }
    return psnr_of_mse((double)s / (double)n);
}

/* The normalised 1-D Gaussian of scipy.ndimage (and cv2.getGaussianKernel):
 * exp(-x^2 / (2 sigma^2)) for x = -5..5, divided by its sum. */
static void gauss_taps(double *k)
{
    double sum = 0;
    for (int i = 0; i < SSIM_TAPS; i++) {
        double x = i - SSIM_R;
        k[i] = exp(-0.5 / (1.5 * 1.5) * x * x);
        sum += k[i];
    }
    for (int i = 0; i < SSIM_TAPS; i++) k[i] /= sum;
}

/* scipy.ndimage's 'reflect' index (d c b a | a b c d | d c b a). */
static int64_t reflect(int64_t i, int64_t n)
{
    while (i < 0 || i >= n) i = i < 0 ? -i - 1 : 2 * n - i - 1;
    return i;
}

/* out = Gaussian of in along rows, then columns (scipy's axis order), over
 * the whole h x w plane with reflect borders. */
static void gauss_full(const double *in, double *out, double *tmp, int64_t h, int64_t w, const double *k)
{
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++) {
            double s = 0;
            for (int t = 0; t < SSIM_TAPS; t++) s += k[t] * in[reflect(y + t - SSIM_R, h) * w + x];
            tmp[y * w + x] = s;
        }
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++) {
            double s = 0;
            for (int t = 0; t < SSIM_TAPS; t++) s += k[t] * tmp[y * w + reflect(x + t - SSIM_R, w)];
            out[y * w + x] = s;
        }
}

/* The filtered planes of one channel pair: mean of x, y, xx, yy, xy. */
typedef struct ssim_planes {
    double *ux, *uy, *uxx, *uyy, *uxy, *prod, *tmp;
} ssim_planes_t;

static void planes_alloc(ssim_planes_t *p, size_t n)
{
    double **all[] = {&p->ux, &p->uy, &p->uxx, &p->uyy, &p->uxy, &p->prod, &p->tmp};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) *all[i] = xmalloc(n * sizeof(double));
}

static void planes_free(ssim_planes_t *p)
{
    free(p->ux); free(p->uy); free(p->uxx); free(p->uyy); free(p->uxy); free(p->prod); free(p->tmp);
}

/* SSIM of one pixel from the filtered moments (population covariance). */
static double ssim_px(double ux, double uy, double uxx, double uyy, double uxy)
{
    const double c1 = (0.01 * 255) * (0.01 * 255), c2 = (0.03 * 255) * (0.03 * 255);
    double vx = uxx - ux * ux, vy = uyy - uy * uy, vxy = uxy - ux * uy;
    double a1 = 2 * ux * uy + c1, a2 = 2 * vxy + c2;
    double b1 = ux * ux + uy * uy + c1, b2 = vx + vy + c2;
    return (a1 * a2) / (b1 * b2);
}

typedef void (*gauss_fn)(const double *in, double *out, double *tmp, int64_t h, int64_t w, const double *k);

/* The five filtered moments of two h x w planes: E[x], E[y], E[x²], E[y²], E[xy]. */
static void filter_moments(const double *x, const double *y, int64_t h, int64_t w, ssim_planes_t *p, const double *k,
                           gauss_fn gauss)
{
    int64_t n = h * w;
    gauss(x, p->ux, p->tmp, h, w, k);
    gauss(y, p->uy, p->tmp, h, w, k);
    for (int64_t i = 0; i < n; i++) p->prod[i] = x[i] * x[i];
    gauss(p->prod, p->uxx, p->tmp, h, w, k);
    for (int64_t i = 0; i < n; i++) p->prod[i] = y[i] * y[i];
    gauss(p->prod, p->uyy, p->tmp, h, w, k);
    for (int64_t i = 0; i < n; i++) p->prod[i] = x[i] * y[i];
    gauss(p->prod, p->uxy, p->tmp, h, w, k);
}

/* Mean SSIM of two h x w double planes, skimage's way. */
static double ssim_plane_skimage(const double *x, const double *y, int64_t h, int64_t w, ssim_planes_t *p,
                                 const double *k)
{
    filter_moments(x, y, h, w, p, k, gauss_full);
    double s = 0;
    for (int64_t r = SSIM_R; r < h - SSIM_R; r++)
        for (int64_t c = SSIM_R; c < w - SSIM_R; c++) {
            int64_t i = r * w + c;
            s += ssim_px(p->ux[i], p->uy[i], p->uxx[i], p->uyy[i], p->uxy[i]);
        }
    return s / (double)((h - 2 * SSIM_R) * (w - 2 * SSIM_R));
}

double ssim_skimage(const uint8_t *a, const uint8_t *b, int64_t h, int64_t w, int c)
{
    if (h < SSIM_TAPS || w < SSIM_TAPS || c < 1) return NAN;
    size_t n = (size_t)(h * w);
    double k[SSIM_TAPS], *x = xmalloc(n * sizeof *x), *y = xmalloc(n * sizeof *y), sum = 0;
    ssim_planes_t p;
    gauss_taps(k);
    planes_alloc(&p, n);
    for (int ch = 0; ch < c; ch++) {
        for (size_t i = 0; i < n; i++) { x[i] = a[i * c + ch]; y[i] = b[i * c + ch]; }
        sum += ssim_plane_skimage(x, y, h, w, &p, k);
    }
    planes_free(&p);
    free(x); free(y);
    return sum / c;
}

/* ---- BasicSR ----------------------------------------------------------- */

/* The planes BasicSR measures: the image cropped by `crop` on every side, as
 * doubles, per channel; with y_only an RGB image becomes its Y channel the
 * way to_y_channel computes it: x = float32(v) / 255 in float32, Y = x . [B,G,R
 * weights] + 16 in float64 (numpy's dot of float32 with a float64 list),
 * float32(Y / 255), then * 255 in float32. Other channel counts take the
 * float32 round trip only. Returns the channel count of the planes. */
static int basicsr_planes(const uint8_t *im, int64_t h, int64_t w, int c, int crop, int y_only, double *out)
{
    int64_t ch_ = h - 2 * crop, cw = w - 2 * crop, n = ch_ * cw;
    int oc = y_only && c == 3 ? 1 : c;
    for (int64_t r = 0; r < ch_; r++)
        for (int64_t q = 0; q < cw; q++) {
            const uint8_t *px = im + ((r + crop) * w + q + crop) * c;
            int64_t i = r * cw + q;
            if (y_only && c == 3) {
                float xr = (float)px[0] / 255.0f, xg = (float)px[1] / 255.0f, xb = (float)px[2] / 255.0f;
                double yv = (double)xb * 24.966 + (double)xg * 128.553 + (double)xr * 65.481 + 16.0;
                float y32 = (float)(yv / 255.0);
                out[i] = (double)(y32 * 255.0f);
            } else {
                for (int k = 0; k < c; k++)
                    out[(int64_t)k * n + i] = y_only ? (double)(((float)px[k] / 255.0f) * 255.0f) : (double)px[k];
            }
        }
    return oc;
}

double psnr_basicsr(const uint8_t *a, const uint8_t *b, int64_t h, int64_t w, int c, int crop, int y_only)
{
    int64_t ch_ = h - 2 * crop, cw = w - 2 * crop;
    if (ch_ < 1 || cw < 1 || c < 1) return NAN;
    size_t n = (size_t)(ch_ * cw) * (size_t)c;
    double *x = xmalloc(n * sizeof *x), *y = xmalloc(n * sizeof *y), s = 0;
    int oc = basicsr_planes(a, h, w, c, crop, y_only, x);
    basicsr_planes(b, h, w, c, crop, y_only, y);
    size_t m = (size_t)(ch_ * cw) * (size_t)oc;
    for (size_t i = 0; i < m; i++) s += (x[i] - y[i]) * (x[i] - y[i]);
    free(x); free(y);
    return psnr_of_mse(s / (double)m);
}

/* The 11x11 Gaussian (outer product of the 1-D taps) over the valid region:
 * out is (h - 10) x (w - 10). Separable: the same sum as the 2-D window up to
 * rounding. */
static void gauss_valid(const double *in, double *out, double *tmp, int64_t h, int64_t w, const double *k)
{
    int64_t oh = h - 2 * SSIM_R, ow = w - 2 * SSIM_R;
    for (int64_t y = 0; y < oh; y++)
        for (int64_t x = 0; x < w; x++) {
            double s = 0;
            for (int t = 0; t < SSIM_TAPS; t++) s += k[t] * in[(y + t) * w + x];
            tmp[y * w + x] = s;
        }
    for (int64_t y = 0; y < oh; y++)
        for (int64_t x = 0; x < ow; x++) {
            double s = 0;
            for (int t = 0; t < SSIM_TAPS; t++) s += k[t] * tmp[y * w + x + t];
            out[y * ow + x] = s;
        }
}

static double ssim_plane_basicsr(const double *x, const double *y, int64_t h, int64_t w, ssim_planes_t *p,
                                 const double *k)
{
    int64_t m = (h - 2 * SSIM_R) * (w - 2 * SSIM_R);
    filter_moments(x, y, h, w, p, k, gauss_valid);
    double s = 0;
    for (int64_t i = 0; i < m; i++) s += ssim_px(p->ux[i], p->uy[i], p->uxx[i], p->uyy[i], p->uxy[i]);
    return s / (double)m;
}

double ssim_basicsr(const uint8_t *a, const uint8_t *b, int64_t h, int64_t w, int c, int crop, int y_only)
{
    int64_t ch_ = h - 2 * crop, cw = w - 2 * crop;
    if (ch_ < SSIM_TAPS || cw < SSIM_TAPS || c < 1) return NAN;
    size_t n = (size_t)(ch_ * cw);
    double k[SSIM_TAPS], *x = xmalloc(n * c * sizeof *x), *y = xmalloc(n * c * sizeof *y), sum = 0;
    ssim_planes_t p;
    gauss_taps(k);
    planes_alloc(&p, n);
    int oc = basicsr_planes(a, h, w, c, crop, y_only, x);
    basicsr_planes(b, h, w, c, crop, y_only, y);
    for (int ch = 0; ch < oc; ch++) sum += ssim_plane_basicsr(x + ch * n, y + ch * n, ch_, cw, &p, k);
    planes_free(&p);
    free(x); free(y);
    return sum / oc;
}
