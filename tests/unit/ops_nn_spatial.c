/* ops_nn_spatial.c — checks the NN family's window, norm and sampling
 * kernels: MaxPool (Indices, storage_order, dilations) and AveragePool
 * (count_include_pad, ceil_mode) against window loops; LayerNormalization
 * and BatchNormalization against the formulas in double; Resize against
 * values derived by hand from the spec's coordinate formulas (the numbers
 * below are worked out in the comments next to them) and a direct
 * trilinear loop; GridSample against PyTorch's bilinear formula written out;
 * that bad input fails cleanly; and that outputs keep their bits whatever
 * the thread count. */
#include "nn_testutil.h"
#include "bounds.h"
#include "util/pool.h"

/* A bound the same for every element of an n-element output. */
static double *same_bound(int64_t n, double b)
{
    double *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    for (int64_t i = 0; i < n; i++) p[i] = b;
    return p;
}

/* ---- pools ---- */

/* Direct 2-D pool of one plane: kind 0 max (with flat argmax), 1 avg. */
static void naive_pool(const tensor_t *x, int kind, const int64_t *k, const int64_t *s, const int64_t *d,
                       const int64_t *pads, int include_pad, int64_t oh, int64_t ow, double *want, int64_t *arg,
                       int col_major)
{
    int64_t N = x->dims[0] * x->dims[1], H = x->dims[2], W = x->dims[3];
    for (int64_t p = 0; p < N; p++)
        for (int64_t i = 0; i < oh; i++)
            for (int64_t j = 0; j < ow; j++) {
                double best = -INFINITY, sum = 0;
                int64_t cnt = 0, cnt_pad = 0, bi = -1;
                for (int64_t a = 0; a < k[0]; a++)
                    for (int64_t b = 0; b < k[1]; b++) {
                        int64_t y = i * s[0] - pads[0] + a * d[0], xx = j * s[1] - pads[1] + b * d[1];
                        if (y >= -pads[0] && y < H + pads[2] && xx >= -pads[1] && xx < W + pads[3]) cnt_pad++;
                        if (y < 0 || y >= H || xx < 0 || xx >= W) continue;
                        double v = tensor_get_f64(x, (p * H + y) * W + xx);
                        cnt++;
                        sum += v;
                        if (v > best) {
                            best = v;
                            bi = col_major ? p * H * W + xx * H + y : (p * H + y) * W + xx;
                        }
                    }
                int64_t o = (p * oh + i) * ow + j;
                want[o] = kind == 0 ? best : sum / (double)(include_pad ? cnt_pad : cnt);
                if (arg) arg[o] = bi;
            }
}

