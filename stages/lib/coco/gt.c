/* gt.c — loading a COCO ground-truth file.
 *
 * The annotations array (the bulk of the file) is parsed on worker threads
 * through jsonpar; the rest of the object (images, categories, info, ...)
 * is parsed by jansson with that array replaced by "[]". Image and category
 * ids become pycocotools' sorted unique params.imgIds / params.catIds; for a
 * repeated id the last entry's file name / name wins, as in COCO.createIndex.
 */
#include <stdlib.h>
#include <string.h>
#include "coco/coco.h"
#include "coco/fields.h"
#include "coco/jsonpar.h"
#include "coco/jsonrec.h"
#include "coco/shapes.h"
#include "util/fsutil.h"

typedef struct ann_ctx {
    const char *path;
    coco_gt_t *gt;
} ann_ctx_t;

/* The task's own fields: the mask (segm; only for annotations of a known
 * image, the only ones pycocotools converts) or the keypoints. */
static int load_task_fields(json_t *v, const jplace_t *pl, coco_gt_t *gt, int64_t i, perr_t *e)
{
    coco_ann_t *a = &gt->anns[i];
    if (gt->task.type == COCO_SEGM) {
        int64_t ii = coco_gt_img_index(gt, a->image_id);
        if (ii < 0) return 0;
        return jf_segmentation(v, pl, a->image_id, gt->img_h[ii], gt->img_w[ii], &a->mask, e);
    }
    if (gt->task.type == COCO_KEYPOINTS) {
        if (jf_int(v, "num_keypoints", pl, &a->num_keypoints, e)) return -1;
        return jf_keypoints(v, pl, gt->task.nkpt, gt->kpts + i * 3 * gt->task.nkpt, e);
    }
    return 0;
}

static int load_ann(json_t *v, int64_t i, void *ctx_, perr_t *e)
{
    ann_ctx_t *ctx = ctx_;
    jplace_t pl = { ctx->path, "annotations", i };
    coco_ann_t *a = &ctx->gt->anns[i];
    if (jf_object(v, &pl, e) || jf_int(v, "id", &pl, &a->id, e) ||
        jf_int(v, "image_id", &pl, &a->image_id, e) ||
        jf_int(v, "category_id", &pl, &a->category_id, e) ||
        jf_bbox(v, "bbox", &pl, a->bbox, e) || jf_number(v, "area", &pl, &a->area, e) ||
        jf_flag(v, "iscrowd", &pl, &a->iscrowd, e))
        return -1;
    if (a->area < 0) {
        char pb[512];
        return BAD(e, "%s: 'area' is negative (%.17g)", jf_place(&pl, pb, sizeof pb), a->area);
    }
    return load_task_fields(v, &pl, ctx->gt, i, e);
}

/* A chunk of box annotations read straight into gt->anns (jsonrec.h); -1
 * at the first thing load_ann would refuse or jsonrec leaves to jansson,
 * and load_ann then reads the chunk and words the error. */
static int ann_direct(const char *text, size_t n, int64_t first, int64_t count, void *ctx_)
{
    static const char *const keys[] = { "id", "image_id", "category_id", "bbox", "area", "iscrowd" };
    ann_ctx_t *ctx = ctx_;
    if (ctx->gt->task.type != COCO_BBOX) return -1;    /* masks and keypoints need the DOM */
    jrec_t r;
    jrec_field_t f[6];
    jrec_init(&r, text, n);
    for (int64_t i = 0; i < count; i++) {
        coco_ann_t *a = &ctx->gt->anns[first + i];
        if ((i && jrec_comma(&r)) || jrec_object(&r, keys, 6, f) || jrec_int(&f[0], &a->id) ||
            jrec_int(&f[1], &a->image_id) || jrec_int(&f[2], &a->category_id) ||
            jrec_bbox(&f[3], a->bbox) || f[4].kind != JREC_NUMBER || !(f[4].v[0].d >= 0) ||
            jrec_flag(&f[5], &a->iscrowd))
            return -1;
        a->area = f[4].v[0].d;
    }
    return jrec_end(&r);
}

/* ---- the object without its annotations ---- */

typedef struct cut { size_t vbeg, vend; } cut_t;

/* Maps a position in "prefix [] suffix" back to the original text. */
static size_t map_cut(size_t pos, const void *ctx)
{
    const cut_t *c = ctx;
    if (pos < c->vbeg) return pos;
    if (pos < c->vbeg + 2) return c->vbeg;
    return pos - 2 + c->vend;
}

