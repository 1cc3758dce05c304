/* accumulate.c — pycocotools' accumulate(): precision at the 101 recall
 * thresholds and recall, per (IoU threshold, category, area, maxDets).
 * Shared by bbox, segm and keypoints (whose single maxDets, 20, sits in the
 * last slot; the unused slots stay -1).
 *
 * A category's kept detections are already in accumulate's concatenation
 * order (images by id, each image's by score), so one stable sort by score
 * gives np.argsort(-dtScores, kind='mergesort'); the maxDets 1 and 10 lists
 * are that order filtered by rank (a subsequence keeps its relative order).
 *
 * The arithmetic is pycocotools' own (tp / (fp + tp + eps), tp / npig in
 * float64), but only the values that can reach the result are computed:
 *  - ignored detections repeat the previous (recall, precision) pair, or
 *    (0, 0) before the first counted one: they change neither the monotone
 *    envelope nor the index searchsorted finds, so they are skipped;
 *  - a false positive lowers precision (same tp, larger rounded denominator),
 *    so the envelope max(pr[i:]) is attained at a true positive and only
 *    true positives' precisions are kept;
 *  - searchsorted(rc, r, 'left') is the first detection with
 *    tp / npig >= r, i.e. the c-th true positive, c being the smallest count
 *    with c / npig >= r (computed with the same division; r = 0 gives index 0).
 * The values are therefore bit-identical to pycocotools'.
 */
#include <float.h>
#include <stdlib.h>
#include "coco/coco_int.h"

typedef struct acc_scratch {
    int64_t cap;             /* detections */
    int64_t *idx, *tmp;
    int64_t capp;            /* true positives */
    double *pr;              /* [T][capp]: precision at each true positive */
    int64_t need[COCO_R];    /* smallest tp count reaching each recall threshold */
} acc_scratch_t;

static void *acc_new(void *ctx)
{
    (void)ctx;
    return xcalloc(1, sizeof(acc_scratch_t));
}

static void acc_free(void *p)
{
    acc_scratch_t *s = p;
    free(s->idx); free(s->tmp); free(s->pr);
    free(s);
}

static void acc_fit(acc_scratch_t *s, int64_t n, int64_t maxtp)
{
    if (n > s->cap) {
        s->cap = n;
        s->idx = xrealloc(s->idx, n * sizeof *s->idx);
        s->tmp = xrealloc(s->tmp, n * sizeof *s->tmp);
    }
    if (maxtp > s->capp) {
        s->capp = maxtp;
        s->pr = xrealloc(s->pr, (int64_t)COCO_T * maxtp * sizeof *s->pr);
    }
}

typedef struct acc_ctx {
    const coco_work_t *w;
    coco_eval_t *ev;
} acc_ctx_t;

/* need[r]: the smallest tp count c with c / npig >= recThrs[r] (the
 * division pycocotools does; c / npig grows with c, so this is a threshold). */
static void recall_counts(int64_t npig, int64_t *need)
{
    double d = (double)npig;
    int64_t c = 0;
    for (int r = 0; r < COCO_R; r++) {
        double thr = coco_rec_thr(r);
        while (c <= npig && (double)c / d < thr) c++;
        need[r] = c;
    }
}

/* One (t, k, a, m) cell: pr holds the precision at each of ntp true
 * positives (in order), nd detections were counted. */
static void acc_finish(const acc_scratch_t *s, double *pr, int64_t ntp, int64_t nd, double npig,
                       int t, int64_t k, int a, int m, coco_eval_t *ev)
{
    COCO_REC(ev, t, k, a, m) = nd ? (double)ntp / npig : 0;
    for (int64_t i = ntp - 1; i > 0; i--)
        if (pr[i] > pr[i - 1]) pr[i - 1] = pr[i];
    for (int r = 0; r < COCO_R; r++) {
        int64_t c = s->need[r];
        double q = 0;                      /* past the end */
        if (c == 0) q = ntp ? pr[0] : 0;   /* index 0: max of all precisions */
        else if (c <= ntp) q = pr[c - 1];
        COCO_PREC(ev, t, r, k, a, m) = q;
    }
}

/* All ten IoU thresholds of one (k, a, m) in one pass over the sorted
 * detections. */
static void acc_area_maxdet(const coco_work_t *w, acc_scratch_t *s, int64_t n, int64_t npig,
                            int a, int m, int64_t k, coco_eval_t *ev)
{
    int maxdet = ev->max_dets[m];
    int64_t tp[COCO_T] = {0}, fp[COCO_T] = {0}, cap = s->capp;
    for (int64_t j = 0; j < n; j++) {
        int64_t x = s->idx[j];
        if (w->krank[x] >= maxdet) continue;
        unsigned counted = ~(unsigned)w->kign[x * COCO_A + a] & 0x3ffu;
        unsigned hit = w->khit[x * COCO_A + a] & counted;
        unsigned miss = counted & ~hit;
        for (int t = 0; t < COCO_T; t++) fp[t] += (miss >> t) & 1;
        for (int t = 0; hit; t++, hit >>= 1) {
            if (!(hit & 1)) continue;
            tp[t]++;
            double dtp = (double)tp[t];
            s->pr[t * cap + tp[t] - 1] = dtp / ((double)fp[t] + dtp + DBL_EPSILON);
        }
    }
    for (int t = 0; t < COCO_T; t++)
        acc_finish(s, s->pr + t * cap, tp[t], tp[t] + fp[t], (double)npig, t, k, a, m, ev);
}

static void acc_category(int64_t k, void *ctx_, void *scratch)
{
    acc_ctx_t *ctx = ctx_;
    const coco_work_t *w = ctx->w;
    acc_scratch_t *s = scratch;
    int64_t g0 = w->c_grp[k], g1 = w->c_grp[k + 1];
    if (g0 == g1) return;                  /* no evaluated image: stays -1 */
    int64_t k0 = w->g_dt[g0], n = w->g_dt[g1] - k0;
    /* a true positive matches a distinct GT that is not ignored */
    acc_fit(s, n ? n : 1, w->npig[k * COCO_A] ? w->npig[k * COCO_A] : 1);
    for (int64_t j = 0; j < n; j++) s->idx[j] = k0 + j;
    coco_sort_desc(w->kscore, s->idx, n, s->tmp);
    for (int a = 0; a < COCO_A; a++) {
        int64_t npig = w->npig[k * COCO_A + a];
        if (npig == 0) continue;           /* no GT to recall: stays -1 */
        recall_counts(npig, s->need);
        for (int m = 0; m < COCO_M; m++)
            if (ctx->ev->max_dets[m]) acc_area_maxdet(w, s, n, npig, a, m, k, ctx->ev);
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