static void test_pools(void)
{
    int64_t xd[4] = {2, 3, 7, 8};
    tensor_t *x = random_tensor(DT_FLOAT, 4, xd, -1, 1);
    perr_t e;
    /* MaxPool 3x2, stride 2x3, dilation 2x1, pads (1,0,2,1), Indices in both storage orders */
    int64_t k[2] = {3, 2}, s[2] = {2, 3}, d[2] = {2, 1}, pads[4] = {1, 0, 2, 1};
    int64_t oh = (7 + 3 - 5) / 2 + 1, ow = (8 + 1 - 2) / 3 + 1, od[4] = {2, 3, oh, ow};
    for (int order = 0; order < 2; order++) {
        tnode_t t;
        node_init(&t, "MaxPool", 12, 1, 2);
        set_ints(&t, "kernel_shape", 2, k);
        set_ints(&t, "strides", 2, s);
        set_ints(&t, "dilations", 2, d);
        set_ints(&t, "pads", 4, pads);
        set_int(&t, "storage_order", order);
        const tensor_t *in[1] = {x};
        tensor_t y = {0}, ind = {0}, *out[2] = {&y, &ind};
        int rc = run_node(&t, in, out, &e);
        if (rc) diag("MaxPool: %s", e.msg);
        double *want = calloc((size_t)(6 * oh * ow), sizeof *want);
        int64_t *arg = calloc((size_t)(6 * oh * ow), sizeof *arg);
        naive_pool(x, 0, k, s, d, pads, 0, oh, ow, want, arg, order);
        double err = rc ? INFINITY : max_err(&y, want, 4, od);
        int same = !rc && ind.dtype == DT_INT64;
        for (int64_t i = 0; same && i < 6 * oh * ow; i++) same = ((int64_t *)ind.data)[i] == arg[i];
        ok(err == 0 && same, "MaxPool dilated, strided, padded, storage_order %d: values and Indices", order);
        free(want); free(arg);
        tensor_free_data(&y); tensor_free_data(&ind);
    }
    /* AveragePool 3x3 stride 2 pads 1, ceil_mode, with and without count_include_pad */
    int64_t k3[2] = {3, 3}, s2[2] = {2, 2}, d1[2] = {1, 1}, p1[4] = {1, 1, 1, 1};
    for (int inc = 0; inc < 2; inc++) {
        tnode_t t;
        node_init(&t, "AveragePool", 11, 1, 1);
        set_ints(&t, "kernel_shape", 2, k3);
        set_ints(&t, "strides", 2, s2);
        set_ints(&t, "pads", 4, p1);
        set_int(&t, "ceil_mode", 1);
        set_int(&t, "count_include_pad", inc);
        const tensor_t *in[1] = {x};
        tensor_t y = {0}, *out[1] = {&y};
        int rc = run_node(&t, in, out, &e);
        if (rc) diag("AveragePool: %s", e.msg);
        /* ceil((7+2-3)/2)+1 = 4 rows; ceil((8+2-3)/2)+1 = 5 columns, the last
         * starting at 7 < 8+1, inside the input: kept */
        int64_t ah = 4, aw = 5, ad[4] = {2, 3, ah, aw};
        double *want = calloc((size_t)(6 * ah * aw), sizeof *want);
        naive_pool(x, 1, k3, s2, d1, p1, inc, ah, aw, want, NULL, 0);
        /* a mean of at most 9 values: 9 roundings of its sum, 1 of the division */
        double *bound = same_bound(6 * ah * aw, sum_bound(10, max_abs(x), U_FLOAT));
        double err = rc ? INFINITY : bound_ratio(&y, want, bound, 4, ad);
        ok(err <= 1, "AveragePool ceil_mode, count_include_pad=%d: max error %.3g of its bound", inc, err);
        free(want); free(bound);
        tensor_free_data(&y);
    }
    /* a kernel larger than the padded input is refused */
    tnode_t t;
    node_init(&t, "MaxPool", 12, 1, 1);
    int64_t kbig[2] = {9, 2};
    set_ints(&t, "kernel_shape", 2, kbig);
    const tensor_t *in[1] = {x};
    tensor_t y = {0}, *out[1] = {&y};
    ok(run_node(&t, in, out, &e) != 0 && strstr(e.msg, "larger than the padded input"),
       "MaxPool with a kernel larger than the input is refused: %s", e.msg);
    tensor_free(x);
}

/* ---- norms ---- */

