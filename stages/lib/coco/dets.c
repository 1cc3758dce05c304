/* dets.c — COCO results files: loading (parallel, through jsonpar), checking
 * and writing. For box results only the four fields the bbox evaluation
 * reads are kept; others (segmentation, area, id) are ignored, as
 * COCO.loadRes recomputes area and id anyway. For segm and keypoints
 * results the mask / keypoints are read too, and the area is loadRes': from
 * the box when the first result has one, else from the mask or the
 * keypoints' extent. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "coco/coco.h"
#include "coco/fields.h"
#include "coco/jsonpar.h"
#include "coco/jsonrec.h"
#include "coco/shapes.h"
#include "util/fsutil.h"

typedef struct det_ctx {
    const char *path;
    coco_det_t *d;
    const coco_gt_t *gt;     /* segm and keypoints: the ground truth */
    coco_dets_t *dets;
    uint8_t *has_bbox;       /* [n] */
} det_ctx_t;

/* A segm / keypoints result: the box is optional, the shape is not. */
static int load_task_det(json_t *v, int64_t i, det_ctx_t *ctx, const jplace_t *pl, perr_t *e)
{
    coco_det_t *d = &ctx->d[i];
    coco_dets_t *ds = ctx->dets;
    if (jf_int(v, "image_id", pl, &d->image_id, e) ||
        jf_int(v, "category_id", pl, &d->category_id, e) ||
        jf_number(v, "score", pl, &d->score, e))
        return -1;
    memset(d->bbox, 0, sizeof d->bbox);
    /* loadRes treats an empty "bbox": [] as none */
    const json_t *bb = json_object_get(v, "bbox");
    ctx->has_bbox[i] = bb && !(json_is_array(bb) && json_array_size(bb) == 0);
    if (ctx->has_bbox[i] && jf_bbox(v, "bbox", pl, d->bbox, e)) return -1;
    int64_t ii = coco_gt_img_index(ctx->gt, d->image_id);
    if (ii < 0) {
        char pb[512];
        return BAD(e, "%s: image_id %lld is not an image of the ground truth (pycocotools "
                   "asserts: results do not correspond to the COCO set)",
                   jf_place(pl, pb, sizeof pb), (long long)d->image_id);
    }
    if (ds->type == COCO_SEGM)
        return jf_segmentation(v, pl, d->image_id, ctx->gt->img_h[ii], ctx->gt->img_w[ii],
                               &ds->masks[i], e);
    return jf_keypoints(v, pl, ds->nkpt, ds->kpts + i * 3 * ds->nkpt, e);
}

static int load_det(json_t *v, int64_t i, void *ctx_, perr_t *e)
{
    det_ctx_t *ctx = ctx_;
    jplace_t pl = { ctx->path, "", i };
    coco_det_t *d = &ctx->d[i];
    if (jf_object(v, &pl, e)) return -1;
    if (ctx->gt) return load_task_det(v, i, ctx, &pl, e);
    if (jf_int(v, "image_id", &pl, &d->image_id, e) ||
        jf_int(v, "category_id", &pl, &d->category_id, e) ||
        jf_bbox(v, "bbox", &pl, d->bbox, e) || jf_number(v, "score", &pl, &d->score, e))
        return -1;
    return 0;
}

/* A chunk of box results read straight into d[] (jsonrec.h); -1 at the
 * first thing load_det would refuse or that the reader leaves to jansson,
 * and load_det then reads the chunk and words the error. */
static int det_direct(const char *text, size_t n, int64_t first, int64_t count, void *ctx_)
{
    static const char *const keys[] = { "image_id", "category_id", "bbox", "score" };
    det_ctx_t *ctx = ctx_;
    if (ctx->gt) return -1;               /* segm / keypoints: shapes need the DOM */
    jrec_t r;
    jrec_field_t f[4];
    jrec_init(&r, text, n);
    for (int64_t i = 0; i < count; i++) {
        coco_det_t *d = &ctx->d[first + i];
        if ((i && jrec_comma(&r)) || jrec_object(&r, keys, 4, f) ||
            jrec_int(&f[0], &d->image_id) || jrec_int(&f[1], &d->category_id) ||
            jrec_bbox(&f[2], d->bbox) || f[3].kind != JREC_NUMBER)
            return -1;
        d->score = f[3].v[0].d;
    }
    return jrec_end(&r);
}

