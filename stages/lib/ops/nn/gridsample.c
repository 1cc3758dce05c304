/* gridsample.c — GridSample (opset 16; 4-D input, 2-D grid), with PyTorch's
 * grid_sample semantics, which the ONNX spec follows: bilinear, nearest
 * (round half to even) and bicubic (A = -0.75) sampling; zeros, border and
 * reflection padding; align_corners 0/1.
 *
 * Each grid point's taps (input offsets and weights) are computed once and
 * reused for every channel, so the per-channel work is a short weighted
 * gather. RT-DETR's deformable attention (bilinear, zeros, align_corners=0,
 * many channels per point) runs through this path. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ops/nn/nn_impl.h"

enum { GS_BILINEAR, GS_NEAREST, GS_BICUBIC };
enum { PAD_ZEROS, PAD_BORDER, PAD_REFLECTION };
#define GS_MAXTAPS 16

typedef struct gs_plan {
    int mode, pad, align;
    int64_t n, ch, h, w, oh, ow;
} gs_plan_t;

static int gs_plan(op_ctx_t *c, gs_plan_t *p)
{
    if (op_check_inputs(c, 2, 2)) return -1;
    const tensor_t *x = c->in[0], *g = c->in[1];
    if (x->dtype != DT_FLOAT && x->dtype != DT_DOUBLE)
        return op_fail(c, "type %s is not supported", dtype_name(x->dtype));
    if (!dtype_is_float(g->dtype)) return op_fail(c, "grid must be a float tensor");
    if (x->ndim != 4) return op_fail(c, "input must be 4-D (N, C, H, W), got rank %d", x->ndim);
    if (g->ndim != 4 || g->dims[3] != 2 || g->dims[0] != x->dims[0])
        return op_fail(c, "grid must have shape (N, H_out, W_out, 2) with N = %lld", (long long)x->dims[0]);
    char buf[32];
    const char *m = attr_string(c->node, "mode", "bilinear", buf, sizeof buf);
    /* opset 20 renamed bilinear/bicubic to linear/cubic */
    if (!strcmp(m, "bilinear") || !strcmp(m, "linear")) p->mode = GS_BILINEAR;
    else if (!strcmp(m, "nearest")) p->mode = GS_NEAREST;
    else if (!strcmp(m, "bicubic") || !strcmp(m, "cubic")) p->mode = GS_BICUBIC;
    else return op_fail(c, "mode '%s' is not one of bilinear, nearest, bicubic", m);
    const char *pm = attr_string(c->node, "padding_mode", "zeros", buf, sizeof buf);
    if (!strcmp(pm, "zeros")) p->pad = PAD_ZEROS;
    else if (!strcmp(pm, "border")) p->pad = PAD_BORDER;
    else if (!strcmp(pm, "reflection")) p->pad = PAD_REFLECTION;
    else return op_fail(c, "padding_mode '%s' is not one of zeros, border, reflection", pm);
    p->align = attr_int(c->node, "align_corners", 0) != 0;
    p->n = x->dims[0];
    p->ch = x->dims[1];
    p->h = x->dims[2];
    p->w = x->dims[3];
    p->oh = g->dims[1];
    p->ow = g->dims[2];
    return 0;
}

int gridsample_shape(op_ctx_t *c)
{
    gs_plan_t p;
    if (gs_plan(c, &p)) return -1;
    int64_t dims[4] = {p.n, p.ch, p.oh, p.ow};
    return op_set_out(c, 0, c->in[0]->dtype, 4, dims);
}

/* ---------------------------------------------------- coordinate helpers */

static double unnormalize(double v, int64_t size, int align)
{
    return align ? (v + 1) / 2 * (double)(size - 1) : ((v + 1) * (double)size - 1) / 2;
}

static double clip_coord(double v, int64_t size)
{
    return fmin((double)(size - 1), fmax(v, 0.0));
}

/* Reflects v into [twice_low/2, twice_high/2] (PyTorch reflect_coordinates). */
static double reflect_coord(double v, double twice_low, double twice_high)
{
    if (twice_low == twice_high) return 0;
    double lo = twice_low / 2, span = (twice_high - twice_low) / 2;
    v = fabs(v - lo);
    double extra = fmod(v, span);
    double flips = floor(v / span);
    return fmod(flips, 2) == 0 ? extra + lo : span - extra + lo;
}

