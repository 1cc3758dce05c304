/* resize.c — Resize (opsets 10 to 18) and Upsample (7 to 10).
 *
 * Interpolation is separable, so each axis gets a table: for every output
 * index, its taps (input indices, clamped as the spec's edge padding does)
 * and weights, plus an "outside" flag for tf_crop_and_resize. Coordinates
 * follow the ONNX reference (backend/test/case/node/resize.py): a position
 * that falls exactly on an input index takes ratio 1 on the tap to its left.
 * Axes whose table is the identity collapse to one tap, so 4-D NCHW inputs
 * run a 2-D plane kernel (gather for nearest, 2x2 taps for bilinear);
 * anything else runs a general N-D loop over tap combinations. FP32
 * bilinear in the modes ONNX Runtime's own kernel takes follows its float
 * arithmetic instead, to the bit (below: "bilinear in ONNX Runtime's order"). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ops/nn/nn_impl.h"

enum { RZ_NEAREST, RZ_LINEAR, RZ_CUBIC };
enum { CT_HALF_PIXEL, CT_PYTORCH_HALF_PIXEL, CT_ALIGN_CORNERS, CT_ASYMMETRIC, CT_TF_HALF_PIXEL_FOR_NN,
       CT_TF_CROP_AND_RESIZE, CT_HALF_PIXEL_SYMMETRIC };
enum { NM_ROUND_PREFER_FLOOR, NM_ROUND_PREFER_CEIL, NM_FLOOR, NM_CEIL, NM_SIMPLE };

typedef struct rz_plan {
    int rank, mode, ctm, nearest, exclude, antialias;
    double cubic_a, extrap;
    int64_t in[TENSOR_MAX_DIMS], out[TENSOR_MAX_DIMS];
    double scale[TENSOR_MAX_DIMS];     /* used by the coordinate transforms */
    float fscale[TENSOR_MAX_DIMS];     /* the same as ONNX Runtime holds it (ort_bilinear) */
    double len[TENSOR_MAX_DIMS];       /* "length_resized" of the reference: scale * in */
    double roi0[TENSOR_MAX_DIMS], roi1[TENSOR_MAX_DIMS];
} rz_plan_t;

static int lookup(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i])) return i;
    return -1;
}

/* Attributes common to Resize's opsets. */
static int rz_attrs(op_ctx_t *c, rz_plan_t *p)
{
    static const char *const modes[] = {"nearest", "linear", "cubic"};
    static const char *const ctms[] = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                                       "tf_half_pixel_for_nn", "tf_crop_and_resize", "half_pixel_symmetric"};
    static const char *const nms[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
    char buf[64];
    const char *s = attr_string(c->node, "mode", "nearest", buf, sizeof buf);
    /* Upsample-7 spells linear "bilinear" in some exporters */
    p->mode = !strcmp(s, "bilinear") ? RZ_LINEAR : lookup(s, modes, 3);
    if (p->mode < 0) return op_fail(c, "mode '%s' is not one of nearest, linear, cubic", s);
    if (c->node->opset < 11 || strcmp(c->node->op_type, "Resize")) {
        p->ctm = CT_ASYMMETRIC;
        p->nearest = NM_SIMPLE;
    } else {
        s = attr_string(c->node, "coordinate_transformation_mode", "half_pixel", buf, sizeof buf);
        if ((p->ctm = lookup(s, ctms, 7)) < 0) return op_fail(c, "coordinate_transformation_mode '%s' is unknown", s);
        s = attr_string(c->node, "nearest_mode", "round_prefer_floor", buf, sizeof buf);
        if ((p->nearest = lookup(s, nms, 4)) < 0) return op_fail(c, "nearest_mode '%s' is unknown", s);
    }
    p->cubic_a = attr_float(c->node, "cubic_coeff_a", -0.75f);
    p->exclude = attr_int(c->node, "exclude_outside", 0) != 0;
    p->extrap = attr_float(c->node, "extrapolation_value", 0.0f);
    p->antialias = attr_int(c->node, "antialias", 0) != 0 && p->mode != RZ_NEAREST;
    return 0;
}

