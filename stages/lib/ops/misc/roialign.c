/* roialign.c — RoiAlign (opsets 10 and 16; MISC family, row in misc.c).
 *
 * Each region of interest (x1, y1, x2, y2, scaled by spatial_scale) is cut
 * into output_height x output_width bins; each bin averages (mode avg) or
 * takes the maximum (mode max) of sampling_ratio^2 bilinear samples
 * (adaptive ceil(roi size / bins) per axis when sampling_ratio is 0).
 * Opset 16's coordinate_transformation_mode half_pixel shifts coordinates
 * by -0.5 and lets rois be smaller than a pixel; output_half_pixel (the only
 * behaviour of opset 10) does neither. The arithmetic, sample clamping and
 * the max mode (maximum of the weighted corner values, not of the
 * interpolated samples) follow onnxruntime, which produced the reference
 * outputs.
 */
#include <math.h>
#include <string.h>
#include "ops/misc/misc_impl.h"

typedef struct {
    int max_mode, half_pixel;
    int64_t oh, ow, sampling;
    double scale;
} roi_attrs_t;

static int roi_attrs(op_ctx_t *c, roi_attrs_t *a)
{
    char buf[32];
    const char *mode = attr_string(c->node, "mode", "avg", buf, sizeof buf);
    if (strcmp(mode, "avg") && strcmp(mode, "max")) return op_fail(c, "unknown mode '%s'", mode);
    a->max_mode = !strcmp(mode, "max");
    a->half_pixel = 0;
    if (c->node->opset >= 16) {
        const char *ct = attr_string(c->node, "coordinate_transformation_mode", "half_pixel", buf, sizeof buf);
        if (strcmp(ct, "half_pixel") && strcmp(ct, "output_half_pixel"))
            return op_fail(c, "unknown coordinate_transformation_mode '%s'", ct);
        a->half_pixel = !strcmp(ct, "half_pixel");
    }
    a->oh = attr_int(c->node, "output_height", 1);
    a->ow = attr_int(c->node, "output_width", 1);
    a->sampling = attr_int(c->node, "sampling_ratio", 0);
    a->scale = attr_float(c->node, "spatial_scale", 1.0f);
    if (a->oh < 1 || a->ow < 1) return op_fail(c, "output_height and output_width must be >= 1");
    if (a->sampling < 0) return op_fail(c, "sampling_ratio must be >= 0");
    /* the adaptive grid is ceil(roi size / bins): bound it so loops stay finite */
    if (a->sampling > 1 << 16) return op_fail(c, "sampling_ratio %lld is too large", (long long)a->sampling);
    return 0;
}

int roialign_shape(op_ctx_t *c)
{
    roi_attrs_t a;
    if (op_check_inputs(c, 3, 3) || roi_attrs(c, &a)) return -1;
    const tensor_t *x = c->in[0], *r = c->in[1], *b = c->in[2];
    if (x->dtype != DT_FLOAT && x->dtype != DT_DOUBLE)
        return op_fail(c, "type %s is not supported", dtype_name(x->dtype));
    if (r->dtype != x->dtype) return op_fail(c, "rois must have the input's type");
    if (b->dtype != DT_INT64) return op_fail(c, "batch_indices must be int64");
    if (x->ndim != 4) return op_fail(c, "input must be [N, C, H, W]");
    if (r->ndim != 2 || r->dims[1] != 4) return op_fail(c, "rois must be [num_rois, 4]");
    if (b->ndim != 1 || b->dims[0] != r->dims[0]) return op_fail(c, "batch_indices must be [num_rois]");
    if (b->data)
        for (int64_t i = 0; i < b->dims[0]; i++) {
            int64_t v = ((const int64_t *)b->data)[i];
            if (v < 0 || v >= x->dims[0])
                return op_fail(c, "batch_indices[%lld] = %lld is outside [0, %lld)", (long long)i, (long long)v,
                               (long long)x->dims[0]);
        }
    int64_t dims[4] = {r->dims[0], x->dims[1], a.oh, a.ow};
    return op_set_out(c, 0, x->dtype, 4, dims);
}

