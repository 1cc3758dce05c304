/* qlinear.c — integer matmul and convolution: MatMulInteger and ConvInteger
 * (opset 10, int32 results) and their requantizing forms QLinearMatMul and
 * QLinearConv (opset 10, int8/uint8 results).
 *
 * The sums are qgemm's (qgemm.h): exact integer arithmetic modulo 2^32,
 * the spec's int32 accumulator, so every CPU and thread count gives the
 * same bytes. Requantization follows onnxruntime:
 * saturate(rint(float(acc) * (scale_a * scale_b / scale_y)) + zp_y) in
 * float32. Zero points and scales may be per tensor, per row of A / column
 * of B, or per output channel of W, as the spec allows.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ops/misc/misc_impl.h"
#include "ops/nn/nn_impl.h"
#include "ops/gemm/qgemm.h"
#include "util/pool.h"

/* ------------------------------------------------------------- matmul */

typedef struct {
    int a_vec, b_vec;
    int64_t m, n, k;
    int nb;                                    /* output batch rank */
    int64_t bd[TENSOR_MAX_DIMS];               /* output batch dims */
    int64_t as[TENSOR_MAX_DIMS], bs[TENSOR_MAX_DIMS];   /* batch strides, 0 = broadcast */
    int64_t nbatch;
} qmm_t;

static int qmm_plan(op_ctx_t *c, const tensor_t *a, const tensor_t *b, qmm_t *p)
{
    if (a->ndim < 1 || b->ndim < 1) return op_fail(c, "matrix inputs must have rank >= 1");
    memset(p, 0, sizeof *p);
    p->a_vec = a->ndim == 1;
    p->b_vec = b->ndim == 1;
    p->m = p->a_vec ? 1 : a->dims[a->ndim - 2];
    p->k = a->dims[a->ndim - 1];
    p->n = p->b_vec ? 1 : b->dims[b->ndim - 1];
    if ((p->b_vec ? b->dims[0] : b->dims[b->ndim - 2]) != p->k)
        return op_fail(c, "inner dimensions differ (%lld and %lld)", (long long)p->k,
                       (long long)(p->b_vec ? b->dims[0] : b->dims[b->ndim - 2]));
    int ra = a->ndim > 2 ? a->ndim - 2 : 0, rb = b->ndim > 2 ? b->ndim - 2 : 0;
    p->nb = ra > rb ? ra : rb;
    int64_t sa = p->m * p->k, sb = p->k * p->n;
    p->nbatch = 1;
    for (int d = p->nb - 1; d >= 0; d--) {
        int ia = d - (p->nb - ra), ib = d - (p->nb - rb);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da != db && da != 1 && db != 1) return op_fail(c, "batch dimensions do not broadcast");
        p->bd[d] = da == 1 ? db : da;
        p->as[d] = da == 1 ? 0 : sa;
        p->bs[d] = db == 1 ? 0 : sb;
        sa *= da;
        sb *= db;
        p->nbatch *= p->bd[d];
    }
    return 0;
}

static int qmm_set_out(op_ctx_t *c, const qmm_t *p, dtype_t dt)
{
    int64_t dims[TENSOR_MAX_DIMS];
    int r = 0;
    for (int d = 0; d < p->nb; d++) dims[r++] = p->bd[d];
    if (!p->a_vec) dims[r++] = p->m;
    if (!p->b_vec) dims[r++] = p->n;
    return op_set_out(c, 0, dt, r, dims);
}

/* Checks a zero point or scale: absent, one value, or one per row/column. */
static int check_per(op_ctx_t *c, int i, int64_t per, const char *what)
{
    const tensor_t *t = c->n_in > i ? c->in[i] : NULL;
    if (!t) return 0;
    int64_t n = tensor_numel(t);
    if (n != 1 && n != per)
        return op_fail(c, "input %d must hold 1 or %lld values (per %s), got %lld", i, (long long)per, what,
                       (long long)n);
    return 0;
}

/* A zero point's values as int32 (nzp of them: 0 where absent). */
static int32_t *zp_ints(const tensor_t *zp, int64_t *nzp)
{
    *nzp = zp ? tensor_numel(zp) : 0;
    int32_t *v = xmalloc((size_t)(*nzp + 1) * sizeof *v);
    for (int64_t i = 0; i < *nzp; i++) v[i] = q_load(zp, i);
    return v;
}

