/* metrics.c — the statistics of one tensor pair (metrics.h says what they
 * mean). Two passes over the data, plus two more for float64 medians of
 * large tensors: pass 1 accumulates sums and extremes and the top 16 bits of
 * every difference's bit pattern, pass 2 the spread, the histogram and the
 * next 16 bits inside the bins that hold the wanted ranks. Small tensors
 * keep their keys and use quickselect instead. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "compare/metrics.h"
#include "compare/metrics_impl.h"

void hist_setup(hbins_t *h, double lo, double hi)
{
    if (lo == hi) {
        lo -= 0.5;
        hi += 0.5;
    }
    h->lo = lo;
    h->hi = hi;
    double delta = hi - lo, step = delta / CMP_HIST_BINS;
    for (int i = 0; i <= CMP_HIST_BINS; i++)
        h->edges[i] = step == 0 ? ((double)i / CMP_HIST_BINS) * delta + lo : (double)i * step + lo;
    h->edges[CMP_HIST_BINS] = hi;
    h->norm = CMP_HIST_BINS / delta;
}

#define KT float
#define KKEY uint32_t
#define KBITS 32
#define KFABS fabsf
#define KSUF f32
#include "compare/pairkernel.h"
#undef KT
#undef KKEY
#undef KBITS
#undef KFABS
#undef KSUF

#define KT double
#define KKEY uint64_t
#define KBITS 64
#define KFABS fabs
#define KSUF f64
#include "compare/pairkernel.h"
#undef KT
#undef KKEY
#undef KBITS
#undef KFABS
#undef KSUF

cmp_work_t *cmp_work_new(void)
{
    cmp_work_t *w = xcalloc(1, sizeof *w);
    for (int i = 0; i < 2; i++) {
        w->h0[i] = xmalloc(SEL_DIGITS * sizeof(uint32_t));
        w->h1[i] = xmalloc((size_t)SEL_MAX_RANKS * SEL_DIGITS * sizeof(uint32_t));
        w->slot[i] = xmalloc(SEL_DIGITS);
        w->keys[i] = xmalloc(SMALL_N * sizeof(uint64_t));
        w->blk[i] = xmalloc(FAST_BLOCK * sizeof(float));
    }
    return w;
}

void cmp_work_free(cmp_work_t *w)
{
    if (!w) return;
    for (int i = 0; i < 2; i++) {
        free(w->h0[i]);
        free(w->h1[i]);
        free(w->slot[i]);
        free(w->keys[i]);
        free(w->blk[i]);
    }
    free(w);
}

/* ---- ranks wanted: the median and the quantiles, numpy's way ---------- */

enum { Q_MEDIAN, Q_P90, Q_P95, Q_P99, Q_USER, NQ };

typedef struct qspec {
    int64_t lo, hi;           /* ranks to interpolate between */
    double gamma;
} qspec_t;

typedef struct targets {
    int m;                    /* unique ranks, ascending */
    int64_t rank[SEL_MAX_RANKS], rem[SEL_MAX_RANKS];
    uint64_t prefix[SEL_MAX_RANKS];
} targets_t;

/* numpy.quantile, method "linear": virtual index (n-1)q; at or beyond the
 * last element the last element itself. */
static qspec_t quantile_spec(int64_t n, double q)
{
    qspec_t s;
    double v = (double)(n - 1) * q;
    if (v >= (double)(n - 1)) {
        s.lo = s.hi = n - 1;
        s.gamma = 0;
    } else {
        double f = floor(v);
        s.lo = (int64_t)f;
        s.hi = s.lo + 1;
        s.gamma = v - f;
    }
    return s;
}

static void add_rank(targets_t *t, int64_t r)
{
    for (int i = 0; i < t->m; i++)
        if (t->rank[i] == r) return;
    int i = t->m++;
    while (i > 0 && t->rank[i - 1] > r) {
        t->rank[i] = t->rank[i - 1];
        i--;
    }
    t->rank[i] = r;
}

static void plan_ranks(int64_t n, double quser, qspec_t *qs, targets_t *t)
{
    static const double qv[NQ] = {0.5, 0.9, 0.95, 0.99, 0};
    memset(t, 0, sizeof *t);
    for (int i = 0; i < NQ; i++) {
        if (i == Q_MEDIAN) {
            qs[i].lo = (n - 1) / 2;
            qs[i].hi = n / 2;
            qs[i].gamma = 0;
        } else {
            qs[i] = quantile_spec(n, i == Q_USER ? quser : qv[i]);
        }
        add_rank(t, qs[i].lo);
        add_rank(t, qs[i].hi);
    }
}

