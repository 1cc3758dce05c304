/* image.h — 8-bit interleaved images (height x width x channels, C order) and
 * the PNG decoder that produces them. Resizers (resize.h) and colour
 * conversions (color.h) work on this one type. */
#ifndef PARITY_IMAGE_H
#define PARITY_IMAGE_H

#include <stddef.h>
#include <stdint.h>
#include "util/err.h"

/* Refuse images with more pixels than this (2^28: 16384 x 16384). */
#define IMAGE_MAX_PIXELS ((int64_t)1 << 28)

typedef struct image {
    int64_t w, h;
    int c;              /* 1 gray, 2 gray+alpha, 3 RGB, 4 RGBA (or BGR/BGRA once swapped) */
    uint8_t *data;      /* h * w * c bytes, owned */
} image_t;

/* Allocates an image (data uninitialised); returns -1 (BAD) on absurd sizes. */
int image_alloc(image_t *im, int64_t w, int64_t h, int c, perr_t *e);
void image_free(image_t *im);
static inline size_t image_bytes(const image_t *im)
{
    return (size_t)im->w * (size_t)im->h * (size_t)im->c;
}

/* How a PNG becomes 8 bits per channel. */
typedef struct png_opts {
    /* Colour images become one gray channel the way cv2.imread(IMREAD_GRAYSCALE)
     * does it: libpng's rgb_to_gray with 0.299/0.587 (alpha stripped first). */
    int cv_gray;
    /* Palette images keep their indices as one channel (label maps: what
     * PIL's mode "P" gives), their colours and tRNS ignored. */
    int palette_index;
} png_opts_t;

/* Information about the file as stored (before conversion to 8 bits). */
typedef struct png_info_s {
    int bit_depth;      /* 1, 2, 4, 8 or 16 */
    int color_type;     /* PNG colour type: 0 gray, 2 RGB, 3 palette, 4 gray+alpha, 6 RGBA */
    int interlaced;
    int has_trns;
} png_info_s_t;

/* Decodes a whole PNG file held in memory into 8-bit channels:
 * - palette -> RGB (RGBA when tRNS is present), tRNS on gray/RGB -> alpha;
 * - gray of 1, 2 or 4 bits is scaled to 8 bits (x255, x85, x17);
 * - 16-bit samples keep their high byte (v >> 8), as cv2.imread (libpng's
 *   png_set_strip_16) and Pillow's RGB/RGBA modes do;
 * - interlaced images are de-interlaced; gamma and colour profiles are ignored,
 *   as OpenCV and Pillow ignore them.
 * Any error (bad signature, CRC mismatch, truncated data, bad zlib stream) is
 * BAD with `name` and libpng's message; nothing is returned then. */
int png_decode(const void *buf, size_t n, const char *name, const png_opts_t *opts,
               image_t *im, png_info_s_t *info, perr_t *e);
/* Reads the file and decodes it. */
int png_load(const char *path, const png_opts_t *opts, image_t *im, png_info_s_t *info,
             perr_t *e);

#endif
