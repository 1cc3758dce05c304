/* resize.h — image resizing that reproduces, bit for bit on 8-bit images, the
 * libraries models are trained with: OpenCV 4.6's cv2.resize (resize_cv.c,
 * resize_cv_area.c) and Pillow 9.4's Image.resize (resize_pil.c).
 *
 * Each method emulates its library's integer / float32 arithmetic, its
 * coordinate mapping and edge handling, including the quirks users meet:
 * cv2 INTER_LINEAR turns an exact 2x shrink into INTER_AREA, INTER_AREA is a
 * bilinear variant when enlarging, Pillow widens its filters when shrinking
 * (antialiasing) and premultiplies alpha for 2- and 4-channel images. */
#ifndef PARITY_RESIZE_H
#define PARITY_RESIZE_H

#include "image/image.h"

typedef enum resize_method {
    RESIZE_CV_LINEAR,      /* cv2.INTER_LINEAR */
    RESIZE_CV_AREA,        /* cv2.INTER_AREA */
    RESIZE_CV_NEAREST,     /* cv2.INTER_NEAREST */
    RESIZE_CV_CUBIC,       /* cv2.INTER_CUBIC */
    RESIZE_PIL_BILINEAR,   /* PIL.Image.BILINEAR */
    RESIZE_PIL_BICUBIC,    /* PIL.Image.BICUBIC */
    RESIZE_PIL_NEAREST,    /* PIL.Image.NEAREST */
    RESIZE_PIL_LANCZOS,    /* PIL.Image.LANCZOS */
    RESIZE_METHOD_COUNT
} resize_method_t;

/* Config names ("opencv-linear", ...), indexed by method, NULL-terminated. */
extern const char *const resize_method_names[];

static inline int resize_is_pillow(resize_method_t m)
{
    return m >= RESIZE_PIL_BILINEAR;
}

/* Resizes src to dw x dh (same channel count) into dst (allocated here). */
int resize_image(const image_t *src, int64_t dw, int64_t dh, resize_method_t m, image_t *dst,
                 perr_t *e);

/* The per-library entry points (resize_image dispatches to them). */
void resize_cv(const image_t *src, image_t *dst, resize_method_t m);
void resize_cv_area_down(const image_t *src, image_t *dst, double scale_x, double scale_y);
void resize_pil(const image_t *src, image_t *dst, resize_method_t m);

#endif
