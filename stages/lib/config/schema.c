/* schema.c — the key tables of the preprocess, precision and detection
 * configs (see schema.h); the settings they name are documented where they
 * are read: preprocess/settings.c, precision/precision.c, coco/decode.h. */
#include <stddef.h>
#include "config/schema.h"

const char *const prep_config_keys[] = {
    "input.name", "resize.size", "resize.method", "resize.mode", "resize.pad", "resize.fill",
    "resize.shorter", "color", "alpha", "background", "scale", "mean", "std", "layout",
    "dtype", "extra.*", "name", "description", NULL
};

const char *const precision_config_keys[] = {
    "precision", "constraints", "strongly_typed", "accumulate", "layers", "description",
    "fold.batchnorm", "fold.scale_bias", "fold.activation", "fold.residual", NULL
};

const char *const decode_config_keys[] = {
    "labels", "boxes", "scores", "box_format", "box_coords", "normalized", "score_threshold",
    "top_k", "label_map", "clip", "meta", "head", "output", "conf_threshold", "nms_iou", "max_det",
    "max_nms", "multi_label", "agnostic", "num_classes", "letterbox_inverse", "protos", "mask_coefs",
    "keypoints", NULL,
};