/* Reads scales (float) or sizes (int64) given for the listed axes. */
static int rz_sizes(op_ctx_t *c, rz_plan_t *p, const tensor_t *scales, const tensor_t *sizes)
{
    const tensor_t *x = c->in[0];
    int64_t axes[TENSOR_MAX_DIMS];
    const int64_t *av;
    int na = attr_ints(c->node, "axes", &av);
    if (na < 0 || c->node->opset < 18) {
        na = x->ndim;
        for (int i = 0; i < na; i++) axes[i] = i;
    } else {
        if (na > x->ndim) return op_fail(c, "axes has %d values for rank %d", na, x->ndim);
        for (int i = 0; i < na; i++) {
            int a = op_axis(c, av[i], x->ndim);
            if (a < 0) return -1;
            axes[i] = a;
        }
    }
    p->rank = x->ndim;
    for (int i = 0; i < x->ndim; i++) {
        p->in[i] = p->out[i] = x->dims[i];
        p->scale[i] = 1;
        p->fscale[i] = 1;
        p->len[i] = (double)x->dims[i];
    }
    if (scales) {
        if (!scales->data) return OP_DYNAMIC;
        if (scales->dtype != DT_FLOAT && scales->dtype != DT_DOUBLE)
            return op_fail(c, "scales must be float, got %s", dtype_name(scales->dtype));
        if (tensor_numel(scales) != na)
            return op_fail(c, "scales has %lld values, expected %d", (long long)tensor_numel(scales), na);
        for (int i = 0; i < na; i++) {
            double s = tensor_get_f64(scales, i);
            int a = (int)axes[i];
            if (!(s > 0) || !(s < 1e9)) return op_fail(c, "scales[%d] = %g must be a positive number", i, s);
            p->scale[a] = s;
            p->fscale[a] = (float)s;
            p->len[a] = s * (double)p->in[a];
            if (p->len[a] > (double)TENSOR_MAX_BYTES) return op_fail(c, "scales[%d] = %g is too large", i, s);
            p->out[a] = (int64_t)floor(p->len[a]);
        }
        return 0;
    }
    if (!sizes->data) return OP_DYNAMIC;
    int64_t sz[TENSOR_MAX_DIMS];
    if (tensor_numel(sizes) != na)
        return op_fail(c, "sizes has %lld values, expected %d", (long long)tensor_numel(sizes), na);
    if (op_read_ints(c, sizes, sz, na) < 0) return -1;
    for (int i = 0; i < na; i++)
        if (sz[i] < 0) return op_fail(c, "sizes[%d] = %lld is negative", i, (long long)sz[i]);
    char buf[32];
    const char *pol = attr_string(c->node, "keep_aspect_ratio_policy", "stretch", buf, sizeof buf);
    if (strcmp(pol, "stretch") && c->node->opset >= 18) {
        int larger = !strcmp(pol, "not_smaller");
        if (!larger && strcmp(pol, "not_larger")) return op_fail(c, "keep_aspect_ratio_policy '%s' is unknown", pol);
        double s = larger ? 0 : INFINITY;
        for (int i = 0; i < na; i++) {
            double r = p->in[axes[i]] ? (double)sz[i] / (double)p->in[axes[i]] : 1;
            s = larger ? fmax(s, r) : fmin(s, r);
        }
        for (int i = 0; i < na; i++) {
            int a = (int)axes[i];
            p->scale[a] = s;
            p->fscale[a] = (float)s;
            p->out[a] = (int64_t)floor(s * (double)p->in[a] + 0.5);
            p->len[a] = s * (double)p->in[a];
        }
        return 0;
    }
    for (int i = 0; i < na; i++) {
        int a = (int)axes[i];
        p->out[a] = sz[i];
        p->scale[a] = p->in[a] ? (double)sz[i] / (double)p->in[a] : 1;
        /* ONNX Runtime divides the sizes in float */
        p->fscale[a] = p->in[a] ? (float)sz[i] / (float)p->in[a] : 1;
        p->len[a] = (double)sz[i];
    }
    return 0;
}

static int resize_plan(op_ctx_t *c, rz_plan_t *p, int with_roi)
{
    memset(p, 0, sizeof *p);
    int op10 = c->node->opset < 11;
    if (op_check_inputs(c, op10 ? 2 : 1, op10 ? 2 : 4)) return -1;
    if (rz_attrs(c, p)) return -1;
    const tensor_t *roi = !op10 && c->n_in > 1 ? c->in[1] : NULL;
    const tensor_t *scales = op10 ? c->in[1] : c->n_in > 2 ? c->in[2] : NULL;
    const tensor_t *sizes = !op10 && c->n_in > 3 ? c->in[3] : NULL;
    /* opset 11 requires a scales input but lets it be empty when sizes is given */
    if (scales && tensor_numel(scales) == 0 && scales->ndim == 1) scales = NULL;
    if (sizes && tensor_numel(sizes) == 0 && sizes->ndim == 1) sizes = NULL;
    if (!scales == !sizes) return op_fail(c, "exactly one of scales and sizes must be given");
    int rc = rz_sizes(c, p, scales, sizes);
    if (rc) return rc;
    for (int i = 0; i < p->rank; i++) {
        p->roi0[i] = 0;
        p->roi1[i] = 1;
    }
    if (with_roi && p->ctm == CT_TF_CROP_AND_RESIZE) {
        if (!roi || !roi->data) return op_fail(c, "tf_crop_and_resize needs the roi input");
        if (!dtype_is_float(roi->dtype)) return op_fail(c, "roi must be a float tensor");
        int64_t nr = tensor_numel(roi);
        if (nr != 2 * p->rank) return op_fail(c, "roi has %lld values, expected %d", (long long)nr, 2 * p->rank);
        for (int i = 0; i < p->rank; i++) {
            p->roi0[i] = tensor_get_f64(roi, i);
            p->roi1[i] = tensor_get_f64(roi, p->rank + i);
        }
    }
    return 0;
}