static json_t *load_rest(const char *buf, size_t len, const char *path, const cut_t *c,
                         perr_t *e)
{
    size_t n = c->vbeg + 2 + (len - c->vend);
    char *t = xmalloc(n + 1);
    memcpy(t, buf, c->vbeg);
    memcpy(t + c->vbeg, "[]", 2);
    memcpy(t + c->vbeg + 2, buf + c->vend, len - c->vend);
    /* the quick lexer when it can (images are most of it); jansson words errors */
    json_t *j = jsonpar_fast(t, n);
    if (!j) j = jsonpar_load(t, n, path, buf, len, map_cut, c, e);
    free(t);
    return j;
}

/* ---- images and categories ---- */

typedef struct idrec { int64_t id, order; const char *name; } idrec_t;

static int cmp_idrec(const void *a, const void *b)
{
    const idrec_t *x = a, *y = b;
    if (x->id != y->id) return x->id < y->id ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* Sorted unique ids of an array of objects; names from name_key (last wins). */
static int load_ids(const json_t *root, const char *path, const char *key, const char *name_key,
                    int64_t **ids, char ***names, int64_t *count, perr_t *e)
{
    const json_t *arr = json_object_get(root, key);
    if (!arr) return BAD(e, "%s: '%s' is missing (not a COCO ground-truth file?)", path, key);
    if (!json_is_array(arr)) return BAD(e, "%s: '%s' must be an array", path, key);
    int64_t n = (int64_t)json_array_size(arr);
    idrec_t *r = xcalloc(n ? n : 1, sizeof *r);
    for (int64_t i = 0; i < n; i++) {
        const json_t *o = json_array_get(arr, i);
        jplace_t pl = { path, key, i };
        if (jf_object(o, &pl, e) || jf_int(o, "id", &pl, &r[i].id, e)) {
            free(r);
            return -1;
        }
        r[i].order = i;
        const json_t *nm = json_object_get(o, name_key);
        r[i].name = json_is_string(nm) ? json_string_value(nm) : NULL;
    }
    qsort(r, n, sizeof *r, cmp_idrec);
    *ids = xmalloc((n ? n : 1) * sizeof **ids);
    *names = xcalloc(n ? n : 1, sizeof **names);
    int64_t u = 0;
    for (int64_t i = 0; i < n; i++) {
        if (i + 1 < n && r[i + 1].id == r[i].id) continue;   /* a later entry wins */
        (*ids)[u] = r[i].id;
        (*names)[u] = r[i].name ? xstrdup(r[i].name) : NULL;
        u++;
    }
    *count = u;
    free(r);
    return 0;
}

/* ---- the loader ---- */

/* Image sizes for segm (annToRLE rasterises with them); for a repeated id
 * the last entry wins, as in COCO.createIndex. */
static int load_sizes(const json_t *root, const char *path, coco_gt_t *gt, perr_t *e)
{
    const json_t *arr = json_object_get(root, "images");
    gt->img_h = xmalloc((gt->nimg ? gt->nimg : 1) * sizeof *gt->img_h);
    gt->img_w = xmalloc((gt->nimg ? gt->nimg : 1) * sizeof *gt->img_w);
    for (int64_t i = 0; i < gt->nimg; i++) gt->img_h[i] = gt->img_w[i] = -1;
    for (size_t i = 0; i < json_array_size(arr); i++) {
        const json_t *o = json_array_get(arr, i);
        jplace_t pl = { path, "images", (int64_t)i };
        int64_t id, h = -1, w = -1;
        if (jf_int(o, "id", &pl, &id, e) || jf_int_opt(o, "height", &pl, &h, e) < 0 ||
            jf_int_opt(o, "width", &pl, &w, e) < 0)
            return -1;
        int64_t ii = coco_gt_img_index(gt, id);
        gt->img_h[ii] = h;
        gt->img_w[ii] = w;
    }
    return 0;
}

static int load_images_categories(const json_t *root, const char *path, coco_gt_t *gt, perr_t *e)
{
    if (!json_is_object(root)) return BAD(e, "%s: expected a JSON object at the top", path);
    if (load_ids(root, path, "images", "file_name", &gt->img_ids, &gt->img_files, &gt->nimg, e))
        return -1;
    if (gt->task.type == COCO_SEGM && load_sizes(root, path, gt, e)) return -1;
    return load_ids(root, path, "categories", "name", &gt->cat_ids, &gt->cat_names, &gt->ncat, e);
}

/* Room for the annotations and their keypoints. */
static void alloc_anns(coco_gt_t *gt, int64_t n)
{
    gt->nann = n;
    gt->anns = xcalloc(n ? n : 1, sizeof *gt->anns);
    if (gt->task.type == COCO_KEYPOINTS)
        gt->kpts = xmalloc((n ? n : 1) * 3 * gt->task.nkpt * sizeof *gt->kpts);
}

static int load_annotations_dom(const json_t *root, const char *path, coco_gt_t *gt, perr_t *e)
{
    const json_t *arr = json_object_get(root, "annotations");
    if (!arr) return BAD(e, "%s: 'annotations' is missing (not a COCO ground-truth file?)", path);
    if (!json_is_array(arr)) return BAD(e, "%s: 'annotations' must be an array", path);
    alloc_anns(gt, (int64_t)json_array_size(arr));
    ann_ctx_t ctx = { path, gt };
    for (int64_t i = 0; i < gt->nann; i++)
        if (load_ann(json_array_get(arr, i), i, &ctx, e)) return -1;
    return 0;
}

static int load_from_buffer(const char *buf, size_t len, const char *path, int nthreads,
                            coco_gt_t *gt, perr_t *e)
{
    size_t p = jsonpar_skip_ws(buf, len, 0);
    cut_t c;
    perr_t scan_err = {0};
    int found = p < len && buf[p] == '{'
        ? jsonpar_find_member(buf, len, p, "annotations", &c.vbeg, &c.vend, path, &scan_err) : -1;
    jsonpar_array_t arr;
    size_t after;
    if (found == 1 && buf[c.vbeg] == '[' &&
        jsonpar_scan(buf, len, c.vbeg, path, nthreads, &arr, &after, &scan_err) == 0) {
        /* the annotations in parallel, the rest with one jansson call */
        json_t *root = load_rest(buf, len, path, &c, e);
        if (!root) { jsonpar_free(&arr); return -1; }
        int rc = load_images_categories(root, path, gt, e);
        json_decref(root);
        if (!rc) {
            alloc_anns(gt, arr.n);
            ann_ctx_t ctx = { path, gt };
            rc = jsonpar_parse_direct(&arr, nthreads, ann_direct, load_ann, &ctx, e);
        }
        jsonpar_free(&arr);
        return rc;
    }
    /* anything unusual: one jansson parse of the whole file gives the
     * authoritative verdict and message */
    json_t *root = jsonpar_load(buf, len, path, buf, len, NULL, NULL, e);
    if (!root) return -1;
    int rc = load_images_categories(root, path, gt, e);
    if (!rc) rc = load_annotations_dom(root, path, gt, e);
    json_decref(root);
    return rc;
}

int coco_gt_load(const char *path, int nthreads, coco_gt_t *gt, perr_t *e)
{
    coco_task_t t;
    coco_task_init(&t, COCO_BBOX);
    return coco_gt_load_task(path, nthreads, &t, gt, e);
}

int coco_gt_load_task(const char *path, int nthreads, const coco_task_t *task, coco_gt_t *gt,
                      perr_t *e)
{
    memset(gt, 0, sizeof *gt);
    gt->task = *task;
    gt->path = xstrdup(path);
    file_view_t fv;
    if (view_file(path, &fv, e)) return -1;
    int rc = load_from_buffer(fv.data, fv.len, path, nthreads, gt, e);
    unview_file(&fv);
    if (rc) coco_gt_free(gt);
    return rc;
}

void coco_gt_free(coco_gt_t *gt)
{
    for (int64_t i = 0; i < gt->nimg; i++) free(gt->img_files ? gt->img_files[i] : NULL);
    for (int64_t i = 0; i < gt->ncat; i++) free(gt->cat_names ? gt->cat_names[i] : NULL);
    for (int64_t i = 0; gt->anns && i < gt->nann; i++) coco_mask_free(&gt->anns[i].mask);
    free(gt->img_files);
    free(gt->cat_names);
    free(gt->img_h);
    free(gt->img_w);
    free(gt->kpts);
    free(gt->img_ids);
    free(gt->cat_ids);
    free(gt->anns);
    free(gt->path);
    memset(gt, 0, sizeof *gt);
}

static int64_t bsearch_id(const int64_t *ids, int64_t n, int64_t id)
{
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (ids[mid] < id) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && ids[lo] == id ? lo : -1;
}

int64_t coco_gt_img_index(const coco_gt_t *gt, int64_t image_id)
{
    return bsearch_id(gt->img_ids, gt->nimg, image_id);
}

int64_t coco_gt_cat_index(const coco_gt_t *gt, int64_t category_id)
{
    return bsearch_id(gt->cat_ids, gt->ncat, category_id);
}
