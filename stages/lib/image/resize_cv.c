/* resize_cv.c — cv2.resize (OpenCV 4.6, x86-64) on 8-bit images, bit-exact:
 * INTER_LINEAR, INTER_CUBIC, INTER_NEAREST, and INTER_AREA when enlarging
 * (a bilinear variant). Shrinking INTER_AREA is in resize_cv_area.c.
 *
 * OpenCV's arithmetic, which this file reproduces:
 * - Source coordinate per destination pixel: fx = (float)((dx+0.5)*scale - 0.5),
 *   sx = floor(fx), fx -= sx in float32 (area variant: sx = floor(dx*scale),
 *   fx = (dx+1) - (sx+1)/scale, wrapped into [0,1)). In x, linear taps that fall
 *   outside are clamped with fx = 0; in y, fy is kept and the rows are clamped.
 * - Weights: float32 (bicubic with A = -0.75), then round(w * 2048) to int16.
 * - Horizontal pass in exact integers into an int32 row.
 * - Vertical pass, linear: the form OpenCV runs on x86 (its SIMD kernel, and
 *   its scalar tail for 8-bit, which copies it):
 *   ((b0*(H0>>4))>>16 + (b1*(H1>>4))>>16 + 2) >> 2.
 *   Cubic: groups of 8 values go through float32 (H*(b/2^22) summed
 *   innermost-first, rounded half to even); the remaining values of a row use
 *   the integer form (sum + 2^21) >> 22. Both are saturated to 0..255.
 * - cv2.resize copies when the size is unchanged and turns an exact 2x shrink
 *   with INTER_LINEAR into INTER_AREA. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#include "image/resize.h"

#define COEF_BITS 11
#define COEF_ONE (1 << COEF_BITS)
#define CUBIC_VEC 8           /* values per float32 group in the cubic vertical pass */

typedef enum cv_kind { CV_LIN, CV_AREA_LIN, CV_CUBIC } cv_kind_t;

/* One axis: for each destination index the first source index and ksize
 * int16 weights. */
typedef struct cv_axis {
    int ksize;
    int *ofs;
    int16_t *coef;
} cv_axis_t;

static int16_t round_coef(float w)
{
    long r = lrintf(w * COEF_ONE);   /* saturate_cast<short>: half to even */
    return (int16_t)(r > 32767 ? 32767 : r < -32768 ? -32768 : r);
}

static void cubic_weights(float x, float *c)
{
    const float A = -0.75f;
    c[0] = ((A * (x + 1) - 5 * A) * (x + 1) + 8 * A) * (x + 1) - 4 * A;
    c[1] = ((A + 2) * x - (A + 3)) * x * x + 1;
    c[2] = ((A + 2) * (1 - x) - (A + 3)) * (1 - x) * (1 - x) + 1;
    c[3] = 1.f - c[0] - c[1] - c[2];
}

/* Fills ax for src -> dst pixels; scale = src/dst as OpenCV computes it
 * (1 / (dst/src)), inv = dst/src. is_x applies the x-only edge clamp. */
static void axis_build(cv_axis_t *ax, int64_t src, int64_t dst, double scale, double inv,
                       cv_kind_t kind, int is_x)
{
    int ksize = kind == CV_CUBIC ? 4 : 2;
    ax->ksize = ksize;
    ax->ofs = malloc((size_t)dst * sizeof *ax->ofs);
    ax->coef = malloc((size_t)dst * (size_t)ksize * sizeof *ax->coef);
    if (!ax->ofs || !ax->coef)
        abort();
    for (int64_t d = 0; d < dst; d++) {
        float f;
        int s;
        if (kind != CV_AREA_LIN) {
            f = (float)((d + 0.5) * scale - 0.5);
            s = (int)floorf(f);
            f -= (float)s;
        } else {
            s = (int)floor((double)d * scale);
            f = (float)((double)(d + 1) - (double)(s + 1) * inv);
            f = f <= 0 ? 0.f : f - floorf(f);
        }
        if (is_x && kind != CV_CUBIC) {     /* cubic keeps fx and clamps taps */
            if (s < 0)
                f = 0, s = 0;
            if (s >= src - 1)
                f = 0, s = (int)src - 1;
        }
        ax->ofs[d] = s;
        float w[4];
        if (kind == CV_CUBIC)
            cubic_weights(f, w);
        else
            w[0] = 1.f - f, w[1] = f;
        for (int k = 0; k < ksize; k++)
            ax->coef[d * ksize + k] = round_coef(w[k]);
    }
}

static void axis_free(cv_axis_t *ax)
{
    free(ax->ofs);
    free(ax->coef);
}