int resize_shape(op_ctx_t *c)
{
    rz_plan_t p;
    int rc = resize_plan(c, &p, 0);
    if (rc) return rc;
    return op_set_out(c, 0, c->in[0]->dtype, p.rank, p.out);
}

/* ------------------------------------------------------------- tap tables */

typedef struct rz_axis {
    int nt;                 /* taps per output index */
    int64_t *idx;           /* [out * nt] input indices (clamped) */
    double *w;              /* [out * nt] weights */
    unsigned char *outside; /* [out] tf_crop_and_resize extrapolation, or NULL */
} rz_axis_t;

static double original_coord(const rz_plan_t *p, int a, double x, int *outside)
{
    double in = (double)p->in[a], s = p->scale[a], len = p->len[a];
    *outside = 0;
    switch (p->ctm) {
    case CT_PYTORCH_HALF_PIXEL: return len > 1 ? (x + 0.5) / s - 0.5 : 0;
    case CT_ALIGN_CORNERS: return len == 1 ? 0 : x * (in - 1) / (len - 1);
    case CT_ASYMMETRIC: return x / s;
    case CT_TF_HALF_PIXEL_FOR_NN: return (x + 0.5) / s;
    case CT_TF_CROP_AND_RESIZE: {
        double r0 = p->roi0[a], r1 = p->roi1[a];
        double xo = len > 1 ? r0 * (in - 1) + x * (r1 - r0) * (in - 1) / (len - 1) : 0.5 * (r0 + r1) * (in - 1);
        *outside = !(xo >= 0 && xo <= in - 1);
        return xo;
    }
    case CT_HALF_PIXEL_SYMMETRIC: {
        double adj = (double)p->out[a] / (s * in), center = in / 2;
        return center * (1 - adj) + (x + 0.5) / s - 0.5;
    }
    default: return (x + 0.5) / s - 0.5;
    }
}

static double cubic_w(double t, double A)
{
    t = fabs(t);
    if (t <= 1) return ((A + 2) * t - (A + 3)) * t * t + 1;
    if (t < 2) return ((A * t - 5 * A) * t + 8 * A) * t - 4 * A;
    return 0;
}

/* Taps of one output index: first input index *base and weights w[nt]. */
static void interp_weights(const rz_plan_t *p, int a, double xo, int nt, int64_t *first, double *w)
{
    double fl = floor(xo);
    double base = xo == fl ? fl - 1 : fl;           /* ratio in (0, 1] */
    double ratio = xo - base;
    double s = p->antialias && p->scale[a] < 1 ? p->scale[a] : 1;
    int half = nt / 2;
    *first = (int64_t)base - half + 1;
    double sum = 0;
    for (int t = 0; t < nt; t++) {
        double dist = ((double)(t - half + 1) - ratio) * s;   /* tap position minus xo, scaled */
        double v = p->mode == RZ_LINEAR ? fmax(0.0, 1 - fabs(dist)) : cubic_w(dist, p->cubic_a);
        w[t] = v;
        sum += v;
    }
    if (p->antialias && sum != 0)
        for (int t = 0; t < nt; t++) w[t] /= sum;
}

static int64_t nearest_index(const rz_plan_t *p, int a, double xo)
{
    if (p->nearest == NM_SIMPLE) return p->scale[a] < 1 ? (int64_t)ceil(xo) : (int64_t)floor(xo);
    double fl = floor(xo);
    if (xo == fl) return (int64_t)xo;
    double ratio = xo - fl;
    switch (p->nearest) {
    case NM_ROUND_PREFER_CEIL: return (int64_t)fl + (ratio >= 0.5);
    case NM_FLOOR: return (int64_t)fl;
    case NM_CEIL: return (int64_t)fl + 1;
    default: return (int64_t)fl + (ratio > 0.5);
    }
}

static int taps_per_index(const rz_plan_t *p, int a)
{
    if (p->mode == RZ_NEAREST) return 1;
    int base = p->mode == RZ_LINEAR ? 2 : 4;
    if (!p->antialias || p->scale[a] >= 1) return base;
    /* the filter's support widens by 1/scale (ONNX reference, opset 18) */
    int64_t start = (int64_t)floor(-(base / 2) / p->scale[a]) + 1;
    return (int)(2 - 2 * start);
}

