/* prep.h — the preprocess stage: settings read from the YAML config
 * (settings.c), the image list (inputs.c), the per-image pipeline and its
 * meta.json (pipeline.c, geometry.c), and the parallel run (run.c). */
#ifndef PARITY_PREP_H
#define PARITY_PREP_H

#include <jansson.h>
#include "config/config.h"
#include "image/resize.h"
#include "tensor/tensor.h"

typedef enum prep_mode { MODE_STRETCH, MODE_LETTERBOX, MODE_CENTER_CROP, MODE_FIT_HEIGHT } prep_mode_t;
typedef enum prep_color { COLOR_RGB, COLOR_BGR, COLOR_GRAY, COLOR_RGBA, COLOR_BGRA } prep_color_t;
typedef enum prep_alpha { ALPHA_DROP, ALPHA_COMPOSITE } prep_alpha_t;
typedef enum prep_layout { LAYOUT_NCHW, LAYOUT_NHWC } prep_layout_t;
typedef enum prep_extra_kind {
    EXTRA_ORIG_WH, EXTRA_ORIG_HW, EXTRA_IM_SHAPE, EXTRA_SCALE_FACTOR, EXTRA_INPUT_WH
} prep_extra_kind_t;

#define PREP_MAX_EXTRAS 8

typedef struct prep_extra {
    char *name;
    prep_extra_kind_t kind;
} prep_extra_t;

/* The resolved settings (defaults in settings.c). */
typedef struct prep_cfg {
    char *input_name;
    int64_t h, w;                /* network input size */
    resize_method_t method;
    prep_mode_t mode;
    int64_t shorter;             /* center-crop: shorter side before the crop */
    uint8_t pad[3];              /* letterbox / fit-height fill, RGB */
    int has_fill;                /* resize.fill: the padding's value in the tensor itself */
    double fill;
    prep_color_t color;
    int channels;                /* 1, 3 or 4 after color */
    prep_alpha_t alpha;
    uint8_t background[3];       /* composite background, RGB */
    int scale_divides;           /* scale "1/N": divide by N instead of multiplying */
    float scale;                 /* the multiplier, or N */
    float mean[4], std[4];       /* per output channel (tensor order) */
    double scale_d, mean_d[4], std_d[4];   /* as written, for meta.json */
    prep_layout_t layout;
    dtype_t dtype;               /* DT_FLOAT, DT_FLOAT16 or DT_UINT8 */
    int nextra;
    prep_extra_t extra[PREP_MAX_EXTRAS];
    json_t *resolved;            /* the resolved config, for meta.json */
} prep_cfg_t;

/* Reads and validates every key; errors name the file:line:col. */
int prep_cfg_load(const config_t *c, prep_cfg_t *p, perr_t *e);
void prep_cfg_free(prep_cfg_t *p);

/* One image to process. */
typedef struct prep_sample {
    char *file;
    char *id;                    /* sample id (folder name before encoding) */
    int64_t image_id;            /* COCO image id, or -1 */
    int64_t coco_w, coco_h;      /* size the dataset declares, or 0 */
} prep_sample_t;

typedef struct prep_inputs {
    int64_t n;
    prep_sample_t *s;
} prep_inputs_t;

/* Builds the sample list from files (positional or --list) and/or a COCO
 * dataset (images under images_dir). Ids are unique or it is an error. */
int prep_inputs_build(char **files, int64_t nfiles, const char *list, const char *dataset,
                      const char *images_dir, prep_inputs_t *in, perr_t *e);
void prep_inputs_free(prep_inputs_t *in);

/* Where the original image lands in the network input. */
typedef struct prep_geom {
    int64_t rw, rh;              /* size the image is resized to */
    int64_t crop_x, crop_y;      /* center-crop: top-left of the kept window */
    int64_t left, top, right, bottom;   /* letterbox padding */
    double scale_x, scale_y, offset_x, offset_y;   /* input = original*scale + offset */
} prep_geom_t;

int prep_geometry(const prep_cfg_t *p, int64_t w, int64_t h, prep_geom_t *g, perr_t *e);

/* Variants of one run: several configs, one image list, one output folder each. */
#define PREP_MAX_VARIANTS 64

/* Processes one sample for n variants, variant v into outdirs[v]/<encoded
 * id>/ (each all or nothing); the image is decoded and resized once for
 * the variants that would do it alike (pipeline.c). */
int prep_sample(const prep_cfg_t *const *p, int n, const prep_sample_t *s, char *const *outdirs,
                perr_t *e);

/* Processes all samples for n variants with `jobs` threads; stops at the
 * first failure (reported deterministically: the first failing sample in
 * list order). Each outdirs[v] is published whole, with its index.json,
 * only when every sample succeeded, and left as it was (times too) where
 * it already held exactly those bytes. */
int prep_run(const prep_cfg_t *const *p, int n, const prep_inputs_t *in, const char *const *outdirs,
             int jobs, perr_t *e);

#endif
