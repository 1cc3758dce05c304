/* conv.c — Conv and ConvTranspose (1-D, 2-D, 3-D; groups, strides,
 * dilations, pads, auto_pad) for float32 and float64.
 *
 * Conv is im2col + GEMM. The column buffer is built a band of output rows
 * at a time so scratch stays a few MiB whatever the image size; 1x1
 * stride-1 unpadded convolutions skip im2col (the input already is the
 * column matrix), and depthwise 2-D convolutions run a direct loop, which
 * beats a GEMM with one output row. ConvTranspose is the adjoint: GEMM with
 * the transposed weights, then col2im scatter-adds into the output. */
#include <stdlib.h>
#include <string.h>
#include "ops/nn/nn_impl.h"
#include "ops/gemm/fgemm.h"

/* Column-buffer budget in elements (512 KiB of float32): a band of columns
 * is multiplied while it is still in L2 after im2col wrote it. A band
 * keeps at least BAND_MIN_COLS columns (deep layers with few output
 * positions go over the budget rather than into thin GEMMs). */
#define COL_BUDGET ((int64_t)1 << 17)
#define BAND_MIN_COLS 256

typedef struct conv_plan {
    nn_geom_t g;
    int64_t n, cin, m, group, cg, mg;
    int64_t kvol;                 /* kernel volume */
    int64_t isz, osz;             /* spatial volume of input and output */
} conv_plan_t;

static int check_float(op_ctx_t *c)
{
    dtype_t dt = c->in[0]->dtype;
    if (dt != DT_FLOAT && dt != DT_DOUBLE) return op_fail(c, "type %s is not supported", dtype_name(dt));
    for (int i = 1; i < c->n_in; i++)
        if (c->in[i] && c->in[i]->dtype != dt)
            return op_fail(c, "input %d has type %s, expected %s", i, dtype_name(c->in[i]->dtype), dtype_name(dt));
    return 0;
}

/* Checks the kernel_shape attribute, if any, against the weights. */
static int check_kernel_attr(op_ctx_t *c, int nsp, const int64_t *wk)
{
    int64_t ks[NN_SP];
    if (nn_attr_ints(c, "kernel_shape", nsp, -1, ks)) return -1;
    for (int i = 0; i < nsp; i++)
        if (ks[0] != -1 && ks[i] != wk[i])
            return op_fail(c, "kernel_shape[%d] = %lld differs from the weights' %lld", i, (long long)ks[i],
                           (long long)wk[i]);
    return 0;
}

/* Checks shared by Conv and ConvTranspose: types, ranks, group. */
static int conv_common(op_ctx_t *c, conv_plan_t *p)
{
    if (op_check_inputs(c, 2, 3) || check_float(c)) return -1;
    const tensor_t *x = c->in[0], *w = c->in[1];
    if (x->ndim < 3) return op_fail(c, "input must have rank >= 3, got %d", x->ndim);
    if (w->ndim != x->ndim) return op_fail(c, "weights have rank %d, input %d", w->ndim, x->ndim);
    if (x->ndim - 2 > NN_SP) return op_fail(c, "%d spatial dimensions are not supported (1 to %d)", x->ndim - 2, NN_SP);
    p->n = x->dims[0];
    p->cin = x->dims[1];
    p->group = attr_int(c->node, "group", 1);
    if (p->group < 1 || p->group > p->cin || p->cin % p->group)
        return op_fail(c, "group %lld does not divide %lld input channels", (long long)p->group, (long long)p->cin);
    p->cg = p->cin / p->group;
    return check_kernel_attr(c, x->ndim - 2, w->dims + 2);
}

static int check_bias(op_ctx_t *c, const conv_plan_t *p)
{
    const tensor_t *b = c->n_in > 2 ? c->in[2] : NULL;
    if (b && (b->ndim != 1 || b->dims[0] != p->m))
        return op_fail(c, "bias must be 1-D of length %lld", (long long)p->m);
    return 0;
}