static void build_axis(const rz_plan_t *p, int a, rz_axis_t *ax)
{
    int64_t out = p->out[a], in = p->in[a];
    int nt = taps_per_index(p, a);
    ax->nt = nt;
    ax->idx = xmalloc((size_t)(out * nt + 1) * sizeof *ax->idx);
    ax->w = xmalloc((size_t)(out * nt + 1) * sizeof *ax->w);
    ax->outside = p->ctm == CT_TF_CROP_AND_RESIZE ? xcalloc((size_t)out + 1, 1) : NULL;
    for (int64_t o = 0; o < out; o++) {
        int outside;
        double xo = original_coord(p, a, (double)o, &outside);
        if (ax->outside) ax->outside[o] = (unsigned char)outside;
        /* keep the coordinate where floor() is defined; taps clamp anyway */
        if (!(xo >= -2)) xo = -2;
        if (xo > (double)in + 1) xo = (double)in + 1;
        int64_t *ip = ax->idx + o * nt;
        double *wp = ax->w + o * nt;
        if (p->mode == RZ_NEAREST) {
            ip[0] = nearest_index(p, a, xo);
            wp[0] = 1;
        } else {
            int64_t first;
            interp_weights(p, a, xo, nt, &first, wp);
            double sum = 0;
            for (int t = 0; t < nt; t++) {
                ip[t] = first + t;
                if (p->exclude && (ip[t] < 0 || ip[t] >= in)) wp[t] = 0;
                sum += wp[t];
            }
            if (p->exclude && sum != 0)
                for (int t = 0; t < nt; t++) wp[t] /= sum;
        }
        for (int t = 0; t < nt; t++) ip[t] = ip[t] < 0 ? 0 : ip[t] >= in ? in - 1 : ip[t];
    }
    /* Collapse to one tap when every index has a single weight-1 tap. */
    if (nt > 1 && !ax->outside) {
        int single = 1;
        for (int64_t o = 0; o < out && single; o++) {
            int ones = 0;
            for (int t = 0; t < nt; t++) {
                double v = ax->w[o * nt + t];
                if (v == 1) ones++;
                else if (v != 0) single = 0;
            }
            if (ones != 1) single = 0;
        }
        if (single) {
            for (int64_t o = 0; o < out; o++) {
                int t = 0;
                while (ax->w[o * nt + t] != 1) t++;
                ax->idx[o] = ax->idx[o * nt + t];
                ax->w[o] = 1;
            }
            ax->nt = 1;
        }
    }
}

static void free_axes(rz_axis_t *ax, int n)
{
    for (int i = 0; i < n; i++) {
        free(ax[i].idx);
        free(ax[i].w);
        free(ax[i].outside);
    }
}

/* ---------------------------------------------------------------- kernels */

/* Advances a row-major index over dims[0..n); 0 once it wraps around. */
static int odo_next(int64_t *idx, const int64_t *dims, int n)
{
    for (int a = n - 1; a >= 0; a--) {
        if (++idx[a] < dims[a]) return 1;
        idx[a] = 0;
    }
    return 0;
}

/* Element strides of the input; returns the output's element count. */
static int64_t in_strides(const rz_plan_t *p, int64_t *str)
{
    int64_t s = 1, n = 1;
    for (int a = p->rank - 1; a >= 0; a--) {
        str[a] = s;
        s *= p->in[a];
        n *= p->out[a];
    }
    return n;
}

/* Input offset of unit u (an index over the first nlead output axes, each
 * taken through its one tap); *out is set when tf_crop_and_resize puts it
 * outside the input. */
static int64_t unit_base(const rz_plan_t *p, const rz_axis_t *ax, const int64_t *str, int nlead, int64_t u, int *out)
{
    int64_t base = 0;
    *out = 0;
    for (int a = nlead - 1; a >= 0; a--) {
        int64_t i = u % p->out[a];
        u /= p->out[a];
        base += ax[a].idx[i] * str[a];
        if (ax[a].outside && ax[a].outside[i]) *out = 1;
    }
    return base;
}

/* Nearest on every axis: a gather of elements, any type (by size), rows
 * [u0, u1) of the last axis; extrapolated positions get extrap. */
#define DEFINE_GATHER(NAME, T)                                                           \
    static void NAME(const T *x, T *y, const rz_plan_t *p, const rz_axis_t *ax, T extrap, \
                     int64_t u0, int64_t u1)                                             \
    {                                                                                    \
        int r = p->rank;                                                                 \
        int64_t str[TENSOR_MAX_DIMS];                                                    \
        in_strides(p, str);                                                              \
        int64_t wl = p->out[r - 1];                                                      \
        const int64_t *li = ax[r - 1].idx;                                               \
        const unsigned char *lo = ax[r - 1].outside;                                     \
        int twice = !lo && wl % 2 == 0;   /* each input element twice (2x upsampling) */ \
        for (int64_t j = 0; twice && j < wl; j++) twice = li[j] == j / 2;               \
        const T *prev = NULL;                                                            \
        int prev_out = 0;                                                                \
        for (int64_t u = u0; u < u1; u++) {                                              \
            int out;                                                                     \
            const T *xr = x + unit_base(p, ax, str, r - 1, u, &out);                     \
            T *yr = y + u * wl;                                                          \
            if (u > u0 && xr == prev && out == prev_out)   /* the row above again */     \
                memcpy(yr, yr - wl, (size_t)wl * sizeof *yr);                            \
            else if (out)                                                                \
                for (int64_t j = 0; j < wl; j++) yr[j] = extrap;                         \
            else if (lo)                                                                 \
                for (int64_t j = 0; j < wl; j++) yr[j] = lo[j] ? extrap : xr[li[j]];     \
            else if (twice)                                                              \
                for (int64_t j = 0; j < wl / 2; j++) yr[2 * j] = yr[2 * j + 1] = xr[j];  \
            else                                                                         \
                for (int64_t j = 0; j < wl; j++) yr[j] = xr[li[j]];                      \
            prev = xr;                                                                   \
            prev_out = out;                                                              \
        }                                                                                \
    }

