/* decode.h — detections from inference outputs.
 *
 * A dataset run is DIR/<sample-id>/ holding the model's output tensors as
 * .npy files, with the preprocess stage's meta.json (there, or under a
 * separate meta folder). meta.json gives the COCO image id ("image_id", or
 * "file" matched against the ground truth's file_name), the original size
 * ("width", "height") and the preprocessing map
 *     input pixel = original pixel * scale + offset   (per axis)
 * ("scale_x", "scale_y", "offset_x", "offset_y"; optional "input_width",
 * "input_height" for normalised input coordinates), which covers stretch,
 * letterbox and centre crop.
 *
 * The decoding settings (YAML keys of one config section, or command-line
 * options of the same names with '-' for '_'):
 *   labels, boxes, scores   tensor names [labels, boxes, scores]
 *   box_format              xyxy | xywh | cxcywh [xyxy]
 *   box_coords              original | input [original]
 *   normalized              true: fractions of that image's size [false]
 *   score_threshold         drop scores below it [none]
 *   top_k                   keep the best N per image, 0 = all [0]
 *   label_map               coco80 | identity | a list of category ids |
 *                           a YAML/JSON file holding that list [identity]
 *   clip                    clip boxes to the original image [false;
 *                           true with head]
 * A raw YOLO head (coco/yolo.h; docs/metrics-detection.md) instead of
 * labels/boxes/scores:
 *   head                    yolov8 ([1, 4+nc, N]) | yolov5 ([1, N, 5+nc]) [none]
 *   output                  the head's tensor name [output0]
 *   conf_threshold          score > it, compared in float32 [0.001]
 *   nms_iou                 per-class NMS: drop when IoU > it [0.7]
 *   max_det                 detections per image at most [300]
 *   max_nms                 candidates into NMS at most [30000]
 *   multi_label             every class above conf_threshold [true]
 *   agnostic                one NMS over all classes [false]
 *   num_classes             nc the head must have [the head's own]
 *   letterbox_inverse       ultralytics (scale_boxes: gain, rounded pad
 *                           recomputed from the sizes) | meta [ultralytics]
 * With a head, boxes are cx, cy, w, h in input pixels (box_format,
 * box_coords and normalized do not apply, score_threshold and top_k are
 * refused); a label_map must have nc entries. The decoded corners map to
 * the original image per meta.json's "mode": letterbox as
 * letterbox_inverse says, otherwise (v - offset) / scale; in double.
 * Boxes are turned into corners, mapped to original pixels corner by corner,
 * then written as [x1, y1, x2 - x1, y2 - y1]. Kept detections keep their
 * tensor order; a sample's tensors may carry leading dimensions of 1.
 */
#ifndef PARITY_COCO_DECODE_H
#define PARITY_COCO_DECODE_H

#include <stdint.h>
#include "coco/coco.h"
#include "coco/yolo.h"
#include "config/config.h"
#include "util/err.h"

typedef enum { BOX_XYXY, BOX_XYWH, BOX_CXCYWH } coco_box_format_t;
typedef enum { COORDS_ORIGINAL, COORDS_INPUT } coco_box_coords_t;

typedef struct coco_decode_opts {
    char *labels, *boxes, *scores;
    coco_box_format_t format;
    coco_box_coords_t coords;
    int normalized, clip;
    int has_threshold;
    double threshold;
    int64_t top_k;
    int64_t *label_map;      /* NULL: identity */
    int64_t nlabel_map;
    char *label_map_src;     /* the label map's file, or NULL */
    char *meta_dir;          /* NULL: the outputs folder */
    yolo_opts_t yolo;        /* head YOLO_NONE: labels/boxes/scores */
    int clip_set;            /* clip was given (its default depends on head) */
} coco_decode_opts_t;

/* Defaults, then the keys of `section` in the YAML file (when given; "."
 * for the top level) after applying the "KEY=VALUE" overrides to it. */
int coco_decode_opts_init(coco_decode_opts_t *o, const char *file, const char *section,
                          const char *const *sets, int nsets, perr_t *e);
/* Command-line options as "option-name=value" ("labels=out0", "clip="). */
int coco_decode_opts_apply(coco_decode_opts_t *o, const char *const *opts, int n, perr_t *e);
void coco_decode_opts_free(coco_decode_opts_t *o);
/* The same from an already loaded config (plan reads the model's). */
int coco_decode_opts_from(coco_decode_opts_t *o, const config_t *c, const char *section, perr_t *e);

/* The COCO ids 1..90 of the 80 COCO classes, in class-index order. */
extern const int64_t coco80_ids[80];

/* Decodes every sample folder of dir (sorted by name) into out. Image ids
 * are checked against the ground truth. */
int coco_decode_dir(const char *dir, const coco_gt_t *gt, const coco_decode_opts_t *o,
                    coco_dets_t *out, perr_t *e);

#endif
