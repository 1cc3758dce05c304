/* shapes_png.c — writes the shapes dataset's 8-bit RGB images as PNG through
 * libpng, atomically (tmp file + rename), with the zlib level as a knob:
 * 0 or 1 (no filtering) for bulk training data, 6 for the val splits (shapes.h). */
#include <png.h>
#include <setjmp.h>
#include "image/shapes.h"
#include "util/fsutil.h"

static void on_png_error(png_structp png, png_const_charp msg)
{
    perr_t *e = png_get_error_ptr(png);
    BAD(e, "libpng: %s", msg);
    png_longjmp(png, 1);
}

static void on_png_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;
}

int shapes_write_png(const char *path, const uint8_t *rgb, int w, int h, int level, perr_t *e)
{
    atomic_file_t af;
    if (atomic_open(&af, path, e))
        return -1;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, e, on_png_error,
                                              on_png_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        atomic_abort(&af);
        return INTERNAL(e, "%s: libpng: cannot create write structures", path);
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        atomic_abort(&af);
        return perr_prefix(e, "%s: ", path);
    }
    png_init_io(png, af.f);
    png_set_compression_level(png, level);
    /* Fast levels skip the adaptive filter search (most of the time spent
     * on noisy images) for bulk training data. */
    if (level <= 1)
        png_set_filter(png, 0, PNG_FILTER_NONE);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int y = 0; y < h; y++)
        png_write_row(png, rgb + (size_t)y * w * 3);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    return atomic_commit(&af, e);
}
