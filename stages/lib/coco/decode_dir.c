/* decode_dir.c — decoding a dataset run folder: per sample, meta.json gives
 * the image and the preprocessing map, the output tensors give labels, boxes
 * and scores (settings and box mapping: decode.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "coco/coco_int.h"
#include "coco/decode.h"
#include "coco/yolo_task.h"
#include "io/npy.h"
#include "io/tensorset.h"
#include "util/fsutil.h"

typedef struct meta {
    int64_t image_id;
    double width, height;
    double sx, sy, ox, oy;
    double in_w, in_h;
    int has_map, has_in;
    int letterbox;           /* "mode": "letterbox" */
} meta_t;

/* ---- image ids by file name ---- */

typedef struct name_id { const char *name; int64_t id; } name_id_t;

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static int cmp_name_id(const void *a, const void *b)
{
    return strcmp(((const name_id_t *)a)->name, ((const name_id_t *)b)->name);
}

static name_id_t *index_files(const coco_gt_t *gt, int64_t *n)
{
    name_id_t *v = xmalloc((gt->nimg ? gt->nimg : 1) * sizeof *v);
    int64_t m = 0;
    for (int64_t i = 0; i < gt->nimg; i++)
        if (gt->img_files[i]) v[m++] = (name_id_t){ base_name(gt->img_files[i]), gt->img_ids[i] };
    qsort(v, m, sizeof *v, cmp_name_id);
    *n = m;
    return v;
}

/* ---- meta.json ---- */

static int meta_num(json_t *j, const char *path, const char *key, double *out, int required,
                    perr_t *e)
{
    json_t *v = json_object_get(j, key);
    if (!v) return required ? BAD(e, "%s: '%s' is missing", path, key) : 0;
    if (!json_is_number(v)) return BAD(e, "%s: '%s' must be a number", path, key);
    *out = json_number_value(v);
    if (!isfinite(*out)) return BAD(e, "%s: '%s' is not finite", path, key);
    return 1;
}

static int read_meta(const char *path, const coco_gt_t *gt, const name_id_t *files, int64_t nfiles,
                     const coco_decode_opts_t *o, meta_t *m, perr_t *e)
{
    memset(m, 0, sizeof *m);
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    if (!j) return BAD(e, "%s: line %d: %s", path, je.line, je.text);
    int rc = 0;
    if (!json_is_object(j)) rc = BAD(e, "%s: expected a JSON object", path);
    json_t *id = rc ? NULL : json_object_get(j, "image_id");
    if (!rc && id) {
        if (!json_is_integer(id)) rc = BAD(e, "%s: 'image_id' must be an integer", path);
        else m->image_id = json_integer_value(id);
    } else if (!rc) {
        json_t *f = json_object_get(j, "file");
        if (!json_is_string(f)) {
            rc = BAD(e, "%s: neither 'image_id' nor 'file' to find the COCO image", path);
        } else {
            name_id_t key = { base_name(json_string_value(f)), 0 };
            name_id_t *hit = nfiles ? bsearch(&key, files, nfiles, sizeof *files, cmp_name_id) : NULL;
            if (!hit)
                rc = BAD(e, "%s: no 'image_id', and file '%s' is no image file_name of %s", path,
                         key.name, gt->path);
            else
                m->image_id = hit->id;
        }
    }
    if (!rc && coco_gt_img_index(gt, m->image_id) < 0)
        rc = BAD(e, "%s: image_id %lld is not an image of %s", path, (long long)m->image_id, gt->path);
    if (!rc && (meta_num(j, path, "width", &m->width, 1, e) < 0 ||
                meta_num(j, path, "height", &m->height, 1, e) < 0))
        rc = -1;
    int yolo = o->yolo.head != YOLO_NONE;
    int need_map = o->coords == COORDS_INPUT || yolo;
    json_t *mode = rc ? NULL : json_object_get(j, "mode");
    if (mode && !json_is_string(mode)) rc = BAD(e, "%s: 'mode' must be a string", path);
    m->letterbox = mode && json_is_string(mode) && !strcmp(json_string_value(mode), "letterbox");
    int r[4] = {0};
    if (!rc && ((r[0] = meta_num(j, path, "scale_x", &m->sx, need_map, e)) < 0 ||
                (r[1] = meta_num(j, path, "scale_y", &m->sy, need_map, e)) < 0 ||
                (r[2] = meta_num(j, path, "offset_x", &m->ox, need_map, e)) < 0 ||
                (r[3] = meta_num(j, path, "offset_y", &m->oy, need_map, e)) < 0))
        rc = -1;
    m->has_map = r[0] && r[1];
    if (!rc && need_map && (m->sx <= 0 || m->sy <= 0))
        rc = BAD(e, "%s: scale_x and scale_y must be positive", path);
    int masks = o->yolo.head == YOLO_V8_SEG && gt->task.type == COCO_SEGM;
    int need_in = need_map && (o->normalized || masks || (yolo && m->letterbox && o->yolo.letterbox == YOLO_LB_ULTRALYTICS));
    if (!rc && ((r[0] = meta_num(j, path, "input_width", &m->in_w, need_in, e)) < 0 ||
                (r[1] = meta_num(j, path, "input_height", &m->in_h, need_in, e)) < 0))
        rc = -1;
    if (!rc && need_in && (m->in_w <= 0 || m->in_h <= 0 || m->width <= 0 || m->height <= 0))
        rc = BAD(e, "%s: width, height, input_width and input_height must be positive", path);
    json_decref(j);
    return rc;
}