/* Room for n results (and their masks / keypoints). */
static void alloc_dets(det_ctx_t *ctx, coco_dets_t *d, int64_t n)
{
    d->n = d->cap = n;
    d->d = xcalloc(n ? n : 1, sizeof *d->d);
    ctx->d = d->d;
    if (!ctx->gt) return;
    ctx->has_bbox = xcalloc(n ? n : 1, 1);
    d->area = xcalloc(n ? n : 1, sizeof *d->area);
    if (d->type == COCO_SEGM) d->masks = xcalloc(n ? n : 1, sizeof *d->masks);
    else d->kpts = xcalloc((n ? n : 1) * 3 * d->nkpt, sizeof *d->kpts);
}

/* loadRes' areas: the first result decides (a box: w*h for all, each must
 * have one; none: the mask's area or the keypoints' extent for all). */
static int det_areas(const det_ctx_t *ctx, coco_dets_t *d, perr_t *e)
{
    int boxes = d->n > 0 && ctx->has_bbox[0];
    for (int64_t i = 0; i < d->n; i++) {
        const coco_det_t *x = &d->d[i];
        if (boxes) {
            if (!ctx->has_bbox[i])
                return BAD(e, "%s: [%lld]: 'bbox' is missing (the first result has one, so "
                           "pycocotools takes every result's area from its box)", ctx->path,
                           (long long)i);
            d->area[i] = x->bbox[2] * x->bbox[3];
        } else if (d->type == COCO_SEGM) {
            d->area[i] = (double)d->masks[i].area;
        } else {
            const double *k = d->kpts + i * 3 * d->nkpt;
            double x0 = k[0], x1 = k[0], y0 = k[1], y1 = k[1];
            for (int j = 1; j < d->nkpt; j++) {
                if (k[3 * j] < x0) x0 = k[3 * j];
                if (k[3 * j] > x1) x1 = k[3 * j];
                if (k[3 * j + 1] < y0) y0 = k[3 * j + 1];
                if (k[3 * j + 1] > y1) y1 = k[3 * j + 1];
            }
            d->area[i] = (x1 - x0) * (y1 - y0);
        }
    }
    return 0;
}

static int load_dom(const char *buf, size_t len, det_ctx_t *ctx, coco_dets_t *d, perr_t *e)
{
    json_t *root = jsonpar_load(buf, len, ctx->path, buf, len, NULL, NULL, e);
    if (!root) return -1;
    int rc = 0;
    if (!json_is_array(root)) {
        rc = BAD(e, "%s: a COCO results file must be a JSON array of detections", ctx->path);
    } else {
        alloc_dets(ctx, d, (int64_t)json_array_size(root));
        for (int64_t i = 0; !rc && i < d->n; i++) rc = load_det(json_array_get(root, i), i, ctx, e);
    }
    json_decref(root);
    return rc;
}

static int load_any(const char *path, int nthreads, det_ctx_t *ctx, coco_dets_t *d, perr_t *e)
{
    file_view_t fv;
    if (view_file(path, &fv, e)) return -1;
    const char *buf = fv.data;
    size_t len = fv.len;
    size_t p = jsonpar_skip_ws(buf, len, 0), after;
    jsonpar_array_t arr;
    perr_t scan_err = {0};
    int rc;
    int scanned = p < len && buf[p] == '[' &&
                  jsonpar_scan(buf, len, p, path, nthreads, &arr, &after, &scan_err) == 0;
    if (scanned && jsonpar_skip_ws(buf, len, after) == len) {
        alloc_dets(ctx, d, arr.n);
        rc = jsonpar_parse_direct(&arr, nthreads, det_direct, load_det, ctx, e);
        jsonpar_free(&arr);
    } else {
        if (scanned) jsonpar_free(&arr);
        /* not a clean array: jansson's verdict on the whole file */
        rc = load_dom(buf, len, ctx, d, e);
    }
    unview_file(&fv);
    if (!rc && ctx->gt) rc = det_areas(ctx, d, e);
    free(ctx->has_bbox);
    if (rc) coco_dets_free(d);
    return rc;
}

int coco_dets_load(const char *path, int nthreads, coco_dets_t *d, perr_t *e)
{
    memset(d, 0, sizeof *d);
    det_ctx_t ctx = { path, NULL, NULL, d, NULL };
    return load_any(path, nthreads, &ctx, d, e);
}

