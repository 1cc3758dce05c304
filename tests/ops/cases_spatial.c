/* cases_spatial.c — the NN family's window, norm and sampling kernels:
 * MaxPool (Indices, storage_order, dilations) and AveragePool
 * (count_include_pad, ceil_mode) against window loops; LayerNormalization
 * and BatchNormalization against their formulas in double, with bounds
 * derived step by step; Resize against values worked out by hand from the
 * spec's coordinate formulas (the comments next to them) and a direct
 * multilinear loop; GridSample against PyTorch's bilinear formula written
 * out; bad input refused; and the same bytes at 1 and 3 threads. */
#include <string.h>
#include "harness.h"

static void ints_or(const oc_inst_t *t, const char *nm, int n, int64_t dflt, int64_t *v)
{
    const oc_attr_t *a = oc_attr(t, nm);
    for (int i = 0; i < n; i++) v[i] = a ? a->i[i] : dflt;
}

/* ---- pools (2-D) ---- */

/* Output size of one axis: floor, or with ceil_mode ceil, dropping a last
 * window that would start past the input and its begin padding. */
static int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t d, int64_t p0, int64_t p1, int ceil_mode)
{
    int64_t span = in + p0 + p1 - ((k - 1) * d + 1);
    int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
    if (ceil_mode && (out - 1) * s >= in + p0) out--;
    return out;
}

/* MaxPool: values exact and, as a second output, the flat argmax (row- or
 * column-major by storage_order); AveragePool: the mean of the window's
 * inputs (count_include_pad: of its padded extent), 9 roundings of the sum
 * of at most 9 values and 1 of the division. */
static int ref_pool(const oc_inst_t *t, oc_want_t *w)
{
    const tensor_t *x = t->in[0];
    int is_max = !strcmp(t->c->op, "MaxPool"), ceil_mode = (int)oc_int(t, "ceil_mode", 0);
    int col_major = (int)oc_int(t, "storage_order", 0), include_pad = (int)oc_int(t, "count_include_pad", 0);
    int64_t k[2], s[2], d[2], pads[4];
    ints_or(t, "kernel_shape", 2, 1, k);
    ints_or(t, "strides", 2, 1, s);
    ints_or(t, "dilations", 2, 1, d);
    ints_or(t, "pads", 4, 0, pads);
    int64_t N = x->dims[0] * x->dims[1], H = x->dims[2], W = x->dims[3];
    int64_t oh = pool_out(H, k[0], s[0], d[0], pads[0], pads[2], ceil_mode);
    int64_t ow = pool_out(W, k[1], s[1], d[1], pads[1], pads[3], ceil_mode);
    int64_t od[4] = {x->dims[0], x->dims[1], oh, ow};
    oc_want_shape(&w[0], x->dtype, 4, od, 0);
    if (is_max && t->n_out > 1) oc_want_shape(&w[1], DT_INT64, 4, od, 0);
    double bound = is_max ? 0 : sum_bound((double)(k[0] * k[1] + 1), max_abs(x), U_FLOAT);
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
                w[0].val[o] = is_max ? best : sum / (double)(include_pad ? cnt_pad : cnt);
                w[0].bound[o] = bound;
                if (is_max && t->n_out > 1) w[1].val[o] = (double)bi;
            }
    return 0;
}

/* ---- norms ---- */

/* LayerNormalization over the axes from axis on, with Mean and InvStdDev.
 * Bounds for a two-pass float32 kernel, to first order (bounds.h's gamma;
 * second-order terms are below u^2 of the values): the mean is off by
 * dm = gamma(n + 1) mean|x|, a deviation by dd = dm + u max|d|, the
 * variance by dv = 2 mean|d| dd + gamma(n + 2) var, 1/sqrt(var + eps)
 * relatively by dv / (2 (var + eps)) + gamma(3), and the output by the
 * deviation's and the scale's errors through * inv * scale + B (3
 * roundings). With a large offset dm, not the roundings of the output, is
 * the largest term: a one-pass variance overshoots it. */
