/* dets.c — COCO results files: loading (parallel, through jsonpar), checking
 * and writing. Only the four fields the bbox evaluation reads are kept;
 * others (segmentation, area, id) are ignored, as COCO.loadRes recomputes
 * area and id anyway. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "coco/coco.h"
#include "coco/fields.h"
#include "coco/jsonpar.h"
#include "util/fsutil.h"

typedef struct det_ctx {
    const char *path;
    coco_det_t *d;
} det_ctx_t;

static int load_det(json_t *v, int64_t i, void *ctx_, perr_t *e)
{
    det_ctx_t *ctx = ctx_;
    jplace_t pl = { ctx->path, "", i };
    coco_det_t *d = &ctx->d[i];
    if (jf_object(v, &pl, e) || jf_int(v, "image_id", &pl, &d->image_id, e) ||
        jf_int(v, "category_id", &pl, &d->category_id, e) ||
        jf_bbox(v, "bbox", &pl, d->bbox, e) || jf_number(v, "score", &pl, &d->score, e))
        return -1;
    return 0;
}

static int load_dom(const char *buf, size_t len, const char *path, coco_dets_t *d, perr_t *e)
{
    json_t *root = jsonpar_load(buf, len, path, buf, len, NULL, NULL, e);
    if (!root) return -1;
    int rc = 0;
    if (!json_is_array(root)) {
        rc = BAD(e, "%s: a COCO results file must be a JSON array of detections", path);
    } else {
        d->n = d->cap = (int64_t)json_array_size(root);
        d->d = xcalloc(d->n ? d->n : 1, sizeof *d->d);
        det_ctx_t ctx = { path, d->d };
        for (int64_t i = 0; !rc && i < d->n; i++) rc = load_det(json_array_get(root, i), i, &ctx, e);
    }
    json_decref(root);
    return rc;
}

int coco_dets_load(const char *path, int nthreads, coco_dets_t *d, perr_t *e)
{
    memset(d, 0, sizeof *d);
    char *buf;
    size_t len;
    if (read_file(path, &buf, &len, e)) return -1;
    size_t p = jsonpar_skip_ws(buf, len, 0), after;
    jsonpar_array_t arr;
    perr_t scan_err = {0};
    int rc;
    int scanned = p < len && buf[p] == '[' &&
                  jsonpar_scan(buf, len, p, path, &arr, &after, &scan_err) == 0;
    if (scanned && jsonpar_skip_ws(buf, len, after) == len) {
        d->n = d->cap = arr.n;
        d->d = xcalloc(arr.n ? arr.n : 1, sizeof *d->d);
        det_ctx_t ctx = { path, d->d };
        rc = jsonpar_parse(&arr, nthreads, load_det, &ctx, e);
        jsonpar_free(&arr);
    } else {
        if (scanned) jsonpar_free(&arr);
        /* not a clean array: jansson's verdict on the whole file */
        rc = load_dom(buf, len, path, d, e);
    }
    free(buf);
    if (rc) coco_dets_free(d);
    return rc;
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
    fputc('[', af.f);
    for (int64_t i = 0; i < d->n; i++) {
        const coco_det_t *x = &d->d[i];
        fprintf(af.f, "%s\n{\"image_id\": %lld, \"category_id\": %lld, \"bbox\": [", i ? "," : "",
                (long long)x->image_id, (long long)x->category_id);
        for (int k = 0; k < 4; k++) {
            if (k) fputs(", ", af.f);
            put_double(af.f, x->bbox[k]);
        }
        fputs("], \"score\": ", af.f);
        put_double(af.f, x->score);
        fputc('}', af.f);
    }
    fputs("\n]\n", af.f);
    return atomic_commit(&af, e);
}
