/* pool.c — AveragePool, MaxPool (with Indices), LpPool, their Global forms,
 * and MaxUnpool, for 1-D, 2-D and 3-D windows.
 *
 * Each output position's window is clipped once per axis to the kernel
 * taps that land inside the input, so the inner loops carry no bounds
 * checks. Averages and Lp sums accumulate in double (the ONNX reference
 * averages in float64 before rounding to the input type). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ops/nn/nn_impl.h"
#include "ops/nn/poolrow.h"

typedef struct pool_plan {
    nn_geom_t g;
    int64_t planes;               /* N * C */
    int64_t isz, osz;
} pool_plan_t;

static int pool_plan(op_ctx_t *c, pool_plan_t *p)
{
    if (op_check_inputs(c, 1, 1)) return -1;
    const tensor_t *x = c->in[0];
    if (x->ndim < 3) return op_fail(c, "input must have rank >= 3, got %d", x->ndim);
    int nsp = x->ndim - 2;
    if (nsp > NN_SP) return op_fail(c, "%d spatial dimensions are not supported (1 to %d)", nsp, NN_SP);
    const int64_t *ks;
    int nk = attr_ints(c->node, "kernel_shape", &ks);
    if (nk != nsp) return op_fail(c, "kernel_shape must have %d values", nsp);
    int64_t ceil_mode = attr_int(c->node, "ceil_mode", 0);
    if (strcmp(c->node->op_type, "MaxPool") == 0 && attr_int(c->node, "storage_order", 0) > 1)
        return op_fail(c, "storage_order must be 0 or 1");
    if (nn_geom_window(c, nsp, x->dims + 2, ks, ceil_mode != 0, 1, &p->g)) return -1;
    p->planes = x->dims[0] * x->dims[1];
    p->isz = nn_prod(p->g.in, NN_SP);
    p->osz = nn_prod(p->g.out, NN_SP);
    return 0;
}

int pool_shape(op_ctx_t *c)
{
    pool_plan_t p;
    if (pool_plan(c, &p)) return -1;
    const tensor_t *x = c->in[0];
    int is_max = !strcmp(c->node->op_type, "MaxPool");
    if (is_max ? !(dtype_is_float(x->dtype) || x->dtype == DT_INT8 || x->dtype == DT_UINT8)
               : !dtype_is_float(x->dtype))
        return op_fail(c, "type %s is not supported", dtype_name(x->dtype));
    if (!is_max && c->n_out > 1) return op_fail(c, "has %d outputs, expected 1", c->n_out);
    int64_t dims[2 + NN_SP] = {x->dims[0], x->dims[1]};
    for (int i = 0; i < p.g.nsp; i++) dims[2 + i] = p.g.out[NN_SP - p.g.nsp + i];
    if (op_set_out(c, 0, x->dtype, x->ndim, dims)) return -1;
    if (c->n_out > 1 && op_set_out(c, 1, DT_INT64, x->ndim, dims)) return -1;
    return 0;
}

/* Kernel taps [lo, hi) of one axis whose input position start + k*d is in [0, n). */
static void tap_range(int64_t start, int64_t d, int64_t k, int64_t n, int64_t *lo, int64_t *hi)
{
    int64_t l = start >= 0 ? 0 : (-start + d - 1) / d;
    int64_t h = n - start > 0 ? (n - start + d - 1) / d : 0;
    if (h > k) h = k;
    if (l > h) l = h;
    *lo = l;
    *hi = h;
}

/* Per-axis tap ranges of every output position, computed once per node:
 * t[axis][o] = {lo, hi, start}. */
typedef struct taps { int64_t *lo[NN_SP], *hi[NN_SP], *st[NN_SP]; int64_t *mem; } taps_t;

static void taps_build(const nn_geom_t *g, taps_t *t)
{
    int64_t total = 0;
    for (int a = 0; a < NN_SP; a++) total += 3 * g->out[a];
    t->mem = xmalloc((size_t)total * sizeof(int64_t));
    int64_t *m = t->mem;
    for (int a = 0; a < NN_SP; a++) {
        t->lo[a] = m; t->hi[a] = m + g->out[a]; t->st[a] = m + 2 * g->out[a];
        m += 3 * g->out[a];
        for (int64_t o = 0; o < g->out[a]; o++) {
            t->st[a][o] = o * g->s[a] - g->pb[a];
            tap_range(t->st[a][o], g->d[a], g->k[a], g->in[a], &t->lo[a][o], &t->hi[a][o]);
        }
    }
}

