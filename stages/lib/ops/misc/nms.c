/* nms.c — NonMaxSuppression (MISC family; row in misc.c).
 *
 * Opsets 10 and 11 (same semantics). For each batch and class: the boxes
 * whose score is above score_threshold (strictly; all boxes when the input is
 * omitted), taken by score descending (equal scores: lower box index first),
 * each kept unless its IoU with an already kept box of that class is above
 * iou_threshold, until max_output_boxes_per_class are kept. Output: int64
 * [K,3] rows (batch, class, box) in batch, class, selection order — the
 * order and the float32 IoU arithmetic of onnxruntime, which produced the
 * ONNX reference outputs.
 *
 * The output's length depends on the data, so the shape function runs the
 * whole selection (when every input has data) and the kernel runs it again
 * to write the rows.
 */
#include <stdlib.h>
#include <string.h>
#include "ops/misc/misc_impl.h"

typedef struct { float x0, y0, x1, y1, area; } nms_box_t;
typedef struct { float score; int64_t idx; } nms_cand_t;

typedef struct {
    int64_t batches, classes, boxes;
    int64_t max_out;             /* per class */
    float iou_threshold;
    float score_threshold;
    int has_score_threshold;
} nms_params_t;

/* Reads the optional scalar inputs. Returns 0, OP_DYNAMIC or -1. */
static int nms_params(op_ctx_t *c, nms_params_t *p)
{
    if (op_check_inputs(c, 2, 5)) return -1;
    const tensor_t *b = c->in[0], *s = c->in[1];
    if (b->dtype != DT_FLOAT || s->dtype != DT_FLOAT)
        return op_fail(c, "boxes and scores must be float32, got %s and %s",
                       dtype_name(b->dtype), dtype_name(s->dtype));
    if (b->ndim != 3 || b->dims[2] != 4)
        return op_fail(c, "boxes must have shape [batches, boxes, 4]");
    if (s->ndim != 3)
        return op_fail(c, "scores must have shape [batches, classes, boxes]");
    if (s->dims[0] != b->dims[0] || s->dims[2] != b->dims[1])
        return op_fail(c, "scores [%lld, %lld, %lld] do not match boxes [%lld, %lld, 4]",
                       (long long)s->dims[0], (long long)s->dims[1], (long long)s->dims[2],
                       (long long)b->dims[0], (long long)b->dims[1]);
    int64_t cpb = attr_int(c->node, "center_point_box", 0);
    if (cpb != 0 && cpb != 1)
        return op_fail(c, "center_point_box must be 0 or 1, got %lld", (long long)cpb);
    p->batches = b->dims[0];
    p->classes = s->dims[1];
    p->boxes = b->dims[1];
    p->max_out = 0;
    p->iou_threshold = 0.0f;
    p->score_threshold = 0.0f;
    p->has_score_threshold = 0;
    for (int i = 2; i < c->n_in; i++) {
        const tensor_t *t = c->in[i];
        if (!t) continue;
        if (tensor_numel(t) > 1 || t->ndim > 1)
            return op_fail(c, "input %d must hold a single value", i);
        if (tensor_numel(t) == 0) continue;
        if (!t->data) return OP_DYNAMIC;
        if (i == 2) {
            if (t->dtype != DT_INT64)
                return op_fail(c, "max_output_boxes_per_class must be int64, got %s", dtype_name(t->dtype));
            p->max_out = tensor_get_i64(t, 0);
        } else {
            if (t->dtype != DT_FLOAT)
                return op_fail(c, "input %d must be float32, got %s", i, dtype_name(t->dtype));
            float v = (float)tensor_get_f64(t, 0);
            if (i == 3) p->iou_threshold = v;
            else { p->score_threshold = v; p->has_score_threshold = 1; }
        }
    }
    if (!(p->iou_threshold >= 0.0f && p->iou_threshold <= 1.0f))
        return op_fail(c, "iou_threshold must lie in [0, 1], got %g", (double)p->iou_threshold);
    if (p->max_out < 0) p->max_out = 0;
    if (p->max_out > p->boxes) p->max_out = p->boxes;
    if (!b->data || !s->data) return OP_DYNAMIC;
    return 0;
}

