/* evaluate.c — pycocotools' _prepare, computeIoU / computeOks and evaluateImg.
 *
 * Ground truth and detections are grouped by (category, image); each group's
 * detections are stable-sorted by score and cut to the last maxDets (100, or
 * 20 for keypoints); IoUs are computed as maskApi.c's bbIou does, or by
 * iou.c for masks and keypoints (OKS); then, per area range and IoU threshold, the greedy
 * matching of evaluateImg marks every kept detection as matched (to a GT of
 * nonzero id) and/or ignored. Groups of different categories are independent
 * and run on worker threads.
 */
#include <stdlib.h>
#include <string.h>
#include "coco/coco_int.h"
#include "coco/iou.h"

static const double area_lo[COCO_A] = { 0.0, 0.0, 1024.0, 9216.0 };
static const double area_hi[COCO_A] = { 1e10, 1024.0, 9216.0, 1e10 };
/* min(t, 1 - 1e-10) for each IoU threshold: np.linspace(.5, .95, 10) is
 * i * step + .5 with the last set to .95 (all below 1 - 1e-10) */
#define THR(i) ((double)(i) * ((0.95 - 0.5) / 9) + 0.5)
static const double iou_thr[COCO_T] = {
    THR(0), THR(1), THR(2), THR(3), THR(4), THR(5), THR(6), THR(7), THR(8), 0.95,
};
#undef THR

/* ---- grouping (_prepare) ---- */

/* id -> index of gt's sorted unique image or category ids: a dense table
 * when the ids span a small range (COCO's do), else the binary search.
 * Half a million detections look both up, on one thread. */
typedef struct id_lut {
    const coco_gt_t *gt;
    int64_t (*find)(const coco_gt_t *gt, int64_t id);
    uint64_t lo, span;
    int32_t *t;
} id_lut_t;

static void lut_build(id_lut_t *l, const coco_gt_t *gt, const int64_t *ids, int64_t n,
                      int64_t (*find)(const coco_gt_t *, int64_t))
{
    l->gt = gt;
    l->find = find;
    l->t = NULL;
    if (n == 0 || n > INT32_MAX) return;
    uint64_t span = (uint64_t)ids[n - 1] - (uint64_t)ids[0] + 1;   /* sorted: no wrap */
    /* COCO val2017: 5,000 image ids up to 581,929, a 2.3 MB table */
    if (span == 0 || span > 32 * (uint64_t)n + ((uint64_t)1 << 20)) return;
    l->lo = (uint64_t)ids[0];
    l->span = span;
    l->t = xmalloc(span * sizeof *l->t);
    for (uint64_t i = 0; i < span; i++) l->t[i] = -1;
    for (int64_t i = 0; i < n; i++) l->t[(uint64_t)ids[i] - l->lo] = (int32_t)i;
}

static int64_t lut_find(const id_lut_t *l, int64_t id)
{
    if (!l->t) return l->find(l->gt, id);
    uint64_t off = (uint64_t)id - l->lo;
    return off < l->span ? l->t[off] : -1;
}

typedef struct luts { id_lut_t img, cat; } luts_t;

static void luts_build(luts_t *u, const coco_gt_t *gt)
{
    lut_build(&u->img, gt, gt->img_ids, gt->nimg, coco_gt_img_index);
    lut_build(&u->cat, gt, gt->cat_ids, gt->ncat, coco_gt_cat_index);
}

static void luts_free(luts_t *u)
{
    free(u->img.t);
    free(u->cat.t);
}

/* For each annotation, the index of the last annotation with the same id:
 * COCO.loadAnns looks anns up by id, so a repeated id yields the last one.
 * NULL when ids are unique (the normal case). */
static int64_t *resolve_ids(const coco_gt_t *gt)
{
    int64_t n = gt->nann;
    if (n < 2) return NULL;
    uint64_t *k = xmalloc(n * sizeof *k), *tk = xmalloc(n * sizeof *tk);
    int64_t *v = xmalloc(n * sizeof *v), *tv = xmalloc(n * sizeof *tv);
    for (int64_t i = 0; i < n; i++) {
        k[i] = (uint64_t)gt->anns[i].id ^ (UINT64_C(1) << 63);   /* signed order */
        v[i] = i;
    }
    coco_radix_sort(k, v, n, tk, tv);
    int64_t *res = NULL;
    for (int64_t i = 0; i + 1 < n; i++) {
        if (k[i] != k[i + 1]) continue;
        if (!res) {
            res = xmalloc(n * sizeof *res);
            for (int64_t j = 0; j < n; j++) res[j] = j;
        }
        /* equal ids sit together in file order: all map to the last */
        int64_t j = i;
        while (j + 1 < n && k[j + 1] == k[i]) j++;
        for (int64_t q = i; q <= j; q++) res[v[q]] = v[j];
        i = j;
    }
    free(k); free(tk); free(v); free(tv);
    return res;
}