/* Loops over every output position of every plane with the window's taps
 * clipped; the body sees xp (plane input), o (flat output index in the plane),
 * and the ranges (l0,h0,s0), (l1,h1,s1), (l2,h2,s2). */
#define POOL_LOOP(T, ...)                                                                 \
    for (int64_t pl = p0; pl < p1; pl++) {                                               \
        const T *xp = x + pl * g->in[0] * g->in[1] * g->in[2];                           \
        int64_t o = pl * g->out[0] * g->out[1] * g->out[2];                              \
        for (int64_t o0 = 0; o0 < g->out[0]; o0++)                                       \
            for (int64_t o1 = 0; o1 < g->out[1]; o1++)                                   \
                for (int64_t o2 = 0; o2 < g->out[2]; o2++, o++) {                        \
                    int64_t l0 = t->lo[0][o0], h0 = t->hi[0][o0], s0 = t->st[0][o0];     \
                    int64_t l1 = t->lo[1][o1], h1 = t->hi[1][o1], s1 = t->st[1][o1];     \
                    int64_t l2 = t->lo[2][o2], h2 = t->hi[2][o2], s2 = t->st[2][o2];     \
                    __VA_ARGS__                                                          \
                }                                                                        \
    }

#define DEFINE_MAXPOOL(NAME, T)                                                          \
    static void NAME(const T *x, T *y, int64_t *ind, const nn_geom_t *g, const taps_t *t, \
                     int64_t p0, int64_t p1, int col_major)                              \
    {                                                                                    \
        int64_t d0 = g->d[0], d1 = g->d[1], d2 = g->d[2];                                \
        int64_t n0 = g->in[0], n1 = g->in[1], n2 = g->in[2];                             \
        if (!ind) {   /* values only: a branch-free max */                                \
            POOL_LOOP(T, {                                                               \
                T best = 0;                                                              \
                if (h0 > l0 && h1 > l1 && h2 > l2)                                       \
                    best = xp[((s0 + l0 * d0) * n1 + s1 + l1 * d1) * n2 + s2 + l2 * d2]; \
                for (int64_t k0 = l0; k0 < h0; k0++)                                     \
                    for (int64_t k1 = l1; k1 < h1; k1++) {                               \
                        const T *r = xp + ((s0 + k0 * d0) * n1 + s1 + k1 * d1) * n2 + s2; \
                        for (int64_t k2 = l2; k2 < h2; k2++)                             \
                            best = r[k2 * d2] > best ? r[k2 * d2] : best;                \
                    }                                                                    \
                y[o] = best;                                                             \
            })                                                                           \
            return;                                                                      \
        }                                                                                \
        POOL_LOOP(T, {                                                                   \
            T best = 0;                                                                  \
            int64_t bi = -1;                                                             \
            for (int64_t k0 = l0; k0 < h0; k0++)                                         \
                for (int64_t k1 = l1; k1 < h1; k1++) {                                   \
                    int64_t rowp = ((s0 + k0 * d0) * n1 + s1 + k1 * d1) * n2 + s2;       \
                    for (int64_t k2 = l2; k2 < h2; k2++) {                               \
                        T v = xp[rowp + k2 * d2];                                        \
                        if (bi < 0 || v > best) {                                        \
                            best = v;                                                    \
                            bi = rowp + k2 * d2;                                         \
                        }                                                                \
                    }                                                                    \
                }                                                                        \
            y[o] = best;                                                                 \
            if (ind) {                                                                   \
                int64_t p = bi < 0 ? 0 : bi;                                             \
                if (col_major) {                                                         \
                    int64_t i2 = p % n2, i1 = (p / n2) % n1, i0 = p / (n2 * n1);         \
                    p = i0 + n0 * (i1 + n1 * i2);                                        \
                }                                                                        \
                ind[o] = pl * n0 * n1 * n2 + p;                                          \
            }                                                                            \
        })                                                                               \
    }

