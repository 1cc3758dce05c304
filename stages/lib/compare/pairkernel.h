/* pairkernel.h — the per-element loops of metrics.c, written once and
 * included twice: with KT = float (keys uint32_t) and KT = double (keys
 * uint64_t). The includer defines KT, KKEY, KBITS, KFABS and KSUF.
 *
 * Every pass recomputes the differences with the same inline function, so
 * the values a later pass selects are bit-identical to the first pass's. */

#define KCAT2(a, b) a##b
#define KCAT(a, b) KCAT2(a, b)
#define KFN(name) KCAT(name, KSUF)

/* The differences Polygraphy takes for one element. *special is set when
 * the pair is equal by the NaN/inf options. */
static inline void KFN(diff_)(KT a, KT b, const pass_cfg_t *c, KT *ad, KT *rd, int *special)
{
    KT d = KFABS(a - b);
    KT bb = (c->ref_float && b == 0) ? (KT)CMP_EPSILON : b;
    KT r = d / KFABS(bb);
    *special = 0;
    if (!(isfinite(a) && isfinite(b))) {
        if (c->inf_equal && isinf(a) && a == b) {
            d = 0; r = 0; *special = 1;
        } else if (c->nan_equal && isnan(a) && isnan(b)) {
            d = 0; r = 0; *special = 1;
        }
    }
    *ad = d;
    *rd = r;
}

static inline KKEY KFN(key_)(KT x)
{
    KKEY k;
    memcpy(&k, &x, sizeof k);
    return k;
}

static inline void KFN(acc_dist_)(dacc_t *D, KT x, int64_t i)
{
    if (x != x) {
        if (!D->nan++) D->first_nan = i;
        return;
    }
    D->sum += x;
    if (x > D->max || D->argmax < 0) { D->max = x; D->argmax = i; }
    if (x < D->min || D->argmin < 0) { D->min = x; D->argmin = i; }
    if (isinf(x)) {
        D->inf++;
    } else {
        if (x > D->fmax) D->fmax = x;
        if (x < D->fmin) D->fmin = x;
    }
}

static inline void KFN(acc_side_)(vacc_t *V, KT x)
{
    if (isfinite(x)) {
        V->sum += x;
        V->fin++;
        if (x < V->min) V->min = x;
        if (x > V->max) V->max = x;
    } else if (x != x) {
        V->nan++;
    } else if (x > 0) {
        V->pinf++;
    } else {
        V->ninf++;
    }
}

/* Pass 1: every sum, count, extreme and the element rule; the first radix
 * digit (large tensors) or the keys themselves (small ones). */
static void KFN(pass1_)(const KT *A, const KT *B, int64_t begin, int64_t end, const pass_cfg_t *c, acc_t *s,
                        uint32_t *h0a, uint32_t *h0r, uint64_t *ka, uint64_t *kr)
{
    const KT atol = (KT)c->atol, rtol = (KT)c->rtol;
    const int poly = c->rule == CMP_RULE_POLYGRAPHY;
    for (int64_t i = begin; i < end; i++) {
        KT a = A[i], b = B[i], ad, rd;
        int special;
        KFN(diff_)(a, b, c, &ad, &rd, &special);
        int fa = isfinite(a), fb = isfinite(b);
        if (fa && fb) {
            double da = a, db = b, dd = da - db;
            s->sab += da * db;
            s->saa += da * da;
            s->sbb += db * db;
            s->snoise += dd * dd;
            s->fpairs++;
        }
        KFN(acc_side_)(&s->va, a);
        KFN(acc_side_)(&s->vb, b);
        if (fb && KFABS(b) > (KT)CMP_FP16_MAX) s->beyond16++;
        KFN(acc_dist_)(&s->da, ad, i);
        KFN(acc_dist_)(&s->dr, rd, i);

        int mm;
        if (poly) {
            mm = !(ad <= atol) && !(rd <= rtol);
            if (!(rd <= rtol)) {
                if (ad != ad) s->aar_nan = 1;
                else if (ad > s->aar) s->aar = ad;
            }
            if (!(ad <= atol)) {
                if (rd != rd) s->raa_nan = 1;
                else if (rd > s->raa) s->raa = rd;
            }
        } else if (fa && fb) {
            mm = !(ad <= atol + rtol * KFABS(b));
            double need_a = (double)ad - (double)rtol * fabs((double)b);
            if (need_a > s->aar) s->aar = need_a;
            if (ad > atol) {
                double need_r = ((double)ad - (double)atol) / fabs((double)b);
                if (need_r > s->raa) s->raa = need_r;
            }
        } else {
            mm = !special;
            if (mm) s->aar_nan = s->raa_nan = 1;
        }
        if (mm && !s->mism++) s->first_mism = i;

        if (ka) {
            ka[i] = KFN(key_)(ad);
            kr[i] = KFN(key_)(rd);
        } else {
            if (ad == ad) h0a[KFN(key_)(ad) >> (KBITS - 16)]++;
            if (rd == rd) h0r[KFN(key_)(rd) >> (KBITS - 16)]++;
        }
    }
}

