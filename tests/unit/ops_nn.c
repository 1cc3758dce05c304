/* ops_nn.c — checks the NN family's kernels (through node_run, the
 * executor's one path to a kernel) against references written here
 * independently: direct convolution and transposed convolution loops,
 * triple-loop matrix products, window loops for the pools, two-pass
 * statistics for LayerNorm, and Resize values derived by hand from the
 * spec's coordinate formulas. Covers Conv's im2col, 1x1 and depthwise paths
 * with groups, strides, dilations, pads and auto_pad; ConvTranspose;
 * MatMul batch broadcasting, 1-D operands and integer wrap-around; Gemm;
 * Einsum's GEMM and general paths; and that bad input fails cleanly. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "ops/run.h"

#include "nn_testutil.h"
#include "bounds.h"

/* ---- Conv against a direct loop ---- */

typedef struct conv_case {
    const char *name;
    int nsp;
    int64_t n, c, m, group, in[3], k[3], s[3], d[3], pads[6];
    const char *auto_pad;       /* NULL: explicit pads */
    int bias;
} conv_case_t;

/* Output size and begin padding of one axis, from the spec's formulas. */
static void conv_axis(const conv_case_t *cc, int a, int64_t *out, int64_t *pb)
{
    int64_t dk = (cc->k[a] - 1) * cc->d[a] + 1, in = cc->in[a];
    if (cc->auto_pad && strncmp(cc->auto_pad, "SAME", 4) == 0) {
        *out = (in + cc->s[a] - 1) / cc->s[a];
        int64_t total = (*out - 1) * cc->s[a] + dk - in;
        if (total < 0) total = 0;
        *pb = strcmp(cc->auto_pad, "SAME_UPPER") == 0 ? total / 2 : total - total / 2;
    } else if (cc->auto_pad) {   /* VALID */
        *out = (in - dk) / cc->s[a] + 1;
        *pb = 0;
    } else {
        *out = (in + cc->pads[a] + cc->pads[cc->nsp + a] - dk) / cc->s[a] + 1;
        *pb = cc->pads[a];
    }
}

static int check_conv(const conv_case_t *cc, dtype_t dt)
{
    int nd = cc->nsp + 2;
    int64_t xd[5] = {cc->n, cc->c}, wd[5] = {cc->m, cc->c / cc->group}, od[5] = {cc->n, cc->m}, pb[3];
    for (int a = 0; a < cc->nsp; a++) {
        xd[2 + a] = cc->in[a];
        wd[2 + a] = cc->k[a];
        conv_axis(cc, a, &od[2 + a], &pb[a]);
    }
    tensor_t *x = random_tensor(dt, nd, xd, -1, 1), *w = random_tensor(dt, nd, wd, -1, 1);
    int64_t bd = cc->m;
    tensor_t *b = cc->bias ? random_tensor(dt, 1, &bd, -1, 1) : NULL;
    tnode_t t;
    node_init(&t, "Conv", 11, cc->bias ? 3 : 2, 1);
    set_int(&t, "group", cc->group);
    set_ints(&t, "strides", cc->nsp, cc->s);
    set_ints(&t, "dilations", cc->nsp, cc->d);
    if (cc->auto_pad) set_str(&t, "auto_pad", cc->auto_pad);
    else set_ints(&t, "pads", 2 * cc->nsp, cc->pads);
    const tensor_t *in[3] = {x, w, b};
    tensor_t y = {0}, *out[1] = {&y};
    perr_t e;
    int rc = run_node(&t, in, out, &e);
    if (rc) diag("%s: %s", cc->name, e.msg);

    /* direct loop: every output, every tap */
    int64_t osp[3] = {1, 1, 1}, isp[3] = {1, 1, 1}, ks[3] = {1, 1, 1}, st[3] = {1, 1, 1}, dl[3] = {1, 1, 1}, p0[3] = {0};
    for (int a = 0; a < cc->nsp; a++) {
        int j = 3 - cc->nsp + a;
        osp[j] = od[2 + a]; isp[j] = cc->in[a]; ks[j] = cc->k[a]; st[j] = cc->s[a]; dl[j] = cc->d[a]; p0[j] = pb[a];
    }
    int64_t cg = cc->c / cc->group, mg = cc->m / cc->group, no = cc->n * cc->m * osp[0] * osp[1] * osp[2];
    double *want = calloc((size_t)no, sizeof *want), *bound = calloc((size_t)no, sizeof *bound);
    double u = dt == DT_FLOAT ? U_FLOAT : U_DOUBLE;
    int64_t o = 0;
    for (int64_t n = 0; n < cc->n; n++)
        for (int64_t m = 0; m < cc->m; m++)
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
                                        double p = tensor_get_f64(x, (((n * cc->c + c) * isp[0] + iz) * isp[1] + iy) * isp[2] + ix) *
                                                   tensor_get_f64(w, (((m * cg + ci) * ks[0] + kz) * ks[1] + ky) * ks[2] + kx);
                                        acc += p;
                                        mag += fabs(p);
                                    }
                        want[o] = acc;
                        bound[o] = sum_bound(cg * ks[0] * ks[1] * ks[2] + 1, mag, u);
                    }
    double err = rc ? INFINITY : bound_ratio(&y, want, bound, nd, od);
    int good = err <= 1;
    ok(good, "Conv %s (%s): max error %.3g of its bound", cc->name, dtype_name(dt), err);
    free(want); free(bound);
    tensor_free(x); tensor_free(w); tensor_free(b); tensor_free_data(&y);
    return good;
}

