/* cases_nn.c — the NN family's products: Conv (im2col, 1x1 and depthwise
 * paths with groups, strides, dilations, pads and auto_pad; 1-, 2- and 3-D)
 * against a direct loop over every output and tap, ConvTranspose against a
 * scatter loop, MatMul against numpy's semantics written out (1-D operands,
 * batch broadcasting, integer wrap-around), Gemm and Einsum against plain
 * loops; each float result within sum_bound of its terms (tests/bounds.h),
 * integers exact; and bad shapes or equations refused. */
#include <string.h>
#include "harness.h"

static double unit_of(dtype_t dt) { return dt == DT_DOUBLE ? U_DOUBLE : U_FLOAT; }

/* The ints attribute nm of the instance, or n copies of dflt. */
static void ints_or(const oc_inst_t *t, const char *nm, int n, int64_t dflt, int64_t *v)
{
    const oc_attr_t *a = oc_attr(t, nm);
    for (int i = 0; i < n; i++) v[i] = a ? a->i[i] : dflt;
}

/* ---- Conv ---- */

/* Output size and begin padding of spatial axis a, from the spec's formulas. */
static void conv_axis(const oc_inst_t *t, int a, int nsp, int64_t in, int64_t k, int64_t *out, int64_t *pb)
{
    int64_t s[3], d[3], pads[6];
    ints_or(t, "strides", nsp, 1, s);
    ints_or(t, "dilations", nsp, 1, d);
    ints_or(t, "pads", 2 * nsp, 0, pads);
    const oc_attr_t *ap = oc_attr(t, "auto_pad");
    int64_t dk = (k - 1) * d[a] + 1;
    if (ap && !strncmp(ap->s, "SAME", 4)) {
        *out = (in + s[a] - 1) / s[a];
        int64_t total = (*out - 1) * s[a] + dk - in;
        if (total < 0) total = 0;
        *pb = !strcmp(ap->s, "SAME_UPPER") ? total / 2 : total - total / 2;
    } else if (ap) {   /* VALID */
        *out = (in - dk) / s[a] + 1;
        *pb = 0;
    } else {
        *out = (in + pads[a] + pads[nsp + a] - dk) / s[a] + 1;
        *pb = pads[a];
    }
}

static int ref_conv(const oc_inst_t *t, oc_want_t *w)
{
    const tensor_t *x = t->in[0], *wt = t->in[1], *b = t->n_in > 2 ? t->in[2] : NULL;
    int nsp = x->ndim - 2;
    int64_t group = oc_int(t, "group", 1), C = x->dims[1], M = wt->dims[0], od[5] = {x->dims[0], M}, pb[3];
    /* spatial axes as 3 (z, y, x), missing leading ones of size 1 */
    int64_t osp[3] = {1, 1, 1}, isp[3] = {1, 1, 1}, ks[3] = {1, 1, 1}, st[3] = {1, 1, 1}, dl[3] = {1, 1, 1}, p0[3] = {0};
    int64_t s[3], d[3];
    ints_or(t, "strides", nsp, 1, s);
    ints_or(t, "dilations", nsp, 1, d);
    for (int a = 0; a < nsp; a++) {
        int j = 3 - nsp + a;
        conv_axis(t, a, nsp, x->dims[2 + a], wt->dims[2 + a], &od[2 + a], &pb[a]);
        osp[j] = od[2 + a], isp[j] = x->dims[2 + a], ks[j] = wt->dims[2 + a], st[j] = s[a], dl[j] = d[a], p0[j] = pb[a];
    }
    oc_want_shape(w, x->dtype, x->ndim, od, 0);
    int64_t cg = C / group, mg = M / group, o = 0;
    for (int64_t n = 0; n < od[0]; n++)
        for (int64_t m = 0; m < M; m++)
            for (int64_t z = 0; z < osp[0]; z++)
                for (int64_t yy = 0; yy < osp[1]; yy++)
                    for (int64_t xx = 0; xx < osp[2]; xx++, o++) {
                        double acc = b ? tensor_get_f64(b, m) : 0, mag = fabs(acc);
                        for (int64_t ci = 0; ci < cg; ci++)
                            for (int64_t kz = 0; kz < ks[0]; kz++)
                                for (int64_t ky = 0; ky < ks[1]; ky++)
                                    for (int64_t kx = 0; kx < ks[2]; kx++) {
                                        int64_t iz = z * st[0] - p0[0] + kz * dl[0];
                                        int64_t iy = yy * st[1] - p0[1] + ky * dl[1];
                                        int64_t ix = xx * st[2] - p0[2] + kx * dl[2];
                                        if (iz < 0 || iz >= isp[0] || iy < 0 || iy >= isp[1] || ix < 0 || ix >= isp[2])
                                            continue;
                                        int64_t c = (m / mg) * cg + ci;
                                        double p = tensor_get_f64(x, (((n * C + c) * isp[0] + iz) * isp[1] + iy) * isp[2] + ix) *
                                                   tensor_get_f64(wt, (((m * cg + ci) * ks[0] + kz) * ks[1] + ky) * ks[2] + kx);
                                        acc += p;
                                        mag += fabs(p);
                                    }
                        w->val[o] = acc;
                        w->bound[o] = sum_bound((double)(cg * ks[0] * ks[1] * ks[2] + 1), mag, unit_of(x->dtype));
                    }
    return 0;
}