/* Pass 2: the spread around the mean, the histogram of finite |a-b|, and
 * the second radix digit of the targets' bins (slot maps from pass 1). */
static void KFN(pass2_)(const KT *A, const KT *B, int64_t begin, int64_t end, const pass_cfg_t *c, pass2_t *p)
{
    const double ma = p->mean_abs, mr = p->mean_rel;
    for (int64_t i = begin; i < end; i++) {
        KT ad, rd;
        int special;
        KFN(diff_)(A[i], B[i], c, &ad, &rd, &special);
        if (p->want_std_abs) { double d = (double)ad - ma; p->sq_abs += d * d; }
        if (p->want_std_rel) { double d = (double)rd - mr; p->sq_rel += d * d; }
        if (isfinite(ad)) p->hist[hist_bin(&p->bins, (double)ad)]++;
        else p->hist_nonfinite++;
        if (p->slot_a && ad == ad) {
            KKEY k = KFN(key_)(ad);
            int sl = p->slot_a[k >> (KBITS - 16)];
            if (sl >= 0) p->h1a[(size_t)sl * SEL_DIGITS + ((k >> (KBITS - 32)) & 0xffff)]++;
        }
        if (p->slot_r && rd == rd) {
            KKEY k = KFN(key_)(rd);
            int sl = p->slot_r[k >> (KBITS - 16)];
            if (sl >= 0) p->h1r[(size_t)sl * SEL_DIGITS + ((k >> (KBITS - 32)) & 0xffff)]++;
        }
    }
}

#if KBITS == 64
/* Deeper radix digits (doubles only): elements whose leading `level` digits
 * match a slot's prefix count their next digit. */
static void KFN(pass_deep_)(const KT *A, const KT *B, int64_t n, const pass_cfg_t *c, int level,
                            const deep_slots_t *sa, const deep_slots_t *sr)
{
    const int shp = KBITS - 16 * level, shd = KBITS - 16 * (level + 1);
    for (int64_t i = 0; i < n; i++) {
        KT ad, rd;
        int special;
        KFN(diff_)(A[i], B[i], c, &ad, &rd, &special);
        const deep_slots_t *ss[2] = {sa, sr};
        KT vv[2] = {ad, rd};
        for (int w = 0; w < 2; w++) {
            if (!ss[w] || vv[w] != vv[w]) continue;
            KKEY k = KFN(key_)(vv[w]);
            uint64_t pre = (uint64_t)k >> shp;
            for (int sl = 0; sl < ss[w]->n; sl++)
                if (ss[w]->prefix[sl] == pre) {
                    ss[w]->hist[(size_t)sl * SEL_DIGITS + (((uint64_t)k >> shd) & 0xffff)]++;
                    break;
                }
        }
    }
}
#endif

#undef KFN
#undef KCAT
#undef KCAT2
