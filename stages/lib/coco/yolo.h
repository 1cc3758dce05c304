/* yolo.h — detections from a YOLO detector's raw head: confidence
 * threshold, exact per-class NMS and max_det, as Ultralytics' validation
 * does it but with two rules fixed where PyTorch leaves them open (the
 * definitions, what they are identical to and a worked example:
 * docs/metrics-detection.md).
 *
 * Layouts (after leading dimensions of 1; one image per tensor):
 *   yolov8   [4 + nc, N]  rows cx, cy, w, h (input pixels), then nc class
 *                         scores; no objectness (YOLOv8, YOLOv11, YOLOv5u)
 *   yolov5   [N, 5 + nc]  columns cx, cy, w, h, objectness, nc class
 *                         scores; score = objectness * class (YOLOv5, v7)
 *   yolov8-seg  [4 + nc + nm, N]  then nm mask coefficients per anchor, with a
 *                         proto tensor [1, nm, mh, mw] (coco/yolo_task.h)
 *   yolov8-pose [4 + nc + 3K, N]  then K keypoints (x, y, confidence)
 * A head with fewer anchors than values per anchor is refused as probably
 * the other layout, unless num_classes is set (and matches).
 * Every value is taken as float32 (float16/bfloat16 widen exactly, float64
 * rounds) and all arithmetic up to the kept boxes is float32, as PyTorch's.
 *
 * Candidates: anchor a, class c with score s(a, c) > conf (float32
 * compare; yolov5 first drops anchors whose objectness is not > conf).
 * multi_label (on when nc > 1): every such (a, c), in anchor-then-class
 * order; otherwise one per anchor, the first class of highest score.
 * More than max_nms candidates: the max_nms best (order below) stay.
 * Order: score descending, ties by candidate position (stable). NMS, per
 * class (all classes together when agnostic): a candidate is dropped when
 * its float32 IoU with a kept candidate of its class is > iou_thr in
 * double (torchvision's nms kernel), with no coordinate offset. The first
 * max_det kept candidates in that order are the detections. */
#ifndef PARITY_COCO_YOLO_H
#define PARITY_COCO_YOLO_H

#include <stdint.h>
#include "tensor/tensor.h"
#include "util/err.h"

typedef enum { YOLO_NONE, YOLO_V8, YOLO_V5, YOLO_V8_SEG, YOLO_V8_POSE } yolo_head_t;
typedef enum { YOLO_LB_ULTRALYTICS, YOLO_LB_META } yolo_letterbox_t;

typedef struct yolo_opts {
    yolo_head_t head;
    char *output;             /* the head's tensor name [output0] */
    double conf;              /* compared as (float)conf [0.001] */
    double iou;               /* NMS IoU threshold [0.7] */
    int64_t max_det;          /* [300] */
    int64_t max_nms;          /* candidates into NMS at most [30000] */
    int multi_label;          /* [1] (off by itself when nc == 1) */
    int agnostic;             /* one NMS over all classes [0] */
    int64_t num_classes;      /* expected nc, 0: the tensor's */
    yolo_letterbox_t letterbox;   /* letterbox inverse [ultralytics] */
    char *protos;             /* yolov8-seg: the proto tensor's name [output1] */
    int64_t mask_coefs;       /* yolov8-seg: nm, mask coefficients per anchor [32] */
    int64_t keypoints;        /* yolov8-pose: K, keypoints per anchor [17] */
} yolo_opts_t;

typedef struct yolo_det {
    float box[4];             /* x1, y1, x2, y2 in input pixels */
    float score;
    int64_t cls;              /* class index 0..nc-1 */
    int64_t anchor;           /* the anchor (row of N) it came from */
} yolo_det_t;

void yolo_opts_init(yolo_opts_t *o);
void yolo_opts_free(yolo_opts_t *o);
/* One setting from text: 1 when key is a YOLO key and was set, 0 when it is
 * not one, -1 (e) on a bad value. Keys: head, output, conf_threshold,
 * nms_iou, max_det, max_nms, multi_label, agnostic, num_classes,
 * letterbox_inverse, protos, mask_coefs, keypoints. */
int yolo_opt_set(yolo_opts_t *o, const char *key, const char *val, perr_t *e);
/* "head=...,output=...,..." with every setting (numbers round-trip), for
 * compare --detection; NULL when head is YOLO_NONE. malloc'd. */
char *yolo_opts_spec(const yolo_opts_t *o);
/* The head's name in configs ("yolov8-seg"). */
const char *yolo_head_name(yolo_head_t h);
/* t's values as float32: t's own data, or a converted copy in *own (to
 * free; NULL when none was made). */
const float *yolo_f32(const tensor_t *t, float **own);
/* Values per anchor after the nc class scores: nm (seg), 3K (pose), else 0. */
int64_t yolo_extra(const yolo_opts_t *o);

/* Decodes the head tensor t (read from `what`, named in errors). nlabels:
 * the class count the label map expects, 0 when it has none; labels_src:
 * where that map came from (its file), named when the counts differ, or NULL. Non-finite
 * scores (or objectness), and non-finite boxes of candidates, are bad
 * input. *out (malloc'd, *n entries) is in detection order. */
int yolo_decode(const tensor_t *t, const char *what, const yolo_opts_t *o, int64_t nlabels,
                const char *labels_src, yolo_det_t **out, int64_t *n, perr_t *e);

#endif