DEFINE_GATHER(gather_u8, uint8_t)
DEFINE_GATHER(gather_u16, uint16_t)
DEFINE_GATHER(gather_u32, uint32_t)
DEFINE_GATHER(gather_u64, uint64_t)

/* One output plane (the last two axes) of an interpolating resize; ay, ax
 * are the tables of those axes. 2x2 taps (bilinear) have their own loop. */
#define DEFINE_PLANE(NAME, T)                                                            \
    static void NAME(const T *x, T *y, int64_t in_w, int64_t oh, int64_t ow,             \
                     const rz_axis_t *ay, const rz_axis_t *ax, int plane_out, T extrap)  \
    {                                                                                    \
        int nty = ay->nt, ntx = ax->nt;                                                  \
        for (int64_t oy = 0; oy < oh; oy++) {                                            \
            T *yr = y + oy * ow;                                                         \
            if (plane_out || (ay->outside && ay->outside[oy])) {                         \
                for (int64_t ox = 0; ox < ow; ox++) yr[ox] = extrap;                     \
                continue;                                                                \
            }                                                                            \
            const int64_t *iy = ay->idx + oy * nty;                                      \
            const double *wy = ay->w + oy * nty;                                         \
            if (nty == 2 && ntx == 2) {                                                  \
                const T *r0 = x + iy[0] * in_w, *r1 = x + iy[1] * in_w;                  \
                double w0 = wy[0], w1 = wy[1];                                           \
                for (int64_t ox = 0; ox < ow; ox++) {                                    \
                    int64_t i0 = ax->idx[2 * ox], i1 = ax->idx[2 * ox + 1];              \
                    double a0 = ax->w[2 * ox], a1 = ax->w[2 * ox + 1];                   \
                    yr[ox] = (T)(w0 * (a0 * r0[i0] + a1 * r0[i1]) + w1 * (a0 * r1[i0] + a1 * r1[i1])); \
                }                                                                        \
            } else {                                                                     \
                for (int64_t ox = 0; ox < ow; ox++) {                                    \
                    const int64_t *ix = ax->idx + ox * ntx;                              \
                    const double *wx = ax->w + ox * ntx;                                 \
                    double acc = 0;                                                      \
                    for (int ty = 0; ty < nty; ty++) {                                   \
                        const T *row = x + iy[ty] * in_w;                                \
                        double h = 0;                                                    \
                        for (int tx = 0; tx < ntx; tx++) h += wx[tx] * row[ix[tx]];      \
                        acc += wy[ty] * h;                                               \
                    }                                                                    \
                    yr[ox] = (T)acc;                                                     \
                }                                                                        \
            }                                                                            \
            if (ax->outside)                                                             \
                for (int64_t ox = 0; ox < ow; ox++)                                      \
                    if (ax->outside[ox]) yr[ox] = extrap;                                \
        }                                                                                \
    }

/* Any rank: every output element sums its tap combinations. */
#define DEFINE_GENERAL(NAME, T)                                                          \
    static void NAME(const T *x, T *y, const rz_plan_t *p, const rz_axis_t *ax, T extrap) \
    {                                                                                    \
        int r = p->rank;                                                                 \
        int64_t str[TENSOR_MAX_DIMS], idx[TENSOR_MAX_DIMS] = {0};                        \
        int64_t n = in_strides(p, str);                                                  \
        for (int64_t o = 0; o < n; o++) {                                                \
            int out = 0;                                                                 \
            for (int a = 0; a < r; a++)                                                  \
                if (ax[a].outside && ax[a].outside[idx[a]]) out = 1;                     \
            if (out) {                                                                   \
                y[o] = extrap;                                                           \
            } else {                                                                     \
                int t[TENSOR_MAX_DIMS] = {0};                                            \
                double acc = 0;                                                          \
                for (;;) {                                                               \
                    double w = 1;                                                        \
                    int64_t off = 0;                                                     \
                    for (int a = 0; a < r; a++) {                                        \
                        int64_t k = idx[a] * ax[a].nt + t[a];                            \
                        w *= ax[a].w[k];                                                 \
                        off += ax[a].idx[k] * str[a];                                    \
                    }                                                                    \
                    acc += w * x[off];                                                   \
                    int a = r - 1;                                                       \
                    for (; a >= 0; a--) {                                                \
                        if (++t[a] < ax[a].nt) break;                                    \
                        t[a] = 0;                                                        \
                    }                                                                    \
                    if (a < 0) break;                                                    \
                }                                                                        \
                y[o] = (T)acc;                                                           \
            }                                                                            \
            odo_next(idx, p->out, r);                                                    \
        }                                                                                \
    }