static int ref_layernorm(const oc_inst_t *t, oc_want_t *w)
{
    const tensor_t *x = t->in[0], *sc = t->in[1], *b = t->n_in > 2 ? t->in[2] : NULL;
    int axis = (int)oc_int(t, "axis", -1);
    if (axis < 0) axis += x->ndim;
    double eps = oc_float(t, "epsilon", 1e-5f), g = gamma_n(1, U_FLOAT) + gamma_n(1, U_DOUBLE);
    int64_t rows = oc_numel(axis, x->dims), n = tensor_numel(x) / rows, sd[TENSOR_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) sd[d] = d < axis ? x->dims[d] : 1;
    oc_want_shape(&w[0], x->dtype, x->ndim, x->dims, 0);
    for (int k = 1; k < t->n_out; k++) oc_want_shape(&w[k], DT_FLOAT, x->ndim, sd, 0);
    for (int64_t r = 0; r < rows; r++) {
        const int64_t o = r * n;
        double m = 0, v = 0, ma = 0, da = 0, dmax = 0;
        for (int64_t i = 0; i < n; i++) m += tensor_get_f64(x, o + i), ma += fabs(tensor_get_f64(x, o + i)) / (double)n;
        m /= (double)n;
        for (int64_t i = 0; i < n; i++) {
            double d = tensor_get_f64(x, o + i) - m;
            v += d * d;
            da += fabs(d) / (double)n;
            dmax = fmax(dmax, fabs(d));
        }
        v /= (double)n;
        double inv = 1 / sqrt(v + eps), dm = sum_bound((double)n + 1, ma, U_FLOAT), dd = dm + g * dmax;
        double dv = 2 * da * dd + sum_bound((double)n + 2, v, U_FLOAT);
        double rinv = dv / (2 * (v + eps)) + sum_bound(3, 1, U_FLOAT);
        if (t->n_out > 1) w[1].val[r] = m, w[1].bound[r] = dm + g * fabs(m);
        if (t->n_out > 2) w[2].val[r] = inv, w[2].bound[r] = rinv * inv + g * inv;
        for (int64_t i = 0; i < n; i++) {
            double d = tensor_get_f64(x, o + i) - m, s = tensor_get_f64(sc, i % tensor_numel(sc));
            double bv = b ? tensor_get_f64(b, i % tensor_numel(b)) : 0;
            w[0].val[o + i] = d * inv * s + bv;
            w[0].bound[o + i] = fabs(s) * inv * (dd + fabs(d) * rinv) + sum_bound(3, fabs(d) * inv * fabs(s) + fabs(bv), U_FLOAT);
        }
    }
    return 0;
}

/* BatchNormalization (inference) in the input's type: x - mean (its error
 * relative to |x| + |mean|, as it may cancel), the square root and the
 * division, the scale and the bias: 6 roundings. */
static int ref_batchnorm(const oc_inst_t *t, oc_want_t *w)
{
    const tensor_t *x = t->in[0];
    double eps = oc_float(t, "epsilon", 1e-5f), u = x->dtype == DT_DOUBLE ? U_DOUBLE : U_FLOAT;
    int64_t C = x->dims[1], plane = tensor_numel(x) / (x->dims[0] * C);
    oc_want_shape(w, x->dtype, x->ndim, x->dims, 0);
    for (int64_t i = 0; i < tensor_numel(x); i++) {
        int64_t c = i / plane % C;
        double s = tensor_get_f64(t->in[1], c), b = tensor_get_f64(t->in[2], c), m = tensor_get_f64(t->in[3], c);
        double r = 1 / sqrt(tensor_get_f64(t->in[4], c) + eps), xv = tensor_get_f64(x, i);
        w->val[i] = s * (xv - m) * r + b;
        w->bound[i] = sum_bound(6, fabs(s) * (fabs(xv) + fabs(m)) * r + fabs(b), u);
    }
    return 0;
}

/* ---- Resize ---- */