static void test_conv(void)
{
    static const conv_case_t cases[] = {
        {"2-D 3x3 pad 1 (im2col)", 2, 2, 3, 4, 1, {7, 6}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, NULL, 1},
        {"2-D 1x1 (direct GEMM)", 2, 2, 5, 3, 1, {4, 5}, {1, 1}, {1, 1}, {1, 1}, {0}, NULL, 1},
        {"2-D 1x1 stride 2", 2, 1, 4, 3, 1, {5, 5}, {1, 1}, {2, 2}, {1, 1}, {0}, NULL, 0},
        {"2-D groups 2, stride 2, asymmetric pads", 2, 1, 4, 6, 2, {9, 8}, {3, 2}, {2, 3}, {1, 1}, {1, 0, 2, 1}, NULL, 1},
        {"2-D dilation 2", 2, 1, 2, 2, 1, {9, 9}, {3, 3}, {1, 1}, {2, 2}, {2, 2, 2, 2}, NULL, 0},
        {"2-D depthwise 3x3 stride 2", 2, 2, 4, 4, 4, {8, 7}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, NULL, 1},
        {"2-D depthwise dilated", 2, 1, 3, 3, 3, {10, 9}, {3, 3}, {1, 2}, {2, 1}, {2, 1, 0, 2}, NULL, 0},
        {"2-D depthwise multiplier 2", 2, 1, 3, 6, 3, {6, 6}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, NULL, 1},
        {"2-D SAME_UPPER stride 2", 2, 1, 2, 3, 1, {7, 6}, {3, 4}, {2, 2}, {1, 1}, {0}, "SAME_UPPER", 1},
        {"2-D SAME_LOWER", 2, 1, 2, 3, 1, {5, 6}, {4, 2}, {1, 1}, {1, 1}, {0}, "SAME_LOWER", 0},
        {"2-D VALID", 2, 1, 2, 2, 1, {6, 7}, {3, 3}, {2, 1}, {1, 1}, {0}, "VALID", 0},
        {"1-D stride 3 pad 2", 1, 2, 3, 4, 1, {11}, {3}, {3}, {1}, {2, 1}, NULL, 1},
        {"3-D groups 3", 3, 1, 3, 6, 3, {4, 5, 6}, {2, 3, 2}, {1, 2, 1}, {1, 1, 2}, {1, 0, 1, 0, 1, 1}, NULL, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        check_conv(&cases[i], DT_FLOAT);
        if (i % 4 == 0) check_conv(&cases[i], DT_DOUBLE);
    }
}

/* ---- ConvTranspose against a scatter loop ---- */

static void test_convtranspose(void)
{
    int64_t xd[4] = {2, 4, 3, 4}, wd[4] = {4, 3, 3, 2}, s[2] = {2, 3}, d[2] = {1, 2}, pads[4] = {1, 0, 0, 2};
    int64_t opad[2] = {1, 0}, bd = 6;   /* group 2: 6 output channels */
    tensor_t *x = random_tensor(DT_FLOAT, 4, xd, -1, 1), *w = random_tensor(DT_FLOAT, 4, wd, -1, 1);
    tensor_t *b = random_tensor(DT_FLOAT, 1, &bd, -1, 1);
    tnode_t t;
    node_init(&t, "ConvTranspose", 11, 3, 1);
    set_int(&t, "group", 2);
    set_ints(&t, "strides", 2, s);
    set_ints(&t, "dilations", 2, d);
    set_ints(&t, "pads", 4, pads);
    set_ints(&t, "output_padding", 2, opad);
    const tensor_t *in[3] = {x, w, b};
    tensor_t y = {0}, *out[1] = {&y};
    perr_t e;
    int rc = run_node(&t, in, out, &e);
    if (rc) diag("ConvTranspose: %s", e.msg);
    int64_t oh = s[0] * (xd[2] - 1) + opad[0] + (wd[2] - 1) * d[0] + 1 - pads[0] - pads[2];
    int64_t ow = s[1] * (xd[3] - 1) + opad[1] + (wd[3] - 1) * d[1] + 1 - pads[1] - pads[3];
    int64_t od[4] = {2, 6, oh, ow};
    double *want = calloc((size_t)(2 * 6 * oh * ow), sizeof *want), *mag = calloc((size_t)(2 * 6 * oh * ow), sizeof *mag);
    for (int64_t n = 0; n < 2; n++)
        for (int64_t m = 0; m < 6; m++)
            for (int64_t i = 0; i < oh * ow; i++) {
                want[(n * 6 + m) * oh * ow + i] = tensor_get_f64(b, m);
                mag[(n * 6 + m) * oh * ow + i] = fabs(tensor_get_f64(b, m));
            }
    for (int64_t n = 0; n < 2; n++)
        for (int64_t c = 0; c < 4; c++)
            for (int64_t iy = 0; iy < xd[2]; iy++)
                for (int64_t ix = 0; ix < xd[3]; ix++)
                    for (int64_t mm = 0; mm < 3; mm++)
                        for (int64_t ky = 0; ky < wd[2]; ky++)
                            for (int64_t kx = 0; kx < wd[3]; kx++) {
                                int64_t y0 = iy * s[0] - pads[0] + ky * d[0], x0 = ix * s[1] - pads[1] + kx * d[1];
                                if (y0 < 0 || y0 >= oh || x0 < 0 || x0 >= ow) continue;
                                int64_t m = (c / 2) * 3 + mm, q = ((n * 6 + m) * oh + y0) * ow + x0;
                                double p = tensor_get_f64(x, ((n * 4 + c) * xd[2] + iy) * xd[3] + ix) *
                                           tensor_get_f64(w, ((c * 3 + mm) * wd[2] + ky) * wd[3] + kx);
                                want[q] += p;
                                mag[q] += fabs(p);
                            }
    /* at most every input channel times every tap reaches one output, plus the bias */
    for (int64_t i = 0; i < 2 * 6 * oh * ow; i++) mag[i] = sum_bound(xd[1] * wd[2] * wd[3] + 1, mag[i], U_FLOAT);
    double err = rc ? INFINITY : bound_ratio(&y, want, mag, 4, od);
    ok(err <= 1, "ConvTranspose groups, strides, dilations, pads, output_padding: max error %.3g of its bound", err);
    free(want); free(mag);
    tensor_free(x); tensor_free(w); tensor_free(b); tensor_free_data(&y);
}

/* ---- MatMul and Gemm against triple loops ---- */

static void check_matmul(const char *name, dtype_t dt, int na, const int64_t *ad, int nb, const int64_t *bd)
{
    tensor_t *a = random_tensor(dt, na, ad, -8, 8), *b = random_tensor(dt, nb, bd, -8, 8);
    tnode_t t;
    node_init(&t, "MatMul", 13, 2, 1);
    const tensor_t *in[2] = {a, b};
    tensor_t y = {0}, *out[1] = {&y};
    perr_t e;
    int rc = run_node(&t, in, out, &e);
    if (rc) diag("MatMul %s: %s", name, e.msg);
    /* numpy semantics written out: promote 1-D, broadcast batch, drop promoted dims */
    int64_t A[8], B[8];
    int ra = na, rb = nb;
    memcpy(A, ad, na * sizeof *A);
    memcpy(B, bd, nb * sizeof *B);
    if (na == 1) { A[1] = A[0]; A[0] = 1; ra = 2; }
    if (nb == 1) { B[1] = 1; rb = 2; }
    int rbat = (ra > rb ? ra : rb) - 2;
    int64_t M = A[ra - 2], K = A[ra - 1], N = B[rb - 1], bat[8], nbat = 1;
    for (int i = 0; i < rbat; i++) {
        int ia = i - (rbat - (ra - 2)), ib = i - (rbat - (rb - 2));
        int64_t da = ia >= 0 ? A[ia] : 1, db = ib >= 0 ? B[ib] : 1;
        bat[i] = da > db ? da : db;
        nbat *= bat[i];
    }
    int64_t od[8];
    int nd = 0;
    for (int i = 0; i < rbat; i++) od[nd++] = bat[i];
    if (na > 1) od[nd++] = M;
    if (nb > 1) od[nd++] = N;
    double *want = calloc((size_t)(nbat * M * N + 1), sizeof *want), *bound = calloc((size_t)(nbat * M * N + 1), sizeof *bound);
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
                want[(q * M + i) * N + j] = acc;
                /* integers: exact, no bound */
                bound[(q * M + i) * N + j] = dtype_is_float(dt) ? sum_bound(K, mag, dt == DT_FLOAT ? U_FLOAT : U_DOUBLE) : 0;
            }
    }
    if (!dtype_is_float(dt))   /* small integers: exact products, wrapped to the type */
        for (int64_t i = 0; i < nbat * M * N; i++) {
            tensor_t tmp = {.dtype = dt, .data = &(int64_t){0}};
            int64_t v = (int64_t)want[i];
            if (dt == DT_INT32) v = (int32_t)(uint32_t)v;
            tensor_set_f64(&tmp, 0, (double)v);
            want[i] = tensor_get_f64(&tmp, 0);
        }
    double err = rc ? INFINITY : bound_ratio(&y, want, bound, nd, od);
    ok(err <= 1, "MatMul %s (%s): max error %.3g of its bound", name, dtype_name(dt), err);
    free(want); free(bound);
    tensor_free(a); tensor_free(b); tensor_free_data(&y);
}

