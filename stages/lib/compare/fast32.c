/* fast32.c — the float32 pair loops of metrics.c, four elements at a time
 * (GCC vector extensions: SSE2 on x86-64, NEON on arm64, no intrinsics),
 * for blocks in which every value and difference is finite — the common
 * case, and the one compare's throughput is measured on. A block holding
 * NaN or Inf goes to the scalar kernel instead (pairkernel.h), which gives
 * the same statistics: the rule, extremes, counts and selection keys are
 * bit-identical; double sums are taken lane by lane, so only the rounding
 * of those sums differs, and it is the same on every run. */
#include <math.h>
#include <string.h>
#include "compare/metrics_impl.h"

typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));
typedef double v2d __attribute__((vector_size(16)));
typedef double v4d __attribute__((vector_size(32)));

static inline v4f ld4(const float *p) { v4f v; memcpy(&v, p, sizeof v); return v; }
static inline void st4(float *p, v4f v) { memcpy(p, &v, sizeof v); }
/* Four floats as two pairs of doubles (cvtps2pd on x86-64). */
static inline void ld4d(const float *p, v2d *lo, v2d *hi)
{
    v4d d = __builtin_convertvector(ld4(p), v4d);
    *lo = (v2d){d[0], d[1]};
    *hi = (v2d){d[2], d[3]};
}
static inline v4f splat(float x) { return (v4f){x, x, x, x}; }
static inline v4f vabs(v4f x) { return (v4f)((v4i)x & (v4i){0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff}); }
static inline v4f vsel(v4i m, v4f a, v4f b) { return (v4f)(((v4i)a & m) | ((v4i)b & ~m)); }
static inline v4f vmin(v4f a, v4f b) { return vsel(b < a, b, a); }
static inline v4f vmax(v4f a, v4f b) { return vsel(b > a, b, a); }
static inline float hmin(v4f v) { float m = v[0]; for (int k = 1; k < 4; k++) m = v[k] < m ? v[k] : m; return m; }
static inline float hmax(v4f v) { float m = v[0]; for (int k = 1; k < 4; k++) m = v[k] > m ? v[k] : m; return m; }
static inline int64_t hsum(v4i v) { return (int64_t)v[0] + v[1] + v[2] + v[3]; }
static inline double hsumd(v2d v) { return v[0] + v[1]; }

/* |a-b| and the relative difference of a block into adb/rdb; 0 when some
 * value or difference is not finite. */
static int diffs(const float *a, const float *b, int len, float *adb, float *rdb)
{
    const v4f eps = splat((float)CMP_EPSILON), inf = splat(INFINITY), zero = splat(0);
    v4i bad = {0, 0, 0, 0};
    for (int i = 0; i < len; i += 4) {
        v4f va = ld4(a + i), vb = ld4(b + i);
        v4f ad = vabs(va - vb);
        v4f rd = ad / vabs(vsel(vb == zero, eps, vb));   /* float compute: the reference is floating */
        bad |= ~((vabs(va) < inf) & (vabs(vb) < inf) & (ad < inf) & (rd < inf));
        st4(adb + i, ad);
        st4(rdb + i, rd);
    }
    return !(bad[0] | bad[1] | bad[2] | bad[3]);
}

/* Folds a block's extreme into a distribution, keeping numpy's first-
 * occurrence index (earlier blocks win ties). */
static void fold_max(dacc_t *d, float m, const float *x, int len, int64_t begin)
{
    if (m > d->max || d->argmax < 0) {
        int i = 0;
        while (x[i] != m) i++;
        d->max = m;
        d->argmax = begin + i;
    }
}

static void fold_min(dacc_t *d, float m, const float *x, int len, int64_t begin)
{
    if (m < d->min || d->argmin < 0) {
        int i = 0;
        while (x[i] != m) i++;
        d->min = m;
        d->argmin = begin + i;
    }
}

static void fold_dist(dacc_t *d, v4f vmn, v4f vmx, double sum, const float *x, int len, int64_t begin)
{
    float mn = hmin(vmn), mx = hmax(vmx);
    fold_max(d, mx, x, len, begin);
    fold_min(d, mn, x, len, begin);
    d->sum += sum;
    if (mx > d->fmax) d->fmax = mx;
    if (mn < d->fmin) d->fmin = mn;
}

static void fold_side(vacc_t *v, v4f vmn, v4f vmx, double sum, int len)
{
    float mn = hmin(vmn), mx = hmax(vmx);
    v->sum += sum;
    v->fin += len;
    if (mn < v->min) v->min = mn;
    if (mx > v->max) v->max = mx;
}

