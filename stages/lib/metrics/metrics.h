/* metrics.h — task metrics of classification, semantic segmentation,
 * matting and image restoration, each the definition a community publishes
 * its numbers with (docs/metrics-classification.md, metrics-segmentation.md,
 * metrics-restoration.md give the exact rules and what each is identical to).
 *
 * Everything here is pure computation over arrays already in memory; the
 * readers of label files, label maps and clean images are in labels.c and
 * the task-eval stage. Every result is the same bytes whatever the thread
 * count or ISA: sums run in a fixed order in double. */
#ifndef PARITY_METRICS_H
#define PARITY_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include "util/err.h"

/* ---- classification (classify.c) ---------------------------------------- */

/* The rank of class `label` among n scores: how many classes come before it
 * when scores are sorted descending with ties broken by the lower index (as
 * numpy.argsort(-s, kind="stable")). 0 = top-1. A NaN anywhere gives -1 (the
 * sample counts as wrong at every k: a NaN logit is no prediction). */
int64_t cls_rank(const float *s, int64_t n, int64_t label);
/* The top-1 class (lowest index among the maxima, as numpy.argmax), or -1
 * when a score is NaN. */
int64_t cls_top1(const float *s, int64_t n);

/* ---- semantic segmentation (segment.c) ---------------------------------- */

/* A confusion matrix over every pixel of a data set: cm[gt * (nc + 1) + pred],
 * column nc counting pixels with no valid prediction (all scores NaN). */
typedef struct seg_cm {
    int64_t nc;
    uint64_t *cm;
    uint64_t ignored;        /* GT pixels equal to ignore_index */
} seg_cm_t;

void seg_cm_init(seg_cm_t *c, int64_t nc);
void seg_cm_free(seg_cm_t *c);
/* Adds n pixels. gt values equal to ignore are skipped; any other gt value
 * outside [0, nc) is an error naming `what` and the pixel (row-major index). */
int seg_cm_add(seg_cm_t *c, const int64_t *pred, const uint8_t *gt, int64_t n, int ignore, const char *what,
               perr_t *e);

/* MMSegmentation's IoU metric from the totals: per class IoU = TP / (TP + FP + FN)
 * and Acc = TP / (TP + FN), NaN where the denominator is 0 (a class absent from
 * both prediction and GT), mIoU and mAcc the means of the non-NaN entries (NaN
 * when there is none), aAcc (pixel accuracy) = sum TP / sum GT pixels. */
typedef struct seg_scores {
    double miou, macc, aacc;
    double *iou, *acc;       /* nc entries each, malloc'd */
    int64_t present;         /* classes counted in the means */
} seg_scores_t;
void seg_scores_compute(const seg_cm_t *c, seg_scores_t *s);
void seg_scores_free(seg_scores_t *s);

/* Argmax over the class axis of logits [C, H*W] (C-order, plane per class):
 * the lowest class index among the maxima; NaN never wins (a pixel whose
 * every score is NaN gets class -1, counted as wrong). */
void seg_argmax(const float *logits, int64_t nc, int64_t npix, int64_t *out);

/* ---- matting (segment.c) ------------------------------------------------- */

/* Soft masks in [0, 1]: sums over a data set. The boundary band of a GT
 * alpha is the set of pixels within `radius` (Chebyshev distance) of a pixel
 * whose 3x3 neighbourhood holds both alpha <= 0.5 and alpha > 0.5 values;
 * the boundary error is the MAE over that band only. */
typedef struct mat_sums {
    double abs_sum, sq_sum, band_abs_sum;
    uint64_t n, band_n;
} mat_sums_t;
int mat_add(mat_sums_t *m, const float *pred, const float *gt, int64_t h, int64_t w, int radius, perr_t *e);

/* ---- restoration (restore.c) -------------------------------------------- */

/* A model output (float, [C, H, W], values nominally in [0, max]) as an 8-bit
 * HWC image the way BasicSR's tensor2img(min_max=(0, max)) does: clamp to
 * [0, max] in float32, divide by max in float32 (skipped for 1, where it is
 * exact), multiply by 255 in float32, round half to even. NaN becomes 0.
 * With `no_round` the value truncates toward zero instead (astype(uint8)). */
void img_from_chw(const float *chw, int64_t c, int64_t h, int64_t w, int max, int no_round, uint8_t *hwc);

/* scikit-image's peak_signal_noise_ratio(data_range=255) on 8-bit images of
 * n samples: 10 log10(255^2 / MSE); +inf when they are identical. */
double psnr_skimage(const uint8_t *a, const uint8_t *b, size_t n);
/* scikit-image's structural_similarity(channel_axis=2, gaussian_weights=True,
 * sigma=1.5, use_sample_covariance=False, data_range=255) on HWC 8-bit images:
 * the mean over channels of each channel's mean SSIM (Gaussian filter of
 * radius 5, scipy's 'reflect' border, the 5-pixel border cropped before the
 * mean). Needs h, w >= 11 (scikit-image refuses smaller); returns NaN then. */
double ssim_skimage(const uint8_t *a, const uint8_t *b, int64_t h, int64_t w, int c);

/* BasicSR's calculate_psnr / calculate_ssim (input_order HWC): crop_border
 * pixels cut from every side, test_y_channel converts RGB images to BT.601 Y
 * as its to_y_channel does (float32 steps included). Images are RGB here
 * (BasicSR's are BGR: the same weights apply to the same colours). SSIM is
 * the mean over channels of the 11x11 Gaussian (sigma 1.5) SSIM on the
 * valid region; it needs (h - 2 crop) and (w - 2 crop) >= 11, NaN otherwise. */
double psnr_basicsr(const uint8_t *a, const uint8_t *b, int64_t h, int64_t w, int c, int crop, int y_only);
double ssim_basicsr(const uint8_t *a, const uint8_t *b, int64_t h, int64_t w, int c, int crop, int y_only);

#endif