static int conv_plan(op_ctx_t *c, conv_plan_t *p)
{
    if (conv_common(c, p)) return -1;
    const tensor_t *x = c->in[0], *w = c->in[1];
    int nsp = x->ndim - 2;
    p->m = w->dims[0];
    if (w->dims[1] != p->cg)
        return op_fail(c, "weights have %lld input channels per group, expected %lld", (long long)w->dims[1],
                       (long long)p->cg);
    if (p->m % p->group)
        return op_fail(c, "%lld output channels are not divisible by group %lld", (long long)p->m, (long long)p->group);
    p->mg = p->m / p->group;
    if (check_bias(c, p)) return -1;
    if (nn_geom_window(c, nsp, x->dims + 2, w->dims + 2, 0, 1, &p->g)) return -1;
    p->kvol = nn_prod(p->g.k, NN_SP);
    p->isz = nn_prod(p->g.in, NN_SP);
    p->osz = nn_prod(p->g.out, NN_SP);
    return 0;
}

/* Output shape [N, M, spatial...] from a plan's spatial sizes. */
static int set_conv_out(op_ctx_t *c, const conv_plan_t *p, const int64_t *sp)
{
    int64_t dims[2 + NN_SP] = {p->n, p->m};
    for (int i = 0; i < p->g.nsp; i++) dims[2 + i] = sp[NN_SP - p->g.nsp + i];
    return op_set_out(c, 0, c->in[0]->dtype, 2 + p->g.nsp, dims);
}

int conv_shape(op_ctx_t *c)
{
    conv_plan_t p;
    return conv_plan(c, &p) ? -1 : set_conv_out(c, &p, p.g.out);
}

/* Range [lo, hi) of output positions o whose source o*s + off lies in
 * [0, n): the unpadded part of one im2col row. */
static void valid_range(int64_t off, int64_t s, int64_t n, int64_t nout, int64_t *lo, int64_t *hi)
{
    int64_t l = off >= 0 ? 0 : (-off + s - 1) / s;
    int64_t h = n - off > 0 ? (n - off + s - 1) / s : 0;
    if (h > nout) h = nout;
    if (l > h) l = h;
    *lo = l;
    *hi = h;
}

/* im2col and col2im are written once per element type through these
 * macros (im2col only moves bytes; col2im adds). Rows r0..r1 index the
 * output's (depth, height) pairs; the buffer is [cg*kvol][(r1-r0)*out_w]. */
/* A strided row copy: dst[o] = src[o * s] for o in [0, n). */
static inline void strided_copy_f(float *dst, const float *src, int64_t s, int64_t n)
{
    if (s == 2) {
        fgemm_gather_even(dst, src, n);
        return;
    }
    for (int64_t o = 0; o < n; o++) dst[o] = src[o * s];
}

static inline void strided_copy_d(double *dst, const double *src, int64_t s, int64_t n)
{
    for (int64_t o = 0; o < n; o++) dst[o] = src[o * s];
}

#define DEFINE_IM2COL(NAME, T, STRIDED)                                                  \
    static void NAME(const T *x, const nn_geom_t *g, int64_t cg, int64_t r0, int64_t r1, T *col) \
    {                                                                                    \
        int64_t ow = g->out[2], ncols = (r1 - r0) * ow;                                  \
        T *row = col;                                                                    \
        for (int64_t ch = 0; ch < cg; ch++)                                              \
            for (int64_t kd = 0; kd < g->k[0]; kd++)                                     \
                for (int64_t kh = 0; kh < g->k[1]; kh++)                                 \
                    for (int64_t kw = 0; kw < g->k[2]; kw++, row += ncols) {             \
                        int64_t off = kw * g->d[2] - g->pb[2], lo, hi;                   \
                        valid_range(off, g->s[2], g->in[2], ow, &lo, &hi);               \
                        for (int64_t r = r0; r < r1; r++) {                              \
                            T *dst = row + (r - r0) * ow;                                \
                            int64_t id = (r / g->out[1]) * g->s[0] - g->pb[0] + kd * g->d[0]; \
                            int64_t ih = (r % g->out[1]) * g->s[1] - g->pb[1] + kh * g->d[1]; \
                            if (id < 0 || id >= g->in[0] || ih < 0 || ih >= g->in[1]) {  \
                                memset(dst, 0, ow * sizeof(T));                          \
                                continue;                                                \
                            }                                                            \
                            /* base may be negative; base + o*s is not for o in [lo, hi) */ \
                            int64_t base = ((ch * g->in[0] + id) * g->in[1] + ih) * g->in[2] + off; \
                            for (int64_t o = 0; o < lo; o++) dst[o] = 0;                 \
                            if (g->s[2] == 1) {                                          \
                                if (hi > lo) memcpy(dst + lo, x + base + lo, (hi - lo) * sizeof(T)); \
                            } else if (hi > lo) {                                        \
                                STRIDED(dst + lo, x + base + lo * g->s[2], g->s[2], hi - lo); \
                            }                                                            \
                            for (int64_t o = hi; o < ow; o++) dst[o] = 0;                \
                        }                                                                \
                    }                                                                    \
    }