/* mode 0: average (count_include_pad as given), mode 1: Lp norm with power lp. */
#define DEFINE_AVGPOOL(NAME, T)                                                          \
    static void NAME(const T *x, T *y, const nn_geom_t *g, const taps_t *t, int64_t p0,  \
                     int64_t p1, int include_pad, int lp)                                \
    {                                                                                    \
        int64_t d0 = g->d[0], d1 = g->d[1], d2 = g->d[2];                                \
        int64_t n1 = g->in[1], n2 = g->in[2];                                            \
        POOL_LOOP(T, {                                                                      \
            double acc = 0;                                                              \
            for (int64_t k0 = l0; k0 < h0; k0++)                                         \
                for (int64_t k1 = l1; k1 < h1; k1++) {                                   \
                    const T *r = xp + ((s0 + k0 * d0) * n1 + s1 + k1 * d1) * n2 + s2;    \
                    if (lp == 0)                                                         \
                        for (int64_t k2 = l2; k2 < h2; k2++) acc += r[k2 * d2];          \
                    else if (lp == 1)                                                    \
                        for (int64_t k2 = l2; k2 < h2; k2++) acc += fabs((double)r[k2 * d2]); \
                    else if (lp == 2)                                                    \
                        for (int64_t k2 = l2; k2 < h2; k2++) acc += (double)r[k2 * d2] * r[k2 * d2]; \
                    else                                                                 \
                        for (int64_t k2 = l2; k2 < h2; k2++) acc += pow(fabs((double)r[k2 * d2]), lp); \
                }                                                                        \
            if (lp) {                                                                    \
                y[o] = (T)(lp == 1 ? acc : lp == 2 ? sqrt(acc) : pow(acc, 1.0 / lp));   \
            } else {                                                                     \
                int64_t cnt = (h0 - l0) * (h1 - l1) * (h2 - l2);                         \
                if (include_pad)                                                         \
                    cnt = padded_taps(g, 0, s0) * padded_taps(g, 1, s1) * padded_taps(g, 2, s2); \
                y[o] = cnt ? (T)(acc / (double)cnt) : (T)0;                              \
            }                                                                            \
        })                                                                               \
    }

/* Taps of a window starting at st that fall inside the padded input. */
static int64_t padded_taps(const nn_geom_t *g, int a, int64_t st)
{
    int64_t lo, hi;
    tap_range(st + g->pb[a], g->d[a], g->k[a], g->in[a] + g->pb[a] + g->pe[a], &lo, &hi);
    return hi - lo;
}

DEFINE_MAXPOOL(maxpool_f, float)
DEFINE_MAXPOOL(maxpool_d, double)
DEFINE_MAXPOOL(maxpool_i8, int8_t)
DEFINE_MAXPOOL(maxpool_u8, uint8_t)
DEFINE_AVGPOOL(avgpool_f, float)
DEFINE_AVGPOOL(avgpool_d, double)

typedef struct pool_job {
    const tensor_t *x;
    tensor_t *y;
    int64_t *ind;
    const nn_geom_t *g;
    const taps_t *t;
    int is_max, col_major, include_pad, lp;
} pool_job_t;

/* 2-D float32 MaxPool / AveragePool without dilation or indices, up to
 * FAST_ROWS kernel rows: each output row's inside (windows wholly in the
 * input) goes to poolrow.c, its edges are done here, with the general
 * loop's formulas and order. */
#define FAST_ROWS 16

static int fast_2d(const pool_job_t *j)
{
    const nn_geom_t *g = j->g;
    return j->x->dtype == DT_FLOAT && !j->ind && !j->lp && g->k[0] == 1 && g->in[0] == 1 && g->pb[0] == 0 &&
           g->d[1] == 1 && g->d[2] == 1 && g->k[1] <= FAST_ROWS;
}

/* One output of a row whose window rows are rows[0, nr): columns [l2, h2) from s2. */
static float edge_output(const pool_job_t *j, const float *const *rows, int nr, int64_t s1, int64_t o2)
{
    const nn_geom_t *g = j->g;
    const taps_t *t = j->t;
    int64_t l2 = t->lo[2][o2], h2 = t->hi[2][o2], s2 = t->st[2][o2];
    if (j->is_max) {
        float best = nr > 0 && h2 > l2 ? rows[0][s2 + l2] : 0.0f;
        for (int r = 0; r < nr; r++)
            for (int64_t q = l2; q < h2; q++) best = rows[r][s2 + q] > best ? rows[r][s2 + q] : best;
        return best;
    }
    double acc = 0;
    for (int r = 0; r < nr; r++)
        for (int64_t q = l2; q < h2; q++) acc += rows[r][s2 + q];
    int64_t cnt = j->include_pad ? padded_taps(g, 1, s1) * padded_taps(g, 2, s2) : nr * (h2 - l2);
    return cnt ? (float)(acc / (double)cnt) : 0.0f;
}

