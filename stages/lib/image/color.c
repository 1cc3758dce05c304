/* color.c — alpha removal and compositing, gray <-> RGB, channel order; the
 * formulas are those of Pillow and OpenCV (see color.h), so the preprocess
 * stage can reproduce either library's pipeline exactly. */
#include <stdlib.h>
#include <string.h>
#include "image/color.h"

/* Re-packs every pixel from im->c to nc channels through fn (in place when
 * the pixel does not grow, through a new buffer otherwise). */
typedef void (*pixel_fn)(const uint8_t *in, uint8_t *out, const void *arg);

static void map_pixels(image_t *im, int nc, pixel_fn fn, const void *arg)
{
    int64_t n = im->w * im->h;
    int c = im->c;
    if (nc <= c) {
        uint8_t tmp[4];
        for (int64_t i = 0; i < n; i++) {
            fn(im->data + i * c, tmp, arg);
            memcpy(im->data + i * nc, tmp, (size_t)nc);
        }
    } else {
        uint8_t *out = xmalloc((size_t)(n * nc));
        for (int64_t i = 0; i < n; i++)
            fn(im->data + i * c, out + i * nc, arg);
        free(im->data);
        im->data = out;
    }
    im->c = nc;
}

static void px_drop_alpha(const uint8_t *in, uint8_t *out, const void *arg)
{
    (void)arg;
    out[0] = in[0];
    out[1] = in[1];
    out[2] = in[2];
}

void color_drop_alpha(image_t *im)
{
    if (im->c == 2) {
        for (int64_t i = 0, n = im->w * im->h; i < n; i++)
            im->data[i] = im->data[i * 2];
        im->c = 1;
    } else if (im->c == 4) {
        map_pixels(im, 3, px_drop_alpha, NULL);
    }
}

#define SHIFTFORDIV255(a) ((((a) >> 8) + (a)) >> 8)

static void px_composite(const uint8_t *in, uint8_t *out, const void *arg)
{
    const uint8_t *bg = arg;
    uint32_t a = in[3];
    if (a == 0) {
        memcpy(out, bg, 3);
        return;
    }
    /* Pillow with an opaque destination: coef1 = a * 128, coef2 = (255 - a) * 128 */
    uint32_t c1 = a << 7, c2 = (255u << 7) - c1;
    for (int k = 0; k < 3; k++) {
        uint32_t t = in[k] * c1 + bg[k] * c2 + (0x80u << 7);
        out[k] = (uint8_t)(SHIFTFORDIV255(t) >> 7);
    }
}

void color_composite(image_t *im, const uint8_t bg[3])
{
    if (im->c == 2)
        color_gray_to_rgb(im);
    if (im->c == 4)
        map_pixels(im, 3, px_composite, bg);
}

static void px_gray_to_rgb(const uint8_t *in, uint8_t *out, const void *arg)
{
    int alpha = *(const int *)arg;
    uint8_t g = in[0], a = alpha ? in[1] : 0;
    out[0] = out[1] = out[2] = g;
    if (alpha)
        out[3] = a;
}

void color_gray_to_rgb(image_t *im)
{
    int alpha = im->c == 2;
    if (im->c <= 2)
        map_pixels(im, alpha ? 4 : 3, px_gray_to_rgb, &alpha);
}

static void px_add_alpha(const uint8_t *in, uint8_t *out, const void *arg)
{
    (void)arg;
    out[0] = in[0];
    out[1] = in[1];
    out[2] = in[2];
    out[3] = 255;
}

void color_add_alpha(image_t *im)
{
    if (im->c == 3)
        map_pixels(im, 4, px_add_alpha, NULL);
}

static void px_gray_pil(const uint8_t *in, uint8_t *out, const void *arg)
{
    (void)arg;
    out[0] = (uint8_t)((in[0] * 19595u + in[1] * 38470u + in[2] * 7471u + 0x8000u) >> 16);
}

void color_gray_pil(image_t *im)
{
    if (im->c == 3)
        map_pixels(im, 1, px_gray_pil, NULL);
}

static void px_gray_cv(const uint8_t *in, uint8_t *out, const void *arg)
{
    (void)arg;
    out[0] = (uint8_t)((in[0] * 4899u + in[1] * 9617u + in[2] * 1868u + 8192u) >> 14);
}

void color_gray_cv(image_t *im)
{
    if (im->c == 3)
        map_pixels(im, 1, px_gray_cv, NULL);
}

void color_swap_rb(image_t *im)
{
    if (im->c < 3)
        return;
    for (int64_t i = 0, n = im->w * im->h; i < n; i++) {
        uint8_t *p = im->data + i * im->c;
        uint8_t t = p[0];
        p[0] = p[2];
        p[2] = t;
    }
}