/* A 2-D convolution with stride 1 whose output rows are as wide as its
 * input rows (a 'same' convolution): the input rows one tap reads for
 * consecutive output rows lie back to back, as do the output rows in the
 * column buffer, so a tap's whole band is one copy; the columns that the
 * padding hides (which the copy filled from the neighbouring row) are
 * zeroed afterwards. Most of a backbone's convolutions are of this kind. */
static int rows_contiguous(const nn_geom_t *g)
{
    return g->k[0] == 1 && g->in[0] == 1 && g->s[1] == 1 && g->s[2] == 1 && g->in[2] == g->out[2];
}

static void im2col_rows_f(const float *x, const nn_geom_t *g, int64_t cg, int64_t r0, int64_t r1, float *col)
{
    int64_t ow = g->out[2], ncols = (r1 - r0) * ow, plane = g->in[1] * g->in[2];
    float *row = col;
    for (int64_t ch = 0; ch < cg; ch++)
        for (int64_t kh = 0; kh < g->k[1]; kh++)
            for (int64_t kw = 0; kw < g->k[2]; kw++, row += ncols) {
                int64_t off = kw * g->d[2] - g->pb[2], dh = kh * g->d[1] - g->pb[1], lo, hi;
                valid_range(off, 1, g->in[2], ow, &lo, &hi);
                /* output rows r read input row r + dh: valid for r in [ra, rb) */
                int64_t ra = r0 > -dh ? r0 : -dh, rb = r1 < g->in[1] - dh ? r1 : g->in[1] - dh;
                if (ra > r1) ra = r1;
                if (rb < ra) rb = ra;
                memset(row, 0, (size_t)((ra - r0) * ow) * sizeof *row);
                memset(row + (rb - r0) * ow, 0, (size_t)((r1 - rb) * ow) * sizeof *row);
                if (rb == ra) continue;
                float *dst = row + (ra - r0) * ow;
                if (hi <= lo) {
                    memset(dst, 0, (size_t)((rb - ra) * ow) * sizeof *dst);
                    continue;
                }
                /* from column lo of the first row to column hi-1 of the last:
                 * every source element lies inside the valid input rows */
                const float *src = x + ch * plane + (ra + dh) * g->in[2] + off;
                memcpy(dst + lo, src + lo, (size_t)((rb - ra - 1) * ow + hi - lo) * sizeof *dst);
                for (int64_t r = 0; r < rb - ra; r++) {
                    for (int64_t o = 0; o < lo; o++) dst[r * ow + o] = 0;
                    for (int64_t o = hi; o < ow; o++) dst[r * ow + o] = 0;
                }
            }
}

/* The adjoint: y (the big side, g->in) += scatter of col (small side rows). */
#define DEFINE_COL2IM(NAME, T)                                                           \
    static void NAME(const T *col, const nn_geom_t *g, int64_t cg, int64_t r0, int64_t r1, T *y) \
    {                                                                                    \
        int64_t ow = g->out[2], ncols = (r1 - r0) * ow;                                  \
        const T *row = col;                                                              \
        for (int64_t ch = 0; ch < cg; ch++)                                              \
            for (int64_t kd = 0; kd < g->k[0]; kd++)                                     \
                for (int64_t kh = 0; kh < g->k[1]; kh++)                                 \
                    for (int64_t kw = 0; kw < g->k[2]; kw++, row += ncols) {             \
                        int64_t off = kw * g->d[2] - g->pb[2], lo, hi;                   \
                        valid_range(off, g->s[2], g->in[2], ow, &lo, &hi);               \
                        for (int64_t r = r0; r < r1; r++) {                              \
                            const T *src = row + (r - r0) * ow;                          \
                            int64_t id = (r / g->out[1]) * g->s[0] - g->pb[0] + kd * g->d[0]; \
                            int64_t ih = (r % g->out[1]) * g->s[1] - g->pb[1] + kh * g->d[1]; \
                            if (id < 0 || id >= g->in[0] || ih < 0 || ih >= g->in[1]) continue; \
                            int64_t base = ((ch * g->in[0] + id) * g->in[1] + ih) * g->in[2] + off; \
                            int64_t s = g->s[2];                                         \
                            for (int64_t o = lo; o < hi; o++) y[base + o * s] += src[o]; \
                        }                                                                \
                    }                                                                    \
    }

