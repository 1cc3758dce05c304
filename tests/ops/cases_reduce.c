/* cases_reduce.c — the Reduce* ops against reductions written here in
 * double, each input element added into its output by explicit coordinates
 * (no collapsing or fast paths): over 14 axis sets with and without
 * keepdims, float32, float64 and int32 (truncated like the reference), axes
 * as attribute and as input (opset 13/18), noop_with_empty_axes, empty
 * reductions (their identities), NaN propagation; the bounds follow from
 * the arithmetic (reduce_bound); bad axes are refused. */
#include <stdlib.h>
#include <string.h>
#include "harness.h"

enum { K_MAX, K_MIN, K_MEAN, K_SUM, K_PROD, K_L1, K_L2, K_LOGSUM, K_LOGSUMEXP, K_SUMSQ, K_N };
static const char *const red_ops[K_N] = {"ReduceMax", "ReduceMin", "ReduceMean", "ReduceSum",
    "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};

static int kind_of(const char *op)
{
    for (int k = 0; k < K_N; k++)
        if (!strcmp(op, red_ops[k])) return k;
    return -1;
}

/* How far a reduction of n values of at most xmax in size, computed with
 * unit roundoff u in any order, may be from the exact one (bounds.h): sums
 * gamma(n) of their terms' magnitudes (one more rounding for a square or
 * the mean's division); a product gamma(n) of itself; L2 and the logs pass
 * the sum's error through sqrt (slope 1/L2) and log (slope 1/sum) and add
 * their own ulp; LogSumExp's terms exp(v - max) are at most 1, their sum at
 * least 1, each off by exp's ulp and the subtraction's rounding. Max and
 * Min are exact. */
static double reduce_bound(int kind, int64_t n, double want, double xmax, double u)
{
    double sq = sum_bound((double)n + 1, (double)n * xmax * xmax, u), lse;
    if (n == 0 || !isfinite(want)) return 0;   /* identities, NaN and infinities: exactly */
    switch (kind) {
    case K_MAX: case K_MIN: return 0;
    case K_SUM: case K_L1: return sum_bound((double)n, (double)n * xmax, u);
    case K_MEAN: return sum_bound((double)n + 1, xmax, u);
    case K_SUMSQ: return sq;
    case K_PROD: return sum_bound((double)n, fabs(want), u);
    case K_L2: return fn_bound(sq, 1 / fabs(want), 0.5, want, u);
    case K_LOGSUM: {
        double d = sum_bound((double)n, (double)n * xmax, u);
        return fn_bound(d, 1 / (exp(want) - d), 1, want, u);
    }
    default:   /* K_LOGSUMEXP: max + log(sum), the sum in [1, n] */
        lse = sum_bound((double)n, (double)n, u) + (double)n * 2 * u * (1 + 2 * xmax);
        return fn_bound(lse, 1 / (1 - lse), 1, log((double)n), u) + 2 * u * fabs(want);
    }
}

/* The reduced axes (mask), from the attribute, or from input 1 where the
 * opset takes them so; none listed = all, unless noop_with_empty_axes.
 * Returns the count of axes given. */
static int reduce_mask(const oc_inst_t *t, int *mask)
{
    int nd = t->in[0]->ndim, n = 0;
    int64_t axes[TENSOR_MAX_DIMS];
    const oc_attr_t *a = oc_attr(t, "axes");
    if (t->n_in > 1 && t->in[1])
        for (; n < tensor_numel(t->in[1]); n++) axes[n] = tensor_get_i64(t->in[1], n);
    else if (a)
        for (; n < a->n; n++) axes[n] = a->i[n];
    for (int d = 0; d < nd; d++) mask[d] = n == 0 && !oc_int(t, "noop_with_empty_axes", 0);
    for (int i = 0; i < n; i++) mask[axes[i] < 0 ? axes[i] + nd : axes[i]] = 1;
    return n;
}

static int ref_reduce(const oc_inst_t *t, oc_want_t *w)
{
    const tensor_t *x = t->in[0];
    int kind = kind_of(t->c->op), nd = x->ndim, mask[TENSOR_MAX_DIMS], keep = (int)oc_int(t, "keepdims", 1), r = 0;
    int64_t od[TENSOR_MAX_DIMS], kd[TENSOR_MAX_DIMS], c[TENSOR_MAX_DIMS], nel = 1;
    reduce_mask(t, mask);
    for (int d = 0; d < nd; d++) {
        kd[d] = mask[d] ? 1 : x->dims[d];
        nel *= mask[d] ? x->dims[d] : 1;
        if (!mask[d] || keep) od[r++] = kd[d];
    }
    oc_want_shape(w, x->dtype, r, od, 0);
    int64_t no = oc_numel(nd, kd), n = tensor_numel(x);
    double *mx = calloc((size_t)(no ? no : 1), sizeof *mx);
    for (int64_t k = 0; k < no; k++) {
        mx[k] = -INFINITY;
        w->val[k] = kind == K_PROD ? 1 : kind == K_MAX ? -INFINITY : kind == K_MIN ? INFINITY : 0;
    }
    for (int pass = kind == K_LOGSUMEXP ? 0 : 1; pass < 2; pass++)
        for (int64_t i = 0; i < n; i++) {
            int64_t key = 0;
            oc_unravel(i, nd, x->dims, c);
            for (int d = 0; d < nd; d++) key = key * kd[d] + (mask[d] ? 0 : c[d]);
            double v = tensor_get_f64(x, i), *acc = &w->val[key];
            if (pass == 0) { mx[key] = fmax(mx[key], v); continue; }   /* (fmax skips NaN; the sum sees it) */
            switch (kind) {   /* NaN propagates, as in numpy's max/min */
            case K_MAX: *acc = isnan(*acc) || isnan(v) ? NAN : v > *acc ? v : *acc; break;
            case K_MIN: *acc = isnan(*acc) || isnan(v) ? NAN : v < *acc ? v : *acc; break;
            case K_PROD: *acc *= v; break;
            case K_L1: *acc += fabs(v); break;
            case K_L2: case K_SUMSQ: *acc += v * v; break;
            case K_LOGSUMEXP: *acc += exp(v - mx[key]); break;
            default: *acc += v; break;
            }
        }
    double u = x->dtype == DT_FLOAT ? U_FLOAT : U_DOUBLE, xmax = max_abs(x);
    for (int64_t k = 0; k < no; k++) {
        double *v = &w->val[k];
        switch (kind) {
        case K_MEAN: *v /= (double)nel; break;
        case K_L2: *v = sqrt(*v); break;
        case K_LOGSUM: *v = log(*v); break;
        case K_LOGSUMEXP: *v = isfinite(mx[k]) ? mx[k] + log(*v) : log(*v); break;
        }
        if (!dtype_is_float(x->dtype)) *v = trunc(*v);
        w->bound[k] = dtype_is_float(x->dtype) ? reduce_bound(kind, nel, *v, xmax, u) : 0;
    }
    free(mx);
    return 0;
}

/* Variant v: axis set v / 2 of 14 (v % 2: keepdims), as the attribute or,
 * where the case's n_in is 2, as an int64 input. */
static void gen_axes(oc_inst_t *t, int v)
{
    static const struct { int n; int64_t a[4]; } sets[] = {
        {0, {0}}, {1, {0}}, {1, {1}}, {1, {2}}, {1, {3}}, {1, {-1}}, {2, {0, 2}}, {2, {1, 3}},
        {2, {2, 3}}, {2, {0, 1}}, {3, {0, 1, 3}}, {3, {-3, -2, -1}}, {4, {0, 1, 2, 3}}, {2, {3, 0}},
    };
    int s = t->c->variants > 14 ? v / 2 : v;
    oc_set_int(t, "keepdims", t->c->variants > 14 ? v % 2 : oc_int(t, "keepdims", 1));
    if (t->n_in == 2) {
        oc_input_t *a = oc_input(t, 1);
        *a = (oc_input_t){.dt = DT_INT64, .nd = 1, .dims = {sets[s].n}, .gen = GEN_INT64S, .nv = sets[s].n};
        memcpy(a->iv, sets[s].a, sizeof sets[s].a);
    } else if (sets[s].n) {
        oc_set_ints(t, "axes", sets[s].n, sets[s].a);
    }
}

/* Reduce* over a 4x9x7 float32 with two NaNs: variant v / 2 picks the
 * axes {2}, {1}, {0}, {0, 2}, ... (v % 2: one axis, or it and the next). */
static void gen_nan(oc_inst_t *t, int v)
{
    static const int64_t sets[4][2] = {{2, 0}, {1, 0}, {0, 2}, {0, 1}};
    int64_t n = 4 * 9 * 7;
    tensor_t *x = oc_tensor(DT_FLOAT, 3, (int64_t[]){4, 9, 7});
    for (int64_t i = 0; i < n; i++) ((float *)x->data)[i] = (float)oc_uniform(0.5, 1.5);
    ((float *)x->data)[5] = NAN;
    ((float *)x->data)[200] = NAN;
    t->in[0] = x;
    oc_set_ints(t, "axes", 1 + v % 2, sets[v / 2]);
    oc_set_int(t, "keepdims", v % 2 == 0);
}

#define X3456 DIMS(3, 4, 5, 6)
/* positive float32 (LogSum, Prod), float64 in [-2, 2), int32 in [-3, 4] */
#define SWEEP_F(op_) {.op = op_, .opset = 13, .what = "float32, 14 axis sets x keepdims", .n_in = 1, \
        .in = {IN_U(DT_FLOAT, 0.5, 1.5, X3456)}, .gen = gen_axes, .variants = 28, .ref = ref_reduce}