/* pycocotools' gts list, keyed by (category, image) and stable-sorted. */
static int64_t group_gts(const coco_gt_t *gt, const luts_t *u, uint64_t **keys, int64_t **vals)
{
    int64_t n = gt->nann, I = gt->nimg;
    uint64_t *k = xmalloc((n ? n : 1) * sizeof *k), *tk = xmalloc((n ? n : 1) * sizeof *tk);
    int64_t *v = xmalloc((n ? n : 1) * sizeof *v), *tv = xmalloc((n ? n : 1) * sizeof *tv);
    /* getAnnIds: images in id order, each image's annotations in file
     * order, those of a known category */
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t ii = lut_find(&u->img, gt->anns[i].image_id);
        if (ii < 0 || lut_find(&u->cat, gt->anns[i].category_id) < 0) continue;
        k[m] = (uint64_t)ii;
        v[m++] = i;
    }
    coco_radix_sort(k, v, m, tk, tv);
    /* loadAnns by id, then _gts[image_id, category_id] */
    int64_t *res = resolve_ids(gt);
    int64_t r = 0;
    for (int64_t i = 0; i < m; i++) {
        const coco_ann_t *a = &gt->anns[res ? res[v[i]] : v[i]];
        int64_t ii = lut_find(&u->img, a->image_id);
        int64_t c = lut_find(&u->cat, a->category_id);
        if (ii < 0 || c < 0) continue;
        k[r] = (uint64_t)c * (uint64_t)I + (uint64_t)ii;
        v[r++] = res ? res[v[i]] : v[i];
    }
    free(res);
    coco_radix_sort(k, v, r, tk, tv);
    free(tk); free(tv);
    *keys = k;
    *vals = v;
    return r;
}

static int group_dets(const coco_gt_t *gt, const luts_t *u, const coco_dets_t *d, uint64_t **keys,
                      int64_t **vals, int64_t *count, int64_t *ndropped, perr_t *e)
{
    int64_t n = d->n, I = gt->nimg, m = 0;
    uint64_t *k = xmalloc(n * sizeof *k), *tk = xmalloc(n * sizeof *tk);
    int64_t *v = xmalloc(n * sizeof *v), *tv = xmalloc(n * sizeof *tv);
    *ndropped = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t ii = lut_find(&u->img, d->d[i].image_id);
        if (ii < 0) {
            free(k); free(tk); free(v); free(tv);
            return BAD(e, "detection [%lld]: image_id %lld is not an image of the ground truth "
                       "(pycocotools asserts: results do not correspond to the COCO set)",
                       (long long)i, (long long)d->d[i].image_id);
        }
        int64_t c = lut_find(&u->cat, d->d[i].category_id);
        if (c < 0) {          /* COCOeval only asks for the GT's categories */
            (*ndropped)++;
            continue;
        }
        k[m] = (uint64_t)c * (uint64_t)I + (uint64_t)ii;
        v[m++] = i;
    }
    coco_radix_sort(k, v, m, tk, tv);
    free(tk); free(tv);
    *keys = k;
    *vals = v;
    *count = m;
    return 0;
}