/* acc = (A - zp_a) x (B - zp_b) over every batch, wrapped to int32, on
 * qgemm (exact: qgemm.h). Where B has no batch of its own (a MatMul's
 * weights), every batch of A is one taller matrix, and B is packed once
 * and kept in cache (op_ctx_t's, or NULL) across runs. */
static void qmm_accumulate(const qmm_t *p, const tensor_t *a, const tensor_t *azp, const tensor_t *b,
                           const tensor_t *bzp, int32_t *acc, void **cache)
{
    int64_t nza, nzb;
    int32_t *za = zp_ints(azp, &nza), *zb = zp_ints(bzp, &nzb);
    qgemm_mat_t qa = {a->data, p->k, a->dtype == DT_INT8, za, nza};
    qgemm_mat_t qb = {b->data, p->n, b->dtype == DT_INT8, zb, nzb};
    int shared_b = 1;
    for (int d = 0; d < p->nb; d++) shared_b &= p->bs[d] == 0;
    if (shared_b) {
        /* A's batches are consecutive rows; a zero point per row repeats per batch */
        int32_t *rows = NULL;
        if (nza > 1) {
            rows = xmalloc((size_t)(p->nbatch * p->m) * sizeof *rows + 4);
            for (int64_t i = 0; i < p->nbatch * p->m; i++) rows[i] = za[i % p->m];
            qa.zp = rows;
            qa.nzp = p->nbatch * p->m;
        }
        qgemm(p->nbatch * p->m, p->n, p->k, &qa, &qb, acc, p->n, cache);
        free(rows);
    } else {
        for (int64_t bi = 0; bi < p->nbatch; bi++) {
            int64_t oa = 0, ob = 0, rem = bi;
            for (int d = p->nb - 1; d >= 0; d--) {
                int64_t idx = rem % p->bd[d];
                rem /= p->bd[d];
                oa += idx * p->as[d];
                ob += idx * p->bs[d];
            }
            qa.p = (const uint8_t *)a->data + oa;
            qb.p = (const uint8_t *)b->data + ob;
            qgemm(p->m, p->n, p->k, &qa, &qb, acc + bi * p->m * p->n, p->n, NULL);
        }
    }
    free(za);
    free(zb);
}

int matmulint_shape(op_ctx_t *c)
{
    qmm_t p;
    if (op_check_inputs(c, 2, 4)) return -1;
    for (int i = 0; i < c->n_in; i++)
        if (q_check_8bit(c, i)) return -1;
    if (c->n_in > 2 && c->in[2] && c->in[2]->dtype != c->in[0]->dtype)
        return op_fail(c, "a_zero_point's type differs from A's");
    if (c->n_in > 3 && c->in[3] && c->in[3]->dtype != c->in[1]->dtype)
        return op_fail(c, "b_zero_point's type differs from B's");
    if (qmm_plan(c, c->in[0], c->in[1], &p)) return -1;
    if (check_per(c, 2, p.m, "row of A") || check_per(c, 3, p.n, "column of B")) return -1;
    return qmm_set_out(c, &p, DT_INT32);
}

int matmulint_run(op_ctx_t *c)
{
    qmm_t p;
    if (qmm_plan(c, c->in[0], c->in[1], &p)) return -1;
    qmm_accumulate(&p, c->in[0], c->n_in > 2 ? c->in[2] : NULL, c->in[1], c->n_in > 3 ? c->in[3] : NULL,
                   c->out[0]->data, c->cache);
    return 0;
}

/* Inputs: a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp. */
int qlinearmatmul_shape(op_ctx_t *c)
{
    qmm_t p;
    if (op_check_inputs(c, 8, 8)) return -1;
    static const int q8[] = {0, 2, 3, 5, 7};
    for (int i = 0; i < 5; i++)
        if (q_check_8bit(c, q8[i])) return -1;
    if (c->in[1]->dtype != DT_FLOAT || c->in[4]->dtype != DT_FLOAT || c->in[6]->dtype != DT_FLOAT)
        return op_fail(c, "scales must be float32");
    if (c->in[2]->dtype != c->in[0]->dtype || c->in[5]->dtype != c->in[3]->dtype)
        return op_fail(c, "zero point types differ from their inputs'");
    if (qmm_plan(c, c->in[0], c->in[3], &p)) return -1;
    if (check_per(c, 1, p.m, "row of A") || check_per(c, 2, p.m, "row of A") ||
        check_per(c, 4, p.n, "column of B") || check_per(c, 5, p.n, "column of B") ||
        check_per(c, 6, 1, "tensor") || check_per(c, 7, 1, "tensor"))
        return -1;
    return qmm_set_out(c, &p, c->in[7]->dtype);
}

