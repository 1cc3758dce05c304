/* norm.c — normalisations: BatchNormalization (inference), Instance-,
 * Layer-, Lp- and MeanVariance-Normalization, and LRN, for float32 and
 * float64.
 *
 * Statistics are computed in two passes (mean, then the mean of squared
 * deviations) with double accumulators, which keeps the variance of
 * large-offset data exact to float32 (E[x^2] - E[x]^2 cancels catastrophically
 * there) and independent of thread count. Outputs are rounded once. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ops/nn/nn_impl.h"
#include "ops/nn/norm_impl.h"

static int check_float_in(op_ctx_t *c, int i)
{
    if (c->in[i] && !dtype_is_float(c->in[i]->dtype))
        return op_fail(c, "input %d has type %s, expected a float type", i, dtype_name(c->in[i]->dtype));
    return 0;
}

/* Reads a small float parameter tensor (any float type) as doubles. */
static double *read_params(const tensor_t *t)
{
    int64_t n = tensor_numel(t);
    double *v = xmalloc((size_t)(n ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = tensor_get_f64(t, i);
    return v;
}

/* Rows normalised by their own mean and variance: LayerNormalization (a
 * scale and bias per element of the row) and InstanceNormalization (one
 * scale and bias per channel, row r being channel r % ch). */
typedef struct norm_job {
    const tensor_t *x;
    tensor_t *y, *mean_out, *inv_out;
    int64_t len, ch;
    int per_elem;
    double eps;
    const double *sc, *bi;
} norm_job_t;

/* y = (x - m) * a * sc[i] + bi[i] (per-element parameters) or
 * (x - m) * a + b (sc and bi NULL), unrolled by 4 with restrict pointers
 * so that GCC's -O2 basic-block vectoriser makes it SIMD. */
#define SCALE_ROW(T, Y, X, M, A, SC, BI, B, N)                                           \
    do {                                                                                 \
        T *restrict y_ = (Y);                                                            \
        const T *restrict x_ = (X);                                                      \
        const double *restrict sc_ = (SC), *restrict bi_ = (BI);                         \
        double m_ = (M), a_ = (A), b_ = (B);                                             \
        int64_t i_ = 0, n_ = (N);                                                        \
        if (sc_) {                                                                       \
            for (; i_ + 4 <= n_; i_ += 4) {                                              \
                y_[i_] = (T)((x_[i_] - m_) * a_ * sc_[i_] + bi_[i_]);                    \
                y_[i_ + 1] = (T)((x_[i_ + 1] - m_) * a_ * sc_[i_ + 1] + bi_[i_ + 1]);    \
                y_[i_ + 2] = (T)((x_[i_ + 2] - m_) * a_ * sc_[i_ + 2] + bi_[i_ + 2]);    \
                y_[i_ + 3] = (T)((x_[i_ + 3] - m_) * a_ * sc_[i_ + 3] + bi_[i_ + 3]);    \
            }                                                                            \
            for (; i_ < n_; i_++) y_[i_] = (T)((x_[i_] - m_) * a_ * sc_[i_] + bi_[i_]);  \
        } else {                                                                         \
            for (; i_ + 4 <= n_; i_ += 4) {                                              \
                y_[i_] = (T)((x_[i_] - m_) * a_ + b_);                                   \
                y_[i_ + 1] = (T)((x_[i_ + 1] - m_) * a_ + b_);                           \
                y_[i_ + 2] = (T)((x_[i_ + 2] - m_) * a_ + b_);                           \
                y_[i_ + 3] = (T)((x_[i_ + 3] - m_) * a_ + b_);                           \
            }                                                                            \
            for (; i_ < n_; i_++) y_[i_] = (T)((x_[i_] - m_) * a_ + b_);                 \
        }                                                                                \
    } while (0)

/* Mean and population variance in two passes with four double
 * accumulators (a fixed order: same bits on every run). float64 rows. */
static void norm_rows_d(const norm_job_t *j, int64_t lo, int64_t hi)
{
    int64_t n = j->len;
    for (int64_t r = lo; r < hi; r++) {
        const double *x = (const double *)j->x->data + r * n;
        double *y = (double *)j->y->data + r * n;
        double s[4] = {0, 0, 0, 0}, q[4] = {0, 0, 0, 0};
        int64_t i = 0;
        for (; i + 4 <= n; i += 4)
            for (int k = 0; k < 4; k++) s[k] += x[i + k];
        for (; i < n; i++) s[0] += x[i];
        double m = n ? (s[0] + s[1] + s[2] + s[3]) / (double)n : 0;
        for (i = 0; i + 4 <= n; i += 4)
            for (int k = 0; k < 4; k++) q[k] += (x[i + k] - m) * (x[i + k] - m);
        for (; i < n; i++) q[0] += (x[i] - m) * (x[i] - m);
        double inv = 1.0 / sqrt((n ? (q[0] + q[1] + q[2] + q[3]) / (double)n : 0) + j->eps);
        /* centred in double: x - mean cancels when the offset is large */
        if (!j->per_elem)
            SCALE_ROW(double, y, x, m, j->sc[r % j->ch] * inv, NULL, NULL, j->bi[r % j->ch], n);
        else
            SCALE_ROW(double, y, x, m, inv, j->sc, j->bi, 0.0, n);
        if (j->mean_out) tensor_set_f64(j->mean_out, r, m);
        if (j->inv_out) tensor_set_f64(j->inv_out, r, inv);
    }
}

/* float32 rows: the same statistics with eight double lanes (lane k sums
 * the elements i = k mod 8 of the whole blocks of 8, the rest goes to lane
 * 0 in order, lanes folded pairwise: norm_impl.h's fold8), written twice:
 * plain C here (the generic set) and AVX2 (norm_avx2.c). */

/* sum of x (sq = 0) or of (x - m)^2 (sq = 1) */
static double lanes_sum(const float *x, int64_t n, double m, int sq)
{
    double a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) {
            double d = sq ? x[i + k] - m : x[i + k];
            a[k] += sq ? d * d : d;
        }
    for (; i < n; i++) {
        double d = sq ? x[i] - m : x[i];
        a[0] += sq ? d * d : d;
    }
    return fold8(a);
}

/* y = (x - m) * a * sc[i] + bi[i], or (x - m) * a + b when sc is NULL */
static void scale_row_f(float *y, const float *x, int64_t n, double m, double a,
                        const double *sc, const double *bi, double b)
{
    SCALE_ROW(float, y, x, m, a, sc, bi, b, n);
}

const norm_arch_t norm_arch_generic = {lanes_sum, scale_row_f};

/* The one selection point of the float32 row kernels (docs/design.md, "ISA dispatch"). */
static const norm_arch_t *norm_arch(void)
{
    return isa_pick(&norm_arch_generic, ISA_TABLE(&norm_arch_avx2), NULL);
}

static void norm_rows_f(const norm_job_t *j, int64_t lo, int64_t hi)
{
    int64_t n = j->len;
    const norm_arch_t *k = norm_arch();
    for (int64_t r = lo; r < hi; r++) {
        const float *x = (const float *)j->x->data + r * n;
        float *y = (float *)j->y->data + r * n;
        double m = n ? k->lanes_sum(x, n, 0, 0) / (double)n : 0;
        double v = n ? k->lanes_sum(x, n, m, 1) / (double)n : 0;
        double inv = 1.0 / sqrt(v + j->eps);
        if (inv != inv) {
            /* a NaN or inf in the row: every output NaN, the same NaN on
             * every CPU (which NaN an add passes on is the compiler's pick) */
            if (m != m) m = NAN;
            inv = NAN;
            for (int64_t i = 0; i < n; i++) y[i] = NAN;
        } else if (!j->per_elem)
            k->scale_row(y, x, n, m, j->sc[r % j->ch] * inv, NULL, NULL, j->bi[r % j->ch]);
        else
            k->scale_row(y, x, n, m, inv, j->sc, j->bi, 0.0);
        if (j->mean_out) tensor_set_f64(j->mean_out, r, m);
        if (j->inv_out) tensor_set_f64(j->inv_out, r, inv);
    }
}

static void norm_rows(void *ctx, int64_t lo, int64_t hi)
{
    const norm_job_t *j = ctx;
    if (j->x->dtype == DT_FLOAT) norm_rows_f(j, lo, hi);
    else norm_rows_d(j, lo, hi);
}

/* Runs the rows on the pool, about 16k elements per task. */
static void run_norm_rows(norm_job_t *j, int64_t rows)
{
    int64_t grain = j->len >= 16384 ? 1 : 16384 / (j->len ? j->len : 1);
    nn_parallel(rows, grain, norm_rows, j);
}

/* ------------------------------------------------------ BatchNormalization */

static int bn_training(op_ctx_t *c)
{
    return c->node->opset >= 14 && attr_int(c->node, "training_mode", 0) != 0;
}

int batchnorm_shape(op_ctx_t *c)
{
    if (op_check_inputs(c, 5, 5)) return -1;
    for (int i = 0; i < 5; i++)
        if (check_float_in(c, i)) return -1;
    const tensor_t *x = c->in[0];
    if (x->ndim < 2) return op_fail(c, "input must have rank >= 2, got %d", x->ndim);
    int train = bn_training(c);
    if (!train && c->n_out > 1)
        return op_fail(c, "declares %d outputs: the statistics outputs exist only in training mode, "
                          "which parity supports from opset 14 (training_mode=1)", c->n_out);
    if (c->n_out > 3) return op_fail(c, "has %d outputs, expected at most 3", c->n_out);
    int spatial = c->node->opset < 9 ? (int)attr_int(c->node, "spatial", 1) : 1;
    int64_t want = spatial ? x->dims[1] : nn_prod(x->dims + 1, x->ndim - 1);
    for (int i = 1; i < 5; i++)
        if (tensor_numel(c->in[i]) != want)
            return op_fail(c, "input %d has %lld values, expected %lld", i, (long long)tensor_numel(c->in[i]),
                           (long long)want);
    if (op_set_out(c, 0, x->dtype, x->ndim, x->dims)) return -1;
    if (op_set_out(c, 1, c->in[3]->dtype, 1, &want) || op_set_out(c, 2, c->in[4]->dtype, 1, &want)) return -1;
    return 0;
}

/* Training mode (opset 14+): normalise with the batch statistics (mean
 * and population variance over all axes but 1) and output the running
 * statistics blended with momentum, as the ONNX reference does. */
static void bn_batch_stats(op_ctx_t *c, double *mu, double *va)
{
    const tensor_t *x = c->in[0];
    int64_t n = x->dims[0], ch = x->dims[1], inner = nn_prod(x->dims + 2, x->ndim - 2);
    double cnt = (double)(n * inner);
    for (int64_t k = 0; k < ch; k++) {
        double s = 0, q = 0;
        for (int64_t b = 0; b < n; b++)
            for (int64_t i = 0; i < inner; i++) s += tensor_get_f64(x, (b * ch + k) * inner + i);
        double m = cnt > 0 ? s / cnt : 0;
        for (int64_t b = 0; b < n; b++)
            for (int64_t i = 0; i < inner; i++) {
                double d = tensor_get_f64(x, (b * ch + k) * inner + i) - m;
                q += d * d;
            }
        mu[k] = m;
        va[k] = cnt > 0 ? q / cnt : 0;
    }
    double mom = attr_float(c->node, "momentum", 0.9f);
    for (int o = 1; o <= 2 && o < c->n_out; o++) {
        tensor_t *t = c->out[o];
        if (!t) continue;
        const tensor_t *run = c->in[o + 2];
        for (int64_t k = 0; k < ch; k++)
            tensor_set_f64(t, k, tensor_get_f64(run, k) * mom + (o == 1 ? mu[k] : va[k]) * (1 - mom));
    }
}

int batchnorm_run(op_ctx_t *c)
{
    if (batchnorm_shape(c)) return -1;
    const tensor_t *x = c->in[0];
    int64_t np = tensor_numel(c->in[1]);
    double *sc = read_params(c->in[1]), *bi = read_params(c->in[2]);
    double *mu = read_params(c->in[3]), *va = read_params(c->in[4]);
    double eps = attr_float(c->node, "epsilon", 1e-5f);
    if (bn_training(c)) bn_batch_stats(c, mu, va);
    /* y = x * a + b with a = scale / sqrt(var + eps), b = bias - mean * a */
    for (int64_t i = 0; i < np; i++) {
        sc[i] = sc[i] / sqrt(va[i] + eps);
        bi[i] = bi[i] - mu[i] * sc[i];
    }
    int64_t n = x->dims[0], inner = tensor_numel(x) / (n ? n : 1) / (np ? np : 1);
    DISPATCH_FLOAT(x->dtype, {
        const T *xp = (const T *)x->data;
        T *yp = (T *)c->out[0]->data;
        for (int64_t b = 0; b < n; b++)
            for (int64_t ch = 0; ch < np; ch++) {
                T a = (T)sc[ch];
                T o = (T)bi[ch];
                const T *xr = xp + (b * np + ch) * inner;
                T *yr = yp + (b * np + ch) * inner;
                for (int64_t i = 0; i < inner; i++) yr[i] = xr[i] * a + o;
            }
    }, (void)0);
    free(sc); free(bi); free(mu); free(va);
    return 0;
}

/* --------------------------------------------------- InstanceNormalization */

int instancenorm_shape(op_ctx_t *c)
{
    if (op_check_inputs(c, 3, 3)) return -1;
    for (int i = 0; i < 3; i++)
        if (check_float_in(c, i)) return -1;
    const tensor_t *x = c->in[0];
    if (x->ndim < 3) return op_fail(c, "input must have rank >= 3, got %d", x->ndim);
    for (int i = 1; i < 3; i++)
        if (tensor_numel(c->in[i]) != x->dims[1])
            return op_fail(c, "input %d must have %lld values", i, (long long)x->dims[1]);
    return op_set_out(c, 0, x->dtype, x->ndim, x->dims);
}

int instancenorm_run(op_ctx_t *c)
{
    const tensor_t *x = c->in[0];
    double *sc = read_params(c->in[1]), *bi = read_params(c->in[2]);
    norm_job_t j = {x, c->out[0], NULL, NULL, nn_prod(x->dims + 2, x->ndim - 2), x->dims[1], 0,
                    attr_float(c->node, "epsilon", 1e-5f), sc, bi};
    run_norm_rows(&j, x->dims[0] * x->dims[1]);
    free(sc);
    free(bi);
    return 0;
}

/* ------------------------------------------------------ LayerNormalization */

typedef struct ln_plan { int axis; int64_t outer, inner; } ln_plan_t;

/* Checks that t broadcasts (unidirectionally) to x.shape[axis:]. */
static int check_bcast_tail(op_ctx_t *c, const tensor_t *t, const tensor_t *x, int axis, const char *what)
{
    int tail = x->ndim - axis;
    if (t->ndim > tail) return op_fail(c, "%s has rank %d, more than the normalised %d axes", what, t->ndim, tail);
    for (int i = 0; i < t->ndim; i++) {
        int64_t d = t->dims[t->ndim - 1 - i], xd = x->dims[x->ndim - 1 - i];
        if (d != xd && d != 1)
            return op_fail(c, "%s does not broadcast to the normalised shape", what);
    }
    return 0;
}

static int ln_plan(op_ctx_t *c, ln_plan_t *p)
{
    if (op_check_inputs(c, 2, 3)) return -1;
    for (int i = 0; i < c->n_in; i++)
        if (check_float_in(c, i)) return -1;
    const tensor_t *x = c->in[0];
    if (x->ndim < 1) return op_fail(c, "input must have rank >= 1");
    int axis = op_axis(c, attr_int(c->node, "axis", -1), x->ndim);
    if (axis < 0) return -1;
    if (check_bcast_tail(c, c->in[1], x, axis, "Scale")) return -1;
    if (c->n_in > 2 && c->in[2] && check_bcast_tail(c, c->in[2], x, axis, "B")) return -1;
    int64_t st = attr_int(c->node, "stash_type", 1);
    if (st != 1 && st != 11) return op_fail(c, "stash_type %lld is not supported", (long long)st);
    p->axis = axis;
    p->outer = nn_prod(x->dims, axis);
    p->inner = nn_prod(x->dims + axis, x->ndim - axis);
    return 0;
}

int layernorm_shape(op_ctx_t *c)
{
    ln_plan_t p;
    if (ln_plan(c, &p)) return -1;
    const tensor_t *x = c->in[0];
    if (op_set_out(c, 0, x->dtype, x->ndim, x->dims)) return -1;
    int64_t dims[TENSOR_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++) dims[i] = i < p.axis ? x->dims[i] : 1;
    dtype_t st = attr_int(c->node, "stash_type", 1) == 11 ? DT_DOUBLE : DT_FLOAT;
    if (op_set_out(c, 1, st, x->ndim, dims) || op_set_out(c, 2, st, x->ndim, dims)) return -1;
    return 0;
}

/* Expands a parameter broadcast to the normalised shape (inner values). */
static double *expand_tail(const tensor_t *t, const tensor_t *x, int axis, int64_t inner)
{
    double *v = xmalloc((size_t)(inner ? inner : 1) * sizeof *v);
    int tail = x->ndim - axis;
    for (int64_t i = 0; i < inner; i++) {
        int64_t rem = i, src = 0, mul = 1;
        for (int k = tail - 1, tk = t->ndim - 1; k >= 0; k--, tk--) {
            int64_t xd = x->dims[axis + k], pos = rem % xd;
            rem /= xd;
            if (tk >= 0) {
                if (t->dims[tk] != 1) src += pos * mul;
                mul *= t->dims[tk];
            }
        }
        v[i] = tensor_get_f64(t, src);
    }
    return v;
}

int layernorm_run(op_ctx_t *c)
{
    ln_plan_t p;
    if (ln_plan(c, &p)) return -1;
    const tensor_t *x = c->in[0], *b = c->n_in > 2 ? c->in[2] : NULL;
    double *sc = expand_tail(c->in[1], x, p.axis, p.inner);
    /* no B: zeros, so the row loop has one form */
    double *bi = b ? expand_tail(b, x, p.axis, p.inner) : xcalloc((size_t)(p.inner ? p.inner : 1), sizeof *bi);
    norm_job_t j = {x, c->out[0], c->n_out > 1 ? c->out[1] : NULL, c->n_out > 2 ? c->out[2] : NULL, p.inner, 1, 1,
                    attr_float(c->node, "epsilon", 1e-5f), sc, bi};
    run_norm_rows(&j, p.outer);
    free(sc);
    free(bi);
    return 0;
}

/* --------------------------------------------------------- LpNormalization */

int lpnorm_shape(op_ctx_t *c)
{
    if (op_check_inputs(c, 1, 1) || check_float_in(c, 0)) return -1;
    const tensor_t *x = c->in[0];
    if (op_axis(c, attr_int(c->node, "axis", -1), x->ndim) < 0) return -1;
    int64_t pw = attr_int(c->node, "p", 2);
    if (pw != 1 && pw != 2) return op_fail(c, "p must be 1 or 2, got %lld", (long long)pw);
    return op_set_out(c, 0, x->dtype, x->ndim, x->dims);
}

int lpnorm_run(op_ctx_t *c)
{
    const tensor_t *x = c->in[0];
    int axis = op_axis(c, attr_int(c->node, "axis", -1), x->ndim);
    if (axis < 0) return -1;
    int p2 = attr_int(c->node, "p", 2) == 2;
    int64_t len = x->dims[axis], outer = nn_prod(x->dims, axis), inner = nn_prod(x->dims + axis + 1, x->ndim - axis - 1);
    DISPATCH_FLOAT(x->dtype, {
        const T *xp = (const T *)x->data;
        T *yp = (T *)c->out[0]->data;
        for (int64_t o = 0; o < outer; o++)
            for (int64_t in = 0; in < inner; in++) {
                int64_t base = o * len * inner + in;
                double acc = 0;
                for (int64_t k = 0; k < len; k++) {
                    double v = xp[base + k * inner];
                    acc += p2 ? v * v : fabs(v);
                }
                double norm = p2 ? sqrt(acc) : acc;
                /* a zero vector stays zero (as ONNX Runtime), not 0/0 */
                for (int64_t k = 0; k < len; k++)
                    yp[base + k * inner] = norm == 0 ? (T)0 : (T)(xp[base + k * inner] / norm);
            }
    }, (void)0);
    return 0;
}

/* ------------------------------------------------ MeanVarianceNormalization */

/* Reduction mask from the axes attribute (default [0, 2, 3]). */
static int mvn_mask(op_ctx_t *c, int *mask)
{
    const tensor_t *x = c->in[0];
    const int64_t *axes;
    static const int64_t dflt[3] = {0, 2, 3};
    int n = attr_ints(c->node, "axes", &axes);
    if (n < 0) {
        axes = dflt;
        n = 3;
    }
    memset(mask, 0, TENSOR_MAX_DIMS * sizeof *mask);
    for (int i = 0; i < n; i++) {
        int a = op_axis(c, axes[i], x->ndim);
        if (a < 0) return -1;
        mask[a] = 1;
    }
    return 0;
}

int mvn_shape(op_ctx_t *c)
{
    int mask[TENSOR_MAX_DIMS];
    if (op_check_inputs(c, 1, 1) || check_float_in(c, 0) || mvn_mask(c, mask)) return -1;
    return op_set_out(c, 0, c->in[0]->dtype, c->in[0]->ndim, c->in[0]->dims);
}

/* Group (index over the kept axes) of every element, in storage order. */
static int64_t *mvn_groups(const tensor_t *x, const int *mask, int64_t *ngroups)
{
    int64_t n = tensor_numel(x), gstr[TENSOR_MAX_DIMS], idx[TENSOR_MAX_DIMS] = {0}, g = 1;
    for (int d = x->ndim - 1; d >= 0; d--) {
        gstr[d] = mask[d] ? 0 : g;
        if (!mask[d]) g *= x->dims[d];
    }
    *ngroups = g;
    int64_t *grp = xmalloc((size_t)(n ? n : 1) * sizeof *grp), cur = 0;
    for (int64_t i = 0; i < n; i++) {
        grp[i] = cur;
        for (int d = x->ndim - 1; d >= 0; d--) {
            cur += gstr[d];
            if (++idx[d] < x->dims[d]) break;
            cur -= gstr[d] * idx[d];
            idx[d] = 0;
        }
    }
    return grp;
}

int mvn_run(op_ctx_t *c)
{
    int mask[TENSOR_MAX_DIMS];
    if (mvn_mask(c, mask)) return -1;
    const tensor_t *x = c->in[0];
    int64_t n = tensor_numel(x), ng;
    int64_t *grp = mvn_groups(x, mask, &ng);
    double *sum = xcalloc((size_t)(ng ? ng : 1), sizeof *sum), *sq = xcalloc((size_t)(ng ? ng : 1), sizeof *sq);
    double cnt = ng ? (double)n / (double)ng : 1;
    DISPATCH_FLOAT(x->dtype, {
        const T *xp = (const T *)x->data;
        T *yp = (T *)c->out[0]->data;
        for (int64_t i = 0; i < n; i++) sum[grp[i]] += xp[i];
        for (int64_t k = 0; k < ng; k++) sum[k] /= cnt;
        for (int64_t i = 0; i < n; i++) {
            double d = xp[i] - sum[grp[i]];
            sq[grp[i]] += d * d;
        }
        /* The ONNX function: (X - mean) / (sqrt(var) + 1e-9) */
        for (int64_t k = 0; k < ng; k++) sq[k] = sqrt(sq[k] / cnt) + 1e-9;
        for (int64_t i = 0; i < n; i++) yp[i] = (T)((xp[i] - sum[grp[i]]) / sq[grp[i]]);
    }, (void)0);
    free(grp); free(sum); free(sq);
    return 0;
}

/* --------------------------------------------------------------------- LRN */

int lrn_shape(op_ctx_t *c)
{
    if (op_check_inputs(c, 1, 1) || check_float_in(c, 0)) return -1;
    const tensor_t *x = c->in[0];
    if (x->ndim < 2) return op_fail(c, "input must have rank >= 2, got %d", x->ndim);
    int64_t size = attr_int(c->node, "size", 0);
    if (size < 1 || size > (int64_t)1 << 30) return op_fail(c, "size must be a positive integer");
    return op_set_out(c, 0, x->dtype, x->ndim, x->dims);
}

int lrn_run(op_ctx_t *c)
{
    const tensor_t *x = c->in[0];
    int64_t size = attr_int(c->node, "size", 1);
    double alpha = attr_float(c->node, "alpha", 1e-4f), beta = attr_float(c->node, "beta", 0.75f);
    double bias = attr_float(c->node, "bias", 1.0f);
    int64_t nb = x->dims[0], ch = x->dims[1], sz = nn_prod(x->dims + 2, x->ndim - 2);
    int64_t below = (size - 1) / 2, above = size - 1 - below;
    void *owned;
    double *acc = nn_scratch(c, (size_t)(sz ? sz : 1) * sizeof *acc, &owned);
    DISPATCH_FLOAT(x->dtype, {
        const T *xp = (const T *)x->data;
        T *yp = (T *)c->out[0]->data;
        for (int64_t b = 0; b < nb; b++)
            for (int64_t k = 0; k < ch; k++) {
                int64_t lo = k - below < 0 ? 0 : k - below;
                int64_t hi = k + above >= ch ? ch - 1 : k + above;
                memset(acc, 0, (size_t)sz * sizeof *acc);
                for (int64_t j = lo; j <= hi; j++) {
                    const T *r = xp + (b * ch + j) * sz;
                    for (int64_t i = 0; i < sz; i++) acc[i] += (double)r[i] * r[i];
                }
                const T *xr = xp + (b * ch + k) * sz;
                T *yr = yp + (b * ch + k) * sz;
                for (int64_t i = 0; i < sz; i++)
                    yr[i] = (T)(xr[i] / pow(bias + alpha / (double)size * acc[i], beta));
            }
    }, (void)0);
    free(owned);
    return 0;
}
