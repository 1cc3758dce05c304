/* iou.h — the segm and keypoints similarity measures of pycocotools'
 * computeIoU (masks) and computeOks (keypoints). */
#ifndef PARITY_COCO_IOU_H
#define PARITY_COCO_IOU_H

#include "coco/coco.h"

/* Mask IoU as maskApi's rleIou (intersection over the detection's area for
 * a crowd GT); any value below min_iou may be returned as 0, since no
 * threshold can use it. */
double coco_mask_iou(const coco_mask_t *dt, const coco_mask_t *gt, int crowd, double min_iou);

/* Object keypoint similarity of one detection's keypoints d with one GT's
 * g (3 * t->nkpt values each), the GT's box gbox and JSON area garea. */
double coco_oks(const double *d, const double *g, const double *gbox, double garea,
                const coco_task_t *t);

#endif