/* The output shape: sizes (input 3), or floor(dims * scales) (input 2). */
static void resize_dims(const oc_inst_t *t, int64_t *od)
{
    const tensor_t *x = t->in[0];
    for (int d = 0; d < x->ndim; d++)
        od[d] = t->n_in > 3 && t->in[3] ? tensor_get_i64(t->in[3], d)
                                       : (int64_t)floor((double)x->dims[d] * tensor_get_f64(t->in[2], d));
}

/* Linear interpolation, every axis: coordinates from at most 6 operations
 * (tf_crop_and_resize's roi), at most the largest size in magnitude. */
static double resize_bound(const oc_inst_t *t, const int64_t *od)
{
    const tensor_t *x = t->in[0];
    int64_t cmag = 0;
    for (int d = 0; d < x->ndim; d++) cmag = od[d] > cmag ? od[d] : x->dims[d] > cmag ? x->dims[d] : cmag;
    return interp_bound(x->ndim, 6, (double)cmag, max_abs(x), U_FLOAT);
}

/* The values the case lists (param[0] of them), worked out by hand. */
static int ref_resize_listed(const oc_inst_t *t, oc_want_t *w)
{
    int64_t od[TENSOR_MAX_DIMS];
    resize_dims(t, od);
    oc_want_shape(w, DT_FLOAT, t->in[0]->ndim, od, 0);
    if (oc_numel(t->in[0]->ndim, od) != (int64_t)t->c->param[0]) return -1;
    for (int64_t i = 0; i < (int64_t)t->c->param[0]; i++) {
        w->val[i] = t->c->expect[i];
        w->bound[i] = resize_bound(t, od);
    }
    return 0;
}

/* align_corners, every axis linear: coordinate x (in - 1) / (out - 1), the
 * 2^nd taps' weights multiplied out. */
static int ref_resize_align(const oc_inst_t *t, oc_want_t *w)
{
    const tensor_t *x = t->in[0];
    int nd = x->ndim;
    int64_t od[TENSOR_MAX_DIMS], oc[TENSOR_MAX_DIMS], ic[TENSOR_MAX_DIMS];
    resize_dims(t, od);
    oc_want_shape(w, DT_FLOAT, nd, od, 0);
    for (int64_t i = 0; i < oc_numel(nd, od); i++) {
        double c[TENSOR_MAX_DIMS], acc = 0;
        oc_unravel(i, nd, od, oc);
        for (int d = 0; d < nd; d++) c[d] = od[d] > 1 ? (double)oc[d] * (double)(x->dims[d] - 1) / (double)(od[d] - 1) : 0;
        for (int tap = 0; tap < 1 << nd; tap++) {
            double wt = 1;
            int64_t off = 0;
            for (int d = 0; d < nd; d++) {
                int64_t c0 = (int64_t)floor(c[d]), hi = tap >> d & 1;
                double f = c[d] - (double)c0;
                ic[d] = c0 + hi > x->dims[d] - 1 ? x->dims[d] - 1 : c0 + hi;
                wt *= hi ? f : 1 - f;
                off = off * x->dims[d] + ic[d];
            }
            acc += wt * tensor_get_f64(x, off);
        }
        w->val[i] = acc;
        w->bound[i] = resize_bound(t, od);
    }
    return 0;
}

/* ---- GridSample: PyTorch's bilinear formula, align_corners 0 ---- */

static double grid_pixel(const tensor_t *x, int64_t plane, int64_t yy, int64_t xx, int border)
{
    int64_t H = x->dims[2], W = x->dims[3];
    if (border) {
        yy = yy < 0 ? 0 : yy >= H ? H - 1 : yy;
        xx = xx < 0 ? 0 : xx >= W ? W - 1 : xx;
    }
    if (yy < 0 || yy >= H || xx < 0 || xx >= W) return 0;
    return tensor_get_f64(x, (plane * H + yy) * W + xx);
}

