/* resize_cv_area.c — cv2.resize INTER_AREA when shrinking (both scale
 * factors >= 1), bit-exact with OpenCV 4.6 on 8-bit images.
 *
 * - Integer factors in both directions (|scale - round(scale)| < DBL_EPSILON):
 *   box mean. A 2x2 box on 1, 3 or 4 channels is (a+b+c+d+2) >> 2 (OpenCV's
 *   vector kernel and its scalar tail); other boxes are round(sum * (1.f/area))
 *   in float32, half to even.
 * - Other factors: each destination cell gathers source pixels with float32
 *   weights 1/cellWidth (fractional edge cells, ignored below 1e-3); rows are
 *   accumulated as buf += S*alpha in float32, then sum = beta*buf (first row
 *   of a cell) or sum += beta*buf, and the cell value is round(sum) saturated. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "image/resize.h"

static inline uint8_t sat_round(float v)
{
    long r = lrintf(v);
    return (uint8_t)(r < 0 ? 0 : r > 255 ? 255 : r);
}

static void area_fast(const image_t *src, image_t *dst, int sx, int sy)
{
    int cn = src->c;
    int64_t sw = src->w * cn, dw = dst->w * cn;
    int area = sx * sy;
    float scale = 1.f / (float)area;
    int two = sx == 2 && sy == 2 && (cn == 1 || cn == 3 || cn == 4);
    for (int64_t dy = 0; dy < dst->h; dy++) {
        uint8_t *D = dst->data + dy * dw;
        int64_t y0 = dy * sy;
        for (int64_t dx = 0; dx < dw; dx++) {
            int64_t x0 = (dx / cn) * sx * cn + dx % cn;
            int64_t sum = 0, count = 0;
            for (int64_t y = y0; y < y0 + sy && y < src->h; y++)
                for (int64_t k = 0; k < sx && x0 + k * cn < sw; k++, count++)
                    sum += src->data[y * sw + x0 + k * cn];
            if (count == area)
                D[dx] = two ? (uint8_t)((sum + 2) >> 2) : sat_round((float)sum * scale);
            else   /* a partial box at the edge: OpenCV divides by the count */
                D[dx] = count ? sat_round((float)sum / (float)count) : 0;
        }
    }
}

/* One decimation entry: destination index di gets source si with weight alpha. */
typedef struct decimate {
    int64_t di, si;
    float alpha;
} decimate_t;

static int64_t area_tab(int64_t ssize, int64_t dsize, int cn, double scale, decimate_t *tab)
{
    int64_t k = 0;
    for (int64_t dx = 0; dx < dsize; dx++) {
        double fsx1 = (double)dx * scale;
        double fsx2 = fsx1 + scale;
        double cell = scale < (double)ssize - fsx1 ? scale : (double)ssize - fsx1;
        int64_t sx1 = (int64_t)ceil(fsx1), sx2 = (int64_t)floor(fsx2);
        if (sx2 > ssize - 1)
            sx2 = ssize - 1;
        if (sx1 > sx2)
            sx1 = sx2;
        if ((double)sx1 - fsx1 > 1e-3)
            tab[k++] = (decimate_t){ dx * cn, (sx1 - 1) * cn, (float)(((double)sx1 - fsx1) / cell) };
        for (int64_t sx = sx1; sx < sx2; sx++)
            tab[k++] = (decimate_t){ dx * cn, sx * cn, (float)(1.0 / cell) };
        if (fsx2 - (double)sx2 > 1e-3) {
            double part = fsx2 - (double)sx2;
            if (part > 1.)
                part = 1.;
            if (part > cell)
                part = cell;
            tab[k++] = (decimate_t){ dx * cn, sx2 * cn, (float)(part / cell) };
        }
    }
    return k;
}

static void area_general(const image_t *src, image_t *dst, double scale_x, double scale_y)
{
    int cn = src->c;
    int64_t dw = dst->w * cn;
    decimate_t *xtab = malloc((size_t)(src->w * 2 + 2) * sizeof *xtab);
    decimate_t *ytab = malloc((size_t)(src->h * 2 + 2) * sizeof *ytab);
    float *buf = malloc((size_t)dw * 2 * sizeof *buf);
    if (!xtab || !ytab || !buf)
        abort();
    float *sum = buf + dw;
    int64_t nx = area_tab(src->w, dst->w, cn, scale_x, xtab);
    int64_t ny = area_tab(src->h, dst->h, 1, scale_y, ytab);
    int64_t prev = ytab[0].di;
    for (int64_t x = 0; x < dw; x++)
        sum[x] = 0;
    for (int64_t j = 0; j < ny; j++) {
        float beta = ytab[j].alpha;
        int64_t dy = ytab[j].di;
        const uint8_t *S = src->data + ytab[j].si * src->w * cn;
        for (int64_t x = 0; x < dw; x++)
            buf[x] = 0;
        for (int64_t k = 0; k < nx; k++) {
            float alpha = xtab[k].alpha;
            float *B = buf + xtab[k].di;
            const uint8_t *P = S + xtab[k].si;
            for (int c = 0; c < cn; c++)
                B[c] = B[c] + (float)P[c] * alpha;
        }
        if (dy != prev) {
            uint8_t *D = dst->data + prev * dw;
            for (int64_t x = 0; x < dw; x++) {
                D[x] = sat_round(sum[x]);
                sum[x] = beta * buf[x];
            }
            prev = dy;
        } else {
            for (int64_t x = 0; x < dw; x++)
                sum[x] = sum[x] + beta * buf[x];
        }
    }
    uint8_t *D = dst->data + prev * dw;
    for (int64_t x = 0; x < dw; x++)
        D[x] = sat_round(sum[x]);
    free(xtab);
    free(ytab);
    free(buf);
}

void resize_cv_area_down(const image_t *src, image_t *dst, double scale_x, double scale_y)
{
    double ix = nearbyint(scale_x), iy = nearbyint(scale_y);
    if (fabs(scale_x - ix) < DBL_EPSILON && fabs(scale_y - iy) < DBL_EPSILON)
        area_fast(src, dst, (int)ix, (int)iy);
    else
        area_general(src, dst, scale_x, scale_y);
}