static void test_matmul(void)
{
    check_matmul("2-D", DT_FLOAT, 2, (int64_t[]){5, 7}, 2, (int64_t[]){7, 3});
    check_matmul("batched A, shared B (one GEMM)", DT_FLOAT, 3, (int64_t[]){4, 5, 6}, 2, (int64_t[]){6, 3});
    check_matmul("broadcast batch", DT_FLOAT, 4, (int64_t[]){2, 1, 3, 4}, 3, (int64_t[]){3, 4, 5});
    check_matmul("A broadcast over B's batch", DT_DOUBLE, 2, (int64_t[]){3, 4}, 3, (int64_t[]){2, 4, 5});
    check_matmul("1-D x 2-D", DT_FLOAT, 1, (int64_t[]){6}, 2, (int64_t[]){6, 4});
    check_matmul("3-D x 1-D", DT_FLOAT, 3, (int64_t[]){2, 3, 6}, 1, (int64_t[]){6});
    check_matmul("1-D x 1-D", DT_DOUBLE, 1, (int64_t[]){9}, 1, (int64_t[]){9});
    check_matmul("int32", DT_INT32, 3, (int64_t[]){2, 3, 4}, 2, (int64_t[]){4, 5});
    check_matmul("int64", DT_INT64, 2, (int64_t[]){3, 4}, 3, (int64_t[]){2, 4, 2});
    check_matmul("uint32", DT_UINT32, 2, (int64_t[]){3, 4}, 2, (int64_t[]){4, 2});

    /* int32 wrap-around: 65536 * 65536 = 2^32 wraps to 0, + 3*1 */
    int64_t d2[2] = {1, 2}, d3[2] = {2, 1};
    perr_t e = {0};
    tensor_t *a = tensor_new(DT_INT32, 2, d2, &e), *b = tensor_new(DT_INT32, 2, d3, &e);
    ((int32_t *)a->data)[0] = 65536; ((int32_t *)a->data)[1] = 3;
    ((int32_t *)b->data)[0] = 65536; ((int32_t *)b->data)[1] = 1;
    tnode_t t;
    node_init(&t, "MatMul", 13, 2, 1);
    const tensor_t *in[2] = {a, b};
    tensor_t y = {0}, *out[1] = {&y};
    int rc = run_node(&t, in, out, &e);
    ok(rc == 0 && ((int32_t *)y.data)[0] == 3, "MatMul int32 wraps like two's complement");
    tensor_free_data(&y);
    /* mismatched inner dimensions fail with a message naming the node */
    int64_t d4[2] = {3, 4};
    tensor_t *c = tensor_new(DT_INT32, 2, d4, &e);
    const tensor_t *bad[2] = {a, c};
    rc = run_node(&t, bad, out, &e);
    ok(rc != 0 && strstr(e.msg, "cannot be multiplied"), "MatMul shape mismatch is refused: %s", e.msg);
    tensor_free(a); tensor_free(b); tensor_free(c);
}