/* ---- tensors ---- */

/* Reads DIR/<encoded name>.npy and checks it holds k values per detection
 * after leading dimensions of 1; *count gets the detection count. */
static int read_tensor(const char *dir, const char *name, int per, tensor_t *t, int64_t *count,
                       perr_t *e)
{
    char *file = tensor_file_name(name);
    char *path = path_join(dir, file);
    free(file);
    int rc = 0;
    if (!file_exists(path)) {
        rc = BAD(e, "%s: no output tensor '%s' (%s); set the tensor names with --labels/--boxes/--scores",
                 dir, name, path);
    } else if (npy_read(path, t, e)) {
        rc = -1;
    } else {
        int core = per > 1 ? 2 : 1;       /* [K, 4] or [K] */
        for (int i = 0; !rc && i + core < t->ndim; i++)
            if (t->dims[i] != 1)
                rc = BAD(e, "%s: leading dimension %d is %lld: one image per sample expected", path,
                         i, (long long)t->dims[i]);
        if (!rc && per > 1 && (t->ndim < 2 || t->dims[t->ndim - 1] != per))
            rc = BAD(e, "%s: expected boxes of shape [..., K, %d]", path, per);
        if (!rc && !dtype_is_float(t->dtype) && !dtype_is_signed_int(t->dtype) &&
            !dtype_is_unsigned_int(t->dtype))
            rc = BAD(e, "%s: %s tensors cannot hold detections", path, dtype_name(t->dtype));
        if (!rc) *count = tensor_numel(t) / per;
        if (rc) tensor_free_data(t);
    }
    free(path);
    return rc;
}

/* ---- boxes ---- */

/* One coordinate in original pixels; axis 0 = x, 1 = y. */
static double to_original(double v, int axis, const meta_t *m, const coco_decode_opts_t *o)
{
    if (o->coords == COORDS_ORIGINAL)
        return o->normalized ? v * (axis ? m->height : m->width) : v;
    if (o->normalized) v *= axis ? m->in_h : m->in_w;
    return axis ? (v - m->oy) / m->sy : (v - m->ox) / m->sx;
}

static void decode_box(const double b[4], const meta_t *m, const coco_decode_opts_t *o, double out[4])
{
    double x1, y1, x2, y2;
    switch (o->format) {
    case BOX_XYWH: x1 = b[0]; y1 = b[1]; x2 = b[0] + b[2]; y2 = b[1] + b[3]; break;
    case BOX_CXCYWH:
        x1 = b[0] - b[2] / 2; y1 = b[1] - b[3] / 2; x2 = b[0] + b[2] / 2; y2 = b[1] + b[3] / 2;
        break;
    default: x1 = b[0]; y1 = b[1]; x2 = b[2]; y2 = b[3]; break;
    }
    x1 = to_original(x1, 0, m, o);
    x2 = to_original(x2, 0, m, o);
    y1 = to_original(y1, 1, m, o);
    y2 = to_original(y2, 1, m, o);
    if (o->clip) {
        x1 = fmin(fmax(x1, 0), m->width);
        x2 = fmin(fmax(x2, 0), m->width);
        y1 = fmin(fmax(y1, 0), m->height);
        y2 = fmin(fmax(y2, 0), m->height);
    }
    out[0] = x1;
    out[1] = y1;
    out[2] = x2 - x1;
    out[3] = y2 - y1;
}

