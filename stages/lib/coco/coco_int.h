/* coco_int.h — state shared by the evaluation modules (evaluate.c,
 * accumulate.c, summarize.c); not for stages.
 *
 * pycocotools evaluates per (category, area, image) and accumulates per
 * (category, area, maxDets) over images in id order. Here every non-empty
 * (category, image) pair is a "group"; groups are ordered category-major,
 * then by image id, so one category's detections are contiguous and in the
 * order accumulate() concatenates them.
 */
#ifndef PARITY_COCO_INT_H
#define PARITY_COCO_INT_H

#include <stdint.h>
#include "coco/coco.h"

typedef struct coco_work {
    const coco_gt_t *gt;
    const coco_dets_t *dets;
    int64_t K, I;

    int64_t ngroups;
    int64_t *g_cat;          /* [ngroups] category index */
    int64_t *g_gt;           /* [ngroups+1] offsets into gt_idx */
    int64_t *g_in;           /* [ngroups+1] offsets into in_idx (all of the group's detections) */
    int64_t *g_dt;           /* [ngroups+1] offsets into the kept-detection arrays */
    int64_t *c_grp;          /* [K+1] first group of each category */
    int64_t *gt_idx;         /* annotation indices, grouped (pycocotools' order) */
    int64_t *in_idx;         /* detection indices, grouped, file order */

    int maxdet;              /* detections kept per group: maxDets[-1], 100 (keypoints 20) */
    /* kept detections: per group the top maxdet by score (stable) */
    int64_t nkept;
    int64_t *kdet;           /* detection index */
    double *kscore;
    uint8_t *krank;          /* position in its group, 0..maxdet-1 */
    uint16_t *khit;          /* [nkept][A]: bit t set when matched to a GT of nonzero id */
    uint16_t *kign;          /* [nkept][A]: bit t set when ignored */
    int64_t *npig;           /* [K][A] ground truths that are not ignored */

    int nthreads;
} coco_work_t;

/* evaluate.c: groups and per-group matching (fills everything above). */
int coco_work_build(coco_work_t *w, const coco_gt_t *gt, const coco_dets_t *d, int nthreads,
                    int64_t *ndropped, perr_t *e);
void coco_work_free(coco_work_t *w);

/* accumulate.c: precision and recall into ev (allocated by the caller). */
void coco_accumulate(const coco_work_t *w, coco_eval_t *ev);

/* sort.c */
/* Stable sort of idx[0..n) by key[idx[i]] descending (numpy's
 * argsort(-key, kind='mergesort')); tmp holds n entries. */
void coco_sort_desc(const double *key, int64_t *idx, int64_t n, int64_t *tmp);
/* Stable sort of (key, val) pairs by key ascending; tk/tv hold n entries. */
void coco_radix_sort(uint64_t *key, int64_t *val, int64_t n, uint64_t *tk, int64_t *tv);
/* Runs fn(i, ctx, scratch) for i in [0, n) on up to nthreads threads,
 * handing out indices in order; scratch is per thread (made by mk, freed by
 * rm, both may be NULL). */
void coco_parallel_for(int64_t n, int nthreads, void (*fn)(int64_t i, void *ctx, void *scratch),
                       void *ctx, void *(*mk)(void *ctx), void (*rm)(void *scratch));

#endif