/* y[0..n) += a * x[0..n), unrolled by 8 with restrict pointers so that
 * GCC's -O2 (basic-block) vectoriser turns it into SIMD; the result is the
 * same as the plain loop's, element by element. */
#define DEFINE_AXPY(NAME, T)                                                             \
    static inline void NAME(T *restrict y, const T *restrict x, T a, int64_t n)          \
    {                                                                                    \
        int64_t i = 0;                                                                   \
        for (; i + 8 <= n; i += 8) {                                                     \
            y[i] += a * x[i]; y[i + 1] += a * x[i + 1];                                  \
            y[i + 2] += a * x[i + 2]; y[i + 3] += a * x[i + 3];                          \
            y[i + 4] += a * x[i + 4]; y[i + 5] += a * x[i + 5];                          \
            y[i + 6] += a * x[i + 6]; y[i + 7] += a * x[i + 7];                          \
        }                                                                                \
        for (; i < n; i++) y[i] += a * x[i];                                             \
    }

DEFINE_AXPY(axpy_f, float)
DEFINE_AXPY(axpy_d, double)

/* Depthwise 2-D convolution, one channel: y = bias + sum of shifted x*w. */
#define DEFINE_DEPTHWISE(NAME, T, AXPY)                                                  \
    static void NAME(const T *x, const T *w, T bias, const nn_geom_t *g, T *y)           \
    {                                                                                    \
        int64_t oh = g->out[1], ow = g->out[2], sh = g->s[1], sw = g->s[2];              \
        for (int64_t i = 0; i < oh * ow; i++) y[i] = bias;                               \
        for (int64_t kh = 0; kh < g->k[1]; kh++)                                         \
            for (int64_t kw = 0; kw < g->k[2]; kw++) {                                   \
                T wv = w[kh * g->k[2] + kw];                                             \
                int64_t off = kw * g->d[2] - g->pb[2], lo, hi;                           \
                valid_range(off, sw, g->in[2], ow, &lo, &hi);                            \
                for (int64_t r = 0; r < oh; r++) {                                       \
                    int64_t ih = r * sh - g->pb[1] + kh * g->d[1];                       \
                    if (ih < 0 || ih >= g->in[1]) continue;                              \
                    int64_t base = ih * g->in[2] + off;                                  \
                    T *dst = y + r * ow;                                                 \
                    if (sw == 1) {                                                       \
                        if (hi > lo) AXPY(dst + lo, x + base + lo, wv, hi - lo);         \
                    } else {                                                             \
                        for (int64_t o = lo; o < hi; o++) dst[o] += wv * x[base + o * sw]; \
                    }                                                                    \
                }                                                                        \
            }                                                                            \
    }

#define DEFINE_ADD_BIAS(NAME, T)                                                         \
    static void NAME(T *y, const T *b, int64_t m, int64_t sz)                            \
    {                                                                                    \
        for (int64_t i = 0; i < m; i++)                                                  \
            for (int64_t j = 0; j < sz; j++) y[i * sz + j] += b[i];                      \
    }

DEFINE_IM2COL(im2col_f, float, strided_copy_f)
DEFINE_IM2COL(im2col_d, double, strided_copy_d)
DEFINE_COL2IM(col2im_f, float)
DEFINE_COL2IM(col2im_d, double)
DEFINE_DEPTHWISE(depthwise_f, float, axpy_f)
DEFINE_DEPTHWISE(depthwise_d, double, axpy_d)
DEFINE_ADD_BIAS(add_bias_f, float)
DEFINE_ADD_BIAS(add_bias_d, double)

/* Adds the optional bias to every output channel. */
static void add_bias(op_ctx_t *c, const conv_plan_t *p)
{
    const tensor_t *b = c->n_in > 2 ? c->in[2] : NULL;
    if (!b) return;
    dtype_t dt = c->in[0]->dtype;
    for (int64_t n = 0; n < p->n; n++) {
        char *yn = (char *)c->out[0]->data + n * p->m * p->osz * dtype_size(dt);
        if (dt == DT_FLOAT) add_bias_f((float *)yn, b->data, p->m, p->osz);
        else add_bias_d((double *)yn, b->data, p->m, p->osz);
    }
}

