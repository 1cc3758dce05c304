/* coco.h — COCO bbox, segm and keypoints evaluation with pycocotools' exact
 * semantics (COCOeval with iouType 'bbox', 'segm' or 'keypoints').
 *
 * The map-eval stage loads a ground-truth file and detections (a COCO results
 * JSON, or decoded from inference tensor sets: coco/decode.h), evaluates them
 * and prints/writes the 12 COCO stats. Every rule is pycocotools' (cocoeval.py,
 * coco.py, maskApi.c; listed in docs/design.md "COCO evaluation"): stable sorts, the precision eps, crowd matching, area ranges from the JSON
 * area field, equal-IoU ties, numpy's pairwise mean. Results agree with
 * pycocotools to the last bit on the project's test vectors.
 *
 * Where pycocotools crashes (an empty result list) or asserts (a detection on
 * an image the ground truth does not have), these functions fail with a
 * clear BAD error instead.
 *
 * The modules: gt.c (ground truth), dets.c (results JSON in and out),
 * jsonpar.c (parallel parsing of big JSON arrays with jansson), evaluate.c
 * (per image and category: IoU and greedy matching; iou.c the segm and
 * keypoints measures, rle.c the masks, shapes.c their JSON), accumulate.c
 * (precision/recall per category, area and maxDets), summarize.c (the 12
 * stats, per-category AP, text and JSON output).
 */
#ifndef PARITY_COCO_H
#define PARITY_COCO_H

#include <stdint.h>
#include <stdio.h>
#include <jansson.h>
#include "util/err.h"
#include "coco/rle.h"

enum {
    COCO_T = 10,    /* IoU thresholds .50:.05:.95 */
    COCO_R = 101,   /* recall thresholds 0:.01:1 */
    COCO_A = 4,     /* area ranges all, small, medium, large */
    COCO_M = 3,     /* maxDets 1, 10, 100 */
    COCO_NSTATS = 12,     /* the most stats a type has (bbox, segm); keypoints have 10 */
    COCO_MAX_KPTS = 1024, /* keypoints per object at most */
};

/* What is compared: pycocotools' iouType. */
typedef enum coco_iou_type { COCO_BBOX, COCO_SEGM, COCO_KEYPOINTS } coco_iou_type_t;

/* The evaluation's kind and its keypoint settings (pycocotools' Params). */
typedef struct coco_task {
    coco_iou_type_t type;
    int nkpt;                      /* keypoints per object: the number of sigmas */
    double sigmas[COCO_MAX_KPTS];  /* kpt_oks_sigmas */
} coco_task_t;

/* type with the defaults: COCO's 17 person sigmas for keypoints. */
void coco_task_init(coco_task_t *t, coco_iou_type_t type);
/* "bbox", "segm", "keypoints" -> type; -1 when none of them. */
int coco_iou_type_parse(const char *s);
const char *coco_iou_type_name(coco_iou_type_t t);

extern const char *const coco_stat_names[COCO_NSTATS]; /* "AP", "AP50", ... "ARl" */
extern const char *const coco_area_names[COCO_A];      /* "all", "small", ... */
extern const int coco_max_dets[COCO_M];                /* 1, 10, 100 */
/* IoU and recall thresholds as numpy's linspace computes them. */
double coco_iou_thr(int t);
double coco_rec_thr(int r);

/* One ground-truth annotation (the fields the bbox evaluation reads). */
typedef struct coco_ann {
    int64_t id, image_id, category_id;
    double bbox[4];          /* x, y, w, h */
    double area;             /* the JSON area field (segment area in COCO) */
    int iscrowd;
    int64_t num_keypoints;   /* keypoints: a GT with 0 is ignored */
    coco_mask_t mask;        /* segm: the segmentation as RLE */
} coco_ann_t;

typedef struct coco_gt {
    char *path;
    int64_t nimg;
    int64_t *img_ids;        /* sorted, unique (pycocotools' params.imgIds) */
    char **img_files;        /* file_name per sorted image, NULL when absent */
    int64_t ncat;
    int64_t *cat_ids;        /* sorted, unique */
    char **cat_names;        /* per sorted category, NULL when absent */
    int64_t nann;
    coco_ann_t *anns;        /* file order */
    coco_task_t task;        /* what the annotations were read for */
    int64_t *img_h, *img_w;  /* segm: per sorted image, -1 when absent */
    double *kpts;            /* keypoints: [nann][3 * task.nkpt] */
} coco_gt_t;

/* One detection, as in a COCO results file. */
typedef struct coco_det {
    int64_t image_id, category_id;
    double bbox[4];          /* x, y, w, h in original image pixels */
    double score;
} coco_det_t;

typedef struct coco_dets {
    int64_t n, cap;
    coco_det_t *d;
    /* segm and keypoints results (NULL for box results) */
    coco_iou_type_t type;
    int nkpt;
    double *area;            /* [n] loadRes' area: from bbox, else mask / keypoint extent */
    coco_mask_t *masks;      /* segm: [n] */
    double *kpts;            /* keypoints: [n][3 * nkpt] */
} coco_dets_t;

