/* taskeval.h — the settings of one task-eval run (main.c fills them from the
 * command line) and the evaluators of each task (classify.c, pixels.c,
 * restore.c), each returning its results as JSON. */
#ifndef PARITY_TASKEVAL_H
#define PARITY_TASKEVAL_H

#include <jansson.h>
#include <stdint.h>
#include "tensor/tensor.h"
#include "image/image.h"
#include "util/err.h"

typedef enum { TASK_CLASSIFICATION, TASK_SEGMENTATION, TASK_MATTING, TASK_RESTORATION } task_t;

typedef struct te_opts {
    task_t task;
    const char *dt;           /* dataset run: DIR/<sample>/<tensor>.npy */
    const char *ref;          /* the reference cell's run, or NULL */
    const char *output;       /* tensor name, or NULL: the sample's only tensor */
    const char *labels;       /* classification: sample -> class index */
    const char *classes;      /* class names, one per class */
    const char *gt_dir;       /* segmentation / matting: DIR/<sample>.png */
    const char *clean_dir;    /* restoration: DIR/<sample>.png */
    int64_t num_classes;      /* segmentation with a label-map output; 0 = from logits */
    int ignore_index;         /* segmentation: 255 */
    int band_radius;          /* matting: boundary band half-width, pixels */
    int basicsr;              /* restoration convention: 0 skimage, 1 BasicSR */
    int crop_border, y_channel, no_round;
    int output_max;           /* restoration: outputs in [0, output_max] (1, or 255 for pixel values) */
} te_opts_t;

/* The sample folders of a dataset run, sorted (files such as index.json are
 * skipped); no folder is an error. */
int te_samples(const char *dir, char ***names, int *n, perr_t *e);
/* Reads the output tensor of one sample as float32 (any float or integer
 * type is converted) into t; *orig (when not NULL) gets the stored type. */
int te_read_output(const te_opts_t *o, const char *dir, const char *sample, tensor_t *t, dtype_t *orig, perr_t *e);
/* The ground-truth PNG of a sample: DIR/<sample>.png, 8 bits, palette
 * images as their indices; `what` says what it is in errors. */
int te_read_png(const char *dir, const char *sample, const char *what, image_t *im, char **path, perr_t *e);
/* te_read_output of the run's sample, as planes: [1, C, H, W], [C, H, W] or
 * [H, W] (C = 1); any axis before C must be 1. */
int te_read_planes(const te_opts_t *o, const char *sample, tensor_t *t, dtype_t *orig, int64_t *c, int64_t *h, int64_t *w,
                   perr_t *e);

json_t *eval_classification(const te_opts_t *o, perr_t *e);
json_t *eval_segmentation(const te_opts_t *o, perr_t *e);
json_t *eval_matting(const te_opts_t *o, perr_t *e);
json_t *eval_restoration(const te_opts_t *o, perr_t *e);

/* {"value": v, "unit": u, "better": "higher"|"lower"}; non-finite v is null. */
json_t *te_metric(double v, const char *unit, int higher);

#endif