/* Merges the two sorted key lists into groups. */
static void make_groups(coco_work_t *w, const uint64_t *gk, int64_t ng, const uint64_t *dk,
                        int64_t nd)
{
    int64_t cap = ng + nd + 1, I = w->I;
    w->g_cat = xmalloc(cap * sizeof *w->g_cat);
    w->g_gt = xmalloc((cap + 1) * sizeof *w->g_gt);
    w->g_in = xmalloc((cap + 1) * sizeof *w->g_in);
    w->g_dt = xmalloc((cap + 1) * sizeof *w->g_dt);
    w->c_grp = xcalloc(w->K + 1, sizeof *w->c_grp);
    int64_t i = 0, j = 0, g = 0, kept = 0;
    while (i < ng || j < nd) {
        uint64_t key = j >= nd || (i < ng && gk[i] <= dk[j]) ? gk[i] : dk[j];
        w->g_cat[g] = (int64_t)(key / (uint64_t)I);
        w->g_gt[g] = i;
        w->g_in[g] = j;
        w->g_dt[g] = kept;
        while (i < ng && gk[i] == key) i++;
        int64_t j0 = j;
        while (j < nd && dk[j] == key) j++;
        kept += j - j0 < w->maxdet ? j - j0 : w->maxdet;
        w->c_grp[w->g_cat[g] + 1]++;
        g++;
    }
    w->g_gt[g] = i;
    w->g_in[g] = j;
    w->g_dt[g] = kept;
    w->ngroups = g;
    w->nkept = kept;
    for (int64_t c = 0; c < w->K; c++) w->c_grp[c + 1] += w->c_grp[c];
}

/* ---- per-group evaluation (computeIoU + evaluateImg) ---- */

typedef struct scratch {
    int64_t cap_d, cap_g;
    int64_t *idx, *tmp;      /* detection order */
    double *key;
    double *darea;           /* [D] */
    uint8_t *gig, *gcrowd, *gm;
    int64_t *gid;
    int64_t cap_c;           /* candidates: GTs a detection can match at all */
    int64_t *c_off;          /* [D+1] */
    int64_t *dm;             /* detections with candidates */
    int64_t *c_gt;
    double *c_iou;
} scratch_t;

static void *scratch_new(void *ctx)
{
    (void)ctx;
    return xcalloc(1, sizeof(scratch_t));
}

static void scratch_free(void *p)
{
    scratch_t *s = p;
    free(s->idx); free(s->tmp); free(s->key); free(s->darea);
    free(s->gig); free(s->gcrowd); free(s->gm); free(s->gid);
    free(s->c_off); free(s->dm); free(s->c_gt); free(s->c_iou);
    free(s);
}

static void scratch_fit(scratch_t *s, int64_t nd, int64_t ng, int maxdet)
{
    int64_t kd = nd < maxdet ? nd : maxdet;
    int64_t need = (kd ? kd : 1) * (ng ? ng : 1);
    if (nd < 1) nd = 1;                    /* c_off[0] exists for every group */
    if (nd > s->cap_d) {
        s->cap_d = nd;
        s->idx = xrealloc(s->idx, nd * sizeof *s->idx);
        s->tmp = xrealloc(s->tmp, nd * sizeof *s->tmp);
        s->key = xrealloc(s->key, nd * sizeof *s->key);
        s->darea = xrealloc(s->darea, nd * sizeof *s->darea);
        s->c_off = xrealloc(s->c_off, (nd + 1) * sizeof *s->c_off);
        s->dm = xrealloc(s->dm, nd * sizeof *s->dm);
    }
    if (ng > s->cap_g) {
        s->cap_g = ng;
        s->gig = xrealloc(s->gig, ng);
        s->gcrowd = xrealloc(s->gcrowd, ng);
        s->gm = xrealloc(s->gm, ng);
        s->gid = xrealloc(s->gid, ng * sizeof *s->gid);
    }
    if (need > s->cap_c) {
        s->cap_c = need;
        s->c_gt = xrealloc(s->c_gt, need * sizeof *s->c_gt);
        s->c_iou = xrealloc(s->c_iou, need * sizeof *s->c_iou);
    }
}

/* maskApi.c bbIou: o = inter / union, union = dt area for a crowd GT. */
static double bb_iou(const double *D, const double *G, int crowd)
{
    double w = (D[2] + D[0] < G[2] + G[0] ? D[2] + D[0] : G[2] + G[0]) -
               (D[0] > G[0] ? D[0] : G[0]);
    if (w <= 0) return 0;
    double h = (D[3] + D[1] < G[3] + G[1] ? D[3] + D[1] : G[3] + G[1]) -
               (D[1] > G[1] ? D[1] : G[1]);
    if (h <= 0) return 0;
    double i = w * h, da = D[2] * D[3], ga = G[2] * G[3];
    double u = crowd ? da : da + ga - i;
    return i / u;
}