static inline int64_t clamp_i64(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* Byte offsets of each destination pixel's taps in a source row: taps beyond
 * the edges repeat the edge pixel (OpenCV's separate edge loops compute
 * exactly that). */
static int32_t *tap_offsets(const cv_axis_t *ax, int64_t sw, int64_t dw, int cn)
{
    int ks = ax->ksize, first = ks == 4 ? -1 : 0;
    int32_t *off = malloc((size_t)(dw * ks) * sizeof *off);
    if (!off)
        abort();
    for (int64_t d = 0; d < dw; d++)
        for (int k = 0; k < ks; k++)
            off[d * ks + k] = (int32_t)(clamp_i64((int64_t)ax->ofs[d] + first + k, 0, sw - 1) * cn);
    return off;
}

/* Horizontal pass of one source row into dw*cn int32 values; called with
 * constant cn and ks so the compiler unrolls the inner loops. */
static inline void hpass_k(const uint8_t *S, int32_t *D, const int32_t *off, const int16_t *a,
                           int64_t dw, int cn, int ks)
{
    for (int64_t d = 0; d < dw; d++, off += ks, a += ks, D += cn)
        for (int c = 0; c < cn; c++) {
            int32_t v = 0;
            for (int k = 0; k < ks; k++)
                v += (int32_t)S[off[k] + c] * a[k];
            D[c] = v;
        }
}

static void hpass(const uint8_t *S, int32_t *D, const int32_t *off, const cv_axis_t *ax,
                  int64_t dw, int cn)
{
    const int16_t *a = ax->coef;
    switch (cn * 8 + ax->ksize) {
    case 1 * 8 + 2: hpass_k(S, D, off, a, dw, 1, 2); break;
    case 3 * 8 + 2: hpass_k(S, D, off, a, dw, 3, 2); break;
    case 4 * 8 + 2: hpass_k(S, D, off, a, dw, 4, 2); break;
    case 1 * 8 + 4: hpass_k(S, D, off, a, dw, 1, 4); break;
    case 3 * 8 + 4: hpass_k(S, D, off, a, dw, 3, 4); break;
    case 4 * 8 + 4: hpass_k(S, D, off, a, dw, 4, 4); break;
    default: hpass_k(S, D, off, a, dw, cn, ax->ksize); break;
    }
}

static void vpass_linear(int32_t *const *R, const int16_t *b, uint8_t *D, int64_t n)
{
    int32_t b0 = b[0], b1 = b[1];
    const int32_t *R0 = R[0], *R1 = R[1];
    int64_t x = 0;
#ifdef __SSE2__
    /* OpenCV's own instruction sequence, 8 values at a time (same results) */
    __m128i vb0 = _mm_set1_epi16((short)b0), vb1 = _mm_set1_epi16((short)b1);
    __m128i two = _mm_set1_epi16(2);
    for (; x + 8 <= n; x += 8) {
        __m128i h0 = _mm_packs_epi32(_mm_srai_epi32(_mm_loadu_si128((const __m128i *)(R0 + x)), 4),
                                     _mm_srai_epi32(_mm_loadu_si128((const __m128i *)(R0 + x + 4)), 4));
        __m128i h1 = _mm_packs_epi32(_mm_srai_epi32(_mm_loadu_si128((const __m128i *)(R1 + x)), 4),
                                     _mm_srai_epi32(_mm_loadu_si128((const __m128i *)(R1 + x + 4)), 4));
        __m128i v = _mm_adds_epi16(_mm_mulhi_epi16(h0, vb0), _mm_mulhi_epi16(h1, vb1));
        v = _mm_srai_epi16(_mm_adds_epi16(v, two), 2);
        _mm_storel_epi64((__m128i *)(D + x), _mm_packus_epi16(v, v));
    }
#endif
    for (; x < n; x++)
        D[x] = (uint8_t)((((b0 * (R0[x] >> 4)) >> 16) + ((b1 * (R1[x] >> 4)) >> 16) + 2) >> 2);
}

static inline uint8_t sat_u8(int64_t v)
{
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

static void vpass_cubic(int32_t *const *R, const int16_t *b, uint8_t *D, int64_t n)
{
    const float s = 1.f / (COEF_ONE * COEF_ONE);
    float f0 = b[0] * s, f1 = b[1] * s, f2 = b[2] * s, f3 = b[3] * s;
    int64_t x = 0, nvec = n / CUBIC_VEC * CUBIC_VEC;
    for (; x < nvec; x++) {
        float t = (float)R[3][x] * f3;
        t = (float)R[2][x] * f2 + t;
        t = (float)R[1][x] * f1 + t;
        t = (float)R[0][x] * f0 + t;
        D[x] = sat_u8(lrintf(t));
    }
    for (; x < n; x++) {
        int64_t v = (int64_t)R[0][x] * b[0] + (int64_t)R[1][x] * b[1] +
                    (int64_t)R[2][x] * b[2] + (int64_t)R[3][x] * b[3];
        D[x] = sat_u8((v + (1 << 21)) >> 22);
    }
}

/* The separable path: horizontal rows computed once each (cached by source
 * row in ksize slots), then the vertical pass per destination row. */
static void resize_separable(const image_t *src, image_t *dst, cv_kind_t kind, double sx,
                             double sy, double ix, double iy)
{
    cv_axis_t ax, ay;
    axis_build(&ax, src->w, dst->w, sx, ix, kind, 1);
    axis_build(&ay, src->h, dst->h, sy, iy, kind, 0);
    int ks = ax.ksize, cn = src->c;
    int64_t rowlen = dst->w * cn;
    int32_t *off = tap_offsets(&ax, src->w, dst->w, cn);
    int32_t *buf = malloc((size_t)ks * (size_t)rowlen * sizeof *buf);
    if (!buf)
        abort();
    int64_t slot_row[4] = { -1, -1, -1, -1 };
    int32_t *rows[4];
    for (int64_t dy = 0; dy < dst->h; dy++) {
        int64_t first = ay.ofs[dy] - (ks == 4 ? 1 : 0);
        for (int k = 0; k < ks; k++) {
            int64_t r = clamp_i64(first + k, 0, src->h - 1);
            int slot = (int)(r % ks);
            int32_t *row = buf + slot * rowlen;
            if (slot_row[slot] != r) {
                hpass(src->data + r * src->w * cn, row, off, &ax, dst->w, cn);
                slot_row[slot] = r;
            }
            rows[k] = row;
        }
        uint8_t *D = dst->data + dy * rowlen;
        if (ks == 4)
            vpass_cubic(rows, ay.coef + dy * 4, D, rowlen);
        else
            vpass_linear(rows, ay.coef + dy * 2, D, rowlen);
    }
    free(off);
    free(buf);
    axis_free(&ax);
    axis_free(&ay);
}

static void resize_nearest(const image_t *src, image_t *dst)
{
    double ifx = 1. / ((double)dst->w / (double)src->w);
    double ify = 1. / ((double)dst->h / (double)src->h);
    int cn = src->c;
    int64_t *xs = malloc((size_t)dst->w * sizeof *xs);
    if (!xs)
        abort();
    for (int64_t x = 0; x < dst->w; x++) {
        int64_t s = (int64_t)floor((double)x * ifx);
        xs[x] = (s < src->w - 1 ? s : src->w - 1) * cn;
    }
    for (int64_t y = 0; y < dst->h; y++) {
        int64_t sy = (int64_t)floor((double)y * ify);
        if (sy > src->h - 1)
            sy = src->h - 1;
        const uint8_t *S = src->data + sy * src->w * cn;
        uint8_t *D = dst->data + y * dst->w * cn;
        for (int64_t x = 0; x < dst->w; x++)
            memcpy(D + x * cn, S + xs[x], (size_t)cn);
    }
    free(xs);
}

void resize_cv(const image_t *src, image_t *dst, resize_method_t m)
{
    if (src->w == dst->w && src->h == dst->h) {
        memcpy(dst->data, src->data, image_bytes(src));
        return;
    }
    if (m == RESIZE_CV_NEAREST) {
        resize_nearest(src, dst);
        return;
    }
    double inv_x = (double)dst->w / (double)src->w, inv_y = (double)dst->h / (double)src->h;
    double scale_x = 1. / inv_x, scale_y = 1. / inv_y;
    double iscale_x = nearbyint(scale_x), iscale_y = nearbyint(scale_y);
    int area_fast = fabs(scale_x - iscale_x) < DBL_EPSILON && fabs(scale_y - iscale_y) < DBL_EPSILON;
    if (m == RESIZE_CV_LINEAR && area_fast && iscale_x == 2 && iscale_y == 2)
        m = RESIZE_CV_AREA;
    if (m == RESIZE_CV_AREA && scale_x >= 1 && scale_y >= 1) {
        resize_cv_area_down(src, dst, scale_x, scale_y);
        return;
    }
    cv_kind_t kind = m == RESIZE_CV_CUBIC ? CV_CUBIC : m == RESIZE_CV_AREA ? CV_AREA_LIN : CV_LIN;
    resize_separable(src, dst, kind, scale_x, scale_y, inv_x, inv_y);
}
