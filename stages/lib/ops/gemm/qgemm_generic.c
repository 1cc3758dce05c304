/* qgemm_generic.c — qgemm's kernel and DynamicQuantizeLinear's passes in
 * portable C (see qgemm_impl.h): the path on CPUs without AVX2 and the
 * reference the vector kernels match.
 * Sums in uint32, whose wraparound is defined: the exact sum modulo 2^32,
 * as the vector kernels' int32 lanes give it in their own order. */
#include <math.h>
#include "ops/gemm/qgemm_impl.h"

static void tile_generic(int64_t kq, const uint8_t *a, int64_t lda, int mr, const int8_t *panel, int32_t *c,
                         int64_t ldc, int nr)
{
    for (int r = 0; r < mr; r++) {
        uint32_t acc[QG_NR] = {0};
        const uint8_t *ar = a + r * lda;
        const int8_t *bp = panel;
        for (int64_t q = 0; q < kq; q++, ar += QG_KU, bp += QG_NR * QG_KU)
            for (int j = 0; j < nr; j++)
                for (int u = 0; u < QG_KU; u++) acc[j] += (uint32_t)ar[u] * (uint32_t)(int32_t)bp[j * QG_KU + u];
        for (int j = 0; j < nr; j++) c[r * ldc + j] = (int32_t)acc[j];
    }
}

void q_range_generic(const float *x, int64_t n, float *lo, float *hi)
{
    float l = *lo, h = *hi;
    for (int64_t i = 0; i < n; i++) {
        l = x[i] < l ? x[i] : l;
        h = x[i] > h ? x[i] : h;
    }
    *lo = l;
    *hi = h;
}

void q_to_u8_generic(const float *x, int64_t n, float scale, float zp, uint8_t *y)
{
    for (int64_t i = 0; i < n; i++) {
        float v = rintf(x[i] / scale) + zp;
        v = v > 0.0f ? v : 0.0f;   /* NaN to 0 */
        y[i] = (uint8_t)(v < 255.0f ? v : 255.0f);
    }
}

const qgemm_arch_t qgemm_arch_generic = {"generic", 4, tile_generic, q_range_generic, q_to_u8_generic};