int qlinearmatmul_run(op_ctx_t *c)
{
    qmm_t p;
    if (qmm_plan(c, c->in[0], c->in[3], &p)) return -1;
    tensor_t *y = c->out[0];
    int64_t total = tensor_numel(y);
    int32_t *acc = xmalloc((size_t)total * sizeof *acc + 4);
    qmm_accumulate(&p, c->in[0], c->in[2], c->in[3], c->in[5], acc, c->cache);
    const float *sa = c->in[1]->data, *sb = c->in[4]->data;
    int per_a = tensor_numel(c->in[1]) > 1, per_b = tensor_numel(c->in[4]) > 1;
    float sy = *(const float *)c->in[6]->data;
    float zy = (float)q_load(c->in[7], 0);
    for (int64_t e = 0; e < total; e++) {
        int64_t j = e % p.n, i = (e / p.n) % p.m;
        float mult = sa[per_a ? i : 0] * sb[per_b ? j : 0] / sy;
        q_store(y, e, q_saturate(rintf((float)acc[e] * mult) + zy, y->dtype));
    }
    free(acc);
    return 0;
}

/* --------------------------------------------------------------- conv */

typedef struct {
    nn_geom_t g;
    int64_t n, cin, m, group, cg, mg, kvol, isz, osz;
} qconv_t;

/* Geometry of x (input xi) convolved with w (input wi). */
static int qconv_plan(op_ctx_t *c, int xi, int wi, qconv_t *p)
{
    const tensor_t *x = c->in[xi], *w = c->in[wi];
    if (q_check_8bit(c, xi) || q_check_8bit(c, wi)) return -1;
    if (x->ndim < 3 || x->ndim - 2 > NN_SP) return op_fail(c, "input must have rank 3 to %d", NN_SP + 2);
    if (w->ndim != x->ndim) return op_fail(c, "weights have rank %d, input %d", w->ndim, x->ndim);
    int nsp = x->ndim - 2;
    p->n = x->dims[0];
    p->cin = x->dims[1];
    p->m = w->dims[0];
    p->group = attr_int(c->node, "group", 1);
    if (p->group < 1 || p->cin % p->group || p->m % p->group)
        return op_fail(c, "group %lld does not divide %lld input and %lld output channels", (long long)p->group,
                       (long long)p->cin, (long long)p->m);
    p->cg = p->cin / p->group;
    p->mg = p->m / p->group;
    if (w->dims[1] != p->cg)
        return op_fail(c, "weights have %lld input channels per group, expected %lld", (long long)w->dims[1],
                       (long long)p->cg);
    int64_t ks[NN_SP];
    if (nn_attr_ints(c, "kernel_shape", nsp, -1, ks)) return -1;
    for (int i = 0; i < nsp; i++)
        if (ks[0] != -1 && ks[i] != w->dims[2 + i])
            return op_fail(c, "kernel_shape[%d] differs from the weights", i);
    if (nn_geom_window(c, nsp, x->dims + 2, w->dims + 2, 0, 1, &p->g)) return -1;
    p->kvol = nn_prod(p->g.k, NN_SP);
    p->isz = nn_prod(p->g.in, NN_SP);
    p->osz = nn_prod(p->g.out, NN_SP);
    return 0;
}

static int qconv_set_out(op_ctx_t *c, const qconv_t *p, dtype_t dt)
{
    int64_t dims[2 + NN_SP] = {p->n, p->m};
    for (int i = 0; i < p->g.nsp; i++) dims[2 + i] = p->g.out[NN_SP - p->g.nsp + i];
    return op_set_out(c, 0, dt, 2 + p->g.nsp, dims);
}

/* The convolution as GEMMs on qgemm (exact: qgemm.h); acc is [N, M, out
 * spatial]. Each task gathers a block of QCONV_COLS output positions' input
 * bytes (im2col, raw: outside the image the zero point, which is 0 once
 * subtracted, as ONNX pads) and multiplies a group's weights by them in
 * its own thread; the blocks keep the gathered columns small whatever the
 * image size. */
#define QCONV_COLS 1024
typedef struct qconv_job {
    const qconv_t *p;
    const tensor_t *x, *w;
    uint8_t xpad;                   /* x's zero point's byte */
    const int32_t *xzp, *wzp;
    int64_t nxzp, nwzp;
    int32_t *acc;
    int64_t blocks;                 /* column blocks per (image, group) */
} qconv_job_t;

