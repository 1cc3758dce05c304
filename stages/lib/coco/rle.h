/* rle.h — COCO run-length masks: decoding the three JSON forms (compressed
 * RLE string, uncompressed counts, polygons), area, and IoU, each with the
 * arithmetic pycocotools' maskApi.c uses (rules in docs/metrics-coco.md).
 *
 * A mask is column-major run lengths starting with background: counts[0]
 * background pixels, counts[1] foreground, ... and the counts sum to h*w.
 */
#ifndef PARITY_COCO_RLE_H
#define PARITY_COCO_RLE_H

#include <stdint.h>
#include "util/err.h"

/* Largest mask (h*w) accepted: maskApi counts pixels in 32-bit unsigned. */
#define COCO_RLE_MAX_PIXELS (UINT64_C(1) << 30)

typedef struct coco_mask {
    uint32_t h, w, m;        /* size and number of runs */
    uint32_t *cnts;
    uint64_t area;           /* foreground pixels */
    uint32_t c0, c1;         /* first and last column holding foreground (c0 > c1: none) */
    int zero_runs;           /* a zero-length run after the first: see coco_rle_iou */
} coco_mask_t;

void coco_mask_free(coco_mask_t *m);

/* Compressed RLE (maskApi's 6-bit LEB128-like string, each count from the
 * 3rd on stored as the difference to the one two before). */
int coco_rle_from_string(coco_mask_t *m, const char *s, size_t n, uint32_t h, uint32_t w,
                         const char *what, perr_t *e);
/* The compressed string of m (maskApi's rleToString), malloc'd, NUL-ended:
 * the inverse of coco_rle_from_string. */
char *coco_rle_to_string(const coco_mask_t *m);
/* Uncompressed RLE: the counts as given. */
int coco_rle_from_counts(coco_mask_t *m, const uint32_t *cnts, uint32_t nc, uint32_t h,
                         uint32_t w, const char *what, perr_t *e);
/* Polygons: npoly polygons of npts[i] points (xy[2*j], xy[2*j+1]),
 * rasterised as maskApi's rleFrPoly does and merged by union. */
int coco_rle_from_polys(coco_mask_t *m, const double *xy, const uint32_t *npts, uint32_t npoly,
                        uint32_t h, uint32_t w, const char *what, perr_t *e);

/* maskApi's rleIou for one pair of equal-sized masks: intersection over
 * union, or over the detection's area when the GT is a crowd region.
 * Walks the runs as maskApi does, including its stop when both masks reach
 * a zero-length run at once (only user-written counts have such runs). */
double coco_rle_iou(const coco_mask_t *dt, const coco_mask_t *gt, int crowd);
/* 0 when the IoU cannot reach min_iou (0 < min_iou <= 1) whatever the
 * details (disjoint columns, areas too unequal), 1 when it may. */
int coco_rle_may_reach(const coco_mask_t *dt, const coco_mask_t *gt, int crowd, double min_iou);

#endif
