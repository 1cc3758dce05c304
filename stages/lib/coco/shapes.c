/* shapes.c — the 'segmentation' and 'keypoints' fields of COCO objects
 * (ground truth and results), checked and turned into masks and keypoint
 * arrays as pycocotools' annToRLE / frPyObjects read them:
 *  - a list of polygons (the first must hold more than 4 numbers, or
 *    frPyObjects reads the list as boxes and fails), rasterised with the
 *    image's size and merged;
 *  - {"size": [h, w], "counts": [...]} uncompressed RLE;
 *  - {"size": [h, w], "counts": "..."} compressed RLE.
 * An RLE whose size is not its image's is an error here (maskApi would
 * compare masks of different shapes as if they were alike).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "coco/shapes.h"
#include "util/fsutil.h"

static int bad(const jplace_t *pl, perr_t *e, const char *fmt, const char *a, long long x,
               long long y)
{
    char pb[512], msg[256];
    snprintf(msg, sizeof msg, fmt, a, x, y);
    return BAD(e, "%s: %s", jf_place(pl, pb, sizeof pb), msg);
}

static int rle_size(const json_t *seg, const jplace_t *pl, uint32_t ih, uint32_t iw,
                    int64_t image_id, perr_t *e)
{
    const json_t *sz = json_object_get(seg, "size");
    if (!json_is_array(sz) || json_array_size(sz) != 2 ||
        !json_is_integer(json_array_get(sz, 0)) || !json_is_integer(json_array_get(sz, 1)))
        return bad(pl, e, "'%s' RLE needs \"size\": [height, width]", "segmentation", 0, 0);
    json_int_t h = json_integer_value(json_array_get(sz, 0));
    json_int_t w = json_integer_value(json_array_get(sz, 1));
    if (h != ih || w != iw) {
        char pb[512];
        return BAD(e, "%s: 'segmentation' mask size %lldx%lld does not match image %lld's "
                   "%ux%u (height x width)", jf_place(pl, pb, sizeof pb), (long long)h,
                   (long long)w, (long long)image_id, ih, iw);
    }
    return 0;
}

static int load_rle(const json_t *seg, const jplace_t *pl, uint32_t h, uint32_t w,
                    int64_t image_id, coco_mask_t *m, perr_t *e)
{
    if (rle_size(seg, pl, h, w, image_id, e)) return -1;
    const json_t *c = json_object_get(seg, "counts");
    char what[600], pb[512];
    snprintf(what, sizeof what, "%s: 'segmentation'", jf_place(pl, pb, sizeof pb));
    if (json_is_string(c))
        return coco_rle_from_string(m, json_string_value(c), json_string_length(c), h, w, what, e);
    if (!json_is_array(c))
        return bad(pl, e, "'%s' RLE needs \"counts\": a string or a list of integers",
                   "segmentation", 0, 0);
    size_t n = json_array_size(c);
    uint32_t *v = xmalloc((n ? n : 1) * sizeof *v);
    for (size_t i = 0; i < n; i++) {
        const json_t *x = json_array_get(c, i);
        json_int_t q = json_is_integer(x) ? json_integer_value(x) : -1;
        if (q < 0 || q > (json_int_t)h * w) {
            free(v);
            return bad(pl, e, "'%s' RLE count %lld is not an integer in 0..h*w", "segmentation",
                       (long long)i, 0);
        }
        v[i] = (uint32_t)q;
    }
    int rc = coco_rle_from_counts(m, v, (uint32_t)n, h, w, what, e);
    free(v);
    return rc;
}

static int load_polys(const json_t *seg, const jplace_t *pl, uint32_t h, uint32_t w,
                      coco_mask_t *m, perr_t *e)
{
    size_t np = json_array_size(seg), total = 0;
    if (np == 0) return bad(pl, e, "'%s' is an empty list of polygons", "segmentation", 0, 0);
    for (size_t p = 0; p < np; p++) {
        const json_t *poly = json_array_get(seg, p);
        if (!json_is_array(poly))
            return bad(pl, e, "'%s' polygon %lld is not a list of numbers", "segmentation",
                       (long long)p, 0);
        size_t k = json_array_size(poly);
        if (p == 0 && k <= 4)
            return bad(pl, e, "'%s' polygon 0 has %lld coordinates; pycocotools needs more "
                       "than 4 in the first polygon", "segmentation", (long long)k, 0);
        if (k == 0 || k % 2)
            return bad(pl, e, "'%s' polygon %lld has %lld coordinates (an even number, x y "
                       "pairs, is needed)", "segmentation", (long long)p, (long long)k);
        if (k / 2 > UINT32_MAX) return bad(pl, e, "'%s' polygon is too long", "segmentation", 0, 0);
        total += k;
    }
    double *xy = xmalloc(total * sizeof *xy);
    uint32_t *npts = xmalloc(np * sizeof *npts);
    size_t off = 0;
    for (size_t p = 0; p < np; p++) {
        const json_t *poly = json_array_get(seg, p);
        size_t k = json_array_size(poly);
        for (size_t j = 0; j < k; j++) {
            const json_t *x = json_array_get(poly, j);
            if (!json_is_number(x)) {
                free(xy);
                free(npts);
                return bad(pl, e, "'%s' polygon %lld coordinate %lld is not a number",
                           "segmentation", (long long)p, (long long)j);
            }
            xy[off++] = json_number_value(x);
        }
        npts[p] = (uint32_t)(k / 2);
    }
    char what[600], pb[512];
    snprintf(what, sizeof what, "%s: 'segmentation'", jf_place(pl, pb, sizeof pb));
    int rc = coco_rle_from_polys(m, xy, npts, (uint32_t)np, h, w, what, e);
    free(xy);
    free(npts);
    return rc;
}

int jf_segmentation(const json_t *obj, const jplace_t *pl, int64_t image_id, int64_t img_h,
                    int64_t img_w, coco_mask_t *m, perr_t *e)
{
    const json_t *seg = json_object_get(obj, "segmentation");
    if (!seg) return bad(pl, e, "'%s' is missing (iou type segm needs a mask)", "segmentation", 0, 0);
    if (!json_is_array(seg) && !json_is_object(seg))
        return bad(pl, e, "'%s' must be a list of polygons or an RLE object", "segmentation", 0, 0);
    if (img_h < 1 || img_w < 1) {
        char pb[512];
        return BAD(e, "%s: image %lld has no valid 'height' and 'width' (segm needs the "
                   "image's size)", jf_place(pl, pb, sizeof pb), (long long)image_id);
    }
    if (json_is_object(seg)) return load_rle(seg, pl, (uint32_t)img_h, (uint32_t)img_w, image_id, m, e);
    return load_polys(seg, pl, (uint32_t)img_h, (uint32_t)img_w, m, e);
}

int jf_keypoints(const json_t *obj, const jplace_t *pl, int nkpt, double *out, perr_t *e)
{
    const json_t *kp = json_object_get(obj, "keypoints");
    if (!kp) return bad(pl, e, "'%s' is missing (iou type keypoints needs them)", "keypoints", 0, 0);
    if (!json_is_array(kp)) return bad(pl, e, "'%s' must be a list of numbers", "keypoints", 0, 0);
    size_t n = json_array_size(kp);
    if (n != (size_t)3 * nkpt) {
        char pb[512];
        return BAD(e, "%s: 'keypoints' holds %zu numbers, expected 3 x %d keypoints = %d "
                   "(x, y, v each; the keypoint count comes from the OKS sigmas)",
                   jf_place(pl, pb, sizeof pb), n, nkpt, 3 * nkpt);
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *x = json_array_get(kp, i);
        if (!json_is_number(x))
            return bad(pl, e, "'%s' value %lld is not a number", "keypoints", (long long)i, 0);
        out[i] = json_number_value(x);
        if (!isfinite(out[i]))
            return bad(pl, e, "'%s' value %lld is not finite", "keypoints", (long long)i, 0);
    }
    return 0;
}