static void test_layernorm(void)
{
    int64_t xd[3] = {3, 4, 5}, sd[2] = {4, 5}, bd[1] = {5};
    tensor_t *x = random_tensor(DT_FLOAT, 3, xd, 100, 101);   /* large offset: the two-pass variance matters */
    tensor_t *sc = random_tensor(DT_FLOAT, 2, sd, 0.5, 2), *b = random_tensor(DT_FLOAT, 1, bd, -1, 1);
    tnode_t t;
    node_init(&t, "LayerNormalization", 17, 3, 3);
    set_int(&t, "axis", 1);
    set_float(&t, "epsilon", 1e-3f);
    const tensor_t *in[3] = {x, sc, b};
    tensor_t y = {0}, mean = {0}, inv = {0}, *out[3] = {&y, &mean, &inv};
    perr_t e;
    int rc = run_node(&t, in, out, &e);
    if (rc) diag("LayerNormalization: %s", e.msg);
    double want[60], wm[3], wi[3], bound[60], bm[3], bi[3];
    /* Bounds for a two-pass float32 kernel, to first order (bounds.h's
     * gamma; second-order terms are below u^2 of the values): the mean is
     * off by dm = gamma(n + 1) mean|x|, a deviation by dd = dm + u max|d|, the
     * variance by dv = 2 mean|d| dd + gamma(n + 2) var, 1/sqrt(var + eps)
     * relatively by dv / (2 (var + eps)) + gamma(3), and the output by the
     * deviation's and the scale's errors through * inv * scale + B (3
     * roundings). The large offset makes dm, not the roundings of the
     * output, the largest term: a one-pass variance overshoots it. */
    double g = gamma_n(1, U_FLOAT) + gamma_n(1, U_DOUBLE);   /* u of either side */
    for (int r = 0; r < 3; r++) {
        double m = 0, v = 0, ma = 0, da = 0, dmax = 0;
        for (int i = 0; i < 20; i++) m += tensor_get_f64(x, r * 20 + i), ma += fabs(tensor_get_f64(x, r * 20 + i)) / 20;
        m /= 20;
        for (int i = 0; i < 20; i++) {
            double d = tensor_get_f64(x, r * 20 + i) - m;
            v += d * d;
            da += fabs(d) / 20;
            dmax = fmax(dmax, fabs(d));
        }
        v /= 20;
        wm[r] = m;
        wi[r] = 1 / sqrt(v + (double)1e-3f);
        double dm = sum_bound(21, ma, U_FLOAT), dd = dm + g * dmax;
        double dv = 2 * da * dd + sum_bound(22, v, U_FLOAT);
        double rinv = dv / (2 * (v + (double)1e-3f)) + sum_bound(3, 1, U_FLOAT);
        bm[r] = dm + g * fabs(m);
        bi[r] = rinv * wi[r] + g * wi[r];
        for (int i = 0; i < 20; i++) {
            double d = tensor_get_f64(x, r * 20 + i) - m, s = fabs(tensor_get_f64(sc, i));
            want[r * 20 + i] = d * wi[r] * tensor_get_f64(sc, i) + tensor_get_f64(b, i % 5);
            bound[r * 20 + i] = s * wi[r] * (dd + fabs(d) * rinv) +
                                sum_bound(3, fabs(d) * wi[r] * s + fabs(tensor_get_f64(b, i % 5)), U_FLOAT);
        }
    }
    double err = rc ? INFINITY : bound_ratio(&y, want, bound, 3, xd);
    double errm = rc ? INFINITY : bound_ratio(&mean, wm, bm, 3, (int64_t[]){3, 1, 1});
    double erri = rc ? INFINITY : bound_ratio(&inv, wi, bi, 3, (int64_t[]){3, 1, 1});
    ok(err <= 1 && errm <= 1 && erri <= 1,
       "LayerNormalization axis 1, broadcast B, Mean/InvStdDev: errors %.3g %.3g %.3g of their bounds", err, errm, erri);
    tensor_free(x); tensor_free(sc); tensor_free(b);
    tensor_free_data(&y); tensor_free_data(&mean); tensor_free_data(&inv);
}

static void test_batchnorm(void)
{
    int64_t xd[4] = {2, 3, 2, 3}, cd = 3;
    tensor_t *x = random_tensor(DT_DOUBLE, 4, xd, -2, 2), *p[4];
    for (int i = 0; i < 4; i++) p[i] = random_tensor(DT_DOUBLE, 1, &cd, i == 3 ? 0.5 : -1, 1.5);
    tnode_t t;
    node_init(&t, "BatchNormalization", 15, 5, 1);
    const tensor_t *in[5] = {x, p[0], p[1], p[2], p[3]};
    tensor_t y = {0}, *out[1] = {&y};
    perr_t e;
    int rc = run_node(&t, in, out, &e);
    double want[36];
    for (int i = 0; i < 36; i++) {
        int c = (i / 6) % 3;
        want[i] = tensor_get_f64(p[0], c) * (tensor_get_f64(x, i) - tensor_get_f64(p[2], c)) /
                  sqrt(tensor_get_f64(p[3], c) + (double)1e-5f) + tensor_get_f64(p[1], c);
    }
    double err = rc ? INFINITY : max_err(&y, want, 4, xd);
    ok(err < 1e-12, "BatchNormalization inference (float64): max error %.3g", err);
    tensor_free(x);
    for (int i = 0; i < 4; i++) tensor_free(p[i]);
    tensor_free_data(&y);
}