static void pool_planes_2d(const pool_job_t *j, int64_t p0, int64_t p1)
{
    const nn_geom_t *g = j->g;
    const taps_t *t = j->t;
    int64_t n1 = g->in[1], n2 = g->in[2], oh = g->out[1], ow = g->out[2], k = g->k[2];
    int64_t a = 0, b;   /* outputs [a, b) of a row have every column tap inside */
    while (a < ow && !(t->lo[2][a] == 0 && t->hi[2][a] == k)) a++;
    for (b = a; b < ow && t->lo[2][b] == 0 && t->hi[2][b] == k; b++) {}
    for (int64_t pl = p0; pl < p1; pl++) {
        const float *xp = (const float *)j->x->data + pl * n1 * n2;
        float *yp = (float *)j->y->data + pl * oh * ow;
        for (int64_t o1 = 0; o1 < oh; o1++) {
            int64_t l1 = t->lo[1][o1], s1 = t->st[1][o1];
            int nr = (int)(t->hi[1][o1] - l1);
            if (o1 + 2 < oh) {   /* the input rows two output rows on: short streams the hardware does not foresee */
                int64_t pl1 = t->lo[1][o1 + 2], ps1 = t->st[1][o1 + 2], pnr = t->hi[1][o1 + 2] - pl1;
                for (int64_t r = 0; r < pnr; r++)
                    for (int64_t q = 0; q < n2; q += 16) __builtin_prefetch(xp + (ps1 + pl1 + r) * n2 + q);
            }
            const float *rows[FAST_ROWS];
            for (int r = 0; r < nr; r++) rows[r] = xp + (s1 + l1 + r) * n2;
            float *yr = yp + o1 * ow;
            int64_t in0 = nr > 0 ? a : ow, in1 = nr > 0 ? b : ow;
            for (int64_t o2 = 0; o2 < in0; o2++) yr[o2] = edge_output(j, rows, nr, s1, o2);
            for (int64_t o2 = in1; o2 < ow; o2++) yr[o2] = edge_output(j, rows, nr, s1, o2);
            if (in1 <= in0) continue;
            if (j->is_max) {
                poolrow_max(yr + in0, rows, nr, (int)k, g->s[2], t->st[2][in0], in1 - in0);
            } else {
                int64_t cnt = (j->include_pad ? padded_taps(g, 1, s1) : nr) * k;
                poolrow_avg(yr + in0, rows, nr, (int)k, g->s[2], t->st[2][in0], in1 - in0, (double)cnt);
            }
        }
    }
}

/* One task: planes [p0, p1). */
static void pool_planes(void *ctx, int64_t p0, int64_t p1)
{
    const pool_job_t *j = ctx;
    if (fast_2d(j)) {
        pool_planes_2d(j, p0, p1);
        return;
    }
    const void *x = j->x->data;
    void *y = j->y->data;
    if (!j->is_max) {
        if (j->x->dtype == DT_FLOAT) avgpool_f(x, y, j->g, j->t, p0, p1, j->include_pad, j->lp);
        else avgpool_d(x, y, j->g, j->t, p0, p1, j->include_pad, j->lp);
        return;
    }
    switch (j->x->dtype) {
    case DT_FLOAT: maxpool_f(x, y, j->ind, j->g, j->t, p0, p1, j->col_major); break;
    case DT_DOUBLE: maxpool_d(x, y, j->ind, j->g, j->t, p0, p1, j->col_major); break;
    case DT_INT8: maxpool_i8(x, y, j->ind, j->g, j->t, p0, p1, j->col_major); break;
    default: maxpool_u8(x, y, j->ind, j->g, j->t, p0, p1, j->col_major); break;
    }
}

/* Runs a pool over every plane, a few planes per task. */
static int run_pool(op_ctx_t *c, int is_max, int include_pad, int lp)
{
    pool_plan_t p;
    if (pool_plan(c, &p)) return -1;
    dtype_t dt = c->in[0]->dtype;
    if (!(dt == DT_FLOAT || dt == DT_DOUBLE || (is_max && (dt == DT_INT8 || dt == DT_UINT8))))
        return op_fail(c, "type %s is not supported", dtype_name(dt));
    taps_t t;
    taps_build(&p.g, &t);
    pool_job_t j = {c->in[0], c->out[0], NULL, &p.g, &t, is_max, 0, include_pad, lp};
    if (is_max) {
        j.ind = c->n_out > 1 && c->out[1] ? c->out[1]->data : NULL;
        j.col_major = attr_int(c->node, "storage_order", 0) == 1;
    }
    int64_t grain = p.osz >= 4096 ? 1 : 4096 / (p.osz ? p.osz : 1);
    nn_parallel(p.planes, grain, pool_planes, &j);
    free(t.mem);
    return 0;
}