/* dst[t] = row[(o + t) * s + off] for t < n, pad where that is outside
 * [0, len): one run of output positions along the last dimension. */
static void gather_run(uint8_t *dst, const uint8_t *row, int64_t len, int64_t o, int64_t n, int64_t s, int64_t off,
                       uint8_t pad)
{
    if (s == 1) {   /* a copy between the padded ends */
        int64_t i0 = o + off, lo = i0 < 0 ? -i0 : 0, hi = len - i0 < n ? len - i0 : n;
        if (hi < lo) hi = lo;
        memset(dst, pad, (size_t)lo);
        memcpy(dst + lo, row + i0 + lo, (size_t)(hi - lo));
        memset(dst + hi, pad, (size_t)(n - hi));
        return;
    }
    for (int64_t t = 0; t < n; t++) {
        int64_t i = (o + t) * s + off;
        dst[t] = i >= 0 && i < len ? row[i] : pad;
    }
}

/* The column matrix of output positions [p0, p0 + cw): row (ci, taps) holds
 * the input byte each position reads there, gathered a run of positions
 * along the last dimension at a time. */
static void gather_cols(const qconv_t *p, const uint8_t *xg, uint8_t pad, int64_t p0, int64_t cw, uint8_t *col)
{
    const nn_geom_t *g = &p->g;
    int64_t r = 0;
    for (int64_t ci = 0; ci < p->cg; ci++)
        for (int64_t k0 = 0; k0 < g->k[0]; k0++)
            for (int64_t k1 = 0; k1 < g->k[1]; k1++)
                for (int64_t k2 = 0; k2 < g->k[2]; k2++, r++) {
                    uint8_t *dst = col + r * cw;
                    const uint8_t *xc = xg + ci * p->isz;
                    for (int64_t q = 0, pos = p0; q < cw;) {
                        int64_t o2 = pos % g->out[2], o1 = pos / g->out[2] % g->out[1];
                        int64_t o0 = pos / (g->out[2] * g->out[1]);
                        int64_t n = g->out[2] - o2 < cw - q ? g->out[2] - o2 : cw - q;
                        int64_t i0 = o0 * g->s[0] - g->pb[0] + k0 * g->d[0];
                        int64_t i1 = o1 * g->s[1] - g->pb[1] + k1 * g->d[1];
                        if (i0 >= 0 && i0 < g->in[0] && i1 >= 0 && i1 < g->in[1])
                            gather_run(dst + q, xc + (i0 * g->in[1] + i1) * g->in[2], g->in[2], o2, n, g->s[2],
                                       k2 * g->d[2] - g->pb[2], pad);
                        else
                            memset(dst + q, pad, (size_t)n);
                        q += n;
                        pos += n;
                    }
                }
}

/* 1 where the column matrix is the input itself: a 1x1 window, stride 1,
 * no padding (the output positions are the input's). */
static int cols_are_input(const qconv_t *p)
{
    for (int i = 0; i < NN_SP; i++)
        if (p->g.k[i] != 1 || p->g.s[i] != 1 || p->g.pb[i] || p->g.pe[i] || p->g.in[i] != p->g.out[i]) return 0;
    return 1;
}

static void qconv_task(void *ctx, int64_t t)
{
    const qconv_job_t *j = ctx;
    const qconv_t *p = j->p;
    int64_t blk = t % j->blocks, bg = t / j->blocks, b = bg / p->group, gi = bg % p->group;
    int64_t p0 = blk * QCONV_COLS, cw = p->osz - p0 < QCONV_COLS ? p->osz - p0 : QCONV_COLS, kk = p->cg * p->kvol;
    const uint8_t *xg = (const uint8_t *)j->x->data + (b * p->cin + gi * p->cg) * p->isz;
    uint8_t *col = NULL;
    if (!cols_are_input(p)) {
        col = xmalloc((size_t)(kk * cw) + 1);
        gather_cols(p, xg, j->xpad, p0, cw, col);
    }
    int per_ch = j->nwzp > 1;
    qgemm_mat_t qa = {(const uint8_t *)j->w->data + gi * p->mg * kk, kk, j->w->dtype == DT_INT8,
                      j->wzp + (per_ch ? gi * p->mg : 0), per_ch ? p->mg : j->nwzp};
    qgemm_mat_t qb = {col ? col : xg + p0, col ? cw : p->isz, j->x->dtype == DT_INT8, j->xzp, j->nxzp};
    qgemm_serial(p->mg, cw, kk, &qa, &qb, j->acc + (b * p->m + gi * p->mg) * p->osz + p0, p->osz);
    free(col);
}

