/* accumulate.c — pycocotools' accumulate(): precision at the 101 recall
 * thresholds and recall, per (IoU threshold, category, area, maxDets).
 *
 * A category's kept detections are already in accumulate's concatenation
 * order (images by id, each image's by score), so one stable sort by score
 * gives np.argsort(-dtScores, kind='mergesort'); the maxDets 1 and 10 lists
 * are that order filtered by rank (a subsequence keeps its relative order).
 *
 * Ignored detections are skipped instead of carried as repeated entries:
 * they repeat the previous (recall, precision) pair, or (0, 0) before the
 * first counted one, which changes neither the monotone precision envelope
 * nor the first index searchsorted finds (see notes/coco-eval.md), so the
 * values are bit-identical to pycocotools'.
 */
#include <float.h>
#include <stdlib.h>
#include "coco/coco_int.h"

typedef struct acc_scratch {
    int64_t cap;
    int64_t *idx, *tmp;
    double *rc, *pr;
} acc_scratch_t;

static void *acc_new(void *ctx)
{
    (void)ctx;
    return xcalloc(1, sizeof(acc_scratch_t));
}

static void acc_free(void *p)
{
    acc_scratch_t *s = p;
    free(s->idx); free(s->tmp); free(s->rc); free(s->pr);
    free(s);
}

static void acc_fit(acc_scratch_t *s, int64_t n)
{
    if (n <= s->cap) return;
    s->cap = n;
    s->idx = xrealloc(s->idx, n * sizeof *s->idx);
    s->tmp = xrealloc(s->tmp, n * sizeof *s->tmp);
    s->rc = xrealloc(s->rc, n * sizeof *s->rc);
    s->pr = xrealloc(s->pr, n * sizeof *s->pr);
}

typedef struct acc_ctx {
    const coco_work_t *w;
    coco_eval_t *ev;
} acc_ctx_t;

/* One (t, k, a, m) cell from the sorted detections. */
static void acc_cell(const coco_work_t *w, acc_scratch_t *s, int64_t n, int64_t npig, int t,
                     int a, int maxdet, int64_t k, int m, coco_eval_t *ev)
{
    uint16_t bit = (uint16_t)(1u << t);
    double tp = 0, fp = 0, dnpig = (double)npig;
    int64_t nd = 0;
    for (int64_t j = 0; j < n; j++) {
        int64_t x = s->idx[j];
        if (w->krank[x] >= maxdet || (w->kign[x * COCO_A + a] & bit)) continue;
        if (w->khit[x * COCO_A + a] & bit) tp += 1;
        else fp += 1;
        s->rc[nd] = tp / dnpig;
        s->pr[nd] = tp / (fp + tp + DBL_EPSILON);
        nd++;
    }
    COCO_REC(ev, t, k, a, m) = nd ? s->rc[nd - 1] : 0;
    for (int64_t i = nd - 1; i > 0; i--)
        if (s->pr[i] > s->pr[i - 1]) s->pr[i - 1] = s->pr[i];
    /* q = pr[searchsorted(rc, recThrs, 'left')], zero past the end */
    int64_t i = 0;
    for (int r = 0; r < COCO_R; r++) {
        double thr = coco_rec_thr(r);
        while (i < nd && s->rc[i] < thr) i++;
        COCO_PREC(ev, t, r, k, a, m) = i < nd ? s->pr[i] : 0;
    }
}

static void acc_category(int64_t k, void *ctx_, void *scratch)
{
    acc_ctx_t *ctx = ctx_;
    const coco_work_t *w = ctx->w;
    acc_scratch_t *s = scratch;
    int64_t g0 = w->c_grp[k], g1 = w->c_grp[k + 1];
    if (g0 == g1) return;                  /* no evaluated image: stays -1 */
    int64_t k0 = w->g_dt[g0], n = w->g_dt[g1] - k0;
    acc_fit(s, n ? n : 1);
    for (int64_t j = 0; j < n; j++) s->idx[j] = k0 + j;
    coco_sort_desc(w->kscore, s->idx, n, s->tmp);
    for (int a = 0; a < COCO_A; a++) {
        int64_t npig = w->npig[k * COCO_A + a];
        if (npig == 0) continue;           /* no GT to recall: stays -1 */
        for (int m = 0; m < COCO_M; m++)
            for (int t = 0; t < COCO_T; t++)
                acc_cell(w, s, n, npig, t, a, coco_max_dets[m], k, m, ctx->ev);
    }
}

void coco_accumulate(const coco_work_t *w, coco_eval_t *ev)
{
    int64_t K = w->K;
    int64_t np = (int64_t)COCO_T * COCO_R * K * COCO_A * COCO_M;
    int64_t nr = (int64_t)COCO_T * K * COCO_A * COCO_M;
    ev->ncat = K;
    ev->precision = xmalloc((np ? np : 1) * sizeof *ev->precision);
    ev->recall = xmalloc((nr ? nr : 1) * sizeof *ev->recall);
    for (int64_t i = 0; i < np; i++) ev->precision[i] = -1;
    for (int64_t i = 0; i < nr; i++) ev->recall[i] = -1;
    acc_ctx_t ctx = { w, ev };
    coco_parallel_for(K, w->nthreads, acc_category, &ctx, acc_new, acc_free);
}