static int is_pointwise(const nn_geom_t *g)
{
    for (int i = 0; i < NN_SP; i++)
        if (g->k[i] != 1 || g->s[i] != 1 || g->pb[i] || g->pe[i]) return 0;
    return 1;
}

/* Rows (output depth x height pairs) per band so the columns fit the budget. */
static int64_t band_rows(int64_t rows, int64_t ck, int64_t ow)
{
    int64_t r = ck * ow > 0 ? COL_BUDGET / (ck * ow) : rows;
    int64_t min_rows = ow > 0 ? (BAND_MIN_COLS + ow - 1) / ow : 1;
    if (r < min_rows) r = min_rows;
    return r < rows ? r : rows;
}

typedef struct dw_job { op_ctx_t *c; const conv_plan_t *p; } dw_job_t;

/* Depthwise task: (batch, channel) planes [u0, u1). */
static void depthwise_planes(void *ctx, int64_t u0, int64_t u1)
{
    const dw_job_t *j = ctx;
    const conv_plan_t *p = j->p;
    dtype_t dt = j->c->in[0]->dtype;
    const tensor_t *b = j->c->n_in > 2 ? j->c->in[2] : NULL;
    size_t es = dtype_size(dt);
    const char *x = j->c->in[0]->data, *w = j->c->in[1]->data;
    char *y = j->c->out[0]->data;
    for (int64_t u = u0; u < u1; u++) {
        int64_t ch = u % p->cin;
        const char *xp = x + u * p->isz * es, *wp = w + ch * p->kvol * es;
        char *yp = y + u * p->osz * es;
        if (dt == DT_FLOAT)
            depthwise_f((const float *)xp, (const float *)wp, b ? ((const float *)b->data)[ch] : 0.0f, &p->g,
                        (float *)yp);
        else
            depthwise_d((const double *)xp, (const double *)wp, b ? ((const double *)b->data)[ch] : 0.0, &p->g,
                        (double *)yp);
    }
}

static int conv_depthwise(op_ctx_t *c, const conv_plan_t *p)
{
    dw_job_t j = {c, p};
    int64_t work = p->osz * p->kvol;   /* multiply-adds per plane */
    int64_t grain = work >= 65536 ? 1 : 65536 / (work > 0 ? work : 1);
    nn_parallel(p->n * p->cin, grain, depthwise_planes, &j);
    return 0;
}

/* im2col / col2im of one band, split over channels (each channel owns its
 * rows of the column matrix and, for col2im, its output plane). */
typedef struct cols_job {
    dtype_t dt;
    const nn_geom_t *g;
    int64_t r0, r1, ncols, plane;   /* plane: spatial volume of the big side */
    const char *src;
    char *dst;
    int to_image;                   /* 0 im2col, 1 col2im */
} cols_job_t;

static void cols_channels(void *ctx, int64_t c0, int64_t c1)
{
    const cols_job_t *j = ctx;
    size_t es = dtype_size(j->dt);
    int64_t kvol = nn_prod(j->g->k, NN_SP);
    int64_t img = c0 * j->plane * (int64_t)es, col = c0 * kvol * j->ncols * (int64_t)es;
    if (!j->to_image && j->dt == DT_FLOAT && rows_contiguous(j->g))
        im2col_rows_f((const float *)(j->src + img), j->g, c1 - c0, j->r0, j->r1, (float *)(j->dst + col));
    else if (!j->to_image && j->dt == DT_FLOAT)
        im2col_f((const float *)(j->src + img), j->g, c1 - c0, j->r0, j->r1, (float *)(j->dst + col));
    else if (!j->to_image)
        im2col_d((const double *)(j->src + img), j->g, c1 - c0, j->r0, j->r1, (double *)(j->dst + col));
    else if (j->dt == DT_FLOAT)
        col2im_f((const float *)(j->src + col), j->g, c1 - c0, j->r0, j->r1, (float *)(j->dst + img));
    else
        col2im_d((const double *)(j->src + col), j->g, c1 - c0, j->r0, j->r1, (double *)(j->dst + img));
}