static int label_to_category(const tensor_t *lt, int64_t i, const coco_decode_opts_t *o,
                             const char *what, int64_t *out, perr_t *e)
{
    int64_t lab;
    if (dtype_is_float(lt->dtype)) {
        double v = tensor_get_f64(lt, i);
        if (!(v == floor(v)) || fabs(v) > 9e15)
            return BAD(e, "%s: detection %lld: label %g is not an integer", what, (long long)i, v);
        lab = (int64_t)v;
    } else {
        lab = tensor_get_i64(lt, i);
    }
    if (!o->label_map) {
        *out = lab;
        return 0;
    }
    if (lab < 0 || lab >= o->nlabel_map)
        return BAD(e, "%s: detection %lld: label %lld is outside the label map (%lld classes, set at %s)", what,
                   (long long)i, (long long)lab, (long long)o->nlabel_map, o->label_src ? o->label_src : "?");
    *out = o->label_map[lab];
    return 0;
}

/* Indices of the kept detections, in tensor order: scores at or above the
 * threshold, then the top_k best (ties by index). */
static int64_t select_dets(const double *score, int64_t k, const coco_decode_opts_t *o, int64_t *keep)
{
    int64_t n = 0;
    for (int64_t i = 0; i < k; i++)
        if (!o->has_threshold || score[i] >= o->threshold) keep[n++] = i;
    if (o->top_k > 0 && n > o->top_k) {
        int64_t *tmp = xmalloc(n * sizeof *tmp);
        /* by score, stable; then the first top_k back in index order */
        coco_sort_desc(score, keep, n, tmp);
        n = o->top_k;
        for (int64_t i = 1; i < n; i++) {     /* insertion sort of <= top_k indices */
            int64_t v = keep[i], j = i;
            while (j > 0 && keep[j - 1] > v) { keep[j] = keep[j - 1]; j--; }
            keep[j] = v;
        }
        free(tmp);
    }
    return n;
}

static int decode_sample(const char *sdir, const meta_t *m, const coco_decode_opts_t *o,
                         coco_dets_t *out, perr_t *e)
{
    tensor_t lt = {0}, bt = {0}, st = {0};
    int64_t kl = 0, kb = 0, ks = 0;
    if (read_tensor(sdir, o->scores, 1, &st, &ks, e)) return -1;
    if (read_tensor(sdir, o->boxes, 4, &bt, &kb, e)) { tensor_free_data(&st); return -1; }
    if (read_tensor(sdir, o->labels, 1, &lt, &kl, e)) {
        tensor_free_data(&st); tensor_free_data(&bt);
        return -1;
    }
    int rc = 0;
    if (kl != ks || kb != ks)
        rc = BAD(e, "%s: %lld labels, %lld boxes and %lld scores do not match", sdir,
                 (long long)kl, (long long)kb, (long long)ks);
    double *score = xmalloc((ks ? ks : 1) * sizeof *score);
    int64_t *keep = xmalloc((ks ? ks : 1) * sizeof *keep);
    for (int64_t i = 0; !rc && i < ks; i++) {
        score[i] = tensor_get_f64(&st, i);
        if (isnan(score[i])) rc = BAD(e, "%s: detection %lld: score is NaN", sdir, (long long)i);
        else if (!isfinite(score[i])) rc = BAD(e, "%s: detection %lld: score is infinite", sdir, (long long)i);
    }
    int64_t n = rc ? 0 : select_dets(score, ks, o, keep);
    for (int64_t j = 0; !rc && j < n; j++) {
        int64_t i = keep[j];
        coco_det_t d;
        d.image_id = m->image_id;
        if (label_to_category(&lt, i, o, sdir, &d.category_id, e)) { rc = -1; break; }
        double b[4];
        for (int q = 0; q < 4; q++) b[q] = tensor_get_f64(&bt, 4 * i + q);
        decode_box(b, m, o, d.bbox);
        d.score = score[i];
        char what[1024];
        snprintf(what, sizeof what, "%s: detection %lld", sdir, (long long)i);
        rc = coco_det_check(&d, what, e);
        if (!rc) coco_dets_push(out, &d);
    }
    free(score);
    free(keep);
    tensor_free_data(&lt);
    tensor_free_data(&bt);
    tensor_free_data(&st);
    return rc;
}