/* evaluateImg's greedy matching for one detection at one threshold.
 *
 * pycocotools scans the GTs sorted "not ignored first" with the current best
 * IoU starting at the threshold: a GT already matched (and not crowd) is
 * skipped, an IoU below the best is skipped, an IoU equal or above becomes
 * the match (so among equal IoUs the later GT wins), and once the match is a
 * GT that is not ignored the scan stops at the first ignored GT. So: the
 * not-ignored GTs are tried first, in file order; the ignored ones only when
 * none of those matched. A GT below the lowest threshold (0.5) can never
 * match, which is why only the candidates (IoU >= 0.5) are scanned. */
static int64_t match_one(const scratch_t *s, int64_t d, double thr)
{
    double best = thr;
    int64_t m = -1;
    for (int pass = 0; pass < 2 && m < 0; pass++) {
        for (int64_t c = s->c_off[d]; c < s->c_off[d + 1]; c++) {
            int64_t j = s->c_gt[c];
            if (s->gig[j] != pass || (s->gm[j] && !s->gcrowd[j])) continue;
            if (s->c_iou[c] < best) continue;
            best = s->c_iou[c];
            m = j;
        }
    }
    return m;
}

/* evaluateImg for one area range: fills khit/kign bits of the kept dets
 * and returns the number of GTs not ignored. */
static int64_t match_area(coco_work_t *w, scratch_t *s, int64_t g, int a, int64_t kd)
{
    const coco_gt_t *gt = w->gt;
    int64_t g0 = w->g_gt[g], G = w->g_gt[g + 1] - g0, k0 = w->g_dt[g];
    /* _ignore = iscrowd or area outside the range (the JSON area field) */
    int64_t npig = 0;
    int kp = gt->task.type == COCO_KEYPOINTS;
    for (int64_t j = 0; j < G; j++) {
        const coco_ann_t *an = &gt->anns[w->gt_idx[g0 + j]];
        /* keypoints: a GT without labelled keypoints is ignored too */
        int ig = an->iscrowd || (kp && an->num_keypoints == 0);
        s->gig[j] = (uint8_t)(ig || an->area < area_lo[a] || an->area > area_hi[a]);
        s->gcrowd[j] = (uint8_t)an->iscrowd;
        s->gid[j] = an->id;
        npig += !s->gig[j];
    }
    uint16_t *hit = w->khit + k0 * COCO_A + a, *ign = w->kign + k0 * COCO_A + a;
    /* a detection without candidates is unmatched at every threshold:
     * ignored exactly when its area is outside the range */
    int64_t nm = 0;
    for (int64_t d = 0; d < kd; d++) {
        int out = s->darea[d] < area_lo[a] || s->darea[d] > area_hi[a];
        hit[d * COCO_A] = 0;
        ign[d * COCO_A] = out ? 0x3ff : 0;
        if (s->c_off[d] != s->c_off[d + 1]) s->dm[nm++] = d;
    }
    for (int t = 0; t < COCO_T && nm; t++) {
        if (G) memset(s->gm, 0, G);
        uint16_t bit = (uint16_t)(1u << t);
        for (int64_t q = 0; q < nm; q++) {
            int64_t d = s->dm[q], m = match_one(s, d, iou_thr[t]);
            if (m < 0) continue;           /* unmatched: as above */
            uint16_t ig = ign[d * COCO_A] & (uint16_t)~bit;
            if (s->gig[m]) ig |= bit;      /* a match takes its GT's ignore flag */
            ign[d * COCO_A] = ig;
            if (s->gid[m] != 0) hit[d * COCO_A] |= bit;
            /* a match to GT id 0 stays "dtm == 0": ignored when out of range */
            else if (s->darea[d] < area_lo[a] || s->darea[d] > area_hi[a]) ign[d * COCO_A] |= bit;
            s->gm[m] = 1;
        }
    }
    return npig;
}