/* Corner form with min <= max, whichever diagonal or centre form came in. */
static void nms_box(const float *v, int center, nms_box_t *o)
{
    if (center) {
        float hw = v[2] / 2.0f, hh = v[3] / 2.0f;
        o->x0 = v[0] - hw; o->x1 = v[0] + hw;
        o->y0 = v[1] - hh; o->y1 = v[1] + hh;
    } else {
        o->y0 = v[0] < v[2] ? v[0] : v[2]; o->y1 = v[0] < v[2] ? v[2] : v[0];
        o->x0 = v[1] < v[3] ? v[1] : v[3]; o->x1 = v[1] < v[3] ? v[3] : v[1];
    }
    o->area = (o->x1 - o->x0) * (o->y1 - o->y0);
}

/* Whether b suppresses a (IoU above the threshold); degenerate boxes never do. */
static int nms_suppress(const nms_box_t *a, const nms_box_t *b, float thr)
{
    float ix0 = a->x0 > b->x0 ? a->x0 : b->x0, ix1 = a->x1 < b->x1 ? a->x1 : b->x1;
    if (!(ix1 > ix0)) return 0;
    float iy0 = a->y0 > b->y0 ? a->y0 : b->y0, iy1 = a->y1 < b->y1 ? a->y1 : b->y1;
    if (!(iy1 > iy0)) return 0;
    float inter = (ix1 - ix0) * (iy1 - iy0);
    if (!(inter > 0.0f)) return 0;
    float uni = a->area + b->area - inter;
    if (!(a->area > 0.0f) || !(b->area > 0.0f) || !(uni > 0.0f)) return 0;
    return inter / uni > thr;
}

/* Score descending, then lower index first: a strict total order (NaN
 * scores never pass the threshold test and without one rank last). */
static int nms_cmp(const void *pa, const void *pb)
{
    const nms_cand_t *a = pa, *b = pb;
    int an = a->score != a->score, bn = b->score != b->score;
    if (an != bn) return an - bn;
    if (!an && a->score != b->score) return a->score > b->score ? -1 : 1;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

/* Runs the selection; writes the first cap rows to out. Returns the row count. */
static int64_t nms_select(op_ctx_t *c, const nms_params_t *p, int64_t *out, int64_t cap)
{
    const float *bx = c->in[0]->data, *sc = c->in[1]->data;
    int center = attr_int(c->node, "center_point_box", 0) == 1;
    int64_t n = p->boxes, rows = 0;
    if (p->max_out == 0 || n == 0) return 0;
    nms_box_t *box = xmalloc((size_t)n * sizeof *box);
    nms_cand_t *cand = xmalloc((size_t)n * sizeof *cand);
    int64_t *kept = xmalloc((size_t)p->max_out * sizeof *kept);
    for (int64_t b = 0; b < p->batches; b++) {
        for (int64_t i = 0; i < n; i++) nms_box(bx + (b * n + i) * 4, center, &box[i]);
        for (int64_t k = 0; k < p->classes; k++) {
            const float *s = sc + (b * p->classes + k) * n;
            int64_t nc = 0, nk = 0;
            for (int64_t i = 0; i < n; i++)
                if (!p->has_score_threshold || s[i] > p->score_threshold)
                    cand[nc++] = (nms_cand_t){s[i], i};
            qsort(cand, (size_t)nc, sizeof *cand, nms_cmp);
            for (int64_t j = 0; j < nc && nk < p->max_out; j++) {
                const nms_box_t *a = &box[cand[j].idx];
                int keep = 1;
                for (int64_t q = 0; q < nk && keep; q++)
                    if (nms_suppress(a, &box[kept[q]], p->iou_threshold)) keep = 0;
                if (!keep) continue;
                kept[nk++] = cand[j].idx;
                if (rows < cap) {
                    out[rows * 3] = b;
                    out[rows * 3 + 1] = k;
                    out[rows * 3 + 2] = cand[j].idx;
                }
                rows++;
            }
        }
    }
    free(box);
    free(cand);
    free(kept);
    return rows;
}

int nms_shape(op_ctx_t *c)
{
    nms_params_t p;
    int rc = nms_params(c, &p);
    if (rc) return rc;
    int64_t dims[2] = {nms_select(c, &p, NULL, 0), 3};
    return op_set_out(c, 0, DT_INT64, 2, dims);
}

int nms_run(op_ctx_t *c)
{
    nms_params_t p;
    int rc = nms_params(c, &p);
    if (rc == OP_DYNAMIC) return op_fail(c, "inputs without data");
    if (rc) return -1;
    int64_t rows = nms_select(c, &p, c->out[0]->data, c->out[0]->dims[0]);
    if (rows != c->out[0]->dims[0])
        return op_fail(c, "selected %lld boxes, the output has room for %lld", (long long)rows,
                       (long long)c->out[0]->dims[0]);
    return 0;
}
