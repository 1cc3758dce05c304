/* detmatch.h — comparing two runs of a detector by detection, not by
 * element. Outputs after TopK are ordered by score, so near-tied
 * detections swap places and an element-wise difference compares different
 * objects. Here each sample's detections are matched between A and the
 * reference B per class, greedily by A's score (pycocotools' order), at
 * IoU >= a threshold; the result counts matched, missed (B's, above the
 * score floor, unmatched) and extra (A's, above the floor, unmatched)
 * detections, label flips (a missed and an extra detection of different
 * classes on the same object), and the IoU, score drift and box drift over
 * matched pairs where either side is above the floor. */
#ifndef PARITY_COMPARE_DETMATCH_H
#define PARITY_COMPARE_DETMATCH_H

#include <jansson.h>
#include "coco/yolo.h"
#include "compare/source.h"

typedef enum { DM_XYXY, DM_XYWH, DM_CXCYWH } dm_format_t;

typedef struct dm_config {
    char *labels, *boxes, *scores;   /* tensor names */
    dm_format_t format;
    double iou;                      /* match threshold [0.5] */
    double score_floor;              /* detections below it may go unmatched [0.3] */
    yolo_opts_t yolo;                /* a raw YOLO head decoded first (head=...) */
} dm_config_t;

/* "labels=L,boxes=B,scores=S[,format=xyxy][,iou=0.5][,score_floor=0.3]", or
 * for a raw YOLO head "head=yolov8|yolov5[,output=T]" and the decoding keys
 * of coco/yolo.h (conf_threshold, nms_iou, max_det, max_nms, multi_label,
 * agnostic, num_classes) instead of labels/boxes/scores/format: both sides
 * are decoded, then matched in input pixels. */
int dm_config_parse(dm_config_t *c, const char *spec, perr_t *e);
void dm_config_free(dm_config_t *c);

typedef struct dm_result {
    int samples;
    int64_t ref_above, a_above;      /* detections at or above the floor */
    int64_t matched, missed, extra, label_flips;   /* matched: every pair, floor or not */
    int64_t n;                       /* matched pairs where either side is above the floor
                                        (JSON "matched"; "matched_all" is every pair) */
    double *iou, *dscore, *dbox;     /* per such pair: IoU, |score a - b|, max |coordinate a - b| */
} dm_result_t;

int dm_run(const cmp_side_t *a, const cmp_side_t *b, const dm_config_t *c, dm_result_t *r, perr_t *e);
/* 1 when nothing is missed, extra or flipped. */
int dm_passed(const dm_result_t *r);
json_t *dm_json(const dm_result_t *r, const dm_config_t *c);
void dm_result_free(dm_result_t *r);

#endif
