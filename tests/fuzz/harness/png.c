/* png.c — fuzz harness: the PNG decoder (image/png.c), in colour and in
 * cv2's gray conversion (the first byte's low bit picks which), with palette
 * images kept as indices (label maps) when its second bit is set. */
#include "fuzz/fuzz.h"
#include "image/image.h"

FUZZ_READER(png)
{
    if (!n) return 0;
    png_opts_t o = {.cv_gray = d[0] & 1, .palette_index = (d[0] >> 1) & 1};
    image_t im = {0};
    png_info_s_t info;
    if (png_decode(d + 1, n - 1, "fuzz.png", &o, &im, &info, e)) return -1;
    image_free(&im);
    return 0;
}