/* ---- a YOLO head ---- */

/* Input pixels to original: Ultralytics' scale_boxes for a letterbox (gain
 * = min(in_h / h, in_w / w), pad = round((in - orig * gain) / 2 - 0.1),
 * half to even as Python's round), else the meta map; in double. */
static void yolo_geom(const meta_t *m, const coco_decode_opts_t *o, yolo_geom_t *g)
{
    *g = (yolo_geom_t){ m->sx, m->sy, m->ox, m->oy, m->width, m->height, m->in_w, m->in_h, o->clip };
    if (m->letterbox && o->yolo.letterbox == YOLO_LB_ULTRALYTICS) {
        double gy = m->in_h / m->height, gx = m->in_w / m->width, gain = gy < gx ? gy : gx;
        g->sx = g->sy = gain;
        g->ox = nearbyint((m->in_w - m->width * gain) / 2 - 0.1);
        g->oy = nearbyint((m->in_h - m->height * gain) / 2 - 0.1);
    }
}

/* Reads sdir's tensor `name` into t; what: the decoding key naming it. */
static int read_named(const char *sdir, const char *name, const char *key, tensor_t *t, char **path, perr_t *e)
{
    char *file = tensor_file_name(name);
    *path = path_join(sdir, file);
    free(file);
    if (!file_exists(*path))
        return BAD(e, "%s: no output tensor '%s' (%s); the detection section's %s: names it", sdir, name, *path, key);
    return npy_read(*path, t, e);
}

/* The task shape of the head's evaluation: masks for segm (yolov8-seg),
 * keypoints for keypoints (yolov8-pose, K = the evaluation's count). */
static int check_task(const coco_gt_t *gt, const coco_decode_opts_t *o, perr_t *e)
{
    coco_iou_type_t ty = gt->task.type;
    if (ty == COCO_SEGM && o->yolo.head != YOLO_V8_SEG)
        return BAD(e, "--iou-type segm decodes masks: it needs head: yolov8-seg (with its protos tensor), not %s",
                   yolo_head_name(o->yolo.head));
    if (ty == COCO_KEYPOINTS && o->yolo.head != YOLO_V8_POSE)
        return BAD(e, "--iou-type keypoints decodes keypoints: it needs head: yolov8-pose, not %s",
                   yolo_head_name(o->yolo.head));
    if (ty == COCO_KEYPOINTS && o->yolo.keypoints != gt->task.nkpt)
        return BAD(e, "the head carries %lld keypoints (keypoints), but %s is evaluated with %d (--kpt-sigmas)",
                   (long long)o->yolo.keypoints, gt->path, gt->task.nkpt);
    if (ty == COCO_SEGM && gt->nimg && (gt->img_h[0] < 1 || gt->img_w[0] < 1))
        return BAD(e, "%s: masks need every image's width and height", gt->path);
    return 0;
}

/* A detection's mask or keypoints (per the evaluation) and its push. */
static int push_yolo(const coco_gt_t *gt, const tensor_t *t, const tensor_t *protos, int64_t nc, const yolo_det_t *d,
                     const yolo_geom_t *g, const char *what, const coco_det_t *c, coco_dets_t *out, perr_t *e)
{
    coco_mask_t mask = { 0 };
    double *k = NULL;
    int rc = 0;
    if (out->type == COCO_SEGM) {
        int64_t ii = coco_gt_img_index(gt, c->image_id);
        if (gt->img_h[ii] != (int64_t)g->h || gt->img_w[ii] != (int64_t)g->w)
            return BAD(e, "%s: meta.json's image size %gx%g is not the ground truth's %lldx%lld for image %lld", what,
                       g->w, g->h, (long long)gt->img_w[ii], (long long)gt->img_h[ii], (long long)c->image_id);
        rc = yolo_seg_mask(t, protos, nc, d, g, what, &mask, e);
    } else if (out->type == COCO_KEYPOINTS) {
        k = xmalloc((size_t)(3 * out->nkpt) * sizeof *k);
        rc = yolo_pose_kpts(t, nc, out->nkpt, d, g, what, k, e);
    }
    if (!rc) rc = coco_det_check(c, what, e);
    if (!rc && out->type == COCO_BBOX) coco_dets_push(out, c);
    else if (!rc) coco_dets_push_shape(out, c, &mask, k);
    coco_mask_free(&mask);
    free(k);
    return rc;
}