static void run_cols(dtype_t dt, const nn_geom_t *g, int64_t channels, int64_t r0, int64_t r1, const void *src,
                     void *dst, int to_image)
{
    int64_t ncols = (r1 - r0) * g->out[2], per = nn_prod(g->k, NN_SP) * ncols;
    cols_job_t j = {dt, g, r0, r1, ncols, nn_prod(g->in, NN_SP), src, dst, to_image};
    nn_parallel(channels, per >= 65536 ? 1 : 65536 / (per ? per : 1), cols_channels, &j);
}

/* A 2-D convolution on the implicit-GEMM kernels, no column buffer: the
 * pixel-broadcast tile (fconv_px.c) where the CPU's kernels have it and the
 * shape suits it,
 * else fconv_rows, which packs the column matrix a strip at a time straight
 * from the input planes (strided convolutions first split the input into
 * its stride phases, in scratch, so their strips read consecutive
 * elements too); the same sums as the GEMM over im2col's columns. 0 where it
 * cannot, or where im2col + GEMM measured faster: an output plane so small
 * that the strips are mostly edges (unless the pixel tile takes it: with
 * the weights kept and many channels, fconv_px.c), and strips that must be gathered
 * (output rows narrower than the input's, no phase split) for fewer than
 * GATHER_MIN_M output channels, too few to repay the gathers. */
#define DIRECT_MIN_COLS 256
#define GATHER_MIN_M 32

/* fconv's geometry of a 2-D convolution; 0 where it has none. */
static int fconv_geom_of(const nn_geom_t *g, const conv_plan_t *p, fconv_geom_t *fg)
{
    if (g->k[0] != 1 || g->in[0] != 1 || g->out[0] != 1 || g->k[1] > FCONV_MAX_K || g->k[2] > FCONV_MAX_K) return 0;
    *fg = (fconv_geom_t){p->cg, g->in[1], g->in[2], g->out[1], g->out[2], (int)g->k[1], (int)g->k[2],
                         (int)g->s[1], (int)g->s[2], {0}, {0}, NULL};
    for (int i = 0; i < fg->kh; i++) fg->dh[i] = i * g->d[1] - g->pb[1];
    for (int j = 0; j < fg->kw; j++) fg->dw[j] = j * g->d[2] - g->pb[2];
    return 1;
}

static int conv_implicit(op_ctx_t *c, const nn_geom_t *g, const conv_plan_t *p, const float *w, const float *x,
                         float *y, const fgemm_epi_t *epi)
{
    fconv_geom_t fg;
    if (!fconv_geom_of(g, p, &fg)) return 0;
    void *owned = NULL;
    /* the weights packed once per node and kept (c->cache) where one
     * group has them all; groups would each need their own */
    void **kept = p->group == 1 ? c->cache : NULL;
    int64_t px = fconv_px_floats(&fg, p->mg, kept != NULL);
    if (px) {   /* input broadcast against packed weights, no strip packing */
        int rc = fconv_px(p->mg, &fg, w, x, y, epi, nn_scratch(c, (size_t)px * sizeof(float), &owned), kept);
        free(owned);
        return rc == 0;
    }
    if (g->out[1] * g->out[2] < DIRECT_MIN_COLS) return 0;
    int64_t phase = fconv_phase_floats(&fg);
    if (!rows_contiguous(g) && !phase && p->mg < GATHER_MIN_M) return 0;
    if (phase) fg.phase = nn_scratch(c, (size_t)phase * sizeof(float), &owned);
    int rc = fconv_rows(p->mg, &fg, w, x, y, epi);
    free(owned);
    return rc == 0;
}

/* Whether the fused residual (op_ctx_t.residual) is one the epilogue can
 * add: float32, one value per output element, in bytes of its own. */
static int residual_fits(const op_ctx_t *c)
{
    const tensor_t *r = c->residual, *y = c->out[0];
    return r && r->dtype == DT_FLOAT && tensor_numel(r) == tensor_numel(y) && r->data != y->data;
}

/* The GEMM paths, a band of rows at a time. Conv: im2col, then
 * W[mg x cg*k] * col. ConvTranspose: col = W^T[mg*k x cg] * X, then
 * col2im. In both, g.out is the side the column matrix's columns index. */