static void test_gemm(void)
{
    int64_t ad[2] = {4, 3}, bd[2] = {5, 4}, cd[1] = {5};   /* transA: A' is 3x4; transB: B' is 4x5 */
    tensor_t *a = random_tensor(DT_FLOAT, 2, ad, -1, 1), *b = random_tensor(DT_FLOAT, 2, bd, -1, 1);
    tensor_t *cc = random_tensor(DT_FLOAT, 1, cd, -1, 1);
    tnode_t t;
    node_init(&t, "Gemm", 13, 3, 1);
    set_int(&t, "transA", 1);
    set_int(&t, "transB", 1);
    set_float(&t, "alpha", 0.5f);
    set_float(&t, "beta", 2.0f);
    const tensor_t *in[3] = {a, b, cc};
    tensor_t y = {0}, *out[1] = {&y};
    perr_t e;
    int rc = run_node(&t, in, out, &e);
    double want[15], bound[15];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 5; j++) {
            double acc = 0, mag = 0;
            for (int k = 0; k < 4; k++) {
                double p = tensor_get_f64(a, k * 3 + i) * tensor_get_f64(b, j * 4 + k);
                acc += p;
                mag += fabs(p);
            }
            want[i * 5 + j] = 0.5 * acc + 2.0 * tensor_get_f64(cc, j);
            /* the dot product, then alpha, beta and their sum: 3 more roundings */
            bound[i * 5 + j] = sum_bound(4 + 3, 0.5 * mag + 2.0 * fabs(tensor_get_f64(cc, j)), U_FLOAT);
        }
    double err = rc ? INFINITY : bound_ratio(&y, want, bound, 2, (int64_t[]){3, 5});
    ok(err <= 1, "Gemm transA, transB, alpha, beta, row-broadcast C: max error %.3g of its bound", err);
    tensor_free(a); tensor_free(b); tensor_free(cc); tensor_free_data(&y);
}