/* ---- ConvTranspose (2-D) ---- */

static int ref_convtranspose(const oc_inst_t *t, oc_want_t *w)
{
    const tensor_t *x = t->in[0], *wt = t->in[1], *b = t->n_in > 2 ? t->in[2] : NULL;
    int64_t g = oc_int(t, "group", 1), s[2], d[2], pads[4], opad[2];
    ints_or(t, "strides", 2, 1, s);
    ints_or(t, "dilations", 2, 1, d);
    ints_or(t, "pads", 4, 0, pads);
    ints_or(t, "output_padding", 2, 0, opad);
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3], mg = wt->dims[1], M = mg * g;
    int64_t KH = wt->dims[2], KW = wt->dims[3];
    int64_t oh = s[0] * (H - 1) + opad[0] + (KH - 1) * d[0] + 1 - pads[0] - pads[2];
    int64_t ow = s[1] * (W - 1) + opad[1] + (KW - 1) * d[1] + 1 - pads[1] - pads[3];
    int64_t od[4] = {N, M, oh, ow}, no = N * M * oh * ow;
    oc_want_shape(w, x->dtype, 4, od, 0);
    for (int64_t i = 0; i < no; i++) {
        w->val[i] = b ? tensor_get_f64(b, i / (oh * ow) % M) : 0;
        w->bound[i] = fabs(w->val[i]);   /* the magnitude of the terms, first */
    }
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t iy = 0; iy < H; iy++)
                for (int64_t ix = 0; ix < W; ix++)
                    for (int64_t mm = 0; mm < mg; mm++)
                        for (int64_t ky = 0; ky < KH; ky++)
                            for (int64_t kx = 0; kx < KW; kx++) {
                                int64_t y0 = iy * s[0] - pads[0] + ky * d[0], x0 = ix * s[1] - pads[1] + kx * d[1];
                                if (y0 < 0 || y0 >= oh || x0 < 0 || x0 >= ow) continue;
                                int64_t m = (c / (C / g)) * mg + mm, q = ((n * M + m) * oh + y0) * ow + x0;
                                double p = tensor_get_f64(x, ((n * C + c) * H + iy) * W + ix) *
                                           tensor_get_f64(wt, ((c * mg + mm) * KH + ky) * KW + kx);
                                w->val[q] += p;
                                w->bound[q] += fabs(p);
                            }
    /* at most every input channel times every tap reaches one output, plus the bias */
    for (int64_t i = 0; i < no; i++) w->bound[i] = sum_bound((double)(C * KH * KW + 1), w->bound[i], unit_of(x->dtype));
    return 0;
}

/* ---- MatMul: numpy semantics written out ---- */

