/* nn.c — the NN operator family: convolutions and GEMMs, pools, norms,
 * Resize/Upsample and GridSample. This file holds the table (the kernels
 * live in conv.c, gemm.c, einsum.c, pool.c, norm.c, resize.c and
 * gridsample.c) and the helpers they share: window geometry for Conv and
 * the pools, attribute lists, and scratch memory. */
#include <stdlib.h>
#include <string.h>
#include "ops/nn/nn_impl.h"
#include "util/pool.h"

#define ROW(op, since, until, shape, run) {"", op, since, until, shape, run, 0, 0, 0}
#define GEMM_ROW(op, since, until, shape, run) {"", op, since, until, shape, run, 1, 0, 0}

const op_def_t ops_nn[] = {
    GEMM_ROW("Conv", 1, 0, conv_shape, conv_run),
    GEMM_ROW("ConvTranspose", 1, 0, convtranspose_shape, convtranspose_run),
    GEMM_ROW("MatMul", 1, 0, matmul_shape, matmul_run),
    GEMM_ROW("Gemm", 1, 0, gemm_shape, gemm_run),
    GEMM_ROW("Einsum", 12, 0, einsum_shape, einsum_run),
    ROW("AveragePool", 1, 0, pool_shape, avgpool_run),
    ROW("MaxPool", 1, 0, pool_shape, maxpool_run),
    ROW("LpPool", 2, 0, pool_shape, lppool_run),
    ROW("GlobalAveragePool", 1, 0, globalpool_shape, globalavgpool_run),
    ROW("GlobalMaxPool", 1, 0, globalpool_shape, globalmaxpool_run),
    ROW("GlobalLpPool", 2, 0, globalpool_shape, globallppool_run),
    ROW("MaxUnpool", 9, 0, maxunpool_shape, maxunpool_run),
    ROW("BatchNormalization", 1, 0, batchnorm_shape, batchnorm_run),
    ROW("InstanceNormalization", 1, 0, instancenorm_shape, instancenorm_run),
    ROW("LayerNormalization", 17, 0, layernorm_shape, layernorm_run),
    ROW("LpNormalization", 1, 0, lpnorm_shape, lpnorm_run),
    ROW("MeanVarianceNormalization", 9, 0, mvn_shape, mvn_run),
    ROW("LRN", 1, 0, lrn_shape, lrn_run),
    ROW("Resize", 10, 0, resize_shape, resize_run),
    ROW("Upsample", 7, 10, upsample_shape, upsample_run),
    ROW("GridSample", 16, 0, gridsample_shape, gridsample_run),
};
const int ops_nn_count = (int)(sizeof ops_nn / sizeof ops_nn[0]);

/* Attribute values beyond this are refused: they could only come from a
 * corrupt model, and bounding them keeps the index arithmetic in range. */
#define NN_ATTR_MAX ((int64_t)1 << 31)

int64_t nn_prod(const int64_t *v, int n)
{
    int64_t p = 1;
    for (int i = 0; i < n; i++) p *= v[i];
    return p;
}

int nn_attr_ints(op_ctx_t *c, const char *name, int n, int64_t dflt, int64_t *dst)
{
    const int64_t *v;
    int k = attr_ints(c->node, name, &v);
    if (k < 0) {
        for (int i = 0; i < n; i++) dst[i] = dflt;
        return 0;
    }
    if (k != n) return op_fail(c, "attribute '%s' has %d values, expected %d", name, k, n);
    for (int i = 0; i < n; i++) {
        if (v[i] < -NN_ATTR_MAX || v[i] > NN_ATTR_MAX)
            return op_fail(c, "attribute '%s'[%d] = %lld is out of range", name, i, (long long)v[i]);
        dst[i] = v[i];
    }
    return 0;
}

void *nn_scratch(op_ctx_t *c, size_t bytes, void **owned)
{
    *owned = NULL;
    if (bytes == 0) bytes = 1;
    void *p = c->scratch ? c->scratch(c, bytes) : NULL;
    if (!p) p = *owned = xmalloc(bytes);
    return p;
}