static int ref_gridsample(const oc_inst_t *t, oc_want_t *w)
{
    const tensor_t *x = t->in[0], *g = t->in[1];
    const oc_attr_t *pm = oc_attr(t, "padding_mode");
    int border = pm && !strcmp(pm->s, "border");
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3], Q = g->dims[1] * g->dims[2];
    int64_t od[4] = {N, C, g->dims[1], g->dims[2]};
    oc_want_shape(w, x->dtype, 4, od, 0);
    /* ((g + 1) * size - 1) / 2: 3 operations, coordinates within (max|g| + 1) * size */
    double bound = interp_bound(2, 3, (max_abs(g) + 1) * (double)(H > W ? H : W), max_abs(x), U_FLOAT);
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t q = 0; q < Q; q++) {
                double ix = ((tensor_get_f64(g, (n * Q + q) * 2) + 1) * (double)W - 1) / 2;
                double iy = ((tensor_get_f64(g, (n * Q + q) * 2 + 1) + 1) * (double)H - 1) / 2;
                if (border) {   /* border clamps the coordinate before interpolating */
                    ix = fmin((double)W - 1, fmax(0, ix));
                    iy = fmin((double)H - 1, fmax(0, iy));
                }
                int64_t x0 = (int64_t)floor(ix), y0 = (int64_t)floor(iy), pl = n * C + c;
                double fx = ix - (double)x0, fy = iy - (double)y0;
                w->val[pl * Q + q] = (1 - fx) * (1 - fy) * grid_pixel(x, pl, y0, x0, border) +
                                     fx * (1 - fy) * grid_pixel(x, pl, y0, x0 + 1, border) +
                                     (1 - fx) * fy * grid_pixel(x, pl, y0 + 1, x0, border) +
                                     fx * fy * grid_pixel(x, pl, y0 + 1, x0 + 1, border);
                w->bound[pl * Q + q] = bound;
            }
    return 0;
}

#define X2378 IN_U(DT_FLOAT, -1, 1, DIMS(2, 3, 7, 8))
#define X16 IN_U(DT_FLOAT, -1, 1, DIMS(1, 16, 40, 36))
#define MAXPOOL(order) {.op = "MaxPool", .opset = 12, .what = "dilated, strided, padded; values and Indices, storage_order " #order, \
        .n_in = 1, .n_out = 2, .in = {X2378}, .ref = ref_pool, \
        .attr = {AIS("kernel_shape", 3, 2), AIS("strides", 2, 3), AIS("dilations", 2, 1), AIS("pads", 1, 0, 2, 1), \
                 AI("storage_order", order)}}
#define AVGPOOL(inc) {.op = "AveragePool", .opset = 11, .what = "ceil_mode, count_include_pad=" #inc, .n_in = 1, \
        .in = {X2378}, .ref = ref_pool, .attr = {AIS("kernel_shape", 3, 3), AIS("strides", 2, 2), AIS("pads", 1, 1, 1, 1), \
                                               AI("ceil_mode", 1), AI("count_include_pad", inc)}}
#define X22 IN_V(DT_FLOAT, DIMS(1, 1, 2, 2), 1, 2, 3, 4)
#define SCALES(...) IN_V(DT_FLOAT, DIMS(4), __VA_ARGS__)
#define SIZES(...) IN_L(DT_INT64, DIMS(4), __VA_ARGS__)
#define RESIZE(what_, mode, ctm, x, roi, sc, sz, ...) {.op = "Resize", .opset = 13, .what = what_, .n_in = 4, \
        .in = {x, roi, sc, sz}, .attr = {AS("mode", mode), AS("coordinate_transformation_mode", ctm), \
                                         AF("extrapolation_value", 9.0f)}, \
        .ref = ref_resize_listed, .expect = (const double[]){__VA_ARGS__}, .param = {OC_NARGS(double, __VA_ARGS__)}}
/* half_pixel 2 -> 4: source coordinates (x + 0.5) / 2 - 0.5 = -0.25, 0.25,
 * 0.75, 1.25; clamped, each axis gives [a, .75a+.25b, .25a+.75b, b] */
