/* resize_pil.c — PIL.Image.resize (Pillow 9.4) on 8-bit images, bit-exact:
 * BILINEAR, BICUBIC, LANCZOS (src/libImaging/Resample.c) and NEAREST
 * (an affine transform, src/libImaging/Geometry.c).
 *
 * Pillow's arithmetic, which this file reproduces:
 * - Per axis: scale = in/out, filterscale = max(scale, 1) (the filter widens
 *   when shrinking: antialiasing), support = filter radius * filterscale;
 *   center = (x+0.5)*scale, taps xmin = (int)(center-support+0.5) .. xmax =
 *   (int)(center+support+0.5) clamped to the image; weights
 *   filter((i + xmin - center + 0.5) / filterscale) in double, normalised by
 *   their sum, then to int32 with 22 fraction bits ((int)(w*2^22 +- 0.5)).
 * - Horizontal pass first (only when the width changes), into an 8-bit image
 *   (values: (2^21 + sum) >> 22 clipped to 0..255), then the vertical pass
 *   (only when the height changes).
 * - 2- and 4-channel images (LA, RGBA) are premultiplied by alpha first
 *   ((c*a + 128 + ((c*a + 128) >> 8)) >> 8) and divided back afterwards
 *   (255*c / a, truncated, clipped), except for NEAREST.
 * - NEAREST: source x = (int)(0.5*s + x*s) with s = in/out, accumulated by
 *   repeated addition in double exactly as Pillow does. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "image/resize.h"

#define PRECISION_BITS 22

typedef double (*filter_fn)(double);

static double filter_bilinear(double x)
{
    if (x < 0.0)
        x = -x;
    return x < 1.0 ? 1.0 - x : 0.0;
}

static double filter_bicubic(double x)
{
    const double a = -0.5;
    if (x < 0.0)
        x = -x;
    if (x < 1.0)
        return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
    if (x < 2.0)
        return (((x - 5) * x + 8) * x - 4) * a;
    return 0.0;
}

static double sinc(double x)
{
    if (x == 0.0)
        return 1.0;
    x = x * M_PI;
    return sin(x) / x;
}

static double filter_lanczos(double x)
{
    if (-3.0 <= x && x < 3.0)
        return sinc(x) * sinc(x / 3);
    return 0.0;
}

/* Integer weights for one axis: per output index, the first tap and tap count,
 * and ksize weights. */
typedef struct pil_axis {
    int ksize;
    int *bounds;      /* xmin, count per output index */
    int32_t *kk;
} pil_axis_t;

static void axis_build(pil_axis_t *ax, int64_t in, int64_t out, filter_fn f, double radius)
{
    double scale = (double)(float)in / (double)out;   /* Pillow's box is float */
    double filterscale = scale < 1.0 ? 1.0 : scale;
    double support = radius * filterscale;
    int ksize = (int)ceil(support) * 2 + 1;
    ax->ksize = ksize;
    ax->bounds = malloc((size_t)out * 2 * sizeof *ax->bounds);
    ax->kk = malloc((size_t)out * (size_t)ksize * sizeof *ax->kk);
    double *k = malloc((size_t)ksize * sizeof *k);
    if (!ax->bounds || !ax->kk || !k)
        abort();
    for (int64_t xx = 0; xx < out; xx++) {
        double center = (xx + 0.5) * scale;
        double ww = 0.0, ss = 1.0 / filterscale;
        int xmin = (int)(center - support + 0.5);
        if (xmin < 0)
            xmin = 0;
        int xmax = (int)(center + support + 0.5);
        if (xmax > in)
            xmax = (int)in;
        xmax -= xmin;
        for (int x = 0; x < xmax; x++) {
            double w = f(((double)(x + xmin) - center + 0.5) * ss);
            k[x] = w;
            ww += w;
        }
        int32_t *kk = ax->kk + xx * ksize;
        for (int x = 0; x < ksize; x++) {
            double w = x < xmax ? (ww != 0.0 ? k[x] / ww : k[x]) : 0.0;
            kk[x] = w < 0 ? (int32_t)(-0.5 + w * (1 << PRECISION_BITS))
                          : (int32_t)(0.5 + w * (1 << PRECISION_BITS));
        }
        ax->bounds[xx * 2] = xmin;
        ax->bounds[xx * 2 + 1] = xmax;
    }
    free(k);
}