#define SWEEP_D(op_) {.op = op_, .opset = 13, .what = "float64, 14 axis sets x keepdims", .n_in = 1, \
        .in = {IN_U(DT_DOUBLE, -2, 2, X3456)}, .gen = gen_axes, .variants = 28, .ref = ref_reduce}
#define SWEEP_I(op_) {.op = op_, .opset = 13, .what = "int32 (truncated like the reference), 14 axis sets", \
        .n_in = 1, .in = {IN_I(DT_INT32, -3, 3, X3456)}, .gen = gen_axes, .variants = 14, .ref = ref_reduce}
#define SWEEP_IN(op_, set) {.op = op_, .opset = set, .what = "axes as input, 14 sets (empty = all)", .n_in = 2, \
        .in = {IN_U(DT_FLOAT, 0.5, 1.5, X3456)}, .gen = gen_axes, .variants = 14, .ref = ref_reduce}
#define EMPTY(op_) {.op = op_, .opset = 13, .what = "over an empty axis: its identity", .n_in = 1, \
        .in = {IN_U(DT_FLOAT, 0, 1, DIMS(2, 0, 3))}, .attr = {AIS("axes", 1)}, .ref = ref_reduce}
#define NANS(op_) {.op = op_, .opset = 13, .what = "NaN propagates (leading, middle, last axes)", .n_in = 1, \
        .in = {IN_GEN}, .gen = gen_nan, .variants = 8, .ref = ref_reduce}