#define UP22 1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4

const op_case_t cases_spatial[] = {
    MAXPOOL(0), MAXPOOL(1), AVGPOOL(0), AVGPOOL(1),
    {.op = "MaxPool", .opset = 12, .what = "a kernel larger than the padded input", .n_in = 1, .in = {X2378},
     .attr = {AIS("kernel_shape", 9, 2)}, .fail = "larger than the padded input"},
    {.op = "LayerNormalization", .opset = 17, .what = "axis 1, offset 100 (two-pass variance), broadcast B, Mean/InvStdDev",
     .n_in = 3, .n_out = 3,
     .in = {IN_U(DT_FLOAT, 100, 101, DIMS(3, 4, 5)), IN_U(DT_FLOAT, 0.5, 2, DIMS(4, 5)), IN_U(DT_FLOAT, -1, 1, DIMS(5))},
     .attr = {AI("axis", 1), AF("epsilon", 1e-3f)}, .ref = ref_layernorm},
    {.op = "BatchNormalization", .opset = 15, .what = "inference, float32", .n_in = 5,
     .in = {IN_U(DT_FLOAT, -2, 2, DIMS(2, 3, 2, 3)), IN_U(DT_FLOAT, -1, 1.5, DIMS(3)), IN_U(DT_FLOAT, -1, 1.5, DIMS(3)),
            IN_U(DT_FLOAT, -1, 1.5, DIMS(3)), IN_U(DT_FLOAT, 0.5, 1.5, DIMS(3))},
     .ref = ref_batchnorm},
    {.op = "BatchNormalization", .opset = 15, .what = "inference, float64", .n_in = 5,
     .in = {IN_U(DT_DOUBLE, -2, 2, DIMS(2, 3, 2, 3)), IN_U(DT_DOUBLE, -1, 1.5, DIMS(3)), IN_U(DT_DOUBLE, -1, 1.5, DIMS(3)),
            IN_U(DT_DOUBLE, -1, 1.5, DIMS(3)), IN_U(DT_DOUBLE, 0.5, 1.5, DIMS(3))},
     .ref = ref_batchnorm},
    RESIZE("bilinear half_pixel 2x2 -> 4x4 (scales)", "linear", "half_pixel", X22, IN_NONE, SCALES(1, 1, 2, 2), IN_NONE,
           UP22),
    RESIZE("bilinear half_pixel 2x2 -> 4x4 (sizes)", "linear", "half_pixel", X22, IN_NONE, IN_NONE, SIZES(1, 1, 4, 4),
           UP22),
    /* align_corners 2 -> 3: coordinates 0, 0.5, 1 */
    RESIZE("bilinear align_corners 2x2 -> 3x3", "linear", "align_corners", X22, IN_NONE, IN_NONE, SIZES(1, 1, 3, 3),
           1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4),
    /* nearest, half_pixel, round_prefer_floor: -0.25, 0.25, 0.75, 1.25 -> 0, 0, 1, 1 */
    RESIZE("nearest 2x upsample", "nearest", "half_pixel", X22, IN_NONE, SCALES(1, 1, 2, 2), IN_NONE,
           1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4),
    /* half_pixel 4 -> 2 of 1..16: coordinates 0.5 and 2.5: means of 2x2 blocks */
    RESIZE("bilinear half_pixel 4x4 -> 2x2", "linear", "half_pixel",
           IN_V(DT_FLOAT, DIMS(1, 1, 4, 4), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16), IN_NONE,
           SCALES(1, 1, 0.5, 0.5), IN_NONE, 3.5, 5.5, 11.5, 13.5),
    /* asymmetric 3 -> 6 along W: coordinates x / 2 = 0 .. 2.5 */
    RESIZE("linear asymmetric 1-D", "linear", "asymmetric", IN_V(DT_FLOAT, DIMS(1, 1, 1, 3), 0, 10, 20), IN_NONE,
           SCALES(1, 1, 1, 2), IN_NONE, 0, 5, 10, 15, 20, 20),
    /* tf_crop_and_resize, W roi [-0.5, 1.5] over 4 values, 3 outputs:
     * -0.5*3 + x*2*3/2 = -1.5, 1.5, 4.5: outside, 2.5 (between 2 and 3), outside */
    RESIZE("tf_crop_and_resize extrapolation", "linear", "tf_crop_and_resize", IN_V(DT_FLOAT, DIMS(1, 1, 1, 4), 1, 2, 3, 4),
           IN_V(DT_FLOAT, DIMS(8), 0, 0, 0, -0.5, 1, 1, 1, 1.5), IN_NONE, SIZES(1, 1, 1, 3), 9, 2.5, 9),
    {.op = "Resize", .opset = 13, .what = "trilinear align_corners (general path)", .n_in = 4,
     .in = {IN_U(DT_FLOAT, -1, 1, DIMS(2, 3, 4)), IN_NONE, IN_NONE, IN_L(DT_INT64, DIMS(3), 3, 5, 7)},
     .attr = {AS("mode", "linear"), AS("coordinate_transformation_mode", "align_corners")}, .ref = ref_resize_align},
    {.op = "Resize", .opset = 13, .what = "scales and sizes both given", .n_in = 4,
     .in = {X22, IN_NONE, SCALES(1, 1, 2, 2), SIZES(1, 1, 4, 4)}, .attr = {AS("mode", "linear")},
     .fail = "exactly one of scales and sizes"},
    {.op = "GridSample", .opset = 16, .what = "bilinear, zeros padding, align_corners=0", .n_in = 2,
     .in = {IN_U(DT_FLOAT, -1, 1, DIMS(2, 3, 5, 6)), IN_U(DT_FLOAT, -1.3, 1.3, DIMS(2, 4, 7, 2))},
     .attr = {AS("padding_mode", "zeros")}, .ref = ref_gridsample},
    {.op = "GridSample", .opset = 16, .what = "bilinear, border padding, align_corners=0", .n_in = 2,
     .in = {IN_U(DT_FLOAT, -1, 1, DIMS(2, 3, 5, 6)), IN_U(DT_FLOAT, -1.3, 1.3, DIMS(2, 4, 7, 2))},
     .attr = {AS("padding_mode", "border")}, .ref = ref_gridsample},
    {.op = "GridSample", .opset = 16, .what = "a grid of the wrong shape", .n_in = 2,
     .in = {IN_U(DT_FLOAT, -1, 1, DIMS(2, 3, 5, 6)), IN_U(DT_FLOAT, -1, 1, DIMS(2, 4, 7, 3))}, .fail = "grid must have shape"},
    /* the same bytes at 1 and 3 threads */
    {.op = "MaxPool", .opset = 12, .what = "3x3 stride 2, 1 and 3 threads", .n_in = 1, .threads = 3, .in = {X16},
     .attr = {AIS("kernel_shape", 3, 3), AIS("strides", 2, 2)}, .ref = ref_pool},
    {.op = "LayerNormalization", .opset = 17, .what = "last axis, 1 and 3 threads", .n_in = 2, .threads = 3,
     .in = {X16, IN_U(DT_FLOAT, -1, 1, DIMS(36))}, .ref = ref_layernorm},
    {.op = "Resize", .opset = 13, .what = "linear 2x, 1 and 3 threads", .n_in = 3, .threads = 3,
     .in = {X16, IN_NONE, SCALES(1, 1, 2, 2)}, .attr = {AS("mode", "linear")}},
    {.op = "GridSample", .opset = 16, .what = "1 and 3 threads", .n_in = 2, .threads = 3,
     .in = {X16, IN_U(DT_FLOAT, -1.1, 1.1, DIMS(1, 700, 4, 2))}, .ref = ref_gridsample},
};
const int cases_spatial_n = sizeof cases_spatial / sizeof cases_spatial[0];