int fast32_pass1(const float *A, const float *B, int64_t begin, int len, const pass_cfg_t *c, acc_t *s,
                 float *adb, float *rdb)
{
    const float *a = A + begin, *b = B + begin;
    if (!diffs(a, b, len, adb, rdb)) return 0;

    /* values: extremes and the reference beyond the FP16 range */
    const v4f f16max = splat((float)CMP_FP16_MAX);
    v4f amn = splat(INFINITY), amx = splat(-INFINITY), bmn = amn, bmx = amx;
    v4i b16 = {0, 0, 0, 0};
    for (int i = 0; i < len; i += 4) {
        v4f va = ld4(a + i), vb = ld4(b + i);
        amn = vmin(amn, va);
        amx = vmax(amx, va);
        bmn = vmin(bmn, vb);
        bmx = vmax(bmx, vb);
        b16 -= vabs(vb) > f16max;
    }

    /* differences: extremes, the element rule, the joint tolerances */
    const v4f atol = splat((float)c->atol), rtol = splat((float)c->rtol), zero = splat(0);
    v4f dmn = splat(INFINITY), dmx = splat(-INFINITY), rmn = dmn, rmx = dmx, aar = zero, raa = zero;
    v4i mism = {0, 0, 0, 0};
    for (int i = 0; i < len; i += 4) {
        v4f ad = ld4(adb + i), rd = ld4(rdb + i);
        dmn = vmin(dmn, ad);
        dmx = vmax(dmx, ad);
        rmn = vmin(rmn, rd);
        rmx = vmax(rmx, rd);
        v4i fa = ad > atol, fr = rd > rtol;
        mism -= fa & fr;
        aar = vmax(aar, vsel(fr, ad, zero));
        raa = vmax(raa, vsel(fa, rd, zero));
    }

    /* double sums: two lanes, each fed twice per step */
    v2d sa = {0, 0}, sb = sa, sab = sa, saa = sa, sbb = sa, sn = sa, sd = sa, sr = sa;
    for (int i = 0; i < len; i += 4) {
        v2d a0, a1, b0, b1, x0, x1;
        ld4d(a + i, &a0, &a1);
        ld4d(b + i, &b0, &b1);
        v2d n0 = a0 - b0, n1 = a1 - b1;
        sa += a0 + a1;
        sb += b0 + b1;
        sab += a0 * b0 + a1 * b1;
        saa += a0 * a0 + a1 * a1;
        sbb += b0 * b0 + b1 * b1;
        sn += n0 * n0 + n1 * n1;
        ld4d(adb + i, &x0, &x1);
        sd += x0 + x1;
        ld4d(rdb + i, &x0, &x1);
        sr += x0 + x1;
    }

    fold_side(&s->va, amn, amx, hsumd(sa), len);
    fold_side(&s->vb, bmn, bmx, hsumd(sb), len);
    s->beyond16 += hsum(b16);
    fold_dist(&s->da, dmn, dmx, hsumd(sd), adb, len, begin);
    fold_dist(&s->dr, rmn, rmx, hsumd(sr), rdb, len, begin);
    s->sab += hsumd(sab);
    s->saa += hsumd(saa);
    s->sbb += hsumd(sbb);
    s->snoise += hsumd(sn);
    s->fpairs += len;
    int64_t mm = hsum(mism);
    if (mm && s->first_mism < 0) {
        int i = 0;
        while (!(adb[i] > (float)c->atol && rdb[i] > (float)c->rtol)) i++;
        s->first_mism = begin + i;
    }
    s->mism += mm;
    float x = hmax(aar), y = hmax(raa);
    if (x > s->aar) s->aar = x;
    if (y > s->raa) s->raa = y;
    return 1;
}

void fast32_thresholds(const hbins_t *h, float *thr)
{
    for (int k = 0; k <= CMP_HIST_BINS; k++) {
        double e = h->edges[k];
        float f = (float)e;
        if ((double)f < e) f = nextafterf(f, INFINITY);
        else
            while ((double)nextafterf(f, -INFINITY) >= e) f = nextafterf(f, -INFINITY);
        thr[k] = f;
    }
}

int fast32_pass2(const float *A, const float *B, int64_t begin, int len, const pass_cfg_t *c, pass2_t *p,
                 const float *thr, float *adb, float *rdb)
{
    if (!diffs(A + begin, B + begin, len, adb, rdb)) return 0;
    if (p->want_std_abs || p->want_std_rel) {
        const v2d ma = {p->mean_abs, p->mean_abs}, mr = {p->mean_rel, p->mean_rel};
        v2d qa = {0, 0}, qr = qa;
        for (int i = 0; i < len; i += 4) {
            v2d x0, x1, y0, y1;
            ld4d(adb + i, &x0, &x1);
            ld4d(rdb + i, &y0, &y1);
            x0 -= ma, x1 -= ma, y0 -= mr, y1 -= mr;
            qa += x0 * x0 + x1 * x1;
            qr += y0 * y0 + y1 * y1;
        }
        if (p->want_std_abs) p->sq_abs += hsumd(qa);
        if (p->want_std_rel) p->sq_rel += hsumd(qr);
    }
    /* bin k holds edges[k] <= x < edges[k+1]: count the elements at or above
     * each inner edge, the bins are the differences */
    int64_t prev = len;
    for (int k = 1; k < CMP_HIST_BINS; k++) {
        const v4f t = splat(thr[k]);
        v4i ge = {0, 0, 0, 0};
        for (int i = 0; i < len; i += 4) ge -= ld4(adb + i) >= t;
        int64_t g = hsum(ge);
        p->hist[k - 1] += prev - g;
        prev = g;
    }
    p->hist[CMP_HIST_BINS - 1] += prev;
    /* the next radix digit, for elements in the bins holding wanted ranks:
     * four at a time against those few bins, most skipped at once */
    for (int w = 0; w < 2; w++) {
        const int8_t *slot = w ? p->slot_r : p->slot_a;
        const int *bins = w ? p->bins_r : p->bins_a;
        int nb = w ? p->nbins_r : p->nbins_a;
        uint32_t *h1 = w ? p->h1r : p->h1a;
        const float *x = w ? rdb : adb;
        if (!slot) continue;
        for (int i = 0; i < len; i += 4) {
            v4i hi = (v4i)ld4(x + i) >> 16, hit = {0, 0, 0, 0};
            for (int j = 0; j < nb; j++) hit |= hi == (v4i){bins[j], bins[j], bins[j], bins[j]};
            if (!(hit[0] | hit[1] | hit[2] | hit[3])) continue;
            for (int k = i; k < i + 4; k++) {
                uint32_t key;
                memcpy(&key, &x[k], 4);
                int sl = slot[key >> 16];
                if (sl >= 0) h1[(size_t)sl * SEL_DIGITS + (key & 0xffff)]++;
            }
        }
    }
    return 1;
}