DEFINE_PLANE(plane_f, float)
DEFINE_PLANE(plane_d, double)
DEFINE_GENERAL(general_f, float)
DEFINE_GENERAL(general_d, double)

typedef struct rz_job {
    const rz_plan_t *p;
    const rz_axis_t *ax;
    dtype_t dt;
    const void *x;
    void *y;
    uint64_t ebits;       /* extrapolation value in the element type (gather) */
} rz_job_t;

/* Gather task: rows [u0, u1). */
static void gather_rows(void *ctx, int64_t u0, int64_t u1)
{
    const rz_job_t *j = ctx;
    uint8_t e1;
    uint16_t e2;
    uint32_t e4;
    memcpy(&e1, &j->ebits, 1);
    memcpy(&e2, &j->ebits, 2);
    memcpy(&e4, &j->ebits, 4);
    switch (dtype_size(j->dt)) {
    case 1: gather_u8(j->x, j->y, j->p, j->ax, e1, u0, u1); break;
    case 2: gather_u16(j->x, j->y, j->p, j->ax, e2, u0, u1); break;
    case 4: gather_u32(j->x, j->y, j->p, j->ax, e4, u0, u1); break;
    default: gather_u64(j->x, j->y, j->p, j->ax, j->ebits, u0, u1); break;
    }
}

/* Interpolation task: output planes (last two axes) [u0, u1). */
static void interp_planes(void *ctx, int64_t u0, int64_t u1)
{
    const rz_job_t *j = ctx;
    const rz_plan_t *p = j->p;
    const rz_axis_t *ax = j->ax;
    int r = p->rank;
    int64_t str[TENSOR_MAX_DIMS];
    in_strides(p, str);
    int64_t oh = p->out[r - 2], ow = p->out[r - 1], osz = oh * ow, in_w = p->in[r - 1];
    for (int64_t u = u0; u < u1; u++) {
        int out;
        int64_t base = unit_base(p, ax, str, r - 2, u, &out);
        if (j->dt == DT_FLOAT)
            plane_f((const float *)j->x + base, (float *)j->y + u * osz, in_w, oh, ow, &ax[r - 2], &ax[r - 1], out,
                    (float)p->extrap);
        else
            plane_d((const double *)j->x + base, (double *)j->y + u * osz, in_w, oh, ow, &ax[r - 2], &ax[r - 1], out,
                    p->extrap);
    }
}

/* Units of `len` outputs each, about 16k outputs per task. */
static int64_t grain_for(int64_t len)
{
    return len >= 16384 ? 1 : 16384 / (len ? len : 1);
}

/* Interpolating resize of float32/float64 data. */
static void interpolate(dtype_t dt, const void *x, void *y, const rz_plan_t *p, const rz_axis_t *ax)
{
    int r = p->rank;
    int planar = r >= 2;
    for (int a = 0; a < r - 2 && planar; a++) planar = ax[a].nt == 1;
    if (!planar) {
        if (dt == DT_FLOAT) general_f(x, y, p, ax, (float)p->extrap);
        else general_d(x, y, p, ax, p->extrap);
        return;
    }
    rz_job_t j = {p, ax, dt, x, y, 0};
    int64_t planes = 1;
    for (int a = 0; a < r - 2; a++) planes *= p->out[a];
    nn_parallel(planes, grain_for(p->out[r - 2] * p->out[r - 1]), interp_planes, &j);
}

/* ------------------------------------------- bilinear in ONNX Runtime's order
 *
 * ONNX Runtime, the reference most users compare a deployment against,
 * computes bilinear Resize in float, not in the float64 of the ONNX
 * reference: the source coordinate in float from a float scale (sizes
 * divided in float), clamped to [0, in-1]; taps i1 = trunc, i2 = i1+1
 * (clamped); weights d1 = |x - i1|, d2 = |x - i2| (0.5 each where i1 == i2,
 * the last row or column); an axis of scale 1 maps x to x. The output is
 * d2x*d2y*X11 + d1x*d2y*X21 + d2x*d1y*X12 + d1x*d1y*X22 summed left to right
 * in float. Doing the same operations in the same order gives its bits
 * exactly; the float64 path differed by an ulp on a few percent of elements,
 * which a quantized model downstream can turn into a whole step. Only the
 * modes ONNX Runtime's plain bilinear kernel takes: 2-D, or 4-D whose first
 * two axes keep scale 1 (tests/stage/resize_ort.t holds the oracle). */

typedef struct ort_axis {
    int64_t *i1, *i2;
    float *d1, *d2;
} ort_axis_t;