/* v as the element type dt holds it: integer products wrap to the type */
static double as_type(dtype_t dt, double v)
{
    int64_t i = (int64_t)v;
    switch (dt) {
    case DT_INT32: return (double)(int32_t)(uint32_t)(uint64_t)i;
    case DT_UINT32: return (double)(uint32_t)(uint64_t)i;
    default: return v;
    }
}

static int ref_matmul(const oc_inst_t *t, oc_want_t *w)
{
    const tensor_t *a = t->in[0], *b = t->in[1];
    /* promote 1-D, broadcast batch, drop promoted dims */
    int64_t A[8], B[8];
    int na = a->ndim, nb = b->ndim, ra = na, rb = nb;
    memcpy(A, a->dims, na * sizeof *A);
    memcpy(B, b->dims, nb * sizeof *B);
    if (na == 1) { A[1] = A[0]; A[0] = 1; ra = 2; }
    if (nb == 1) { B[1] = 1; rb = 2; }
    int rbat = (ra > rb ? ra : rb) - 2;
    int64_t M = A[ra - 2], K = A[ra - 1], N = B[rb - 1], bat[8], nbat = 1, od[8];
    for (int i = 0; i < rbat; i++) {
        int ia = i - (rbat - (ra - 2)), ib = i - (rbat - (rb - 2));
        int64_t da = ia >= 0 ? A[ia] : 1, db = ib >= 0 ? B[ib] : 1;
        bat[i] = da > db ? da : db;
        nbat *= bat[i];
    }
    int nd = 0;
    for (int i = 0; i < rbat; i++) od[nd++] = bat[i];
    if (na > 1) od[nd++] = M;
    if (nb > 1) od[nd++] = N;
    oc_want_shape(w, a->dtype, nd, od, 0);
    for (int64_t q = 0; q < nbat; q++) {
        int64_t aoff = 0, boff = 0, rem = q, sa = M * K, sb = K * N;
        for (int i = rbat - 1; i >= 0; i--) {
            int64_t ci = rem % bat[i];
            rem /= bat[i];
            int ia = i - (rbat - (ra - 2)), ib = i - (rbat - (rb - 2));
            if (ia >= 0) { aoff += (A[ia] == 1 ? 0 : ci) * sa; sa *= A[ia]; }
            if (ib >= 0) { boff += (B[ib] == 1 ? 0 : ci) * sb; sb *= B[ib]; }
        }
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double acc = 0, mag = 0;
                for (int64_t k = 0; k < K; k++) {
                    double p = tensor_get_f64(a, aoff + i * K + k) * tensor_get_f64(b, boff + k * N + j);
                    acc += p;
                    mag += fabs(p);
                }
                int64_t o = (q * M + i) * N + j;
                /* integers (small here): exact, wrapped to the type */
                w->val[o] = dtype_is_float(a->dtype) ? acc : as_type(a->dtype, acc);
                w->bound[o] = dtype_is_float(a->dtype) ? sum_bound((double)K, mag, unit_of(a->dtype)) : 0;
            }
    }
    return 0;
}

/* ---- Gemm ---- */

static int ref_gemm(const oc_inst_t *t, oc_want_t *w)
{
    const tensor_t *a = t->in[0], *b = t->in[1], *c = t->n_in > 2 ? t->in[2] : NULL;
    int ta = (int)oc_int(t, "transA", 0), tb = (int)oc_int(t, "transB", 0);
    double alpha = oc_float(t, "alpha", 1), beta = oc_float(t, "beta", 1);
    int64_t M = a->dims[ta ? 1 : 0], K = a->dims[ta ? 0 : 1], N = b->dims[tb ? 0 : 1], od[2] = {M, N};
    oc_want_shape(w, a->dtype, 2, od, 0);
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double acc = 0, mag = 0;
            for (int64_t k = 0; k < K; k++) {
                double p = tensor_get_f64(a, ta ? k * M + i : i * K + k) * tensor_get_f64(b, tb ? j * K + k : k * N + j);
                acc += p;
                mag += fabs(p);
            }
            /* C broadcast to MxN: a row (N), a column (Mx1) or a scalar */
            double cv = 0;
            if (c) cv = tensor_get_f64(c, c->ndim == 2 ? (c->dims[0] > 1 ? i * c->dims[1] : 0) + (c->dims[1] > 1 ? j : 0)
                                          : c->ndim == 1 && c->dims[0] > 1 ? j : 0);
            w->val[i * N + j] = alpha * acc + beta * cv;
            /* the dot product, then alpha, beta and their sum: 3 more roundings */
            w->bound[i * N + j] = sum_bound((double)(K + 3), fabs(alpha) * mag + fabs(beta * cv), unit_of(a->dtype));
        }
    return 0;
}