int coco_dets_load_task(const char *path, int nthreads, const coco_gt_t *gt, coco_dets_t *d,
                        perr_t *e)
{
    if (gt->task.type == COCO_BBOX) return coco_dets_load(path, nthreads, d, e);
    memset(d, 0, sizeof *d);
    d->type = gt->task.type;
    d->nkpt = gt->task.nkpt;
    det_ctx_t ctx = { path, NULL, gt, d, NULL };
    return load_any(path, nthreads, &ctx, d, e);
}

void coco_dets_push(coco_dets_t *d, const coco_det_t *det)
{
    if (d->n == d->cap) {
        d->cap = d->cap ? 2 * d->cap : 256;
        d->d = xrealloc(d->d, d->cap * sizeof *d->d);
    }
    d->d[d->n++] = *det;
}

void coco_dets_free(coco_dets_t *d)
{
    for (int64_t i = 0; d->masks && i < d->n; i++) coco_mask_free(&d->masks[i]);
    free(d->masks);
    free(d->kpts);
    free(d->area);
    free(d->d);
    memset(d, 0, sizeof *d);
}

int coco_det_check(const coco_det_t *d, const char *what, perr_t *e)
{
    for (int i = 0; i < 4; i++)
        if (!isfinite(d->bbox[i]))
            return BAD(e, "%s: box coordinate %d is %s", what, i, isnan(d->bbox[i]) ? "NaN" : "infinite");
    if (d->bbox[2] < 0) return BAD(e, "%s: box has a negative width (%.9g)", what, d->bbox[2]);
    if (d->bbox[3] < 0) return BAD(e, "%s: box has a negative height (%.9g)", what, d->bbox[3]);
    if (isnan(d->score)) return BAD(e, "%s: score is NaN", what);
    if (!isfinite(d->score)) return BAD(e, "%s: score is infinite", what);
    return 0;
}

/* The shortest of %.15g/%.16g/%.17g that reads back as the same double. */
static void put_double(FILE *f, double v)
{
    char s[40];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(s, sizeof s, "%.*g", prec, v);
        if (prec == 17 || strtod(s, NULL) == v) break;
    }
    fputs(s, f);
}

int coco_dets_write(const char *path, const coco_dets_t *d, perr_t *e)
{
    atomic_file_t af;
    if (atomic_open(&af, path, e)) return -1;
    /* segm / keypoints results read without boxes took their areas from the
     * shapes: written without boxes, they read back the same */
    int boxes = 1;
    for (int64_t i = 0; d->area && i < d->n; i++) boxes &= d->area[i] == d->d[i].bbox[2] * d->d[i].bbox[3];
    fputc('[', af.f);
    for (int64_t i = 0; i < d->n; i++) {
        const coco_det_t *x = &d->d[i];
        fprintf(af.f, "%s\n{\"image_id\": %lld, \"category_id\": %lld", i ? "," : "", (long long)x->image_id,
                (long long)x->category_id);
        for (int k = 0; boxes && k < 4; k++) {
            fputs(k ? ", " : ", \"bbox\": [", af.f);
            put_double(af.f, x->bbox[k]);
        }
        fputs(boxes ? "], \"score\": " : ", \"score\": ", af.f);
        put_double(af.f, x->score);
        if (d->type == COCO_SEGM) {
            /* the compressed counts use '0'..'o': only '\\' needs escaping */
            char *rle = coco_rle_to_string(&d->masks[i]);
            fprintf(af.f, ", \"segmentation\": {\"size\": [%u, %u], \"counts\": \"", d->masks[i].h, d->masks[i].w);
            for (const char *p = rle; *p; p++) {
                if (*p == '\\') fputc('\\', af.f);
                fputc(*p, af.f);
            }
            fputs("\"}", af.f);
            free(rle);
        } else if (d->type == COCO_KEYPOINTS) {
            fputs(", \"keypoints\": [", af.f);
            for (int k = 0; k < 3 * d->nkpt; k++) {
                if (k) fputs(", ", af.f);
                put_double(af.f, d->kpts[(int64_t)i * 3 * d->nkpt + k]);
            }
            fputc(']', af.f);
        }
        fputc('}', af.f);
    }
    fputs("\n]\n", af.f);
    return atomic_commit(&af, e);
}
