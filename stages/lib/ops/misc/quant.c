/* quant.c — QuantizeLinear, DequantizeLinear (opsets 10 and 13: per-tensor,
 * and per-axis with 1-D scales from 13), DynamicQuantizeLinear (11), and the
 * quantization helpers the integer matmul/conv kernels share (misc_impl.h).
 *
 * Arithmetic follows onnxruntime and the ONNX reference: quantize is
 * saturate(rint(x / scale) + zero_point) in float32 (rint rounds half to
 * even), dequantize is (x - zero_point) * scale in float32.
 */
#include <math.h>
#include <string.h>
#include "ops/misc/misc_impl.h"
#include "ops/gemm/qgemm.h"

int32_t q_saturate(float v, dtype_t dt)
{
    float lo = dt == DT_INT8 ? -128.0f : 0.0f, hi = dt == DT_INT8 ? 127.0f : 255.0f;
    if (v != v) return 0;         /* NaN: no defined value; keep the conversion defined */
    if (v < lo) v = lo;
    if (v > hi) v = hi;
    return (int32_t)v;
}

static float q_clampf(float v, float lo, float hi) { return v < lo ? lo : v > hi ? hi : v; }

int32_t q_load(const tensor_t *t, int64_t i)
{
    return t->dtype == DT_INT8 ? ((const int8_t *)t->data)[i]
         : t->dtype == DT_UINT8 ? ((const uint8_t *)t->data)[i]
         : ((const int32_t *)t->data)[i];
}

void q_store(tensor_t *t, int64_t i, int32_t v)
{
    if (t->dtype == DT_INT8) ((int8_t *)t->data)[i] = (int8_t)v;
    else ((uint8_t *)t->data)[i] = (uint8_t)v;
}

int q_check_8bit(op_ctx_t *c, int i)
{
    const tensor_t *t = c->in[i];
    if (t && t->dtype != DT_INT8 && t->dtype != DT_UINT8)
        return op_fail(c, "input %d must be int8 or uint8, got %s", i, dtype_name(t->dtype));
    return 0;
}

/* ------------------------------------------------ Quantize / Dequantize */

typedef struct {
    int64_t inner, ad;      /* scale index of element i: (i / inner) % ad */
} q_axis_t;

/* Checks scale and zero point against x: scalars, or (opset >= 13) 1-D of
 * the axis's length. */
static int q_axis_plan(op_ctx_t *c, const tensor_t *x, const tensor_t *s, const tensor_t *z, q_axis_t *qa)
{
    qa->inner = 1;
    qa->ad = 1;
    if (s->dtype != DT_FLOAT) return op_fail(c, "scale must be float32, got %s", dtype_name(s->dtype));
    if (z && z->dtype != DT_INT8 && z->dtype != DT_UINT8 && z->dtype != DT_INT32)
        return op_fail(c, "zero point type %s is not supported", dtype_name(z->dtype));
    /* a 1-element vector is per-tensor too, as in onnxruntime */
    if (s->ndim <= 1 && tensor_numel(s) == 1) {
        if (z && tensor_numel(z) != 1) return op_fail(c, "zero point must be a scalar like the scale");
        return 0;
    }
    if (c->node->opset < 13 || s->ndim != 1)
        return op_fail(c, "scale must be a scalar%s", c->node->opset < 13 ? " before opset 13" : " or 1-D");
    int axis = op_axis(c, attr_int(c->node, "axis", 1), x->ndim);
    if (axis < 0) return -1;
    if (s->dims[0] != x->dims[axis])
        return op_fail(c, "scale has %lld values, axis %d has %lld", (long long)s->dims[0], axis,
                       (long long)x->dims[axis]);
    if (z && (z->ndim != 1 || z->dims[0] != s->dims[0]))
        return op_fail(c, "zero point must have the scale's shape");
    qa->ad = x->dims[axis];
    for (int d = axis + 1; d < x->ndim; d++) qa->inner *= x->dims[d];
    return 0;
}

int quantize_shape(op_ctx_t *c)
{
    if (op_check_inputs(c, 2, 3)) return -1;
    const tensor_t *x = c->in[0], *z = c->n_in > 2 ? c->in[2] : NULL;
    if (x->dtype != DT_FLOAT && x->dtype != DT_INT32)
        return op_fail(c, "input type %s is not supported", dtype_name(x->dtype));
    q_axis_t qa;
    if (q_axis_plan(c, x, c->in[1], z, &qa)) return -1;
    if (z && z->dtype == DT_INT32) return op_fail(c, "zero point must be int8 or uint8");
    return op_set_out(c, 0, z ? z->dtype : DT_UINT8, x->ndim, x->dims);
}