/* ---- Einsum: the GEMM path and the general path agree with loops ---- */

static void test_einsum(void)
{
    /* "bij,bjk->bik" (batched GEMM) and "bij,bkj->bki" (permuted operands and output) */
    int64_t ad[3] = {2, 3, 4}, bd[3] = {2, 4, 5}, bt[3] = {2, 5, 4};
    tensor_t *a = random_tensor(DT_FLOAT, 3, ad, -1, 1), *b = random_tensor(DT_FLOAT, 3, bd, -1, 1);
    tensor_t *b2 = random_tensor(DT_FLOAT, 3, bt, -1, 1);
    const char *eqs[2] = {"bij,bjk->bik", "bij,bkj->bki"};
    for (int q = 0; q < 2; q++) {
        tnode_t t;
        node_init(&t, "Einsum", 12, 2, 1);
        set_str(&t, "equation", eqs[q]);
        const tensor_t *in[2] = {a, q ? b2 : b};
        tensor_t y = {0}, *out[1] = {&y};
        perr_t e;
        int rc = run_node(&t, in, out, &e);
        if (rc) diag("%s", e.msg);
        double want[40], bound[40];
        for (int n = 0; n < 2; n++)
            for (int i = 0; i < 3; i++)
                for (int k = 0; k < 5; k++) {
                    double acc = 0, mag = 0;
                    for (int j = 0; j < 4; j++) {
                        double p = tensor_get_f64(a, (n * 3 + i) * 4 + j) *
                                   (q ? tensor_get_f64(b2, (n * 5 + k) * 4 + j) : tensor_get_f64(b, (n * 4 + j) * 5 + k));
                        acc += p;
                        mag += fabs(p);
                    }
                    want[q ? (n * 5 + k) * 3 + i : (n * 3 + i) * 5 + k] = acc;
                    bound[q ? (n * 5 + k) * 3 + i : (n * 3 + i) * 5 + k] = sum_bound(4, mag, U_FLOAT);
                }
        int64_t od[3] = {2, q ? 5 : 3, q ? 3 : 5};
        double err = rc ? INFINITY : bound_ratio(&y, want, bound, 3, od);
        ok(err <= 1, "Einsum %s: max error %.3g of its bound", eqs[q], err);
        tensor_free_data(&y);
    }
    /* general path: diagonal and implicit output ("ii" -> trace, "...ii->...i") */
    int64_t sd[3] = {2, 3, 3};
    tensor_t *s = random_tensor(DT_INT64, 3, sd, -9, 9);
    tnode_t t;
    node_init(&t, "Einsum", 12, 1, 1);
    set_str(&t, "equation", "...ii->...i");
    const tensor_t *in[1] = {s};
    tensor_t y = {0}, *out[1] = {&y};
    perr_t e;
    int rc = run_node(&t, in, out, &e);
    double want[6];
    for (int n = 0; n < 2; n++)
        for (int i = 0; i < 3; i++) want[n * 3 + i] = tensor_get_f64(s, (n * 3 + i) * 3 + i);
    double err = rc ? INFINITY : max_err(&y, want, 2, (int64_t[]){2, 3});
    ok(err == 0, "Einsum ...ii->...i (batched diagonal, int64)");
    tensor_free_data(&y);
    node_init(&t, "Einsum", 12, 2, 1);
    set_str(&t, "equation", "ij,jk");   /* implicit output "ik" */
    int64_t m1[2] = {3, 4}, m2[2] = {4, 2};
    tensor_t *p = random_tensor(DT_DOUBLE, 2, m1, -1, 1), *r = random_tensor(DT_DOUBLE, 2, m2, -1, 1);
    const tensor_t *in2[2] = {p, r};
    rc = run_node(&t, in2, out, &e);
    double bnd[6];
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 2; k++) {
            want[i * 2 + k] = bnd[i * 2 + k] = 0;
            for (int j = 0; j < 4; j++) {
                want[i * 2 + k] += tensor_get_f64(p, i * 4 + j) * tensor_get_f64(r, j * 2 + k);
                bnd[i * 2 + k] += fabs(tensor_get_f64(p, i * 4 + j) * tensor_get_f64(r, j * 2 + k));
            }
            bnd[i * 2 + k] = sum_bound(4, bnd[i * 2 + k], U_DOUBLE);
        }
    err = rc ? INFINITY : bound_ratio(&y, want, bnd, 2, (int64_t[]){3, 2});
    ok(err <= 1, "Einsum ij,jk (implicit output): max error %.3g of its bound", err);
    node_init(&t, "Einsum", 12, 2, 1);
    set_str(&t, "equation", "ij,jk,kl->il");   /* three terms, two inputs */
    rc = run_node(&t, in2, out, &e);
    ok(rc != 0 && strstr(e.msg, "more terms"), "Einsum with a term too many is refused: %s", e.msg);
    tensor_free(a); tensor_free(b); tensor_free(b2); tensor_free(s); tensor_free(p); tensor_free(r);
    tensor_free_data(&y);
}

int main(void)
{
    test_conv();
    test_convtranspose();
    test_matmul();
    test_gemm();
    test_einsum();
    scratch_pool_free(&pool);
    return done_testing();
}