static void eval_group(coco_work_t *w, scratch_t *s, int64_t g)
{
    const coco_det_t *dd = w->dets->d;
    const coco_gt_t *gt = w->gt;
    int64_t n = w->g_in[g + 1] - w->g_in[g], G = w->g_gt[g + 1] - w->g_gt[g];
    int64_t k0 = w->g_dt[g], kd = w->g_dt[g + 1] - k0, nc = 0;
    scratch_fit(s, n, G, w->maxdet);
    const int64_t *in = w->in_idx + w->g_in[g];
    for (int64_t j = 0; j < n; j++) {
        s->key[j] = dd[in[j]].score;
        s->idx[j] = j;
    }
    coco_sort_desc(s->key, s->idx, n, s->tmp);
    for (int64_t d = 0; d < kd; d++) {
        int64_t kdi = in[s->idx[d]];
        const coco_det_t *x = &dd[kdi];
        w->kdet[k0 + d] = kdi;
        w->kscore[k0 + d] = x->score;
        w->krank[k0 + d] = (uint8_t)d;
        /* loadRes' area: w*h for boxes, else as dets.c set it */
        s->darea[d] = w->dets->area ? w->dets->area[kdi] : x->bbox[2] * x->bbox[3];
        s->c_off[d] = nc;
        for (int64_t j = 0; j < G; j++) {
            int64_t ai = w->gt_idx[w->g_gt[g] + j];
            const coco_ann_t *an = &gt->anns[ai];
            double v;
            if (gt->task.type == COCO_SEGM)
                v = coco_mask_iou(&w->dets->masks[kdi], &an->mask, an->iscrowd, iou_thr[0]);
            else if (gt->task.type == COCO_KEYPOINTS)
                v = coco_oks(w->dets->kpts + kdi * 3 * gt->task.nkpt, gt->kpts + ai * 3 * gt->task.nkpt,
                             an->bbox, an->area, &gt->task);
            else
                v = bb_iou(x->bbox, an->bbox, an->iscrowd);
            if (v >= iou_thr[0]) {
                s->c_gt[nc] = j;
                s->c_iou[nc++] = v;
            }
        }
    }
    s->c_off[kd] = nc;
    int64_t c = w->g_cat[g];
    for (int a = 0; a < COCO_A; a++) w->npig[c * COCO_A + a] += match_area(w, s, g, a, kd);
}

static void eval_category(int64_t c, void *ctx, void *scratch)
{
    coco_work_t *w = ctx;
    for (int64_t g = w->c_grp[c]; g < w->c_grp[c + 1]; g++) eval_group(w, scratch, g);
}

int coco_work_build(coco_work_t *w, const coco_gt_t *gt, const coco_dets_t *d, int nthreads,
                    int64_t *ndropped, perr_t *e)
{
    memset(w, 0, sizeof *w);
    w->gt = gt;
    w->dets = d;
    w->K = gt->ncat;
    w->I = gt->nimg;
    w->nthreads = nthreads < 1 ? 1 : nthreads;
    w->maxdet = gt->task.type == COCO_KEYPOINTS ? 20 : 100;
    if (d->n == 0)
        return BAD(e, "no detections: the results list is empty (pycocotools fails on it; "
                   "no stats are defined)");
    uint64_t *gk = NULL, *dk = NULL;
    int64_t nd = 0;
    luts_t u;
    luts_build(&u, gt);
    int rc = group_dets(gt, &u, d, &dk, &w->in_idx, &nd, ndropped, e);
    int64_t ng = rc ? 0 : group_gts(gt, &u, &gk, &w->gt_idx);
    luts_free(&u);
    if (rc) return -1;
    make_groups(w, gk, ng, dk, nd);
    free(gk);
    free(dk);
    int64_t nk = w->nkept ? w->nkept : 1;
    w->kdet = xmalloc(nk * sizeof *w->kdet);
    w->kscore = xmalloc(nk * sizeof *w->kscore);
    w->krank = xmalloc(nk);
    w->khit = xmalloc(nk * COCO_A * sizeof *w->khit);
    w->kign = xmalloc(nk * COCO_A * sizeof *w->kign);
    w->npig = xcalloc((w->K ? w->K : 1) * COCO_A, sizeof *w->npig);
    coco_parallel_for(w->K, w->nthreads, eval_category, w, scratch_new, scratch_free);
    return 0;
}

void coco_work_free(coco_work_t *w)
{
    free(w->g_cat); free(w->g_gt); free(w->g_in); free(w->g_dt); free(w->c_grp);
    free(w->gt_idx); free(w->in_idx);
    free(w->kdet); free(w->kscore); free(w->krank); free(w->khit); free(w->kign);
    free(w->npig);
    memset(w, 0, sizeof *w);
}