static void axis_free(pil_axis_t *ax)
{
    free(ax->bounds);
    free(ax->kk);
}

static inline uint8_t clip8(int32_t v)
{
    if (v >= (1 << PRECISION_BITS << 8))
        return 255;
    if (v <= 0)
        return 0;
    return (uint8_t)(v >> PRECISION_BITS);
}

/* Horizontal pass over rows [y0, y0 + out->h) of in. */
static void hpass(const image_t *in, int64_t y0, image_t *out, const pil_axis_t *ax)
{
    int cn = in->c;
    for (int64_t y = 0; y < out->h; y++) {
        const uint8_t *S = in->data + (y0 + y) * in->w * cn;
        uint8_t *D = out->data + y * out->w * cn;
        for (int64_t xx = 0; xx < out->w; xx++) {
            int xmin = ax->bounds[xx * 2], n = ax->bounds[xx * 2 + 1];
            const int32_t *k = ax->kk + xx * ax->ksize;
            const uint8_t *P = S + (int64_t)xmin * cn;
            if (cn == 3) {   /* RGB: the three sums in one walk over the taps (integers: the same values) */
                int32_t s0 = 1 << (PRECISION_BITS - 1), s1 = s0, s2 = s0;
                for (int x = 0; x < n; x++) {
                    s0 += P[x * 3] * k[x];
                    s1 += P[x * 3 + 1] * k[x];
                    s2 += P[x * 3 + 2] * k[x];
                }
                D[xx * 3] = clip8(s0);
                D[xx * 3 + 1] = clip8(s1);
                D[xx * 3 + 2] = clip8(s2);
                continue;
            }
            for (int c = 0; c < cn; c++) {
                int32_t ss = 1 << (PRECISION_BITS - 1);
                for (int x = 0; x < n; x++)
                    ss += P[x * cn + c] * k[x];
                D[xx * cn + c] = clip8(ss);
            }
        }
    }
}

static void vpass(const image_t *in, image_t *out, const pil_axis_t *ay, int64_t yshift)
{
    int64_t rowlen = in->w * in->c;
    int32_t *acc = malloc((size_t)rowlen * sizeof *acc);
    if (!acc)
        abort();
    for (int64_t yy = 0; yy < out->h; yy++) {
        int ymin = ay->bounds[yy * 2] - (int)yshift, n = ay->bounds[yy * 2 + 1];
        const int32_t *k = ay->kk + yy * ay->ksize;
        for (int64_t x = 0; x < rowlen; x++)
            acc[x] = 1 << (PRECISION_BITS - 1);
        for (int y = 0; y < n; y++) {
            const uint8_t *S = in->data + (int64_t)(ymin + y) * rowlen;
            int32_t w = k[y];
            for (int64_t x = 0; x < rowlen; x++)
                acc[x] += S[x] * w;
        }
        uint8_t *D = out->data + yy * rowlen;
        for (int64_t x = 0; x < rowlen; x++)
            D[x] = clip8(acc[x]);
    }
    free(acc);
}

/* Pillow's RGBA -> RGBa (and LA -> La): colour channels times alpha / 255. */
static void premultiply(image_t *im)
{
    int cn = im->c;
    int64_t n = im->w * im->h;
    for (int64_t i = 0; i < n; i++) {
        uint8_t *p = im->data + i * cn;
        unsigned a = p[cn - 1];
        for (int c = 0; c < cn - 1; c++) {
            unsigned t = p[c] * a + 128;
            p[c] = (uint8_t)(((t >> 8) + t) >> 8);
        }
    }
}