static int ort_bilinear_applies(const rz_plan_t *p)
{
    if (p->mode != RZ_LINEAR || p->antialias || p->exclude) return 0;
    if (p->ctm != CT_HALF_PIXEL && p->ctm != CT_PYTORCH_HALF_PIXEL && p->ctm != CT_ALIGN_CORNERS &&
        p->ctm != CT_ASYMMETRIC && p->ctm != CT_TF_HALF_PIXEL_FOR_NN)
        return 0;
    if (p->rank != 2 && p->rank != 4) return 0;
    for (int a = 0; a < p->rank - 2; a++)
        if (p->fscale[a] != 1 || p->out[a] != p->in[a]) return 0;
    return 1;
}

/* Source coordinate of output index x along axis a, in float. */
static float ort_coord(const rz_plan_t *p, int a, float x)
{
    /* ONNX Runtime takes the output size as length_resized; the spec takes
     * scale * in, which differs when that is not a whole number (scales
     * input, align_corners: test_resize_downsample_scales_linear_align_corners).
     * The spec's is kept; with sizes, or a whole scale * in, they agree. */
    float s = p->fscale[a], lr = (float)p->len[a], lo = (float)p->in[a];
    if (s == 1) return x;
    switch (p->ctm) {
    case CT_ASYMMETRIC: return x / s;
    case CT_PYTORCH_HALF_PIXEL: return lr > 1 ? (x + 0.5f) / s - 0.5f : 0.0f;
    case CT_TF_HALF_PIXEL_FOR_NN: return (x + 0.5f) / s;
    case CT_ALIGN_CORNERS: return lr == 1 ? 0.0f : x * (lo - 1) / (lr - 1);
    default: return (x + 0.5f) / s - 0.5f;
    }
}

static void ort_build_axis(const rz_plan_t *p, int a, ort_axis_t *t)
{
    int64_t out = p->out[a], in = p->in[a];
    t->i1 = xmalloc((size_t)(2 * out + 1) * sizeof *t->i1);
    t->i2 = t->i1 + out;
    t->d1 = xmalloc((size_t)(2 * out + 1) * sizeof *t->d1);
    t->d2 = t->d1 + out;
    for (int64_t o = 0; o < out; o++) {
        float x = ort_coord(p, a, (float)o);
        x = fmaxf(0.0f, fminf(x, (float)(in - 1)));
        int64_t i1 = (int64_t)x < in - 1 ? (int64_t)x : in - 1;
        int64_t i2 = i1 + 1 < in - 1 ? i1 + 1 : in - 1;
        t->i1[o] = i1;
        t->i2[o] = i2;
        t->d1[o] = i1 == i2 ? 0.5f : fabsf(x - (float)i1);
        t->d2[o] = i1 == i2 ? 0.5f : fabsf(x - (float)i2);
    }
}

typedef struct ort_job {
    const float *x;
    float *y;
    int64_t in_h, in_w, oh, ow;
    const ort_axis_t *ty, *tx;
} ort_job_t;

static void ort_planes(void *ctx, int64_t u0, int64_t u1)
{
    const ort_job_t *j = ctx;
    const ort_axis_t *ty = j->ty, *tx = j->tx;
    for (int64_t u = u0; u < u1; u++) {
        const float *x = j->x + u * j->in_h * j->in_w;
        float *y = j->y + u * j->oh * j->ow;
        for (int64_t oy = 0; oy < j->oh; oy++) {
            const float *r1 = x + ty->i1[oy] * j->in_w, *r2 = x + ty->i2[oy] * j->in_w;
            float dy1 = ty->d1[oy], dy2 = ty->d2[oy];
            for (int64_t ox = 0; ox < j->ow; ox++) {
                int64_t a = tx->i1[ox], b = tx->i2[ox];
                float dx1 = tx->d1[ox], dx2 = tx->d2[ox];
                y[oy * j->ow + ox] = dx2 * dy2 * r1[a] + dx1 * dy2 * r1[b] + dx2 * dy1 * r2[a] + dx1 * dy1 * r2[b];
            }
        }
    }
}

static void ort_bilinear(const float *x, float *y, const rz_plan_t *p)
{
    int r = p->rank;
    ort_axis_t ty, tx;
    ort_build_axis(p, r - 2, &ty);
    ort_build_axis(p, r - 1, &tx);
    ort_job_t j = {x, y, p->in[r - 2], p->in[r - 1], p->out[r - 2], p->out[r - 1], &ty, &tx};
    int64_t planes = 1;
    for (int a = 0; a < r - 2; a++) planes *= p->out[a];
    nn_parallel(planes, grain_for(j.oh * j.ow), ort_planes, &j);
    free(ty.i1);
    free(ty.d1);
    free(tx.i1);
    free(tx.d1);
}