/* Applies border/reflection padding to a coordinate (compute_coordinates). */
static double pad_coord(double v, int64_t size, int pad, int align)
{
    if (pad == PAD_BORDER) return clip_coord(v, size);
    if (pad == PAD_REFLECTION) {
        v = align ? reflect_coord(v, 0, 2.0 * (double)(size - 1)) : reflect_coord(v, -1, 2.0 * (double)size - 1);
        return clip_coord(v, size);
    }
    return v;
}

/* Source coordinate of bilinear / nearest sampling. */
static double source_coord(double g, int64_t size, int pad, int align)
{
    double v = unnormalize(g, size, align);
    return pad == PAD_ZEROS ? v : pad_coord(v, size, pad, align);   /* zeros: as is, no call per point */
}

/* Integer part that stays defined for any double (NaN and huge values go
 * far outside, where they count as padding). */
static int64_t safe_floor(double v)
{
    if (!(v > -1e15)) return INT64_MIN / 4;
    if (v > 1e15) return INT64_MAX / 4;
    /* floor(v) without libm's call (the build targets base x86-64, where
     * floor is not an instruction): truncation is exact within +-1e15 */
    int64_t t = (int64_t)v;
    return (double)t > v ? t - 1 : t;
}

static double cubic1(double x, double a) { return ((a + 2) * x - (a + 3)) * x * x + 1; }
static double cubic2(double x, double a) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; }

static void cubic_coeffs(double t, double *w)
{
    const double a = -0.75;
    w[0] = cubic2(t + 1, a);
    w[1] = cubic1(t, a);
    w[2] = cubic1(1 - t, a);
    w[3] = cubic2(2 - t, a);
}

/* Taps of one grid point: offsets into the input plane and weights; taps
 * outside the input are dropped (zeros padding). Returns the count. */
static int point_taps(const gs_plan_t *p, double gx, double gy, int64_t *off, double *w)
{
    int k = 0;
    int64_t H = p->h, W = p->w;
    if (p->mode == GS_BICUBIC) {
        double ix = unnormalize(gx, W, p->align), iy = unnormalize(gy, H, p->align);
        int64_t x0 = safe_floor(ix), y0 = safe_floor(iy);
        double wx[4], wy[4];
        cubic_coeffs(ix - (double)x0, wx);
        cubic_coeffs(iy - (double)y0, wy);
        if (x0 <= INT64_MIN / 8 || x0 >= INT64_MAX / 8 || y0 <= INT64_MIN / 8 || y0 >= INT64_MAX / 8) return 0;
        for (int j = 0; j < 4; j++)
            for (int i = 0; i < 4; i++) {
                double yy = pad_coord((double)(y0 - 1 + j), H, p->pad, p->align);
                double xx = pad_coord((double)(x0 - 1 + i), W, p->pad, p->align);
                int64_t yi = safe_floor(yy), xi = safe_floor(xx);
                if (yi < 0 || yi >= H || xi < 0 || xi >= W) continue;
                off[k] = yi * W + xi;
                w[k++] = wy[j] * wx[i];
            }
        return k;
    }
    double ix = source_coord(gx, W, p->pad, p->align), iy = source_coord(gy, H, p->pad, p->align);
    if (p->mode == GS_NEAREST) {
        if (!(fabs(ix) < 1e15) || !(fabs(iy) < 1e15)) return 0;
        int64_t xi = (int64_t)nearbyint(ix), yi = (int64_t)nearbyint(iy);   /* half to even */
        if (yi < 0 || yi >= H || xi < 0 || xi >= W) return 0;
        off[0] = yi * W + xi;
        w[0] = 1;
        return 1;
    }
    int64_t x0 = safe_floor(ix), y0 = safe_floor(iy);
    double fx = ix - (double)x0, fy = iy - (double)y0;
    /* PyTorch's order: nw, ne, sw, se */
    const int64_t ty[4] = {y0, y0, y0 + 1, y0 + 1}, tx[4] = {x0, x0 + 1, x0, x0 + 1};
    const double tw[4] = {(1 - fx) * (1 - fy), fx * (1 - fy), (1 - fx) * fy, fx * fy};
    for (int t = 0; t < 4; t++) {
        if (ty[t] < 0 || ty[t] >= H || tx[t] < 0 || tx[t] >= W) continue;
        off[k] = ty[t] * W + tx[t];
        w[k++] = tw[t];
    }
    return k;
}