/* ---- Einsum: every index of the case's literal equation walked ---- */

/* Term k of the equation's left side (letters and at most one "...") with
 * "..." spelt as capitals, one per axis the letters leave of input k. */
static void einsum_term(const oc_inst_t *t, const char *p, int k, char *term)
{
    int letters = 0, len = 0;
    for (const char *q = p; *q && *q != ',' && *q != '-'; q++) letters += *q != '.';
    for (; *p && *p != ',' && *p != '-'; p++) {
        if (*p != '.') term[len++] = *p;
        else if (p[1] == '.' && p[2] == '.') {
            for (int e = 0; e < t->in[k]->ndim - letters; e++) term[len++] = (char)('A' + e);
            p += 2;
        }
    }
    term[len] = 0;
}

/* The terms of the case's equation and its output (explicit, "..." as the
 * capitals of the first term, or implicit: the letters seen once, in order). */
static void einsum_terms(const oc_inst_t *t, char terms[4][16], int *n_terms, char *out)
{
    const char *eq = oc_attr(t, "equation")->s, *arrow = strstr(eq, "->");
    int k = 0, len = 0;
    for (const char *p = eq; k < 4; k++) {
        einsum_term(t, p, k, terms[k]);
        p += strcspn(p, ",-");
        if (*p != ',') break;
        p++;
    }
    *n_terms = k + 1;
    for (const char *p = arrow ? arrow + 2 : ""; *p; p++) {
        if (*p != '.') out[len++] = *p;
        else if (p[1] == '.' && p[2] == '.') {
            for (char c = 'A'; strchr(terms[0], c); c++) out[len++] = c;
            p += 2;
        }
    }
    for (char c = 'a'; !arrow && c <= 'z'; c++) {
        int seen = 0;
        for (int i = 0; i < *n_terms; i++)
            for (const char *q = terms[i]; *q; q++) seen += *q == c;
        if (seen == 1) out[len++] = c;
    }
    out[len] = 0;
}

static int ref_einsum(const oc_inst_t *t, oc_want_t *w)
{
    char terms[4][16], out[16], letters[32] = "";
    int n_terms, nl = 0;
    int64_t size[128] = {0}, od[8], v[128] = {0};
    einsum_terms(t, terms, &n_terms, out);
    for (int i = 0; i < n_terms; i++)
        for (int k = 0; terms[i][k]; k++) {
            size[(int)terms[i][k]] = t->in[i]->dims[k];
            if (!strchr(letters, terms[i][k])) letters[nl++] = terms[i][k], letters[nl] = 0;
        }
    int no = (int)strlen(out);
    for (int k = 0; k < no; k++) od[k] = size[(int)out[k]];
    oc_want_shape(w, t->in[0]->dtype, no, od, 0);
    int64_t total = 1;
    for (int k = 0; k < nl; k++) total *= size[(int)letters[k]];
    for (int64_t lin = 0; lin < total; lin++) {
        int64_t r = lin, o = 0;
        for (int k = nl - 1; k >= 0; k--) v[(int)letters[k]] = r % size[(int)letters[k]], r /= size[(int)letters[k]];
        double p = 1;
        for (int i = 0; i < n_terms; i++) {
            int64_t off = 0;
            for (int k = 0; terms[i][k]; k++) off = off * t->in[i]->dims[k] + v[(int)terms[i][k]];
            p *= tensor_get_f64(t->in[i], off);
        }
        /* a diagonal term: every letter repeated in a term must agree, which the walk gives */
        for (int k = 0; k < no; k++) o = o * od[k] + v[(int)out[k]];
        w->val[o] += p;
        w->bound[o] += fabs(p);
    }
    int64_t summed = total / oc_numel(no, od);
    for (int64_t i = 0; i < oc_numel(no, od); i++)
        w->bound[i] = dtype_is_float(t->in[0]->dtype) ? sum_bound((double)summed, w->bound[i], unit_of(t->in[0]->dtype)) : 0;
    return 0;
}