static int conv_bands(op_ctx_t *c, const conv_plan_t *p, int transposed)
{
    dtype_t dt = c->in[0]->dtype;
    size_t es = dtype_size(dt);
    const char *x = c->in[0]->data, *w = c->in[1]->data;
    char *y = c->out[0]->data;
    int64_t ck = (transposed ? p->mg : p->cg) * p->kvol;   /* rows of the column matrix */
    int pointwise = !transposed && is_pointwise(&p->g);
    int64_t rows = p->g.out[0] * p->g.out[1], ow = p->g.out[2];
    int64_t band = band_rows(rows, ck, ow);
    void *owned = NULL;
    char *col = pointwise ? NULL : nn_scratch(c, (size_t)(ck * band * ow) * es, &owned);
    if (transposed) memset(y, 0, (size_t)(p->n * p->m * p->osz) * es);
    int rc = 0;
    /* float32 Conv on parity's own kernel: bias and activation in its epilogue */
    const tensor_t *bt = c->n_in > 2 ? c->in[2] : NULL;
    int own = !transposed && dt == DT_FLOAT && fgemm_available();
    fgemm_epi_t epi = {0};
    /* a fused residual in the epilogue too, before the activation; where
     * it cannot be, the executor adds it and then applies the activation
     * (ops/run.c), so the tiles must not */
    int take_res = own && residual_fits(c);
    if (own && (!c->residual || take_res)) c->act_done = fgemm_epi_act(&epi, c->node);
    c->res_done = take_res;
    /* the storage rounding too, last, where nothing is left to apply after
     * the tiles (every own path below ends in fgemm_tile_post) */
    if (own && (c->act_done || c->node->act == ACT_NONE) && fgemm_rounds(c->round_out, epi.act)) {
        epi.round = c->round_out;
        c->round_done = c->round_out != DT_UNDEFINED;
    }
    const float *res = take_res ? c->residual->data : NULL;
    for (int64_t n = 0; n < p->n && !rc; n++)
        for (int64_t gi = 0; gi < p->group && !rc; gi++) {
            const char *xg = x + (n * p->cin + gi * p->cg) * p->isz * es;
            const char *wg = w + gi * p->mg * p->cg * p->kvol * es;
            char *yg = y + (n * p->m + gi * p->mg) * p->osz * es;
            epi.bias = bt ? (const float *)bt->data + gi * p->mg : NULL;
            epi.res = res ? res + (n * p->m + gi * p->mg) * p->osz : NULL;
            if (own && !pointwise && conv_implicit(c, &p->g, p, (const float *)wg, (const float *)xg, (float *)yg, &epi))
                continue;
            if (pointwise && own) {
                fgemm(p->mg, p->osz, ck, (const float *)wg, ck, (const float *)xg, p->isz, (float *)yg, p->osz, &epi);
                continue;
            }
            if (pointwise) {   /* the input already is the column matrix */
                rc = nn_gemm(dt, 0, 0, p->mg, p->osz, ck, 1.0, wg, ck, xg, p->isz, 0.0, yg, p->osz);
                continue;
            }
            for (int64_t r0 = 0; r0 < rows && !rc; r0 += band) {
                int64_t r1 = r0 + band < rows ? r0 + band : rows;
                int64_t nc = (r1 - r0) * ow;
                if (transposed) {
                    rc = nn_gemm(dt, 1, 0, ck, nc, p->cg, 1.0, wg, ck, xg + r0 * ow * es, p->isz, 0.0, col, nc);
                    if (rc) break;
                    run_cols(dt, &p->g, p->mg, r0, r1, col, yg, 1);
                } else {
                    run_cols(dt, &p->g, p->cg, r0, r1, xg, col, 0);
                    if (own) {
                        fgemm_epi_t be = epi;   /* the band's rows of the residual */
                        be.res = epi.res ? epi.res + r0 * ow : NULL;
                        fgemm(p->mg, nc, ck, (const float *)wg, ck, (const float *)col, nc,
                              (float *)(yg + r0 * ow * es), p->osz, &be);
                        continue;
                    }
                    rc = nn_gemm(dt, 0, 0, p->mg, nc, ck, 1.0, wg, ck, col, nc, 0.0, yg + r0 * ow * es, p->osz);
                }
            }
        }
    free(owned);
    if (rc) return op_fail(c, "convolution too large for BLAS");
    if (!own) add_bias(c, p);
    return 0;
}

int conv_run(op_ctx_t *c)
{
    conv_plan_t p;
    if (conv_plan(c, &p)) return -1;
    if (p.cg == 1 && p.mg == 1 && p.g.k[0] == 1 && p.g.in[0] == 1 && p.isz > 0)
        return conv_depthwise(c, &p);
    return conv_bands(c, &p, 0);
}

/* --------------------------------------------------------- ConvTranspose */

