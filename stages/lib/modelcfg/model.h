/* model.h — a validation config (configs/models/NAME.yaml), read and
 * validated: every name and path that will reach make or a shell is checked
 * against a safe alphabet here, so a config can never run a command. */
#ifndef PARITY_MODELCFG_MODEL_H
#define PARITY_MODELCFG_MODEL_H

#include "config/config.h"

#define PLAN_MAX 32

typedef struct variant {
    char *name;
    char *config;        /* path of its preprocess YAML */
    char *text;          /* an inline config: the file's text, written by plan_emit */
    char *detection;     /* its own map-eval decoding file (the model's detection: with this
                            variant's detection: on top), or NULL */
    char *detection_text;   /* that file's text, written by plan_emit */
} variant_t;

typedef struct precision_cfg {
    char *name;
    char *config;        /* path of its precision YAML (parity cells) */
    char *backend;       /* or: the backend command that runs these cells
                            (pipeline/backends/NAME, or a path), NULL = parity */
    char *text;          /* an inline config: the file's text, written by plan_emit */
} precision_cfg_t;

typedef struct tensor_tol {
    char *name;
    double atol, rtol;
} tensor_tol_t;

typedef struct model_cfg {
    char *name;
    char *path;                 /* configs/models/NAME.yaml */
    char *model;                /* ONNX file */
    char *inputs;               /* ready tensor set(s), or NULL with a dataset */
    char *gt, *images;          /* dataset, or NULL */
    char *shapes[PLAN_MAX]; int n_shapes;      /* "NAME=1x3x320x320" */
    char *pre_set[PLAN_MAX]; int n_pre_set;    /* "KEY=VALUE" for every variant */
    variant_t variants[PLAN_MAX]; int n_variants;
    precision_cfg_t precisions[PLAN_MAX]; int n_precisions;
    int ref_variant, ref_precision;
    double atol, rtol;
    char *error_stat;
    tensor_tol_t tols[PLAN_MAX]; int n_tols;   /* compare.outputs: names or globs */
    char *judge[PLAN_MAX]; int n_judge;        /* outputs: what the application reads (globs) */
    char *ignore[PLAN_MAX]; int n_ignore;      /* compare.ignore: outputs not judged (globs) */
    int detection;              /* has a detection: section (map-eval) */
    double max_map_drop;        /* AP points; < 0 = no threshold */
    double min_map;             /* AP of the reference; < 0 = none */
    int require_compare;        /* every cell must pass compare */
    char *layerwise_sample;     /* sample folder name for layerwise dumps, or NULL */
    double dump_budget;         /* dump.budget: bytes all layerwise dumps of a run may take */
    char *depends[PLAN_MAX]; int n_depends;   /* files the Makefile makes first (generated models) */
    double layer_snr_db;        /* compare.layer_snr_db: layers judged by SNR; <= 0 = by tolerance */
    int match_detections;       /* compare.match: detections (default with detection:) */
    char *det_spec;             /* compare --detection SPEC (names checked), or NULL */
    int det_input_coords;       /* det_spec decodes a YOLO head: boxes in input pixels */
    const char *det_iou_type;   /* map-eval --iou-type: "segm" (yolov8-seg), "keypoints" (yolov8-pose) or NULL (bbox) */
    char *pre_post[PLAN_MAX]; int n_pre_post;  /* compare.pre_postprocess: tensors before TopK */
    struct expect { int variant, precision; char *reason; } expect[PLAN_MAX]; int n_expect;
    /* task: (task.c): what the model does and how task-eval judges it */
    const char *task;           /* detection | classification | segmentation | matting | restoration, or NULL */
    const char *task_metric;    /* the headline metric ("top1", "miou", "mae", "psnr"; "ap" for detection) */
    char *task_gt[4];           /* dataset.labels, dataset.label_maps, dataset.clean, dataset.classes (or NULL) */
    char *task_args[2 * PLAN_MAX]; int n_task_args;   /* task-eval options from metric: */
    struct metric_bound { char *metric; double v; } drops[PLAN_MAX], mins[PLAN_MAX], maxs[PLAN_MAX];
    int n_drops, n_mins, n_maxs;   /* thresholds.max_metric_drop / min_metric / max_metric */
                                /* expected_failures: -1 = every variant / precision */
    config_t *cfg;
} model_cfg_t;

/* Prints the schema (every key path a model config may hold), one a line. */
void model_print_schema(void);
int model_load(model_cfg_t *m, const char *path, const char *build_dir, perr_t *e);
void model_free(model_cfg_t *m);
/* task.c: reads task:, the dataset's ground truth, metric: and the metric
 * thresholds (after the rest of the config); frees what it read. */
int model_load_task(model_cfg_t *m, perr_t *e);
void model_free_task(model_cfg_t *m);
/* Checks a name against [A-Za-z0-9._-]+ and a path against [A-Za-z0-9._/+-]+. */
int safe_name(const char *s);
int safe_path(const char *s);

#endif