int maxpool_run(op_ctx_t *c)
{
    return run_pool(c, 1, 0, 0);
}

int avgpool_run(op_ctx_t *c)
{
    return run_pool(c, 0, attr_int(c->node, "count_include_pad", 0) != 0, 0);
}

static int lp_power(op_ctx_t *c)
{
    int64_t p = attr_int(c->node, "p", 2);
    if (p < 1 || p > 64) return op_fail(c, "p = %lld is not supported (1 to 64)", (long long)p);
    return (int)p;
}

int lppool_run(op_ctx_t *c)
{
    int lp = lp_power(c);
    return lp < 0 ? -1 : run_pool(c, 0, 0, lp);
}

/* ------------------------------------------------------------ Global pools */

int globalpool_shape(op_ctx_t *c)
{
    if (op_check_inputs(c, 1, 1)) return -1;
    const tensor_t *x = c->in[0];
    if (x->ndim < 2) return op_fail(c, "input must have rank >= 2, got %d", x->ndim);
    int is_max = !strcmp(c->node->op_type, "GlobalMaxPool");
    if (!dtype_is_float(x->dtype) && !(is_max && (dtype_is_signed_int(x->dtype) || dtype_is_unsigned_int(x->dtype))))
        return op_fail(c, "type %s is not supported", dtype_name(x->dtype));
    int64_t dims[TENSOR_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++) dims[i] = i < 2 ? x->dims[i] : 1;
    return op_set_out(c, 0, x->dtype, x->ndim, dims);
}

/* mode: 0 average, 1 max, 2 Lp (power lp) over each plane. */
static int global_pool(op_ctx_t *c, int mode, int lp)
{
    const tensor_t *x = c->in[0];
    int64_t planes = x->dims[0] * x->dims[1];
    int64_t sz = nn_prod(x->dims + 2, x->ndim - 2);
    if (mode == 1) {
        DISPATCH_NUMERIC(x->dtype, {
            const T *xp = (const T *)x->data;
            T *yp = (T *)c->out[0]->data;
            for (int64_t pl = 0; pl < planes; pl++) {
                const T *r = xp + pl * sz;
                T best = sz ? r[0] : (T)0;
                for (int64_t i = 1; i < sz; i++)
                    if (r[i] > best) best = r[i];
                yp[pl] = best;
            }
        }, return op_fail(c, "type %s is not supported", dtype_name(x->dtype)));
        return 0;
    }
    DISPATCH_FLOAT(x->dtype, {
        const T *xp = (const T *)x->data;
        T *yp = (T *)c->out[0]->data;
        for (int64_t pl = 0; pl < planes; pl++) {
            const T *r = xp + pl * sz;
            double acc = 0;
            if (mode == 0 || lp == 1) {
                for (int64_t i = 0; i < sz; i++) acc += mode == 0 ? (double)r[i] : fabs((double)r[i]);
            } else if (lp == 2) {
                for (int64_t i = 0; i < sz; i++) acc += (double)r[i] * r[i];
            } else {
                for (int64_t i = 0; i < sz; i++) acc += pow(fabs((double)r[i]), lp);
            }
            if (mode == 0) yp[pl] = sz ? (T)(acc / (double)sz) : (T)0;
            else yp[pl] = (T)(lp == 1 ? acc : lp == 2 ? sqrt(acc) : pow(acc, 1.0 / lp));
        }
    }, return op_fail(c, "type %s is not supported", dtype_name(x->dtype)));
    return 0;
}

int globalavgpool_run(op_ctx_t *c) { return global_pool(c, 0, 0); }
int globalmaxpool_run(op_ctx_t *c) { return global_pool(c, 1, 0); }

int globallppool_run(op_ctx_t *c)
{
    int lp = lp_power(c);
    return lp < 0 ? -1 : global_pool(c, 2, lp);
}

/* -------------------------------------------------------------- MaxUnpool */

/* Output dims (from output_shape when given) and the default unpooled
 * dims the indices refer to. */