static int decode_yolo_sample(const char *sdir, const meta_t *m, const coco_gt_t *gt, const coco_decode_opts_t *o,
                              coco_dets_t *out, perr_t *e)
{
    char *path = NULL, *ppath = NULL;
    tensor_t t = { 0 }, p = { 0 };
    yolo_det_t *d = NULL;
    int64_t n = 0;
    int rc = read_named(sdir, o->yolo.output, "output", &t, &path, e);
    if (!rc && out->type == COCO_SEGM)
        rc = read_named(sdir, o->yolo.protos, "protos", &p, &ppath, e) || yolo_protos_check(&p, ppath, &o->yolo, e);
    if (!rc) rc = yolo_decode(&t, path, &o->yolo, o->label_map ? o->nlabel_map : 0, o->label_map_src, &d, &n, e);
    yolo_geom_t g;
    yolo_geom(m, o, &g);
    int64_t nc = t.ndim >= 2 ? t.dims[t.ndim - 2] - 4 - yolo_extra(&o->yolo) : 0;
    for (int64_t i = 0; !rc && i < n; i++) {
        coco_det_t c;
        double b[4];
        c.image_id = m->image_id;
        c.category_id = o->label_map ? o->label_map[d[i].cls] : d[i].cls;
        yolo_geom_box(&g, d[i].box, b);
        c.bbox[0] = b[0];
        c.bbox[1] = b[1];
        c.bbox[2] = b[2] - b[0];
        c.bbox[3] = b[3] - b[1];
        c.score = d[i].score;
        char what[1100];
        snprintf(what, sizeof what, "%s: anchor %lld", path, (long long)d[i].anchor);
        rc = push_yolo(gt, &t, &p, nc, &d[i], &g, what, &c, out, e);
    }
    free(d);
    tensor_free_data(&t);
    tensor_free_data(&p);
    free(path);
    free(ppath);
    return rc;
}

int coco_decode_dir(const char *dir, const coco_gt_t *gt, const coco_decode_opts_t *o,
                    coco_dets_t *out, perr_t *e)
{
    memset(out, 0, sizeof *out);
    if (o->yolo.head != YOLO_NONE ? check_task(gt, o, e) : gt->task.type != COCO_BBOX ?
        BAD(e, "--iou-type %s decodes a raw YOLO head (head: yolov8-seg or yolov8-pose); labels/boxes/scores "
            "outputs yield boxes only", coco_iou_type_name(gt->task.type)) : 0)
        return -1;
    out->type = gt->task.type;
    out->nkpt = gt->task.nkpt;
    char **names;
    int n = list_dir(dir, &names, e);
    if (n < 0) return -1;
    int64_t nfiles;
    name_id_t *files = index_files(gt, &nfiles);
    int rc = 0, nsamples = 0;
    for (int i = 0; !rc && i < n; i++) {
        char *sdir = path_join(dir, names[i]);
        if (is_dir(sdir)) {
            char *mdir = o->meta_dir ? path_join(o->meta_dir, names[i]) : xstrdup(sdir);
            char *mpath = path_join(mdir, "meta.json");
            meta_t m;
            if (!file_exists(mpath))
                rc = BAD(e, "%s: no meta.json for sample '%s' (use --meta DIR where preprocess wrote them)",
                         mpath, names[i]);
            if (!rc) rc = read_meta(mpath, gt, files, nfiles, o, &m, e);
            if (!rc) rc = o->yolo.head != YOLO_NONE ? decode_yolo_sample(sdir, &m, gt, o, out, e)
                                                    : decode_sample(sdir, &m, o, out, e);
            nsamples++;
            free(mdir);
            free(mpath);
        }
        free(sdir);
    }
    if (!rc && nsamples == 0) rc = BAD(e, "%s: no sample folders (expected DIR/<sample-id>/)", dir);
    free(files);
    free_list(names, n);
    if (rc) coco_dets_free(out);
    return rc;
}