#define ROI_BODY(TAPS)                                                                      \
    do {                                                                                  \
        const T *xv = c->in[0]->data, *rv = c->in[1]->data;                               \
        T *yv = c->out[0]->data;                                                          \
        for (int64_t n = 0; n < nroi; n++) {                                              \
            const T *r = rv + n * 4;                                                      \
            const T off = a.half_pixel ? (T)0.5 : (T)0;                                   \
            T sw = r[0] * (T)a.scale - off, sh = r[1] * (T)a.scale - off;                 \
            T rw = r[2] * (T)a.scale - off - sw, rh = r[3] * (T)a.scale - off - sh;        \
            if (!a.half_pixel) {                                                          \
                if (rw < (T)1) rw = (T)1;                                                 \
                if (rh < (T)1) rh = (T)1;                                                 \
            }                                                                             \
            T bh = rh / (T)a.oh, bw = rw / (T)a.ow;                                       \
            int64_t gh = a.sampling > 0 ? a.sampling : roi_grid((double)rh / (double)a.oh); \
            int64_t gw = a.sampling > 0 ? a.sampling : roi_grid((double)rw / (double)a.ow); \
            int64_t cnt = gh * gw > 1 ? gh * gw : 1;                                      \
            const T *plane0 = xv + ((const int64_t *)c->in[2]->data)[n] * C * H * W;     \
            for (int64_t ch = 0; ch < C; ch++) {                                          \
                const T *pl = plane0 + ch * H * W;                                        \
                T *out = yv + (n * C + ch) * a.oh * a.ow;                                 \
                for (int64_t ph = 0; ph < a.oh; ph++)                                     \
                    for (int64_t pw = 0; pw < a.ow; pw++) {                               \
                        T acc = 0;                                                        \
                        int any = 0;                                                      \
                        for (int64_t iy = 0; iy < gh; iy++) {                             \
                            T yy = sh + (T)ph * bh + ((T)iy + (T)0.5) * bh / (T)gh;        \
                            for (int64_t ix = 0; ix < gw; ix++) {                         \
                                T xx = sw + (T)pw * bw + ((T)ix + (T)0.5) * bw / (T)gw;    \
                                T v[4], wt[4];                                            \
                                TAPS(pl, H, W, yy, xx, v, wt);                            \
                                if (a.max_mode) {                                         \
                                    T m = wt[0] * v[0];                                   \
                                    for (int q = 1; q < 4; q++)                           \
                                        if (wt[q] * v[q] > m) m = wt[q] * v[q];           \
                                    if (!any || m > acc) acc = m;                         \
                                    any = 1;                                              \
                                } else {                                                  \
                                    acc += wt[0] * v[0] + wt[1] * v[1] + wt[2] * v[2] + wt[3] * v[3]; \
                                }                                                         \
                            }                                                             \
                        }                                                                 \
                        out[ph * a.ow + pw] = a.max_mode ? acc : acc / (T)cnt;            \
                    }                                                                     \
            }                                                                             \
        }                                                                                 \
    } while (0)

/* Adaptive sample count ceil(v), bounded (v is finite and >= 0 here). */
static int64_t roi_grid(double v)
{
    if (!(v > 0)) return 0;
    if (v > 1 << 16) return 1 << 16;
    return (int64_t)ceil(v);
}

/* The four corner values and weights of a bilinear sample at (y, x);
 * samples beyond one pixel outside the plane weigh nothing. */
#define ROI_TAPS(T)                                                                       \
    static void roi_taps_##T(const T *pl, int64_t H, int64_t W, T y, T x, T *v, T *w)     \
    {                                                                                     \
        if (!(y >= (T)-1 && y <= (T)H && x >= (T)-1 && x <= (T)W)) {                       \
            for (int q = 0; q < 4; q++) v[q] = w[q] = 0;                                  \
            return;                                                                       \
        }                                                                                 \
        if (y <= 0) y = 0;                                                                \
        if (x <= 0) x = 0;                                                                \
        int64_t y0 = (int64_t)y, x0 = (int64_t)x, y1, x1;                                 \
        if (y0 >= H - 1) { y1 = y0 = H - 1; y = (T)y0; } else y1 = y0 + 1;                \
        if (x0 >= W - 1) { x1 = x0 = W - 1; x = (T)x0; } else x1 = x0 + 1;                \
        T ly = y - (T)y0, lx = x - (T)x0, hy = (T)1 - ly, hx = (T)1 - lx;                 \
        v[0] = pl[y0 * W + x0]; v[1] = pl[y0 * W + x1];                                   \
        v[2] = pl[y1 * W + x0]; v[3] = pl[y1 * W + x1];                                   \
        w[0] = hy * hx; w[1] = hy * lx; w[2] = ly * hx; w[3] = ly * lx;                   \
    }
ROI_TAPS(float)
ROI_TAPS(double)

int roialign_run(op_ctx_t *c)
{
    roi_attrs_t a;
    if (roi_attrs(c, &a)) return -1;
    const tensor_t *x = c->in[0];
    int64_t nroi = c->in[1]->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    if (H == 0 || W == 0) {   /* nothing to sample: every bin is 0 */
        memset(c->out[0]->data, 0, tensor_nbytes(c->out[0]));
        return 0;
    }
    const int64_t *bi = c->in[2]->data;
    for (int64_t i = 0; i < nroi; i++)
        if (bi[i] < 0 || bi[i] >= x->dims[0]) return op_fail(c, "batch index %lld out of range", (long long)bi[i]);
    const tensor_t *r = c->in[1];
    for (int64_t i = 0; i < 4 * nroi; i++)
        if (!isfinite(tensor_get_f64(r, i))) return op_fail(c, "rois hold a non-finite value");
    if (x->dtype == DT_FLOAT) {
        typedef float T;
        ROI_BODY(roi_taps_float);
    } else {
        typedef double T;
        ROI_BODY(roi_taps_double);
    }
    return 0;
}