/* ---- Resize ---- */

static tensor_t *values(int nd, const int64_t *dims, const double *v)
{
    perr_t e = {0};
    tensor_t *t = tensor_new(DT_FLOAT, nd, dims, &e);
    for (int64_t i = 0; i < tensor_numel(t); i++) tensor_set_f64(t, i, v[i]);
    return t;
}

/* Runs Resize-13 with scales (nscales > 0) or sizes, attributes as pairs. */
static int resize(const tensor_t *x, const double *scales, const int64_t *sizes, const double *roi,
                  const char *mode, const char *ctm, tensor_t *y, perr_t *e)
{
    int nd = x->ndim;
    int64_t n1 = nd, n2 = 2 * nd;
    tensor_t *sc = scales ? values(1, &n1, scales) : NULL, *sz = NULL, *r = roi ? values(1, &n2, roi) : NULL;
    if (sizes) {
        sz = tensor_new(DT_INT64, 1, &n1, e);
        memcpy(sz->data, sizes, (size_t)nd * sizeof *sizes);
    }
    tnode_t t;
    node_init(&t, "Resize", 13, 4, 1);
    set_str(&t, "mode", mode);
    set_str(&t, "coordinate_transformation_mode", ctm);
    set_float(&t, "extrapolation_value", 9.0f);
    const tensor_t *in[4] = {x, r, sc, sz};
    tensor_t *out[1] = {y};
    int rc = run_node(&t, in, out, e);
    tensor_free(sc); tensor_free(sz); tensor_free(r);
    return rc;
}

static void check_resize(const char *name, const tensor_t *x, const double *scales, const int64_t *sizes,
                         const double *roi, const char *mode, const char *ctm, int nd, const int64_t *od,
                         const double *want)
{
    tensor_t y = {0};
    perr_t e;
    int rc = resize(x, scales, sizes, roi, mode, ctm, &y, &e);
    if (rc) diag("%s: %s", name, e.msg);
    /* every axis linear, coordinates from at most 6 operations (tf_crop_and_resize's roi) */
    int64_t no = 1, cmag = 0;
    for (int d = 0; d < nd; d++) {
        no *= od[d];
        cmag = od[d] > cmag ? od[d] : cmag;
        cmag = x->dims[d] > cmag ? x->dims[d] : cmag;
    }
    double *bound = same_bound(no, interp_bound(nd, 6, (double)cmag, max_abs(x), U_FLOAT));
    double err = rc ? INFINITY : bound_ratio(&y, want, bound, nd, od);
    ok(err <= 1, "Resize %s: max error %.3g of its bound", name, err);
    free(bound);
    tensor_free_data(&y);
}