static int maxunpool_dims(op_ctx_t *c, int64_t *dims, int64_t *dflt)
{
    if (op_check_inputs(c, 2, 3)) return -1;
    const tensor_t *x = c->in[0], *ind = c->in[1], *os = c->n_in > 2 ? c->in[2] : NULL;
    if (x->ndim < 3) return op_fail(c, "input must have rank >= 3, got %d", x->ndim);
    if (!tensor_same_shape(x, ind)) return op_fail(c, "indices must have the shape of X");
    if (ind->dtype != DT_INT64) return op_fail(c, "indices must be int64");
    int nsp = x->ndim - 2;
    int64_t k[TENSOR_MAX_DIMS], s[TENSOR_MAX_DIMS], p[2 * TENSOR_MAX_DIMS];
    const int64_t *ks;
    if (attr_ints(c->node, "kernel_shape", &ks) != nsp) return op_fail(c, "kernel_shape must have %d values", nsp);
    for (int i = 0; i < nsp; i++) k[i] = ks[i];
    if (nn_attr_ints(c, "strides", nsp, 1, s) || nn_attr_ints(c, "pads", 2 * nsp, 0, p)) return -1;
    dflt[0] = x->dims[0];
    dflt[1] = x->dims[1];
    for (int i = 0; i < nsp; i++) {
        if (s[i] < 1 || k[i] < 1 || p[i] < 0 || p[nsp + i] < 0)
            return op_fail(c, "invalid kernel_shape, strides or pads");
        dflt[2 + i] = (x->dims[2 + i] - 1) * s[i] + k[i] - p[i] - p[nsp + i];
        if (dflt[2 + i] < 0) return op_fail(c, "output size on spatial axis %d is negative", i);
    }
    memcpy(dims, dflt, (size_t)x->ndim * sizeof *dims);
    if (os) {
        if (!os->data) return OP_DYNAMIC;
        if (os->ndim != 1 || os->dims[0] != x->ndim)
            return op_fail(c, "output_shape must be 1-D with %d values", x->ndim);
        if (op_read_ints(c, os, dims, x->ndim) < 0) return -1;
        for (int i = 0; i < x->ndim; i++)
            if (dims[i] < 0) return op_fail(c, "output_shape[%d] is negative", i);
        if (dims[0] != x->dims[0] || dims[1] != x->dims[1])
            return op_fail(c, "output_shape must keep the batch and channel sizes");
    }
    return 0;
}

int maxunpool_shape(op_ctx_t *c)
{
    int64_t dims[TENSOR_MAX_DIMS], dflt[TENSOR_MAX_DIMS];
    int rc = maxunpool_dims(c, dims, dflt);
    if (rc) return rc;
    return op_set_out(c, 0, c->in[0]->dtype, c->in[0]->ndim, dims);
}

/* Indices are flat positions in the default unpooled shape (what MaxPool
 * produced them for); with a larger output_shape each keeps its
 * coordinates, so the extra rows and columns stay zero (the node tests). */
int maxunpool_run(op_ctx_t *c)
{
    int64_t dims[TENSOR_MAX_DIMS], dflt[TENSOR_MAX_DIMS];
    if (maxunpool_dims(c, dims, dflt)) return -1;
    const tensor_t *x = c->in[0], *ind = c->in[1];
    tensor_t *y = c->out[0];
    int r = x->ndim;
    size_t es = dtype_size(x->dtype);
    int64_t n = tensor_numel(x), ny = tensor_numel(y), nd = nn_prod(dflt, r);
    const int64_t *iv = ind->data;
    memset(y->data, 0, (size_t)ny * es);
    for (int64_t i = 0; i < n; i++) {
        if (iv[i] < 0 || iv[i] >= nd)
            return op_fail(c, "index %lld at position %lld is outside the unpooled shape (%lld elements)",
                           (long long)iv[i], (long long)i, (long long)nd);
        int64_t rem = iv[i], pos = 0, mul = 1;
        for (int d = r - 1; d >= 0; d--) {
            int64_t co = rem % dflt[d];
            rem /= dflt[d];
            if (co >= dims[d])
                return op_fail(c, "index %lld falls outside output_shape", (long long)iv[i]);
            pos += co * mul;
            mul *= dims[d];
        }
        memcpy((char *)y->data + pos * es, (const char *)x->data + i * es, es);
    }
    return 0;
}