static int rank_index(const targets_t *t, int64_t r)
{
    for (int i = 0; i < t->m; i++)
        if (t->rank[i] == r) return i;
    return 0;
}

static double key_value(uint64_t k, int is_f32)
{
    if (is_f32) {
        uint32_t u = (uint32_t)k;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    double d;
    memcpy(&d, &k, 8);
    return d;
}

/* numpy's _lerp: a + (b-a)t, or b - (b-a)(1-t) from t = 0.5 on. */
static double lerp(double a, double b, double t)
{
    double diff = b - a;
    return t >= 0.5 ? b - diff * (1 - t) : a + diff * t;
}

/* Fills the median and quantiles of a distribution from the rank values. */
static void set_quantiles(cmp_dist_t *d, const qspec_t *qs, const targets_t *t,
                          const uint64_t *vals, int is_f32)
{
    double *dst[NQ] = {&d->median, &d->p90, &d->p95, &d->p99, &d->q};
    for (int i = 0; i < NQ; i++) {
        double a = key_value(vals[rank_index(t, qs[i].lo)], is_f32);
        double b = key_value(vals[rank_index(t, qs[i].hi)], is_f32);
        if (i == Q_MEDIAN) {
            /* numpy averages the middle pair in the array's own type */
            *dst[i] = is_f32 ? (double)(((float)a + (float)b) / 2.0f) : (a + b) / 2.0;
        } else {
            *dst[i] = lerp(a, b, qs[i].gamma);
        }
    }
}

/* Groups the targets by their current prefix into slots (ascending). */
static int make_slots(const targets_t *t, uint64_t *slot_prefix, int *slot_of)
{
    int ns = 0;
    for (int i = 0; i < t->m; i++) {
        int s = 0;
        while (s < ns && slot_prefix[s] != t->prefix[i]) s++;
        if (s == ns) slot_prefix[ns++] = t->prefix[i];
        slot_of[i] = s;
    }
    return ns;
}

/* Resolves one 16-bit digit of every target from its slot's histogram. */
static void resolve_digit(targets_t *t, const uint32_t *hists, const int *slot_of, int ns)
{
    for (int s = 0; s < ns; s++) {
        int64_t rem[SEL_MAX_RANKS];
        uint32_t dig[SEL_MAX_RANKS];
        int idx[SEL_MAX_RANKS], k = 0;
        for (int i = 0; i < t->m; i++)
            if (slot_of[i] == s) { idx[k] = i; rem[k++] = t->rem[i]; }
        radix_step(hists + (size_t)s * SEL_DIGITS, k, rem, dig);
        for (int j = 0; j < k; j++) {
            t->prefix[idx[j]] = (t->prefix[idx[j]] << 16) | dig[j];
            t->rem[idx[j]] = rem[j];
        }
    }
}

/* ---- the pair ---------------------------------------------------------- */

static void dacc_init(dacc_t *d)
{
    memset(d, 0, sizeof *d);
    d->argmin = d->argmax = d->first_nan = -1;
    d->fmin = INFINITY;
    d->fmax = -INFINITY;
}

static void vacc_init(vacc_t *v)
{
    memset(v, 0, sizeof *v);
    v->min = INFINITY;
    v->max = -INFINITY;
}

static void finish_values(const vacc_t *v, cmp_values_t *o)
{
    o->nan = v->nan;
    o->posinf = v->pinf;
    o->neginf = v->ninf;
    o->min = v->fin ? v->min : NAN;
    o->max = v->fin ? v->max : NAN;
    o->mean = v->fin ? v->sum / (double)v->fin : NAN;
}

/* numpy's reductions: NaN anywhere makes them NaN (argmin/argmax at the
 * first NaN); an empty tensor gives 0 (Polygraphy's zero_on_empty). */
static void finish_dist(const dacc_t *a, int64_t n, cmp_dist_t *d)
{
    memset(d, 0, sizeof *d);
    d->nan = a->nan;
    d->inf = a->inf;
    d->fmin = a->fmin;
    d->fmax = a->fmax;
    if (n == 0) {
        d->argmin = d->argmax = -1;
        return;
    }
    if (a->nan) {
        d->min = d->max = d->mean = d->std = NAN;
        d->median = d->p90 = d->p95 = d->p99 = d->q = NAN;
        d->argmin = d->argmax = a->first_nan;
        return;
    }
    d->min = a->min;
    d->max = a->max;
    d->argmin = a->argmin;
    d->argmax = a->argmax;
    d->mean = a->sum / (double)n;
    d->std = NAN;             /* pass 2 */
}

static int compute_type(const tensor_t *a, const tensor_t *b)
{
    int fa = a->dtype == DT_FLOAT || a->dtype == DT_FLOAT16 || a->dtype == DT_BFLOAT16;
    int fb = b->dtype == DT_FLOAT || b->dtype == DT_FLOAT16 || b->dtype == DT_BFLOAT16;
    return fa && fb ? DT_FLOAT : DT_DOUBLE;
}

/* Float32 pass 1 by blocks: the vectorised path where the block is finite,
 * then the block's radix digits (or keys) from its differences. */
static void pass1_blocks(const float *A, const float *B, int64_t n, const pass_cfg_t *c, acc_t *s, cmp_work_t *w,
                         uint64_t *ka, uint64_t *kr)
{
    float *adb = w->blk[0], *rdb = w->blk[1];
    uint32_t *h0a = w->h0[0], *h0r = w->h0[1];
    for (int64_t begin = 0; begin < n; begin += FAST_BLOCK) {
        int len = n - begin < FAST_BLOCK ? (int)(n - begin) : FAST_BLOCK;
        if (len % 4 || !fast32_pass1(A, B, begin, len, c, s, adb, rdb)) {
            pass1_f32(A, B, begin, begin + len, c, s, h0a, h0r, ka, kr);
            continue;
        }
        for (int i = 0; i < len; i++) {
            uint32_t x, y;
            memcpy(&x, &adb[i], 4);
            memcpy(&y, &rdb[i], 4);
            if (ka) {
                ka[begin + i] = x;
                kr[begin + i] = y;
            } else {
                h0a[x >> 16]++;
                h0r[y >> 16]++;
            }
        }
    }
}

static void pass2_blocks(const float *A, const float *B, int64_t n, const pass_cfg_t *c, pass2_t *p, cmp_work_t *w)
{
    float thr[CMP_HIST_BINS + 1];
    fast32_thresholds(&p->bins, thr);
    for (int64_t begin = 0; begin < n; begin += FAST_BLOCK) {
        int len = n - begin < FAST_BLOCK ? (int)(n - begin) : FAST_BLOCK;
        if (len % 4 || !fast32_pass2(A, B, begin, len, c, p, thr, w->blk[0], w->blk[1]))
            pass2_f32(A, B, begin, begin + len, c, p);
    }
}

/* Runs the passes on data already in the compute type. */
static void run_passes(const void *A, const void *B, int64_t n, int is_f32, const pass_cfg_t *c,
                       const cmp_tol_t *tol, cmp_work_t *w, cmp_stats_t *st)
{
    acc_t s;
    memset(&s, 0, sizeof s);
    vacc_init(&s.va);
    vacc_init(&s.vb);
    dacc_init(&s.da);
    dacc_init(&s.dr);
    s.first_mism = -1;
    const int small = n <= SMALL_N;
    if (!small) {
        memset(w->h0[0], 0, SEL_DIGITS * sizeof(uint32_t));
        memset(w->h0[1], 0, SEL_DIGITS * sizeof(uint32_t));
    }
    uint64_t *ka = small ? w->keys[0] : NULL, *kr = small ? w->keys[1] : NULL;
    if (is_f32 && c->rule == CMP_RULE_POLYGRAPHY) pass1_blocks(A, B, n, c, &s, w, ka, kr);
    else if (is_f32) pass1_f32(A, B, 0, n, c, &s, w->h0[0], w->h0[1], ka, kr);
    else pass1_f64(A, B, 0, n, c, &s, w->h0[0], w->h0[1], ka, kr);

    finish_values(&s.va, &st->a);
    finish_values(&s.vb, &st->b);
    finish_dist(&s.da, n, &st->abs);
    finish_dist(&s.dr, n, &st->rel);
    st->beyond_fp16 = s.beyond16;
    st->finite_pairs = s.fpairs;
    st->mismatches = s.mism;
    st->first_mismatch = s.first_mism;
    st->atol_at_rtol = s.aar_nan ? NAN : s.aar;
    st->rtol_at_atol = s.raa_nan ? NAN : s.raa;
    if (s.fpairs == 0) {
        st->cosine = st->snr_db = NAN;
    } else {
        if (s.saa == 0 && s.sbb == 0) st->cosine = 1;
        else if (s.saa == 0 || s.sbb == 0) st->cosine = 0;
        else st->cosine = fmax(-1.0, fmin(1.0, s.sab / (sqrt(s.saa) * sqrt(s.sbb))));
        st->snr_db = s.snoise == 0 ? INFINITY : s.sbb == 0 ? -INFINITY : 10.0 * log10(s.sbb / s.snoise);
    }
    if (n == 0) return;

    /* the ranks of each distribution and the bins holding them */
    qspec_t qs[NQ];
    targets_t t[2];
    int want[2] = {s.da.nan == 0, s.dr.nan == 0};
    uint64_t slot_prefix[2][SEL_MAX_RANKS];
    int slot_of[2][SEL_MAX_RANKS], ns[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        plan_ranks(n, tol->quantile, qs, &t[k]);
        if (!want[k] || small) continue;
        for (int i = 0; i < t[k].m; i++) t[k].rem[i] = t[k].rank[i];
        resolve_digit(&t[k], w->h0[k], (int[SEL_MAX_RANKS]){0}, 1);
        ns[k] = make_slots(&t[k], slot_prefix[k], slot_of[k]);
        memset(w->slot[k], -1, SEL_DIGITS);
        for (int sl = 0; sl < ns[k]; sl++) w->slot[k][slot_prefix[k][sl]] = (int8_t)sl;
        memset(w->h1[k], 0, (size_t)ns[k] * SEL_DIGITS * sizeof(uint32_t));
    }

    pass2_t p;
    memset(&p, 0, sizeof p);
    p.mean_abs = st->abs.mean;
    p.mean_rel = st->rel.mean;
    p.want_std_abs = s.da.nan == 0 && s.da.inf == 0;
    p.want_std_rel = s.dr.nan == 0 && s.dr.inf == 0;
    double hlo = s.da.fmin <= s.da.fmax ? s.da.fmin : 0, hhi = s.da.fmin <= s.da.fmax ? s.da.fmax : 0;
    hist_setup(&p.bins, hlo, hhi);
    if (!small) {
        p.slot_a = want[0] ? w->slot[0] : NULL;
        p.slot_r = want[1] ? w->slot[1] : NULL;
        p.h1a = w->h1[0];
        p.h1r = w->h1[1];
        p.nbins_a = ns[0];
        p.nbins_r = ns[1];
        for (int sl = 0; sl < ns[0]; sl++) p.bins_a[sl] = (int)slot_prefix[0][sl];
        for (int sl = 0; sl < ns[1]; sl++) p.bins_r[sl] = (int)slot_prefix[1][sl];
    }
    if (is_f32) pass2_blocks(A, B, n, c, &p, w);
    else pass2_f64(A, B, 0, n, c, &p);
    if (p.want_std_abs) st->abs.std = sqrt(p.sq_abs / (double)n);
    if (p.want_std_rel) st->rel.std = sqrt(p.sq_rel / (double)n);
    st->hist_lo = p.bins.lo;
    st->hist_hi = p.bins.hi;
    memcpy(st->hist, p.hist, sizeof p.hist);
    st->hist_nonfinite = p.hist_nonfinite;

    cmp_dist_t *dists[2] = {&st->abs, &st->rel};
    for (int k = 0; k < 2; k++) {
        if (!want[k]) continue;
        uint64_t vals[SEL_MAX_RANKS];
        if (small) {
            select_ranks(w->keys[k], n, t[k].rank, t[k].m, vals);
        } else {
            resolve_digit(&t[k], w->h1[k], slot_of[k], ns[k]);
            /* float64 keys have two more digits: one pass each */
            for (int level = 2; !is_f32 && level < 4; level++) {
                deep_slots_t ds;
                memset(&ds, 0, sizeof ds);
                int so[SEL_MAX_RANKS];
                ds.n = make_slots(&t[k], ds.prefix, so);
                ds.hist = w->h1[k];
                memset(ds.hist, 0, (size_t)ds.n * SEL_DIGITS * sizeof(uint32_t));
                pass_deep_f64(A, B, n, c, level, k == 0 ? &ds : NULL, k == 1 ? &ds : NULL);
                resolve_digit(&t[k], ds.hist, so, ds.n);
            }
            for (int i = 0; i < t[k].m; i++) vals[i] = t[k].prefix[i];
        }
        set_quantiles(dists[k], qs, &t[k], vals, is_f32);
    }
}

int cmp_pair(const tensor_t *a, const tensor_t *b, const cmp_tol_t *tol, cmp_work_t *w,
             cmp_stats_t *st, perr_t *e)
{
    memset(st, 0, sizeof *st);
    if (!dtype_size(a->dtype) || !dtype_size(b->dtype) || a->dtype == DT_STRING || b->dtype == DT_STRING)
        return BAD(e, "cannot compare %s with %s values", dtype_name(a->dtype), dtype_name(b->dtype));
    int64_t n = tensor_numel(b);
    if (n > (int64_t)UINT32_MAX) return BAD(e, "tensor of %lld elements is beyond compare's limit", (long long)n);
    dtype_t ct = compute_type(a, b);
    st->n = n;
    st->compute = ct;
    pass_cfg_t c = {tol->atol, tol->rtol, tol->rule, tol->nan_equal, tol->inf_equal,
                    dtype_is_float(b->dtype)};
    /* cast up where a side is not already in the compute type */
    tensor_t ca = {0}, cb = {0};
    const tensor_t *pa = a, *pb = b;
    if (a->dtype != ct) {
        if (tensor_cast(a, ct, &ca, e)) return -1;
        pa = &ca;
    }
    if (b->dtype != ct) {
        if (tensor_cast(b, ct, &cb, e)) { tensor_free_data(&ca); return -1; }
        pb = &cb;
    }
    run_passes(pa->data, pb->data, n, ct == DT_FLOAT, &c, tol, w, st);
    /* the values at the largest differences, in the reference's terms */
    if (st->abs.argmax >= 0) {
        st->a_at_absmax = tensor_get_f64(a, st->abs.argmax);
        st->b_at_absmax = tensor_get_f64(b, st->abs.argmax);
    }
    if (st->rel.argmax >= 0) {
        st->a_at_relmax = tensor_get_f64(a, st->rel.argmax);
        st->b_at_relmax = tensor_get_f64(b, st->rel.argmax);
    }
    tensor_free_data(&ca);
    tensor_free_data(&cb);
    return 0;
}

/* ---- the check ---------------------------------------------------------- */

double cmp_stat_value(const cmp_dist_t *d, const cmp_tol_t *tol)
{
    switch (tol->stat) {
    case CMP_STAT_MEAN: return d->mean;
    case CMP_STAT_MEDIAN: return d->median;
    case CMP_STAT_QUANTILE: return d->q;
    case CMP_STAT_MAX:
    case CMP_STAT_ELEMWISE:
    default: return d->max;
    }
}

static int stat_failed(double v, double tol)
{
    return isnan(v) || v > tol;
}

int cmp_passed(const cmp_stats_t *st, const cmp_tol_t *tol)
{
    /* allclose is an element rule: callers refuse it with a statistic */
    if (tol->stat == CMP_STAT_ELEMWISE || tol->rule == CMP_RULE_ALLCLOSE) return st->mismatches == 0;
    return !(stat_failed(cmp_stat_value(&st->abs, tol), tol->atol) &&
             stat_failed(cmp_stat_value(&st->rel, tol), tol->rtol));
}

static const char *const stat_names[] = {"elemwise", "max", "mean", "median", "quantile"};
static const char *const rule_names[] = {"polygraphy", "allclose"};

const char *cmp_stat_name(cmp_stat_t s) { return stat_names[s]; }
const char *cmp_rule_name(cmp_rule_t r) { return rule_names[r]; }

int cmp_stat_parse(const char *s, cmp_stat_t *out)
{
    for (int i = 0; i < 5; i++)
        if (!strcmp(s, stat_names[i])) { *out = (cmp_stat_t)i; return 0; }
    return -1;
}

int cmp_rule_parse(const char *s, cmp_rule_t *out)
{
    for (int i = 0; i < 2; i++)
        if (!strcmp(s, rule_names[i])) { *out = (cmp_rule_t)i; return 0; }
    return -1;
}