/* more than 1024 outputs over the last axis: rows on the pool, vectorised at AVX2 for these kinds */
#define ROWS(op_) {.op = op_, .opset = 13, .what = "last axis of 4x400x13 (pooled rows), 1 and 3 threads", .n_in = 1, \
        .threads = 3, .in = {IN_U(DT_FLOAT, -1.5, 1.5, DIMS(4, 400, 13))}, .attr = {AIS("axes", -1), AI("keepdims", 0)}, \
        .ref = ref_reduce}
#define KIND(op_, set) SWEEP_F(op_), EMPTY(op_), NANS(op_), SWEEP_IN(op_, set)

const op_case_t cases_reduce[] = {
    KIND("ReduceMax", 18), SWEEP_D("ReduceMax"), SWEEP_I("ReduceMax"),
    KIND("ReduceMin", 18), SWEEP_D("ReduceMin"), SWEEP_I("ReduceMin"),
    KIND("ReduceMean", 18), SWEEP_D("ReduceMean"), SWEEP_I("ReduceMean"),
    {.op = "ReduceSum", .opset = 11, .what = "float32, 14 axis sets x keepdims (attribute)", .n_in = 1,
     .in = {IN_U(DT_FLOAT, 0.5, 1.5, X3456)}, .gen = gen_axes, .variants = 28, .ref = ref_reduce},
    {.op = "ReduceSum", .opset = 11, .what = "float64, 14 axis sets x keepdims (attribute)", .n_in = 1,
     .in = {IN_U(DT_DOUBLE, -2, 2, X3456)}, .gen = gen_axes, .variants = 28, .ref = ref_reduce},
    {.op = "ReduceSum", .opset = 11, .what = "int32 (truncated like the reference), 14 axis sets", .n_in = 1,
     .in = {IN_I(DT_INT32, -3, 3, X3456)}, .gen = gen_axes, .variants = 14, .ref = ref_reduce},
    {.op = "ReduceSum", .opset = 11, .what = "over an empty axis: its identity", .n_in = 1,
     .in = {IN_U(DT_FLOAT, 0, 1, DIMS(2, 0, 3))}, .attr = {AIS("axes", 1)}, .ref = ref_reduce},
    {.op = "ReduceSum", .opset = 11, .what = "NaN propagates (leading, middle, last axes)", .n_in = 1, .in = {IN_GEN},
     .gen = gen_nan, .variants = 8, .ref = ref_reduce},
    {.op = "ReduceSum", .opset = 13, .what = "axes as input, 14 sets, keepdims 0 (empty = all)", .n_in = 2,
     .in = {IN_U(DT_FLOAT, 0.5, 1.5, X3456)}, .attr = {AI("keepdims", 0)}, .gen = gen_axes, .variants = 14,
     .ref = ref_reduce},
    {.op = "ReduceSum", .opset = 13, .what = "noop_with_empty_axes=1 with empty axes is Identity", .n_in = 2,
     .in = {IN_U(DT_FLOAT, -1, 1, DIMS(3, 4)), {.dt = DT_INT64, .nd = 1, .dims = {0}, .gen = GEN_INT64S}},
     .attr = {AI("noop_with_empty_axes", 1)}, .ref = ref_reduce},
    KIND("ReduceProd", 18),
    KIND("ReduceL1", 18), SWEEP_D("ReduceL1"), SWEEP_I("ReduceL1"),
    KIND("ReduceL2", 18), SWEEP_D("ReduceL2"), SWEEP_I("ReduceL2"),
    KIND("ReduceLogSum", 18),
    KIND("ReduceLogSumExp", 18), SWEEP_D("ReduceLogSumExp"),
    KIND("ReduceSumSquare", 18), SWEEP_D("ReduceSumSquare"), SWEEP_I("ReduceSumSquare"),
    ROWS("ReduceMean"), ROWS("ReduceL1"), ROWS("ReduceL2"), ROWS("ReduceSumSquare"),
    {.op = "ReduceSum", .opset = 11, .what = "last axis of 4x400x13 (pooled rows), 1 and 3 threads", .n_in = 1,
     .threads = 3, .in = {IN_U(DT_FLOAT, -1.5, 1.5, DIMS(4, 400, 13))}, .attr = {AIS("axes", -1), AI("keepdims", 0)},
     .ref = ref_reduce},
    /* 437 values of 100 to 200: sums around FP16's largest, 65504 (storage.c), inf past 65520 */
    {.op = "ReduceSum", .opset = 11, .what = "sums around FP16's largest", .n_in = 1,
     .in = {IN_U(DT_FLOAT, 100, 200, DIMS(8, 437))}, .attr = {AIS("axes", -1), AI("keepdims", 0)}, .ref = ref_reduce},
    {.op = "ReduceMean", .opset = 13, .what = "an axis out of range", .n_in = 1, .in = {IN_U(DT_FLOAT, -1, 1, DIMS(3, 4))},
     .attr = {AIS("axes", 2)}, .fail = "out of range"},
    {.op = "ReduceMean", .opset = 13, .what = "an axis listed twice", .n_in = 1, .in = {IN_U(DT_FLOAT, -1, 1, DIMS(3, 4))},
     .attr = {AIS("axes", 1, -1)}, .fail = "twice"},
};
const int cases_reduce_n = sizeof cases_reduce / sizeof cases_reduce[0];