/* Loads a COCO ground-truth JSON (the annotations parsed on nthreads
 * threads; the result does not depend on it). Requires images[].id, categories[].id and
 * annotations[] with id, image_id, category_id, bbox (4 finite numbers,
 * w, h >= 0), area (finite, >= 0) and iscrowd (0 or 1). */
int coco_gt_load(const char *path, int nthreads, coco_gt_t *gt, perr_t *e);
/* The same for a task: segm also requires every annotation's segmentation
 * (and its image's width and height), keypoints every annotation's
 * keypoints (3 * nkpt numbers) and num_keypoints. */
int coco_gt_load_task(const char *path, int nthreads, const coco_task_t *task, coco_gt_t *gt,
                      perr_t *e);
void coco_gt_free(coco_gt_t *gt);
/* Index of an image / category id in the sorted lists, -1 when absent. */
int64_t coco_gt_img_index(const coco_gt_t *gt, int64_t image_id);
int64_t coco_gt_cat_index(const coco_gt_t *gt, int64_t category_id);

/* Loads a COCO results JSON (a list of {image_id, category_id, bbox, score};
 * other fields are ignored). Every field is checked: finite numbers,
 * w, h >= 0. */
int coco_dets_load(const char *path, int nthreads, coco_dets_t *d, perr_t *e);
/* Results for gt's task. segm: image_id, category_id, score, segmentation
 * (polygons rasterised with the GT image's size); keypoints: image_id,
 * category_id, score, keypoints. As in COCO.loadRes, the first result
 * decides the area: with a bbox, every result needs one and area = w*h;
 * without, area = mask area / keypoint extent (x1-x0)*(y1-y0). */
int coco_dets_load_task(const char *path, int nthreads, const coco_gt_t *gt, coco_dets_t *d,
                        perr_t *e);
/* Writes the standard COCO results JSON (atomically), with each result's
 * compressed-RLE segmentation or keypoints for segm / keypoints dets.
 * Numbers keep 17 significant digits, so reading the file back evaluates
 * identically. */
int coco_dets_write(const char *path, const coco_dets_t *d, perr_t *e);
void coco_dets_push(coco_dets_t *d, const coco_det_t *det);
void coco_dets_free(coco_dets_t *d);
/* Checks one detection's values; what names it in errors. */
int coco_det_check(const coco_det_t *d, const char *what, perr_t *e);

/* The evaluation, laid out as pycocotools' eval dict. */
typedef struct coco_eval {
    coco_iou_type_t type;
    int nstats;              /* 12, or 10 for keypoints */
    const char *const *stat_names;
    int max_dets[COCO_M];    /* maxDets per slot: 1, 10, 100; keypoints 0, 0, 20 (0: unused) */
    int64_t ncat;
    double *precision;       /* [T][R][K][A][M], -1 where undefined */
    double *recall;          /* [T][K][A][M], -1 where undefined */
    double stats[COCO_NSTATS];
    double *cat_ap;          /* [K]: mean precision at area all, the last maxDets; -1 if undefined */
    int64_t ndets_used;      /* detections whose category is in the ground truth */
    int64_t ndets_dropped;   /* detections of unknown categories (pycocotools drops them) */
} coco_eval_t;

#define COCO_PREC(ev, t, r, k, a, m) \
    ((ev)->precision[((((int64_t)(t) * COCO_R + (r)) * (ev)->ncat + (k)) * COCO_A + (a)) * COCO_M + (m)])
#define COCO_REC(ev, t, k, a, m) \
    ((ev)->recall[(((int64_t)(t) * (ev)->ncat + (k)) * COCO_A + (a)) * COCO_M + (m)])

/* evaluate + accumulate + summarize. nthreads <= 1 runs on the caller's
 * thread; the result does not depend on it. Errors: no detections at all,
 * a detection on an image id the ground truth lacks. */
int coco_evaluate(const coco_gt_t *gt, const coco_dets_t *d, int nthreads, coco_eval_t *ev,
                  perr_t *e);
void coco_eval_free(coco_eval_t *ev);

/* numpy's mean of the values > -1 (pairwise summation in 8192-element
 * chunks); -1 when there are none. */
double coco_np_mean(const double *v, int64_t n);
/* numpy's sum of n values (np.sum / add.reduce). */
double coco_np_sum(const double *v, int64_t n);

/* The lines pycocotools' summarize() prints (12, or 10 for keypoints). */
void coco_print_stats(FILE *f, const coco_eval_t *ev);
/* "category  AP" table, one line per category. */
void coco_print_per_category(FILE *f, const coco_gt_t *gt, const coco_eval_t *ev);
/* {"stats": {...}, "per_category_AP": {...}, "pr_curves": {...}, ...} */
json_t *coco_eval_json(const coco_gt_t *gt, const coco_eval_t *ev);
/* DIR/pr-curves.json (per category precision [T][R] and recall [T] at area
 * all, maxDets 100) and DIR/pr-curves.csv (long format for plotting). */
int coco_write_pr_curves(const char *dir, const coco_gt_t *gt, const coco_eval_t *ev,
                         perr_t *e);

/* The layout of the JSON files map-eval writes (util/jsonfile.h's write_json). */
#define COCO_JSON_FLAGS (JSON_INDENT(1) | JSON_REAL_PRECISION(17))

#endif
