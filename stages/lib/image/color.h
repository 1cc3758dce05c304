/* color.h — channel conversions on 8-bit images, each written to match the
 * library a training pipeline would have used (documented per function).
 * All work in place on image_t (reallocating when the channel count changes). */
#ifndef PARITY_COLOR_H
#define PARITY_COLOR_H

#include "image/image.h"

/* Removes the alpha channel (2 -> 1, 4 -> 3), as cv2.imread(IMREAD_COLOR)
 * and PIL's convert("RGB") / convert("L") do. */
void color_drop_alpha(image_t *im);
/* Composites a 4-channel image over an opaque background (RGB) and drops
 * alpha: Pillow's Image.alpha_composite(background, image) arithmetic
 * (7 extra bits, rounded division by 255). */
void color_composite(image_t *im, const uint8_t bg[3]);
/* Gray -> RGB by replication (1 -> 3, 2 -> 4). */
void color_gray_to_rgb(image_t *im);
/* Adds an opaque alpha channel (3 -> 4). */
void color_add_alpha(image_t *im);
/* RGB -> gray (3 -> 1) as PIL's convert("L"): (R*19595 + G*38470 +
 * B*7471 + 0x8000) >> 16. */
void color_gray_pil(image_t *im);
/* RGB -> gray (3 -> 1) as cv2.cvtColor(RGB2GRAY): (R*4899 + G*9617 + B*1868
 * + 8192) >> 14. */
void color_gray_cv(image_t *im);
/* Swaps channels 0 and 2 (RGB <-> BGR, RGBA <-> BGRA). */
void color_swap_rb(image_t *im);

#endif
