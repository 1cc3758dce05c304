/* yolo_task.h — the instance masks of a YOLOv8-seg head and the keypoints
 * of a YOLOv8-pose head, for detections yolo_decode kept (rules, what they
 * reproduce of Ultralytics' validation and a worked example:
 * docs/metrics-detection.md "Masks and keypoints").
 *
 * Mask of detection d (anchor a, box x1..x2, y1..y2 in input pixels):
 *   1. logits L = sum_j coef_j * proto_j over the nm proto planes, in
 *      double, j ascending (coef_j: head row 4 + nc + j of anchor a);
 *   2. the proto planes' letterbox part (scale_masks: pad = (mw - in_w *
 *      gain) / 2, cut at int(pad)) resized bilinearly (half-pixel centres,
 *      source index clamped at 0 and at the last row/column) to the input
 *      size, pixel (r, c) kept when x1 <= c < x2 and y1 <= r < y2 (float32
 *      compares: crop_mask) and its resized logit is > 0 (sigmoid > 0.5);
 *   3. that input-sized binary mask's image part [int(oy), int(in_h - oy))
 *      x [int(ox), int(in_w - ox)) (scale_image) resized bilinearly, the
 *      same way, to the original size: a pixel is foreground when its
 *      interpolated value is >= 0.5.
 * Keypoint k: head rows 4 + nc + 3k, +1, +2 (x, y, confidence); x, y mapped
 * as the box corners are, then clipped to [0, width] x [0, height]; the
 * confidence is kept as it is. */
#ifndef PARITY_COCO_YOLO_TASK_H
#define PARITY_COCO_YOLO_TASK_H

#include <stdint.h>
#include "coco/coco.h"
#include "coco/yolo.h"
#include "tensor/tensor.h"

/* Input pixels to original pixels: original = (input - o) / s per axis. */
typedef struct yolo_geom {
    double sx, sy, ox, oy;
    double w, h;              /* the original image's size */
    double in_w, in_h;        /* the model input's size (masks need it) */
    int clip;                 /* clip boxes to the image */
} yolo_geom_t;

/* Box corners x1, y1, x2, y2 in input pixels to original pixels. */
void yolo_geom_box(const yolo_geom_t *g, const float in[4], double out[4]);

/* Checks the proto tensor p ([1, nm, mh, mw] or [nm, mh, mw], float) of
 * file `what` against the head's mask_coefs. */
int yolo_protos_check(const tensor_t *p, const char *what, const yolo_opts_t *o, perr_t *e);

/* The mask of detection d of head t (nc classes) in original pixels. */
int yolo_seg_mask(const tensor_t *t, const tensor_t *protos, int64_t nc, const yolo_det_t *d,
                  const yolo_geom_t *g, const char *what, coco_mask_t *m, perr_t *e);

/* The K keypoints of detection d as x, y, confidence into out[3K]. */
int yolo_pose_kpts(const tensor_t *t, int64_t nc, int64_t K, const yolo_det_t *d, const yolo_geom_t *g,
                   const char *what, double *out, perr_t *e);

/* Appends det with its mask (taken over) or keypoints (copied), growing
 * d's shape arrays with it; area is the box's, as COCO.loadRes takes it
 * from a result that has a bbox. */
void coco_dets_push_shape(coco_dets_t *d, const coco_det_t *det, coco_mask_t *mask, const double *kpts);

#endif