int quantize_run(op_ctx_t *c)
{
    const tensor_t *x = c->in[0], *s = c->in[1], *z = c->n_in > 2 ? c->in[2] : NULL;
    tensor_t *y = c->out[0];
    q_axis_t qa;
    if (q_axis_plan(c, x, s, z, &qa)) return -1;
    const float *sc = s->data;
    int64_t n = tensor_numel(x);
    for (int64_t i = 0; i < n; i++) {
        int64_t a = qa.ad == 1 ? 0 : (i / qa.inner) % qa.ad;
        float v = x->dtype == DT_FLOAT ? ((const float *)x->data)[i] : (float)((const int32_t *)x->data)[i];
        float zp = z ? (float)q_load(z, a) : 0.0f;
        q_store(y, i, q_saturate(rintf(v / sc[a]) + zp, y->dtype));
    }
    return 0;
}

int dequantize_shape(op_ctx_t *c)
{
    if (op_check_inputs(c, 2, 3)) return -1;
    const tensor_t *x = c->in[0], *z = c->n_in > 2 ? c->in[2] : NULL;
    if (x->dtype != DT_INT8 && x->dtype != DT_UINT8 && x->dtype != DT_INT32)
        return op_fail(c, "input type %s is not supported", dtype_name(x->dtype));
    if (z && z->dtype != x->dtype)
        return op_fail(c, "zero point type %s differs from the input's %s", dtype_name(z->dtype),
                       dtype_name(x->dtype));
    q_axis_t qa;
    if (q_axis_plan(c, x, c->in[1], z, &qa)) return -1;
    return op_set_out(c, 0, DT_FLOAT, x->ndim, x->dims);
}

int dequantize_run(op_ctx_t *c)
{
    const tensor_t *x = c->in[0], *s = c->in[1], *z = c->n_in > 2 ? c->in[2] : NULL;
    q_axis_t qa;
    if (q_axis_plan(c, x, s, z, &qa)) return -1;
    const float *sc = s->data;
    float *y = c->out[0]->data;
    int64_t n = tensor_numel(x);
    for (int64_t i = 0; i < n; i++) {
        int64_t a = qa.ad == 1 ? 0 : (i / qa.inner) % qa.ad;
        /* int32 inputs: the difference is formed in int64 so it cannot overflow */
        int64_t d = (int64_t)q_load(x, i) - (z ? q_load(z, a) : 0);
        y[i] = (float)d * sc[a];
    }
    return 0;
}

/* ------------------------------------------------ DynamicQuantizeLinear */

int dynquant_shape(op_ctx_t *c)
{
    if (op_check_inputs(c, 1, 1)) return -1;
    const tensor_t *x = c->in[0];
    if (x->dtype != DT_FLOAT) return op_fail(c, "input must be float32, got %s", dtype_name(x->dtype));
    if (op_set_out(c, 0, DT_UINT8, x->ndim, x->dims)) return -1;
    if (op_set_out(c, 1, DT_FLOAT, 0, NULL)) return -1;
    return op_set_out(c, 2, DT_UINT8, 0, NULL);
}

int dynquant_run(op_ctx_t *c)
{
    const tensor_t *x = c->in[0];
    const float *xv = x->data;
    int64_t n = tensor_numel(x);
    float lo = 0.0f, hi = 0.0f;   /* the range always includes 0 */
    q_range(xv, n, &lo, &hi);
    if (!isfinite(lo) || !isfinite(hi)) return op_fail(c, "input holds an infinite value");
    float scale = (hi - lo) / 255.0f;
    int32_t zp = 0;
    if (scale > 0.0f) zp = q_saturate(rintf(q_clampf((0.0f - lo) / scale, 0.0f, 255.0f)), DT_UINT8);
    uint8_t *y = c->out[0]->data;
    if (scale > 0.0f) q_to_u8(xv, n, scale, (float)zp, y);
    else memset(y, zp, (size_t)n);
    if (c->n_out > 1 && c->out[1]) *(float *)c->out[1]->data = scale;
    if (c->n_out > 2 && c->out[2]) *(uint8_t *)c->out[2]->data = (uint8_t)zp;
    return 0;
}