/* Points per task: their taps (at most 16 x 16 bytes each) stay in cache
 * while every channel of the batch item is gathered. */
#define GS_BLOCK 256

/* Weighted gather of one channel over a block of points; nt = tap stride. */
#define DEFINE_GS_CHANNEL(NAME, T)                                                       \
    static void NAME(const T *x, T *y, int64_t np, int nt, const unsigned char *cnt,     \
                     const int64_t *off, const double *w)                                \
    {                                                                                    \
        for (int64_t q = 0; q < np; q++) {                                               \
            const int64_t *o = off + q * nt;                                             \
            const double *v = w + q * nt;                                                \
            int n = cnt[q];                                                              \
            double acc;                                                                  \
            if (n == 4) {                                                                \
                acc = v[0] * x[o[0]] + v[1] * x[o[1]] + v[2] * x[o[2]] + v[3] * x[o[3]]; \
            } else {                                                                     \
                acc = 0;                                                                 \
                for (int t = 0; t < n; t++) acc += v[t] * x[o[t]];                       \
            }                                                                            \
            y[q] = (T)acc;                                                               \
        }                                                                                \
    }

DEFINE_GS_CHANNEL(gs_channel_f, float)
DEFINE_GS_CHANNEL(gs_channel_d, double)

typedef struct gs_job {
    const gs_plan_t *p;
    const tensor_t *x, *g;
    tensor_t *y;
    int64_t np, blocks;
    int nt;
} gs_job_t;

static double grid_at(const tensor_t *g, int64_t i)
{
    return g->dtype == DT_FLOAT ? ((const float *)g->data)[i] : ((const double *)g->data)[i];
}

/* One task: a block of points of one batch item, all channels. */
static void gs_block(void *ctx, int64_t lo, int64_t hi)
{
    const gs_job_t *j = ctx;
    const gs_plan_t *p = j->p;
    int64_t off[GS_BLOCK * GS_MAXTAPS];
    double w[GS_BLOCK * GS_MAXTAPS], tw[GS_MAXTAPS];
    int64_t to[GS_MAXTAPS];
    unsigned char cnt[GS_BLOCK];
    for (int64_t t = lo; t < hi; t++) {
        int64_t n = t / j->blocks, q0 = (t % j->blocks) * GS_BLOCK;
        int64_t nq = j->np - q0 < GS_BLOCK ? j->np - q0 : GS_BLOCK;
        for (int64_t q = 0; q < nq; q++) {
            int64_t gi = (n * j->np + q0 + q) * 2;
            int k = point_taps(p, grid_at(j->g, gi), grid_at(j->g, gi + 1), to, tw);
            cnt[q] = (unsigned char)k;
            memcpy(off + q * j->nt, to, (size_t)k * sizeof *to);
            memcpy(w + q * j->nt, tw, (size_t)k * sizeof *tw);
        }
        for (int64_t ch = 0; ch < p->ch; ch++) {
            int64_t xo = (n * p->ch + ch) * p->h * p->w, yo = (n * p->ch + ch) * j->np + q0;
            if (j->x->dtype == DT_FLOAT)
                gs_channel_f((const float *)j->x->data + xo, (float *)j->y->data + yo, nq, j->nt, cnt, off, w);
            else
                gs_channel_d((const double *)j->x->data + xo, (double *)j->y->data + yo, nq, j->nt, cnt, off, w);
        }
    }
}

int gridsample_run(op_ctx_t *c)
{
    gs_plan_t p;
    if (gs_plan(c, &p)) return -1;
    gs_job_t j = {&p, c->in[0], c->in[1], c->out[0], p.oh * p.ow, 0, 0};
    j.nt = p.mode == GS_BICUBIC ? 16 : p.mode == GS_BILINEAR ? 4 : 1;
    j.blocks = (j.np + GS_BLOCK - 1) / GS_BLOCK;
    nn_parallel(p.n * j.blocks, 1, gs_block, &j);
    return 0;
}