/* Geometry in col2im form: g.in is the (large) output, g.out the input. */
static int convt_plan(op_ctx_t *c, conv_plan_t *p)
{
    if (conv_common(c, p)) return -1;
    const tensor_t *x = c->in[0], *w = c->in[1];
    int nsp = x->ndim - 2;
    if (w->dims[0] != p->cin)
        return op_fail(c, "weights have %lld input channels, expected %lld", (long long)w->dims[0], (long long)p->cin);
    p->mg = w->dims[1];
    p->m = p->mg * p->group;
    if (check_bias(c, p)) return -1;

    int64_t s[NN_SP], d[NN_SP], pads[2 * NN_SP], opad[NN_SP], oshape[NN_SP + 2];
    if (nn_attr_ints(c, "strides", nsp, 1, s) || nn_attr_ints(c, "dilations", nsp, 1, d) ||
        nn_attr_ints(c, "pads", 2 * nsp, 0, pads) || nn_attr_ints(c, "output_padding", nsp, 0, opad))
        return -1;
    const int64_t *osv;
    int nos = attr_ints(c->node, "output_shape", &osv);
    if (nos >= 0 && nos != nsp && nos != nsp + 2)
        return op_fail(c, "output_shape has %d values, expected %d", nos, nsp);
    for (int i = 0; i < nsp && nos >= 0; i++) oshape[i] = osv[nos - nsp + i];
    char buf[32];
    const char *ap = attr_string(c->node, "auto_pad", "NOTSET", buf, sizeof buf);
    int same = !strcmp(ap, "SAME_UPPER") ? 2 : !strcmp(ap, "SAME_LOWER") ? 3 : 0;
    int valid = !strcmp(ap, "VALID");
    if (!same && !valid && strcmp(ap, "NOTSET"))
        return op_fail(c, "auto_pad '%s' is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER", ap);

    nn_geom_t *g = &p->g;
    memset(g, 0, sizeof *g);
    g->nsp = nsp;
    int off = NN_SP - nsp;
    for (int i = 0; i < off; i++) g->in[i] = g->out[i] = g->k[i] = g->s[i] = g->d[i] = 1;
    for (int i = 0; i < nsp; i++) {
        int j = off + i;
        int64_t in = x->dims[2 + i], k = w->dims[2 + i];
        if (s[i] < 1 || d[i] < 1) return op_fail(c, "strides and dilations must be >= 1");
        if (opad[i] < 0 || pads[i] < 0 || pads[nsp + i] < 0) return op_fail(c, "pads must be >= 0");
        if (k < 1) return op_fail(c, "empty kernel on spatial axis %d", i);
        int64_t full = s[i] * (in - 1) + opad[i] + (k - 1) * d[i] + 1;
        int64_t out, pb, pe;
        if (nos >= 0 || same) {
            out = nos >= 0 ? oshape[i] : in * s[i];
            /* As ONNX Runtime and the node tests: a requested size beyond
             * the full one adds outputs at the end (like output_padding);
             * the spec's split puts the odd pad at the end for SAME_UPPER,
             * at the beginning otherwise. */
            int64_t total = full - out > 0 ? full - out : 0;
            pb = same == 2 ? total / 2 : total - total / 2;
            pe = total - pb;
        } else if (valid) {
            out = full;
            pb = pe = 0;
        } else {
            pb = pads[i];
            pe = pads[nsp + i];
            out = full - pb - pe;
        }
        if (out < 1) return op_fail(c, "output size %lld on spatial axis %d is not positive", (long long)out, i);
        g->in[j] = out;
        g->out[j] = in;
        g->k[j] = k;
        g->s[j] = s[i];
        g->d[j] = d[i];
        g->pb[j] = pb;
        g->pe[j] = pe;
    }
    p->kvol = nn_prod(g->k, NN_SP);
    p->isz = nn_prod(g->out, NN_SP);   /* input spatial volume */
    p->osz = nn_prod(g->in, NN_SP);    /* output spatial volume */
    return 0;
}

int convtranspose_shape(op_ctx_t *c)
{
    conv_plan_t p;
    return convt_plan(c, &p) ? -1 : set_conv_out(c, &p, p.g.in);
}

int convtranspose_run(op_ctx_t *c)
{
    conv_plan_t p;
    return convt_plan(c, &p) ? -1 : conv_bands(c, &p, 1);
}
