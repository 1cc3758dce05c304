/* narrow.c — lossless narrow storage of float32 constants in engine files.
 * A model whose weights came from FP16 (widened, or fp16-exact after
 * training in mixed precision) carries float32 constants that float16
 * holds exactly; storing those in two bytes halves an engine of IS-Net
 * (176 -> 88 MB, four of them in one validation) and changes no bit of any
 * value the engine computes with, since the reader widens them back exactly
 * (issue 34: disk use at 1024x1024). The check is bit for bit: -0, the
 * infinities, subnormals; a NaN keeps 32 bits (its payload may not fit). */
#include <stdlib.h>
#include <string.h>
#include "engine/narrow.h"
#include "tensor/half.h"
#include "util/err.h"

static int fits_f16(const float *x, uint16_t *buf, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        buf[i] = f32_to_f16(x[i]);
        if (f32_bits(f16_to_f32(buf[i])) != f32_bits(x[i])) return 0;
    }
    return 1;
}

static int fits_bf16(const float *x, uint16_t *buf, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        uint32_t u = f32_bits(x[i]);
        if (u & 0xffffu) return 0;   /* the low half is what bfloat16 drops */
        buf[i] = (uint16_t)(u >> 16);
    }
    return 1;
}

dtype_t narrow_exact(const tensor_t *t, uint16_t *buf)
{
    if (t->dtype != DT_FLOAT || !t->data) return DT_UNDEFINED;
    int64_t n = tensor_numel(t);
    const float *x = t->data;
    if (fits_f16(x, buf, n)) return DT_FLOAT16;
    if (fits_bf16(x, buf, n)) return DT_BFLOAT16;
    return DT_UNDEFINED;
}

void narrow_widen(tensor_t *t)
{
    int64_t n = tensor_numel(t);
    const uint16_t *s = t->data;
    float *d = xmalloc((size_t)(n > 0 ? n : 1) * sizeof *d);
    if (t->dtype == DT_FLOAT16) f16_widen(s, d, n);
    else for (int64_t i = 0; i < n; i++) d[i] = bf16_to_f32(s[i]);
    tensor_free_data(t);
    t->data = d;
    t->owns = 1;
    t->dtype = DT_FLOAT;
}