static int resize_exec(op_ctx_t *c, const rz_plan_t *p)
{
    const tensor_t *x = c->in[0];
    tensor_t *y = c->out[0];
    if (tensor_numel(y) == 0) return 0;
    if (tensor_numel(x) == 0) return op_fail(c, "cannot resize an empty tensor to a non-empty one");
    if (p->rank == 0) return op_fail(c, "input must have rank >= 1");
    if (x->dtype == DT_FLOAT && ort_bilinear_applies(p)) {
        ort_bilinear(x->data, y->data, p);
        return 0;
    }
    rz_axis_t ax[TENSOR_MAX_DIMS];
    int nearest = 1;
    for (int a = 0; a < p->rank; a++) {
        build_axis(p, a, &ax[a]);
        if (ax[a].nt != 1) nearest = 0;
    }
    int rc = 0;
    if (nearest) {
        /* extrapolation_value in the element type */
        uint64_t ebits = 0;
        tensor_t et = {.dtype = x->dtype, .ndim = 0, .data = &ebits};
        tensor_set_f64(&et, 0, p->extrap);
        size_t es = dtype_size(x->dtype);
        if (es != 1 && es != 2 && es != 4 && es != 8) {
            rc = op_fail(c, "type %s is not supported", dtype_name(x->dtype));
        } else {
            rz_job_t j = {p, ax, x->dtype, x->data, y->data, ebits};
            int64_t wl = p->out[p->rank - 1];
            nn_parallel(tensor_numel(y) / wl, grain_for(wl), gather_rows, &j);
        }
    } else if (x->dtype == DT_FLOAT || x->dtype == DT_DOUBLE) {
        interpolate(x->dtype, x->data, y->data, p, ax);
    } else if (dtype_is_signed_int(x->dtype) || dtype_is_unsigned_int(x->dtype)) {
        /* Integers interpolate in double and truncate (as the reference's
         * astype and ONNX Runtime's static_cast), saturating. */
        int64_t nx = tensor_numel(x), ny = tensor_numel(y);
        double *xd = xmalloc((size_t)nx * sizeof *xd), *yd = xmalloc((size_t)ny * sizeof *yd);
        for (int64_t i = 0; i < nx; i++) xd[i] = tensor_get_f64(x, i);
        interpolate(DT_DOUBLE, xd, yd, p, ax);
        for (int64_t i = 0; i < ny; i++) tensor_set_f64(y, i, yd[i]);
        free(xd);
        free(yd);
    } else {
        rc = op_fail(c, "%s interpolation of type %s is not supported", p->mode == RZ_LINEAR ? "linear" : "cubic",
                     dtype_name(x->dtype));
    }
    free_axes(ax, p->rank);
    return rc;
}

int resize_run(op_ctx_t *c)
{
    rz_plan_t p;
    int rc = resize_plan(c, &p, 1);
    if (rc) return rc == OP_DYNAMIC ? op_fail(c, "scales/sizes have no data at run time") : rc;
    return resize_exec(c, &p);
}

/* ---------------------------------------------------------------- Upsample */

static int upsample_plan(op_ctx_t *c, rz_plan_t *p)
{
    memset(p, 0, sizeof *p);
    int attr_form = c->node->opset < 9;
    if (op_check_inputs(c, attr_form ? 1 : 2, attr_form ? 1 : 2)) return -1;
    if (rz_attrs(c, p)) return -1;
    if (p->mode == RZ_CUBIC) return op_fail(c, "mode must be nearest or linear");
    const tensor_t *x = c->in[0];
    double sc[TENSOR_MAX_DIMS];
    if (attr_form) {
        const float *fv;
        int n = attr_floats(c->node, "scales", &fv);
        if (n != x->ndim) return op_fail(c, "scales must have %d values", x->ndim);
        for (int i = 0; i < n; i++) sc[i] = fv[i];
    } else {
        const tensor_t *s = c->in[1];
        if (!s->data) return OP_DYNAMIC;
        if (!dtype_is_float(s->dtype) || tensor_numel(s) != x->ndim)
            return op_fail(c, "scales must be a float tensor of %d values", x->ndim);
        for (int i = 0; i < x->ndim; i++) sc[i] = tensor_get_f64(s, i);
    }
    p->rank = x->ndim;
    for (int i = 0; i < x->ndim; i++) {
        if (!(sc[i] >= 1) || !(sc[i] < 1e9)) return op_fail(c, "scales[%d] = %g must be >= 1", i, sc[i]);
        p->in[i] = x->dims[i];
        p->scale[i] = sc[i];
        p->fscale[i] = (float)sc[i];
        p->len[i] = sc[i] * (double)x->dims[i];
        if (p->len[i] > (double)TENSOR_MAX_BYTES) return op_fail(c, "scales[%d] = %g is too large", i, sc[i]);
        p->out[i] = (int64_t)floor(p->len[i]);
        p->roi0[i] = 0;
        p->roi1[i] = 1;
    }
    return 0;
}

int upsample_shape(op_ctx_t *c)
{
    rz_plan_t p;
    int rc = upsample_plan(c, &p);
    if (rc) return rc;
    return op_set_out(c, 0, c->in[0]->dtype, p.rank, p.out);
}

int upsample_run(op_ctx_t *c)
{
    rz_plan_t p;
    int rc = upsample_plan(c, &p);
    if (rc) return rc == OP_DYNAMIC ? op_fail(c, "scales have no data at run time") : rc;
    return resize_exec(c, &p);
}