static void qconv_accumulate(const qconv_t *p, const tensor_t *x, const tensor_t *xzp, const tensor_t *w,
                             const tensor_t *wzp, int32_t *acc)
{
    qconv_job_t j = {p, x, w, 0};
    int32_t *xz = zp_ints(xzp, &j.nxzp), *wz = zp_ints(wzp, &j.nwzp);
    j.xpad = (uint8_t)(j.nxzp ? xz[0] : 0);
    j.xzp = xz;
    j.wzp = wz;
    j.acc = acc;
    j.blocks = (p->osz + QCONV_COLS - 1) / QCONV_COLS;
    if (p->osz > 0) pool_for(p->n * p->group * j.blocks, qconv_task, &j);
    free(xz);
    free(wz);
}

/* Inputs: x, w, x_zero_point (scalar), w_zero_point (scalar or per channel). */
int convint_shape(op_ctx_t *c)
{
    qconv_t p;
    if (op_check_inputs(c, 2, 4)) return -1;
    if (qconv_plan(c, 0, 1, &p)) return -1;
    for (int i = 2; i < c->n_in; i++)
        if (q_check_8bit(c, i)) return -1;
    if (check_per(c, 2, 1, "tensor") || check_per(c, 3, p.m, "output channel")) return -1;
    return qconv_set_out(c, &p, DT_INT32);
}

int convint_run(op_ctx_t *c)
{
    qconv_t p;
    if (qconv_plan(c, 0, 1, &p)) return -1;
    qconv_accumulate(&p, c->in[0], c->n_in > 2 ? c->in[2] : NULL, c->in[1], c->n_in > 3 ? c->in[3] : NULL,
                     c->out[0]->data);
    return 0;
}

/* Inputs: x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B (int32). */
int qlinearconv_shape(op_ctx_t *c)
{
    qconv_t p;
    if (op_check_inputs(c, 8, 9)) return -1;
    if (qconv_plan(c, 0, 3, &p)) return -1;
    if (q_check_8bit(c, 2) || q_check_8bit(c, 5) || q_check_8bit(c, 7)) return -1;
    if (c->in[1]->dtype != DT_FLOAT || c->in[4]->dtype != DT_FLOAT || c->in[6]->dtype != DT_FLOAT)
        return op_fail(c, "scales must be float32");
    if (check_per(c, 1, 1, "tensor") || check_per(c, 2, 1, "tensor") || check_per(c, 4, p.m, "output channel") ||
        check_per(c, 5, p.m, "output channel") || check_per(c, 6, 1, "tensor") || check_per(c, 7, 1, "tensor"))
        return -1;
    const tensor_t *bias = c->n_in > 8 ? c->in[8] : NULL;
    if (bias && (bias->dtype != DT_INT32 || bias->ndim != 1 || bias->dims[0] != p.m))
        return op_fail(c, "bias must be int32 of shape [%lld]", (long long)p.m);
    return qconv_set_out(c, &p, c->in[7]->dtype);
}

int qlinearconv_run(op_ctx_t *c)
{
    qconv_t p;
    if (qconv_plan(c, 0, 3, &p)) return -1;
    tensor_t *y = c->out[0];
    int64_t total = tensor_numel(y);
    int32_t *acc = xmalloc((size_t)total * sizeof *acc + 4);
    qconv_accumulate(&p, c->in[0], c->in[2], c->in[3], c->in[5], acc);
    const tensor_t *bias = c->n_in > 8 ? c->in[8] : NULL;
    const float *sw = c->in[4]->data;
    int per_w = tensor_numel(c->in[4]) > 1;
    float sx = *(const float *)c->in[1]->data, sy = *(const float *)c->in[6]->data;
    float zy = (float)q_load(c->in[7], 0);
    for (int64_t e = 0; e < total; e++) {
        int64_t m = (e / p.osz) % p.m;
        int64_t a = acc[e];
        if (bias) a += ((const int32_t *)bias->data)[m];
        float mult = sx * sw[per_w ? m : 0] / sy;
        q_store(y, e, q_saturate(rintf((float)(int32_t)(uint32_t)(uint64_t)a * mult) + zy, y->dtype));
    }
    free(acc);
    return 0;
}
