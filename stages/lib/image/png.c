/* png.c — PNG decoding with libpng into 8-bit interleaved images.
 *
 * Every PNG flavour (1-16 bits, gray, gray+alpha, RGB, RGBA, palette, tRNS,
 * Adam7) becomes 1-4 channels of 8 bits, converted the way the libraries a
 * model was trained with read it (see image.h). libpng reports errors through
 * longjmp; the handler keeps its message so the caller gets one line naming
 * the file. CRC errors in any chunk are fatal (a corrupt file is corrupt). */
#include <errno.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "image/image.h"

int image_alloc(image_t *im, int64_t w, int64_t h, int c, perr_t *e)
{
    memset(im, 0, sizeof *im);
    if (w < 1 || h < 1 || c < 1 || c > 4 || w > IMAGE_MAX_PIXELS / h)
        return BAD(e, "image of %lldx%lld pixels is too large or empty", (long long)w,
                   (long long)h);
    im->w = w;
    im->h = h;
    im->c = c;
    im->data = xmalloc((size_t)(w * h * c));
    return 0;
}

void image_free(image_t *im)
{
    free(im->data);
    memset(im, 0, sizeof *im);
}

/* Where the bytes come from: memory (p, n) or a FILE. */
typedef struct png_src {
    const uint8_t *p;
    size_t n, off;
    FILE *f;
    char msg[256];      /* libpng's error message */
} png_src_t;

static void read_bytes(png_structp png, png_bytep out, size_t len)
{
    png_src_t *s = png_get_io_ptr(png);
    if (s->f) {
        if (fread(out, 1, len, s->f) != len)
            png_error(png, "file is truncated");
        return;
    }
    if (len > s->n - s->off)
        png_error(png, "file is truncated");
    memcpy(out, s->p + s->off, len);
    s->off += len;
}

static void on_error(png_structp png, png_const_charp msg)
{
    png_src_t *s = png_get_error_ptr(png);
    snprintf(s->msg, sizeof s->msg, "%s", msg);
    png_longjmp(png, 1);
}

static void on_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;   /* warnings (odd ancillary chunks) do not change the pixels */
}

/* Asks libpng for 8-bit output with the conversions image.h promises. */
static void set_transforms(png_structp png, png_infop info, const png_opts_t *opts)
{
    int ct = png_get_color_type(png, info), depth = png_get_bit_depth(png, info);
    if (ct == PNG_COLOR_TYPE_PALETTE && !(opts && opts->palette_index))
        png_set_palette_to_rgb(png);
    else if (ct == PNG_COLOR_TYPE_PALETTE && depth < 8)
        png_set_packing(png);   /* one index per byte */
    if (ct == PNG_COLOR_TYPE_GRAY && depth < 8)
        png_set_expand_gray_1_2_4_to_8(png);
    if (png_get_valid(png, info, PNG_INFO_tRNS) && !(opts && opts->palette_index && ct == PNG_COLOR_TYPE_PALETTE))
        png_set_tRNS_to_alpha(png);
    if (depth == 16)
        png_set_strip_16(png);   /* keeps the high byte */
    if (opts && opts->cv_gray) {
        png_set_strip_alpha(png);
        if (ct & PNG_COLOR_MASK_COLOR)
            png_set_rgb_to_gray_fixed(png, 1, 29900, 58700);
    }
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
}

/* Checks the 8-byte signature (sig holds n bytes). */
static int check_signature(const uint8_t *sig, size_t n, const char *name, perr_t *e)
{
    if (n == 0)
        return BAD(e, "%s: empty file, not a PNG", name);
    if (n < 8 || png_sig_cmp((png_const_bytep)sig, 0, 8))
        return BAD(e, "%s: not a PNG file (bad signature)", name);
    return 0;
}

/* Decodes from src, whose first 8 bytes (the signature) were consumed. */
static int decode(png_src_t *psrc, const char *name, const png_opts_t *opts, image_t *im,
                  png_info_s_t *pi, perr_t *e)
{
    png_src_t *volatile srcp = psrc;
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, psrc, on_error, on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_read_struct(&png, NULL, NULL);
        return INTERNAL(e, "%s: cannot initialise libpng", name);
    }
    /* Changed after setjmp, read after longjmp: must be volatile. */
    png_bytep *volatile rows = NULL;
    uint8_t *volatile pixels = NULL;
    if (setjmp(png_jmpbuf(png))) {
        free(rows);
        free(pixels);
        png_destroy_read_struct(&png, &info, NULL);
        return BAD(e, "%s: corrupt PNG: %s", name, srcp->msg[0] ? srcp->msg : "libpng error");
    }
    png_set_read_fn(png, psrc, read_bytes);
    png_set_sig_bytes(png, 8);
    png_set_crc_action(png, PNG_CRC_DEFAULT, PNG_CRC_ERROR_QUIT);
    png_set_user_limits(png, 1u << 16, 1u << 16);
    png_read_info(png, info);
    png_uint_32 w = png_get_image_width(png, info), h = png_get_image_height(png, info);
    if (pi) {
        pi->bit_depth = png_get_bit_depth(png, info);
        pi->color_type = png_get_color_type(png, info);
        pi->interlaced = png_get_interlace_type(png, info) != PNG_INTERLACE_NONE;
        pi->has_trns = png_get_valid(png, info, PNG_INFO_tRNS) != 0;
    }
    if ((int64_t)w > IMAGE_MAX_PIXELS / (int64_t)h)
        png_error(png, "image too large");
    set_transforms(png, info, opts);
    int c = png_get_channels(png, info);
    if (png_get_bit_depth(png, info) != 8 || c < 1 || c > 4 ||
        png_get_rowbytes(png, info) != (size_t)w * (size_t)c)
        png_error(png, "unexpected layout after conversion to 8 bits");
    pixels = xmalloc((size_t)w * h * (size_t)c);
    rows = xmalloc(h * sizeof *rows);
    for (png_uint_32 y = 0; y < h; y++)
        rows[y] = pixels + (size_t)y * w * (size_t)c;
    png_read_image(png, rows);
    png_read_end(png, NULL);   /* checks the chunks after the image data and IEND */
    png_destroy_read_struct(&png, &info, NULL);
    free(rows);
    im->w = w;
    im->h = h;
    im->c = c;
    im->data = pixels;
    return 0;
}

int png_decode(const void *buf, size_t n, const char *name, const png_opts_t *opts,
               image_t *im, png_info_s_t *pi, perr_t *e)
{
    memset(im, 0, sizeof *im);
    if (check_signature(buf, n, name, e) < 0)
        return -1;
    png_src_t src = { .p = buf, .n = n, .off = 8 };
    return decode(&src, name, opts, im, pi, e);
}

/* Streams the file through libpng (no whole-file copy). */
int png_load(const char *path, const png_opts_t *opts, image_t *im, png_info_s_t *info,
             perr_t *e)
{
    memset(im, 0, sizeof *im);
    FILE *f = fopen(path, "rb");
    if (!f)
        return BAD(e, "%s: cannot open: %s", path, strerror(errno));
    setvbuf(f, NULL, _IOFBF, 1 << 16);
    uint8_t sig[8];
    size_t n = fread(sig, 1, sizeof sig, f);
    png_src_t src = { .f = f };
    int rc = check_signature(sig, n, path, e);
    if (!rc)
        rc = decode(&src, path, opts, im, info, e);
    fclose(f);
    return rc;
}
