/* resize.c — method names and the dispatch to the OpenCV and Pillow resizers. */
#include <string.h>
#include "image/resize.h"

const char *const resize_method_names[] = {
    "opencv-linear", "opencv-area", "opencv-nearest", "opencv-cubic",
    "pillow-bilinear", "pillow-bicubic", "pillow-nearest", "pillow-lanczos", NULL
};

int resize_image(const image_t *src, int64_t dw, int64_t dh, resize_method_t m, image_t *dst,
                 perr_t *e)
{
    if (m < 0 || m >= RESIZE_METHOD_COUNT)
        return INTERNAL(e, "resize: unknown method %d", (int)m);
    if (image_alloc(dst, dw, dh, src->c, e) < 0)
        return -1;
    if (resize_is_pillow(m))
        resize_pil(src, dst, m);
    else
        resize_cv(src, dst, m);
    return 0;
}