static void unpremultiply(image_t *im)
{
    int cn = im->c;
    int64_t n = im->w * im->h;
    for (int64_t i = 0; i < n; i++) {
        uint8_t *p = im->data + i * cn;
        unsigned a = p[cn - 1];
        if (a == 255 || a == 0)
            continue;
        for (int c = 0; c < cn - 1; c++) {
            unsigned v = 255u * p[c] / a;
            p[c] = (uint8_t)(v > 255 ? 255 : v);
        }
    }
}

static void resize_nearest(const image_t *src, image_t *dst)
{
    int cn = src->c;
    double a0 = (double)(float)src->w / (double)dst->w;
    double a4 = (double)(float)src->h / (double)dst->h;
    int64_t *xs = malloc((size_t)dst->w * sizeof *xs);
    if (!xs)
        abort();
    double xo = a0 * 0.5;
    for (int64_t x = 0; x < dst->w; x++) {
        xs[x] = xo < 0.0 ? -1 : (int64_t)xo;
        xo += a0;
    }
    double yo = a4 * 0.5;
    memset(dst->data, 0, image_bytes(dst));   /* Pillow fills what maps outside */
    for (int64_t y = 0; y < dst->h; y++) {
        int64_t yi = yo < 0.0 ? -1 : (int64_t)yo;
        yo += a4;
        if (yi < 0 || yi >= src->h)
            continue;
        const uint8_t *S = src->data + yi * src->w * cn;
        uint8_t *D = dst->data + y * dst->w * cn;
        for (int64_t x = 0; x < dst->w; x++)
            if (xs[x] >= 0 && xs[x] < src->w)
                memcpy(D + x * cn, S + xs[x] * cn, (size_t)cn);
    }
    free(xs);
}

static void resample(const image_t *src, image_t *dst, filter_fn f, double radius)
{
    pil_axis_t ax, ay;
    axis_build(&ax, src->w, dst->w, f, radius);
    axis_build(&ay, src->h, dst->h, f, radius);
    int need_h = dst->w != src->w, need_v = dst->h != src->h;
    const image_t *cur = src;
    image_t tmp = { 0 };
    int64_t yshift = 0;
    if (need_h) {
        /* only the source rows the vertical pass reads */
        int64_t first = need_v ? ay.bounds[0] : 0;
        int64_t last = need_v ? ay.bounds[dst->h * 2 - 2] + ay.bounds[dst->h * 2 - 1] : src->h;
        image_t *out = need_v ? &tmp : dst;
        if (need_v) {
            tmp.w = dst->w;
            tmp.h = last - first;
            tmp.c = src->c;
            tmp.data = malloc((size_t)(tmp.w * tmp.h * tmp.c));
            if (!tmp.data)
                abort();
        }
        hpass(src, first, out, &ax);
        cur = out;
        yshift = first;
    }
    if (need_v)
        vpass(cur, dst, &ay, yshift);
    free(tmp.data);
    axis_free(&ax);
    axis_free(&ay);
}

void resize_pil(const image_t *src, image_t *dst, resize_method_t m)
{
    if (src->w == dst->w && src->h == dst->h) {
        memcpy(dst->data, src->data, image_bytes(src));
        return;
    }
    if (m == RESIZE_PIL_NEAREST) {
        resize_nearest(src, dst);
        return;
    }
    image_t pre = { 0 };
    const image_t *in = src;
    int alpha = src->c == 2 || src->c == 4;
    if (alpha) {
        pre = *src;
        pre.data = malloc(image_bytes(src));
        if (!pre.data)
            abort();
        memcpy(pre.data, src->data, image_bytes(src));
        premultiply(&pre);
        in = &pre;
    }
    if (m == RESIZE_PIL_BILINEAR)
        resample(in, dst, filter_bilinear, 1.0);
    else if (m == RESIZE_PIL_BICUBIC)
        resample(in, dst, filter_bicubic, 2.0);
    else
        resample(in, dst, filter_lanczos, 3.0);
    if (alpha) {
        unpremultiply(dst);
        free(pre.data);
    }
}