#define XU(T, ...) IN_U(T, -1, 1, __VA_ARGS__)
#define CONV(what_, T, n, x, wt, b, ...) {.op = "Conv", .opset = 11, .what = what_ " (" #T ")", .n_in = n, \
        .in = {XU(T, x), XU(T, wt), XU(T, b)}, .attr = {__VA_ARGS__}, .ref = ref_conv}
#define MM(what_, T, a, b) {.op = "MatMul", .opset = 13, .what = what_ " (" #T ")", .n_in = 2, \
        .in = {IN_I(T, -8, 8, a), IN_I(T, -8, 8, b)}, .ref = ref_matmul}
#define MMF(what_, T, a, b) {.op = "MatMul", .opset = 13, .what = what_ " (" #T ")", .n_in = 2, \
        .in = {IN_U(T, -8, 8, a), IN_U(T, -8, 8, b)}, .ref = ref_matmul}
#define P1111 AIS("pads", 1, 1, 1, 1)

const op_case_t cases_nn[] = {
    CONV("2-D 3x3 pad 1 (im2col)", DT_FLOAT, 3, DIMS(2, 3, 7, 6), DIMS(4, 3, 3, 3), DIMS(4), P1111),
    CONV("2-D 3x3 pad 1 (im2col)", DT_DOUBLE, 3, DIMS(2, 3, 7, 6), DIMS(4, 3, 3, 3), DIMS(4), P1111),
    CONV("2-D 1x1 (direct GEMM)", DT_FLOAT, 3, DIMS(2, 5, 4, 5), DIMS(3, 5, 1, 1), DIMS(3)),
    CONV("2-D 1x1 stride 2", DT_FLOAT, 2, DIMS(1, 4, 5, 5), DIMS(3, 4, 1, 1), DIMS(1), AIS("strides", 2, 2)),
    CONV("2-D groups 2, stride 2x3, asymmetric pads", DT_FLOAT, 3, DIMS(1, 4, 9, 8), DIMS(6, 2, 3, 2), DIMS(6),
         AI("group", 2), AIS("strides", 2, 3), AIS("pads", 1, 0, 2, 1)),
    CONV("2-D dilation 2", DT_FLOAT, 2, DIMS(1, 2, 9, 9), DIMS(2, 2, 3, 3), DIMS(1), AIS("dilations", 2, 2),
         AIS("pads", 2, 2, 2, 2)),
    CONV("2-D dilation 2", DT_DOUBLE, 2, DIMS(1, 2, 9, 9), DIMS(2, 2, 3, 3), DIMS(1), AIS("dilations", 2, 2),
         AIS("pads", 2, 2, 2, 2)),
    CONV("2-D depthwise 3x3 stride 2", DT_FLOAT, 3, DIMS(2, 4, 8, 7), DIMS(4, 1, 3, 3), DIMS(4), AI("group", 4),
         AIS("strides", 2, 2), P1111),
    CONV("2-D depthwise dilated", DT_FLOAT, 2, DIMS(1, 3, 10, 9), DIMS(3, 1, 3, 3), DIMS(1), AI("group", 3),
         AIS("strides", 1, 2), AIS("dilations", 2, 1), AIS("pads", 2, 1, 0, 2)),
    CONV("2-D depthwise multiplier 2", DT_FLOAT, 3, DIMS(1, 3, 6, 6), DIMS(6, 1, 3, 3), DIMS(6), AI("group", 3), P1111),
    CONV("2-D SAME_UPPER stride 2", DT_FLOAT, 3, DIMS(1, 2, 7, 6), DIMS(3, 2, 3, 4), DIMS(3), AIS("strides", 2, 2),
         AS("auto_pad", "SAME_UPPER")),
    CONV("2-D SAME_UPPER stride 2", DT_DOUBLE, 3, DIMS(1, 2, 7, 6), DIMS(3, 2, 3, 4), DIMS(3), AIS("strides", 2, 2),
         AS("auto_pad", "SAME_UPPER")),
    CONV("2-D SAME_LOWER", DT_FLOAT, 2, DIMS(1, 2, 5, 6), DIMS(3, 2, 4, 2), DIMS(1), AS("auto_pad", "SAME_LOWER")),
    CONV("2-D VALID", DT_FLOAT, 2, DIMS(1, 2, 6, 7), DIMS(2, 2, 3, 3), DIMS(1), AIS("strides", 2, 1),
         AS("auto_pad", "VALID")),
    CONV("1-D stride 3 pad 2", DT_FLOAT, 3, DIMS(2, 3, 11), DIMS(4, 3, 3), DIMS(4), AIS("strides", 3), AIS("pads", 2, 1)),
    CONV("3-D groups 3", DT_FLOAT, 3, DIMS(1, 3, 4, 5, 6), DIMS(6, 1, 2, 3, 2), DIMS(6), AI("group", 3),
         AIS("strides", 1, 2, 1), AIS("dilations", 1, 1, 2), AIS("pads", 1, 0, 1, 0, 1, 1)),
    CONV("3-D groups 3", DT_DOUBLE, 3, DIMS(1, 3, 4, 5, 6), DIMS(6, 1, 2, 3, 2), DIMS(6), AI("group", 3),
         AIS("strides", 1, 2, 1), AIS("dilations", 1, 1, 2), AIS("pads", 1, 0, 1, 0, 1, 1)),
    {.op = "ConvTranspose", .opset = 11, .what = "groups, strides, dilations, pads, output_padding", .n_in = 3,
     .in = {XU(DT_FLOAT, DIMS(2, 4, 3, 4)), XU(DT_FLOAT, DIMS(4, 3, 3, 2)), XU(DT_FLOAT, DIMS(6))},
     .attr = {AI("group", 2), AIS("strides", 2, 3), AIS("dilations", 1, 2), AIS("pads", 1, 0, 0, 2),
              AIS("output_padding", 1, 0)},
     .ref = ref_convtranspose},
    MMF("2-D", DT_FLOAT, DIMS(5, 7), DIMS(7, 3)),
    MMF("batched A, shared B (one GEMM)", DT_FLOAT, DIMS(4, 5, 6), DIMS(6, 3)),
    MMF("broadcast batch", DT_FLOAT, DIMS(2, 1, 3, 4), DIMS(3, 4, 5)),
    MMF("A broadcast over B's batch", DT_DOUBLE, DIMS(3, 4), DIMS(2, 4, 5)),
    MMF("1-D x 2-D", DT_FLOAT, DIMS(6), DIMS(6, 4)),
    MMF("3-D x 1-D", DT_FLOAT, DIMS(2, 3, 6), DIMS(6)),
    MMF("1-D x 1-D", DT_DOUBLE, DIMS(9), DIMS(9)),
    /* sums of 160 terms of 0 to 1600 around FP16's largest, 65504 (storage.c): inf past 65520 */
    {.op = "MatMul", .opset = 13, .what = "sums around FP16's largest", .n_in = 2,
     .in = {IN_U(DT_FLOAT, 0, 40, DIMS(8, 160)), IN_U(DT_FLOAT, 0, 40, DIMS(160, 8))}, .ref = ref_matmul},
    MM("small integers", DT_INT32, DIMS(2, 3, 4), DIMS(4, 5)),
    MM("small integers", DT_INT64, DIMS(3, 4), DIMS(2, 4, 2)),
    {.op = "MatMul", .opset = 13, .what = "small integers (DT_UINT32)", .n_in = 2,
     .in = {IN_I(DT_UINT32, 0, 8, DIMS(3, 4)), IN_I(DT_UINT32, 0, 8, DIMS(4, 2))}, .ref = ref_matmul},
    {.op = "MatMul", .opset = 13, .what = "int32 wraps like two's complement (65536 * 65536 + 3 * 1)", .n_in = 2,
     .in = {IN_V(DT_INT32, DIMS(1, 2), 65536, 3), IN_V(DT_INT32, DIMS(2, 1), 65536, 1)}, .ref = ref_matmul},
    {.op = "MatMul", .opset = 13, .what = "mismatched inner dimensions", .n_in = 2,
     .in = {IN_V(DT_INT32, DIMS(1, 2), 1, 2), IN_I(DT_INT32, 0, 3, DIMS(3, 4))}, .fail = "cannot be multiplied"},
    {.op = "Gemm", .opset = 13, .what = "transA, transB, alpha, beta, row-broadcast C", .n_in = 3,
     .in = {XU(DT_FLOAT, DIMS(4, 3)), XU(DT_FLOAT, DIMS(5, 4)), XU(DT_FLOAT, DIMS(5))},
     .attr = {AI("transA", 1), AI("transB", 1), AF("alpha", 0.5f), AF("beta", 2.0f)}, .ref = ref_gemm},
    /* the same bytes at 1 and 3 threads (large enough to split) */
    {.op = "Conv", .opset = 11, .what = "tiled GEMM, 1 and 3 threads", .n_in = 2, .threads = 3,
     .in = {XU(DT_FLOAT, DIMS(1, 16, 40, 36)), XU(DT_FLOAT, DIMS(32, 16, 3, 3))}, .attr = {P1111}, .ref = ref_conv},
    {.op = "Conv", .opset = 11, .what = "depthwise, 1 and 3 threads", .n_in = 2, .threads = 3,
     .in = {XU(DT_FLOAT, DIMS(1, 16, 40, 36)), XU(DT_FLOAT, DIMS(16, 1, 3, 3))}, .attr = {AI("group", 16), P1111},
     .ref = ref_conv},
    {.op = "ConvTranspose", .opset = 11, .what = "stride 2, 1 and 3 threads", .n_in = 2, .threads = 3,
     .in = {XU(DT_FLOAT, DIMS(1, 16, 40, 36)), XU(DT_FLOAT, DIMS(16, 8, 3, 3))}, .attr = {AIS("strides", 2, 2)},
     .ref = ref_convtranspose},
    {.op = "Einsum", .opset = 12, .what = "bij,bjk->bik (batched GEMM)", .n_in = 2,
     .in = {XU(DT_FLOAT, DIMS(2, 3, 4)), XU(DT_FLOAT, DIMS(2, 4, 5))}, .attr = {AS("equation", "bij,bjk->bik")},
     .ref = ref_einsum},
    {.op = "Einsum", .opset = 12, .what = "bij,bkj->bki (permuted operands and output)", .n_in = 2,
     .in = {XU(DT_FLOAT, DIMS(2, 3, 4)), XU(DT_FLOAT, DIMS(2, 5, 4))}, .attr = {AS("equation", "bij,bkj->bki")},
     .ref = ref_einsum},
    {.op = "Einsum", .opset = 12, .what = "...ii->...i (batched diagonal, int64)", .n_in = 1,
     .in = {IN_I(DT_INT64, -9, 9, DIMS(2, 3, 3))}, .attr = {AS("equation", "...ii->...i")}, .ref = ref_einsum},
    {.op = "Einsum", .opset = 12, .what = "ij,jk (implicit output, double)", .n_in = 2,
     .in = {XU(DT_DOUBLE, DIMS(3, 4)), XU(DT_DOUBLE, DIMS(4, 2))}, .attr = {AS("equation", "ij,jk")}, .ref = ref_einsum},
    {.op = "Einsum", .opset = 12, .what = "a term too many", .n_in = 2,
     .in = {XU(DT_DOUBLE, DIMS(3, 4)), XU(DT_DOUBLE, DIMS(4, 2))}, .attr = {AS("equation", "ij,jk,kl->il")},
     .fail = "more terms"},
};
const int cases_nn_n = sizeof cases_nn / sizeof cases_nn[0];