static void test_resize(void)
{
    int64_t d22[4] = {1, 1, 2, 2};
    tensor_t *x22 = values(4, d22, (double[]){1, 2, 3, 4});
    /* half_pixel 2 -> 4: source coordinates (x + 0.5) / 2 - 0.5 = -0.25, 0.25,
     * 0.75, 1.25; clamped, each axis gives [a, .75a+.25b, .25a+.75b, b] */
    static const double up[16] = {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4};
    int64_t d44[4] = {1, 1, 4, 4};
    check_resize("bilinear half_pixel 2x2 -> 4x4 (scales)", x22, (double[]){1, 1, 2, 2}, NULL, NULL, "linear",
                 "half_pixel", 4, d44, up);
    check_resize("bilinear half_pixel 2x2 -> 4x4 (sizes)", x22, NULL, d44, NULL, "linear", "half_pixel", 4, d44, up);
    /* align_corners 2 -> 3: coordinates 0, 0.5, 1 */
    int64_t d33[4] = {1, 1, 3, 3};
    check_resize("bilinear align_corners 2x2 -> 3x3", x22, NULL, d33, NULL, "linear", "align_corners", 4, d33,
                 (double[]){1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4});
    /* nearest, half_pixel, round_prefer_floor: -0.25, 0.25, 0.75, 1.25 -> 0, 0, 1, 1 */
    check_resize("nearest 2x upsample", x22, (double[]){1, 1, 2, 2}, NULL, NULL, "nearest", "half_pixel", 4, d44,
                 (double[]){1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
    /* half_pixel 4 -> 2 of 1..16: coordinates 0.5 and 2.5: means of 2x2 blocks */
    int64_t d4[4] = {1, 1, 4, 4};
    double seq[16];
    for (int i = 0; i < 16; i++) seq[i] = i + 1;
    tensor_t *x44 = values(4, d4, seq);
    check_resize("bilinear half_pixel 4x4 -> 2x2", x44, (double[]){1, 1, 0.5, 0.5}, NULL, NULL, "linear",
                 "half_pixel", 4, d22, (double[]){3.5, 5.5, 11.5, 13.5});
    /* asymmetric 3 -> 6 along W: coordinates x / 2 = 0 .. 2.5 */
    int64_t d13[4] = {1, 1, 1, 3}, d16[4] = {1, 1, 1, 6}, d14[4] = {1, 1, 1, 4}, d1x3[4] = {1, 1, 1, 3};
    tensor_t *x13 = values(4, d13, (double[]){0, 10, 20});
    check_resize("linear asymmetric 1-D", x13, (double[]){1, 1, 1, 2}, NULL, NULL, "linear", "asymmetric", 4, d16,
                 (double[]){0, 5, 10, 15, 20, 20});
    /* tf_crop_and_resize, W roi [-0.5, 1.5] over 4 values, 3 outputs:
     * -0.5*3 + x*2*3/2 = -1.5, 1.5, 4.5: outside, 2.5 (between 2 and 3), outside */
    tensor_t *x14 = values(4, d14, (double[]){1, 2, 3, 4});
    check_resize("tf_crop_and_resize extrapolation", x14, NULL, d1x3, (double[]){0, 0, 0, -0.5, 1, 1, 1, 1.5},
                 "linear", "tf_crop_and_resize", 4, d1x3, (double[]){9, 2.5, 9});

    /* general N-D path: every axis interpolated (align_corners), trilinear loop */
    int64_t d3[3] = {2, 3, 4}, o3[3] = {3, 5, 7};
    tensor_t *x3 = random_tensor(DT_FLOAT, 3, d3, -1, 1);
    double want[105];
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 5; b++)
            for (int c = 0; c < 7; c++) {
                double ca = a * 1.0 / 2, cb = b * 2.0 / 4, cc = c * 3.0 / 6;   /* x*(in-1)/(out-1) */
                int a0 = (int)floor(ca), b0 = (int)floor(cb), c0 = (int)floor(cc);
                double acc = 0;
                for (int i = 0; i < 2; i++)
                    for (int j = 0; j < 2; j++)
                        for (int k = 0; k < 2; k++) {
                            int ia = a0 + i > 1 ? 1 : a0 + i, ib = b0 + j > 2 ? 2 : b0 + j, ic = c0 + k > 3 ? 3 : c0 + k;
                            double w = (i ? ca - a0 : 1 - (ca - a0)) * (j ? cb - b0 : 1 - (cb - b0)) *
                                       (k ? cc - c0 : 1 - (cc - c0));
                            acc += w * tensor_get_f64(x3, (ia * 3 + ib) * 4 + ic);
                        }
                want[(a * 5 + b) * 7 + c] = acc;
            }
    check_resize("trilinear align_corners (general path)", x3, NULL, o3, NULL, "linear", "align_corners", 3, o3, want);

    /* scales and sizes together are refused */
    tensor_t y = {0};
    perr_t e;
    int rc = resize(x22, (double[]){1, 1, 2, 2}, d44, NULL, "linear", "half_pixel", &y, &e);
    ok(rc != 0 && strstr(e.msg, "exactly one of scales and sizes"), "Resize with scales and sizes is refused: %s", e.msg);
    tensor_free(x22); tensor_free(x44); tensor_free(x13); tensor_free(x14); tensor_free(x3);
}

/* ---- GridSample ---- */

static double grid_pixel(const tensor_t *x, int64_t plane, int64_t H, int64_t W, int64_t yy, int64_t xx, int border)
{
    if (border) {
        yy = yy < 0 ? 0 : yy >= H ? H - 1 : yy;
        xx = xx < 0 ? 0 : xx >= W ? W - 1 : xx;
    }
    if (yy < 0 || yy >= H || xx < 0 || xx >= W) return 0;
    return tensor_get_f64(x, (plane * H + yy) * W + xx);
}

static void test_gridsample(void)
{
    int64_t xd[4] = {2, 3, 5, 6}, gd[4] = {2, 4, 7, 2}, od[4] = {2, 3, 4, 7};
    tensor_t *x = random_tensor(DT_FLOAT, 4, xd, -1, 1), *g = random_tensor(DT_FLOAT, 4, gd, -1.3, 1.3);
    for (int border = 0; border < 2; border++) {
        tnode_t t;
        node_init(&t, "GridSample", 16, 2, 1);
        set_str(&t, "padding_mode", border ? "border" : "zeros");
        const tensor_t *in[2] = {x, g};
        tensor_t y = {0}, *out[1] = {&y};
        perr_t e;
        int rc = run_node(&t, in, out, &e);
        if (rc) diag("GridSample: %s", e.msg);
        double want[168];
        for (int64_t n = 0; n < 2; n++)
            for (int64_t c = 0; c < 3; c++)
                for (int64_t q = 0; q < 28; q++) {
                    /* align_corners=0: pixel = ((g + 1) * size - 1) / 2 */
                    double ix = ((tensor_get_f64(g, (n * 28 + q) * 2) + 1) * 6 - 1) / 2;
                    double iy = ((tensor_get_f64(g, (n * 28 + q) * 2 + 1) + 1) * 5 - 1) / 2;
                    if (border) {   /* border clamps the coordinate before interpolating */
                        ix = fmin(5, fmax(0, ix));
                        iy = fmin(4, fmax(0, iy));
                    }
                    int64_t x0 = (int64_t)floor(ix), y0 = (int64_t)floor(iy);
                    double fx = ix - x0, fy = iy - y0;
                    int64_t pl = n * 3 + c;
                    want[pl * 28 + q] = (1 - fx) * (1 - fy) * grid_pixel(x, pl, 5, 6, y0, x0, border) +
                                        fx * (1 - fy) * grid_pixel(x, pl, 5, 6, y0, x0 + 1, border) +
                                        (1 - fx) * fy * grid_pixel(x, pl, 5, 6, y0 + 1, x0, border) +
                                        fx * fy * grid_pixel(x, pl, 5, 6, y0 + 1, x0 + 1, border);
                }
        /* ((g + 1) * size - 1) / 2: 3 operations, coordinates within (max|g| + 1) * 6 */
        double *bound = same_bound(168, interp_bound(2, 3, (max_abs(g) + 1) * 6, max_abs(x), U_FLOAT));
        double err = rc ? INFINITY : bound_ratio(&y, want, bound, 4, od);
        free(bound);
        ok(err <= 1, "GridSample bilinear, %s padding, align_corners=0: max error %.3g of its bound",
           border ? "border" : "zeros", err);
        tensor_free_data(&y);
    }
    tnode_t t;
    node_init(&t, "GridSample", 16, 2, 1);
    int64_t bad[4] = {2, 4, 7, 3};
    tensor_t *gb = random_tensor(DT_FLOAT, 4, bad, -1, 1), y = {0}, *out[1] = {&y};
    const tensor_t *in[2] = {x, gb};
    perr_t e;
    ok(run_node(&t, in, out, &e) != 0 && strstr(e.msg, "grid must have shape"), "GridSample with a bad grid is refused: %s",
       e.msg);
    tensor_free(x); tensor_free(g); tensor_free(gb);
}

/* ---- same bits for any thread count ---- */

/* Runs node t at 1 and at 3 threads; 1 if the outputs are byte-identical. */
static int same_bits(tnode_t *t, const tensor_t *const *in)
{
    tensor_t y1 = {0}, y3 = {0}, *o1[1] = {&y1}, *o3[1] = {&y3};
    perr_t e;
    pool_set_threads(1);
    int rc = run_node(t, in, o1, &e);
    pool_set_threads(3);
    rc |= run_node(t, in, o3, &e);
    pool_set_threads(1);
    if (rc) diag("%s: %s", t->n.op_type, e.msg);
    int same = !rc && tensor_nbytes(&y1) == tensor_nbytes(&y3) && !memcmp(y1.data, y3.data, tensor_nbytes(&y1));
    tensor_free_data(&y1);
    tensor_free_data(&y3);
    return same;
}

static void test_threads(void)
{
    int64_t xd[4] = {1, 16, 40, 36}, wd[4] = {32, 16, 3, 3}, dd[4] = {16, 1, 3, 3}, one[4] = {1, 1, 1, 1};
    tensor_t *x = random_tensor(DT_FLOAT, 4, xd, -1, 1), *w = random_tensor(DT_FLOAT, 4, wd, -1, 1);
    tensor_t *dw = random_tensor(DT_FLOAT, 4, dd, -1, 1);
    tnode_t t;
    node_init(&t, "Conv", 11, 2, 1);
    set_ints(&t, "pads", 4, one);
    ok(same_bits(&t, (const tensor_t *[]){x, w}), "Conv (tiled GEMM) gives the same bits at 1 and 3 threads");
    node_init(&t, "Conv", 11, 2, 1);
    set_int(&t, "group", 16);
    set_ints(&t, "pads", 4, one);
    ok(same_bits(&t, (const tensor_t *[]){x, dw}), "depthwise Conv gives the same bits at 1 and 3 threads");
    int64_t td[4] = {16, 8, 3, 3}, s2[2] = {2, 2};
    tensor_t *tw = random_tensor(DT_FLOAT, 4, td, -1, 1);
    node_init(&t, "ConvTranspose", 11, 2, 1);
    set_ints(&t, "strides", 2, s2);
    ok(same_bits(&t, (const tensor_t *[]){x, tw}), "ConvTranspose gives the same bits at 1 and 3 threads");
    tensor_free(tw);
    node_init(&t, "MaxPool", 12, 1, 1);
    int64_t k[2] = {3, 3};
    set_ints(&t, "kernel_shape", 2, k);
    set_ints(&t, "strides", 2, s2);
    ok(same_bits(&t, (const tensor_t *[]){x}), "MaxPool gives the same bits at 1 and 3 threads");
    int64_t ld[1] = {36};
    tensor_t *sc = random_tensor(DT_FLOAT, 1, ld, -1, 1);
    node_init(&t, "LayerNormalization", 17, 2, 1);
    ok(same_bits(&t, (const tensor_t *[]){x, sc}), "LayerNormalization gives the same bits at 1 and 3 threads");
    int64_t n4 = 4;
    tensor_t *scales = tensor_new(DT_FLOAT, 1, &n4, &(perr_t){0});
    float *sv = scales->data;
    sv[0] = sv[1] = 1;
    sv[2] = sv[3] = 2;
    node_init(&t, "Resize", 13, 3, 1);
    set_str(&t, "mode", "linear");
    ok(same_bits(&t, (const tensor_t *[]){x, NULL, scales}), "Resize linear gives the same bits at 1 and 3 threads");
    int64_t gd[4] = {1, 700, 4, 2};
    tensor_t *g = random_tensor(DT_FLOAT, 4, gd, -1.1, 1.1);
    node_init(&t, "GridSample", 16, 2, 1);
    ok(same_bits(&t, (const tensor_t *[]){x, g}), "GridSample gives the same bits at 1 and 3 threads");
    tensor_free(x); tensor_free(w); tensor_free(dw); tensor_free(sc); tensor_free(scales); tensor_free(g);
}

int main(void)
{
    test_pools();
    test_layernorm();
    test_batchnorm();
    test_resize();
    test_gridsample();
    test_threads();
    scratch_pool_free(&pool);
    return done_testing();
}