/* Output size of one axis with explicit pads; pools may round up. */
static int64_t window_out(int64_t in, int64_t pb, int64_t pe, int64_t dk, int64_t s, int ceil_mode)
{
    int64_t span = in + pb + pe - dk;
    if (span < 0) return -1;
    if (!ceil_mode) return span / s + 1;
    int64_t out = (span + s - 1) / s + 1;
    /* As PyTorch and ONNX Runtime: the last window must start inside the
     * input or the left padding, not entirely in the right padding. */
    if ((out - 1) * s >= in + pb) out--;
    return out;
}

int nn_geom_window(op_ctx_t *c, int nsp, const int64_t *in_sp, const int64_t *kernel,
                   int ceil_mode, int use_dil, nn_geom_t *g)
{
    if (nsp < 1 || nsp > NN_SP)
        return op_fail(c, "%d spatial dimensions are not supported (1 to %d)", nsp, NN_SP);
    int64_t s[NN_SP], d[NN_SP], p[2 * NN_SP];
    if (nn_attr_ints(c, "strides", nsp, 1, s)) return -1;
    if (use_dil) {
        if (nn_attr_ints(c, "dilations", nsp, 1, d)) return -1;
    } else {
        for (int i = 0; i < nsp; i++) d[i] = 1;
    }
    if (nn_attr_ints(c, "pads", 2 * nsp, 0, p)) return -1;
    char buf[32];
    const char *ap = attr_string(c->node, "auto_pad", "NOTSET", buf, sizeof buf);
    int mode = !strcmp(ap, "NOTSET") ? 0 : !strcmp(ap, "VALID") ? 1
             : !strcmp(ap, "SAME_UPPER") ? 2 : !strcmp(ap, "SAME_LOWER") ? 3 : -1;
    if (mode < 0) return op_fail(c, "auto_pad '%s' is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER", ap);

    memset(g, 0, sizeof *g);
    g->nsp = nsp;
    int off = NN_SP - nsp;
    for (int i = 0; i < off; i++) {
        g->in[i] = g->out[i] = g->k[i] = g->s[i] = g->d[i] = 1;
    }
    for (int i = 0; i < nsp; i++) {
        int j = off + i;
        if (s[i] < 1) return op_fail(c, "strides[%d] = %lld must be >= 1", i, (long long)s[i]);
        if (d[i] < 1) return op_fail(c, "dilations[%d] = %lld must be >= 1", i, (long long)d[i]);
        if (kernel[i] < 1 || kernel[i] > NN_ATTR_MAX)
            return op_fail(c, "kernel size %lld on spatial axis %d is invalid", (long long)kernel[i], i);
        if (p[i] < 0 || p[nsp + i] < 0) return op_fail(c, "pads must be >= 0");
        int64_t dk = (kernel[i] - 1) * d[i] + 1;
        g->in[j] = in_sp[i];
        g->k[j] = kernel[i];
        g->s[j] = s[i];
        g->d[j] = d[i];
        if (mode == 0) {
            g->pb[j] = p[i];
            g->pe[j] = p[nsp + i];
            g->out[j] = window_out(in_sp[i], p[i], p[nsp + i], dk, s[i], ceil_mode);
        } else if (mode == 1) {
            g->out[j] = window_out(in_sp[i], 0, 0, dk, s[i], 0);
        } else {
            int64_t out = (in_sp[i] + s[i] - 1) / s[i];
            int64_t total = (out - 1) * s[i] + dk - in_sp[i];
            if (total < 0) total = 0;
            g->pb[j] = mode == 2 ? total / 2 : total - total / 2;
            g->pe[j] = total - g->pb[j];
            g->out[j] = out;
        }
        if (g->out[j] < 1)
            return op_fail(c, "kernel extent %lld is larger than the padded input (%lld) on spatial axis %d",
                           (long long)dk, (long long)(in_sp[i] + g->pb[j] + g->pe[j]), i);
    }
    return 0;
}

typedef struct range_job { int64_t n, grain; nn_range_fn fn; void *ctx; } range_job_t;

static void range_task(void *ctx, int64_t t)
{
    const range_job_t *j = ctx;
    int64_t lo = t * j->grain, hi = lo + j->grain < j->n ? lo + j->grain : j->n;
    j->fn(j->ctx, lo, hi);
}

void nn_parallel(int64_t n, int64_t grain, nn_range_fn fn, void *ctx)
{
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    range_job_t j = {n, grain, fn, ctx};
    pool_for((n + grain - 1) / grain, range_task, &j);
}
