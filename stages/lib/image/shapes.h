/* shapes.h — the synthetic "shapes" detection dataset: deterministic scenes of
 * filled geometric shapes (six categories, many scales, colours, rotations,
 * partial occlusions) on textured, noisy backgrounds, with COCO-style boxes.
 *
 * Every image is a pure function of (seed, split, index): a split can be made
 * in shards, in any order, in parallel, and val-200 is the first 200 images
 * of val-2000.  Only IEEE double arithmetic and libm are used, so one binary
 * always produces the same pixels.
 *
 * shapes_rng.c: the random generator; shapes_draw.c: backgrounds and the
 * rasteriser; shapes_scene.c: placement, occlusion and boxes;
 * shapes_png.c: the PNG writer. stages/gen-shapes is the command. */
#ifndef PARITY_SHAPES_H
#define PARITY_SHAPES_H

#include <stdint.h>
#include "util/err.h"

/* ---- random numbers (xoshiro256**, seeded through splitmix64) ---- */
typedef struct shapes_rng {
    uint64_t s[4];
} shapes_rng_t;

void shapes_rng_seed(shapes_rng_t *r, uint64_t seed);
uint64_t shapes_rng_u64(shapes_rng_t *r);
double shapes_rng_unit(shapes_rng_t *r);                  /* [0, 1) */
double shapes_rng_range(shapes_rng_t *r, double lo, double hi);
int shapes_rng_int(shapes_rng_t *r, int n);               /* 0..n-1 */
double shapes_rng_normal(shapes_rng_t *r);                /* N(0, 1) */
/* The seed of one image: a hash of (dataset seed, split salt, index). */
uint64_t shapes_image_seed(uint64_t seed, uint64_t salt, uint64_t index);

/* ---- categories (COCO ids are the enum value + 1) ---- */
enum {
    SHAPE_CIRCLE, SHAPE_RECTANGLE, SHAPE_TRIANGLE, SHAPE_STAR, SHAPE_RING, SHAPE_CROSS,
    SHAPE_NCAT
};
extern const char *const shapes_category_names[SHAPE_NCAT];

/* ---- one shape, as the rasteriser sees it ---- */
#define SHAPE_MAX_VERTS 12
typedef struct shape {
    int cat;
    double cx, cy;        /* centre, pixels (pixel i covers [i, i+1)) */
    double r, r_in;       /* outer radius; inner radius for rings */
    double ca, sa;        /* cos/sin of the rotation */
    int nv;               /* polygon vertices in the local frame (0: a disc or ring) */
    double vx[SHAPE_MAX_VERTS], vy[SHAPE_MAX_VERTS];
    double rgb[3];        /* fill colour, 0..255 */
    double shade[3];      /* colour change per radius along the local x axis */
} shape_t;

/* A float RGB canvas (values 0..255 before quantisation). */
typedef struct canvas {
    int w, h;
    float *px;            /* h * w * 3 */
} canvas_t;

/* Fills the canvas with one of the background textures plus distractor lines. */
void shapes_background(canvas_t *cv, shapes_rng_t *r);
/* Builds a shape of category cat, radius r at (cx, cy), rotated by angle. */
void shapes_make(shape_t *s, int cat, double cx, double cy, double radius, double angle,
                 shapes_rng_t *r);
/* Exact bounding box of the shape (not clipped). */
void shapes_extent(const shape_t *s, double *x0, double *y0, double *x1, double *y1);
/* Coverage (0..1) of every pixel of the window [bx0, bx0+bw) x [by0, by0+bh)
 * into cov (bw * bh floats): corner samples, 4x4 supersampling where the
 * corners of a pixel disagree. */
void shapes_coverage(const shape_t *s, int bx0, int by0, int bw, int bh, float *cov);
/* Composites the shape's colour over the canvas with the coverage window. */
void shapes_paint(canvas_t *cv, const shape_t *s, int bx0, int by0, int bw, int bh,
                  const float *cov);
/* Adds Gaussian noise of standard deviation sigma and quantises to 8-bit RGB. */
void shapes_quantise(const canvas_t *cv, double sigma, shapes_rng_t *r, uint8_t *rgb);

/* ---- scenes ---- */
typedef struct shapes_ann {
    int cat;               /* 0..SHAPE_NCAT-1 */
    double bbox[4];        /* x, y, w, h in pixels */
    double area;           /* visible area in pixels */
    double visible;        /* visible fraction of the shape when drawn */
} shapes_ann_t;

typedef struct shapes_scene {
    int w, h;
    uint8_t *rgb;          /* h * w * 3, owned */
    int nann;
    shapes_ann_t ann[32];
} shapes_scene_t;

/* Image sizes the generator draws from (width, height pairs). */
extern const int shapes_sizes[][2];
extern const int shapes_nsizes;

/* Draws the scene of one image seed. */
void shapes_scene_make(shapes_scene_t *sc, uint64_t image_seed);
void shapes_scene_free(shapes_scene_t *sc);

/* Writes 8-bit RGB as PNG (atomically), zlib level 0..9. */
int shapes_write_png(const char *path, const uint8_t *rgb, int w, int h, int level, perr_t *e);

#endif
