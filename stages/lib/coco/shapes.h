/* shapes.h — reading the 'segmentation' and 'keypoints' fields of one COCO
 * object (ground truth or result) into a mask / keypoint array, with errors
 * that name the file, the element and the problem. */
#ifndef PARITY_COCO_SHAPES_H
#define PARITY_COCO_SHAPES_H

#include <stdint.h>
#include <jansson.h>
#include "coco/fields.h"
#include "coco/rle.h"

/* The object's mask; img_h / img_w are its image's size (< 1 when the
 * ground truth does not give one: an error here). */
int jf_segmentation(const json_t *obj, const jplace_t *pl, int64_t image_id, int64_t img_h,
                    int64_t img_w, coco_mask_t *m, perr_t *e);
/* Exactly 3 * nkpt finite numbers (x, y, v per keypoint) into out. */
int jf_keypoints(const json_t *obj, const jplace_t *pl, int nkpt, double *out, perr_t *e);

#endif
