/* ops_reduce.c — checks the REDUCE family's kernels (through node_run, the
 * executor's one path to a kernel) against naive implementations written
 * here independently: explicit coordinate loops in double, one pass per
 * output element, no collapsing or fast paths. Covers Reduce* over many axis
 * sets, keepdims, axes as attribute vs input (opset 13/18),
 * noop_with_empty_axes, empty reductions, NaN; Softmax/LogSoftmax/Hardmax at
 * opset 11 (coerced to 2-D) vs opset 13 (one axis); ArgMax/ArgMin, TopK
 * (ties, NaN), CumSum; and that bad attributes fail cleanly. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "bounds.h"
#include "ops/run.h"
#include "util/pool.h"

/* ---- building nodes ---- */

typedef struct tnode {
    node_t n;
    Onnx__AttributeProto attrs[8];
    Onnx__AttributeProto *ap[8];
    int64_t ints[8][8];
} tnode_t;

static void tn_init(tnode_t *t, const char *op, int opset, int n_in, int n_out)
{
    memset(t, 0, sizeof *t);
    t->n.name = "t";
    t->n.op_type = (char *)op;
    t->n.domain = "";
    t->n.opset = opset;
    t->n.n_in = n_in;
    t->n.n_out = n_out;
    t->n.attr = t->ap;
    t->n.op = op_lookup("", op, opset, NULL);
}

static Onnx__AttributeProto *tn_attr(tnode_t *t, const char *name)
{
    int k = t->n.n_attr++;
    Onnx__AttributeProto *a = &t->attrs[k];
    onnx__attribute_proto__init(a);
    a->name = (char *)name;
    t->ap[k] = a;
    return a;
}

static void tn_int(tnode_t *t, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = tn_attr(t, name);
    a->has_i = 1;
    a->i = v;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
}

static void tn_ints(tnode_t *t, const char *name, int n, const int64_t *v)
{
    int k = t->n.n_attr;
    Onnx__AttributeProto *a = tn_attr(t, name);
    memcpy(t->ints[k], v, n * sizeof *v);
    a->n_ints = n;
    a->ints = t->ints[k];
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
}

static scratch_pool_t pool;

/* Runs the node; returns 0 or -1 (message in *e). */
static int tn_run(tnode_t *t, const tensor_t *const *in, tensor_t **out, perr_t *e)
{
    memset(e, 0, sizeof *e);
    if (!t->n.op) return BAD(e, "no op row for %s opset %d", t->n.op_type, t->n.opset);
    return node_run(&t->n, in, out, 1, &pool, NULL, e);
}

/* ---- data ---- */

static uint64_t rng = 88172645463325252ull;
static double urand(void)
{
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

static tensor_t *rand_tensor(dtype_t dt, int nd, const int64_t *dims, double lo, double hi, int ints)
{
    perr_t e = {0};
    tensor_t *t = tensor_new(dt, nd, dims, &e);
    for (int64_t i = 0; i < tensor_numel(t); i++) {
        double v = lo + (hi - lo) * urand();
        tensor_set_f64(t, i, ints ? floor(v) : v);
    }
    return t;
}

static tensor_t *i64_tensor(int n, const int64_t *v)
{
    perr_t e = {0};
    int64_t d = n;
    tensor_t *t = tensor_new(DT_INT64, 1, &d, &e);
    if (n) memcpy(t->data, v, n * sizeof *v);
    return t;
}

static void unravel(int64_t i, int nd, const int64_t *dims, int64_t *c)
{
    for (int d = nd - 1; d >= 0; d--) {
        c[d] = dims[d] ? i % dims[d] : 0;
        i = dims[d] ? i / dims[d] : 0;
    }
}

/* Flat index of coordinates c with the axes in mask[] set to 0 (the group key). */
static int64_t key_of(int nd, const int64_t *dims, const int64_t *c, const int *mask)
{
    int64_t k = 0;
    for (int d = 0; d < nd; d++) k = k * (mask[d] ? 1 : dims[d]) + (mask[d] ? 0 : c[d]);
    return k;
}

/* got within bound of want; NaN and infinities exactly. */
static int close_to(double got, double want, double bound)
{
    if (isnan(want)) return isnan(got);
    if (isinf(want)) return got == want;
    return fabs(got - want) <= bound;
}

/* ---- reductions ---- */

enum { K_MAX, K_MIN, K_MEAN, K_SUM, K_PROD, K_L1, K_L2, K_LOGSUM, K_LOGSUMEXP, K_SUMSQ, K_N };
static const char *const red_ops[K_N] = {"ReduceMax", "ReduceMin", "ReduceMean", "ReduceSum",
    "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};

/* The reduction of every element whose key matches, element by element. */
static double naive_reduce(int kind, const tensor_t *x, const int *mask, int64_t key)
{
    int nd = x->ndim;
    int64_t c[TENSOR_MAX_DIMS], n = tensor_numel(x), cnt = 0;
    double acc = kind == K_PROD ? 1 : kind == K_MAX ? -INFINITY : kind == K_MIN ? INFINITY : 0;
    double mx = -INFINITY;
    if (kind == K_LOGSUMEXP)
        for (int64_t i = 0; i < n; i++) {
            unravel(i, nd, x->dims, c);
            if (key_of(nd, x->dims, c, mask) == key) mx = fmax(mx, tensor_get_f64(x, i));
        }
    for (int64_t i = 0; i < n; i++) {
        unravel(i, nd, x->dims, c);
        if (key_of(nd, x->dims, c, mask) != key) continue;
        double v = tensor_get_f64(x, i);
        cnt++;
        switch (kind) {   /* NaN propagates, as in numpy's max/min */
        case K_MAX: acc = isnan(acc) || isnan(v) ? NAN : v > acc ? v : acc; break;
        case K_MIN: acc = isnan(acc) || isnan(v) ? NAN : v < acc ? v : acc; break;
        case K_PROD: acc *= v; break;
        case K_L1: acc += fabs(v); break;
        case K_L2: case K_SUMSQ: acc += v * v; break;
        case K_LOGSUMEXP: acc += exp(v - mx); break;
        default: acc += v; break;
        }
    }
    switch (kind) {
    case K_MEAN: return acc / (double)cnt;
    case K_L2: return sqrt(acc);
    case K_LOGSUM: return log(acc);
    case K_LOGSUMEXP: return isfinite(mx) ? mx + log(acc) : log(acc);
    default: return acc;
    }
}

/* How far a reduction of n values of at most xmax in size, computed with
 * unit roundoff u in any order, may be from the naive one (bounds.h): sums
 * gamma(n) of their terms' magnitudes (one more rounding for a square or
 * the mean's division); a product gamma(n) of itself; L2 and the logs pass
 * the sum's error through sqrt (slope 1/L2) and log (slope 1/sum) and add
 * their own ulp; LogSumExp's terms exp(v - max) are at most 1, their sum at
 * least 1, each off by exp's ulp and the subtraction's rounding. Max and
 * Min are exact. */
static double reduce_bound(int kind, int64_t n, double want, double xmax, double u)
{
    double sq = sum_bound(n + 1, n * xmax * xmax, u), lse;
    if (n == 0) return 0;   /* an empty reduction gives its identity exactly */
    switch (kind) {
    case K_MAX: case K_MIN: return 0;
    case K_SUM: case K_L1: return sum_bound(n, n * xmax, u);
    case K_MEAN: return sum_bound(n + 1, xmax, u);
    case K_SUMSQ: return sq;
    case K_PROD: return sum_bound(n, fabs(want), u);
    case K_L2: return fn_bound(sq, 1 / fabs(want), 0.5, want, u);
    case K_LOGSUM: {
        double d = sum_bound(n, n * xmax, u);
        return fn_bound(d, 1 / (exp(want) - d), 1, want, u);
    }
    default:   /* K_LOGSUMEXP: max + log(sum), the sum in [1, n] */
        lse = sum_bound(n, n, u) + n * 2 * u * (1 + 2 * xmax);
        return fn_bound(lse, 1 / (1 - lse), 1, log(n), u) + 2 * u * fabs(want);
    }
}

/* Runs one Reduce node and compares every output element with the naive
 * reduction within reduce_bound() (integers: exactly); mask lists the
 * reduced axes (NULL axes list = all). */
static int check_reduce(int kind, const tensor_t *x, int nax, const int64_t *axes, int keep,
                        int opset, int axes_as_input)
{
    tnode_t t;
    perr_t e;
    tensor_t *ax = axes_as_input && nax >= 0 ? i64_tensor(nax, axes) : NULL;
    /* ReduceSum takes its axes as an input from opset 13: test its attribute form at 11 */
    if (!axes_as_input && kind == K_SUM && opset >= 13) opset = 11;
    tn_init(&t, red_ops[kind], opset, ax ? 2 : 1, 1);
    if (!axes_as_input && nax > 0) tn_ints(&t, "axes", nax, axes);
    tn_int(&t, "keepdims", keep);
    const tensor_t *in[2] = {x, ax};
    tensor_t y = {0}, *out[1] = {&y};
    int good = tn_run(&t, in, out, &e) == 0;
    if (!good) diag("%s: %s", red_ops[kind], e.msg);
    int mask[TENSOR_MAX_DIMS] = {0}, nred = 0;
    for (int d = 0; d < x->ndim; d++) mask[d] = nax <= 0;
    for (int i = 0; i < nax; i++) mask[axes[i] < 0 ? axes[i] + x->ndim : axes[i]] = 1;
    for (int d = 0; d < x->ndim; d++) nred += mask[d];
    /* shape: the reduced axes become 1 or vanish */
    good = good && y.dtype == x->dtype && y.ndim == (keep ? x->ndim : x->ndim - nred);
    for (int d = 0, o = 0; good && d < x->ndim; d++) {
        if (mask[d] && !keep) continue;
        good = y.dims[o++] == (mask[d] ? 1 : x->dims[d]);
    }
    int64_t no = good ? tensor_numel(&y) : 0, nel = 1;
    for (int d = 0; d < x->ndim; d++) nel *= mask[d] ? x->dims[d] : 1;
    double u = x->dtype == DT_FLOAT ? U_FLOAT : U_DOUBLE, xmax = max_abs(x);
    for (int64_t k = 0; good && k < no; k++) {
        double want = naive_reduce(kind, x, mask, k);
        if (!dtype_is_float(x->dtype)) want = trunc(want);
        double got = tensor_get_f64(&y, k);
        if (!close_to(got, want, dtype_is_float(x->dtype) ? reduce_bound(kind, nel, want, xmax, u) : 0)) {
            diag("%s element %lld: got %.9g want %.9g", red_ops[kind], (long long)k, got, want);
            good = 0;
        }
    }
    tensor_free_data(&y);
    if (ax) tensor_free(ax);
    return good;
}

static void test_reductions(void)
{
    const int64_t dims[4] = {3, 4, 5, 6};
    tensor_t *x = rand_tensor(DT_FLOAT, 4, dims, 0.5, 1.5, 0);   /* positive: LogSum, Prod */
    tensor_t *xd = rand_tensor(DT_DOUBLE, 4, dims, -2, 2, 0);
    tensor_t *xi = rand_tensor(DT_INT32, 4, dims, -3, 4, 1);
    static const struct { int n; int64_t a[4]; } sets[] = {
        {0, {0}}, {1, {0}}, {1, {1}}, {1, {2}}, {1, {3}}, {1, {-1}}, {2, {0, 2}}, {2, {1, 3}},
        {2, {2, 3}}, {2, {0, 1}}, {3, {0, 1, 3}}, {3, {-3, -2, -1}}, {4, {0, 1, 2, 3}}, {2, {3, 0}},
    };
    for (int kind = 0; kind < K_N; kind++) {
        int pass = 1;
        for (size_t s = 0; s < sizeof sets / sizeof sets[0]; s++)
            for (int keep = 0; keep <= 1; keep++) {
                pass &= check_reduce(kind, x, sets[s].n, sets[s].a, keep, 13, 0);
                if (kind != K_LOGSUM && kind != K_PROD)
                    pass &= check_reduce(kind, xd, sets[s].n, sets[s].a, keep, 13, 0);
            }
        ok(pass, "%s float32/float64 over 14 axis sets x keepdims", red_ops[kind]);
    }
    static const int int_kinds[] = {K_MAX, K_MIN, K_SUM, K_SUMSQ, K_L1, K_MEAN, K_L2};
    for (size_t i = 0; i < sizeof int_kinds / sizeof int_kinds[0]; i++) {
        int pass = 1;
        for (size_t s = 0; s < sizeof sets / sizeof sets[0]; s++)
            pass &= check_reduce(int_kinds[i], xi, sets[s].n, sets[s].a, 1, 13, 0);
        ok(pass, "%s int32 (truncated like the reference)", red_ops[int_kinds[i]]);
    }
    /* axes as an input: ReduceSum from 13, the others from 18 */
    int pass = 1;
    for (size_t s = 0; s < sizeof sets / sizeof sets[0]; s++) {
        pass &= check_reduce(K_SUM, x, sets[s].n, sets[s].a, 0, 13, 1);
        pass &= check_reduce(K_MEAN, x, sets[s].n, sets[s].a, 1, 18, 1);
        pass &= check_reduce(K_LOGSUMEXP, x, sets[s].n, sets[s].a, 1, 18, 1);
    }
    ok(pass, "axes as input (ReduceSum-13, ReduceMean-18, ReduceLogSumExp-18), empty = all");
    tensor_free(x);
    tensor_free(xd);
    tensor_free(xi);
}

static void test_reduce_edges(void)
{
    /* an empty reduced axis gives the identity of each reduction */
    const int64_t d0[3] = {2, 0, 3}, ax1[1] = {1};
    tensor_t *x = rand_tensor(DT_FLOAT, 3, d0, 0, 1, 0);
    int pass = 1;
    for (int kind = 0; kind < K_N; kind++) pass &= check_reduce(kind, x, 1, ax1, 1, 13, 0);
    ok(pass, "reductions over an empty axis give 0, 1, -inf, +inf, NaN as appropriate");
    tensor_free(x);

    /* a NaN propagates into every reduction that sees it, on every path */
    const int64_t dn[3] = {4, 9, 7}, setn[4][2] = {{2, 0}, {1, 0}, {0, 2}, {0, 1}};
    x = rand_tensor(DT_FLOAT, 3, dn, 0.5, 1.5, 0);
    ((float *)x->data)[5] = NAN;
    ((float *)x->data)[200] = NAN;
    pass = 1;
    for (int kind = 0; kind < K_N; kind++)
        for (int s = 0; s < 4; s++) {
            pass &= check_reduce(kind, x, 1, setn[s], 1, 13, 0);
            pass &= check_reduce(kind, x, 2, setn[s], 0, 13, 0);
        }
    ok(pass, "NaN propagates through all reductions (leading, middle, last axes)");
    tensor_free(x);

    /* noop_with_empty_axes copies the input */
    const int64_t d1[2] = {3, 4};
    x = rand_tensor(DT_FLOAT, 2, d1, -1, 1, 0);
    tnode_t t;
    perr_t e;
    tensor_t *empty = i64_tensor(0, NULL), y = {0}, *out[1] = {&y};
    tn_init(&t, "ReduceSum", 13, 2, 1);
    tn_int(&t, "noop_with_empty_axes", 1);
    const tensor_t *in[2] = {x, empty};
    ok(tn_run(&t, in, out, &e) == 0 && tensor_same_shape(&y, x) &&
       !memcmp(y.data, x->data, tensor_nbytes(x)), "noop_with_empty_axes=1 with empty axes is Identity");
    tensor_free_data(&y);

    /* bad axes fail with a message naming the node, never crash */
    const int64_t bad[2] = {2, 0}, dup[2] = {1, -1};
    tn_init(&t, "ReduceMean", 13, 1, 1);
    tn_ints(&t, "axes", 1, bad);
    const tensor_t *in1[1] = {x};
    ok(tn_run(&t, in1, out, &e) != 0 && strstr(e.msg, "out of range"), "axis out of range: %s", e.msg);
    tn_init(&t, "ReduceMean", 13, 1, 1);
    tn_ints(&t, "axes", 2, dup);
    ok(tn_run(&t, in1, out, &e) != 0 && strstr(e.msg, "twice"), "duplicate axis: %s", e.msg);
    tensor_free_data(&y);
    tensor_free(empty);
    tensor_free(x);
}

/* ---- softmax family ---- */

enum { S_SOFT, S_LOG, S_HARD };

/* The normalisation of each group of elements sharing a key (mask = the
 * axes normalised over). */
static void naive_softmax(int kind, const tensor_t *x, const int *mask, double *y)
{
    int nd = x->ndim;
    int64_t n = tensor_numel(x), c[TENSOR_MAX_DIMS];
    for (int64_t i = 0; i < n; i++) {
        unravel(i, nd, x->dims, c);
        int64_t key = key_of(nd, x->dims, c, mask), first = -1;
        double mx = -INFINITY, s = 0;
        for (int64_t j = 0; j < n; j++) {
            int64_t cj[TENSOR_MAX_DIMS];
            unravel(j, nd, x->dims, cj);
            if (key_of(nd, x->dims, cj, mask) != key) continue;
            double v = tensor_get_f64(x, j);
            if (v > mx) { mx = v; first = j; }
        }
        for (int64_t j = 0; j < n; j++) {
            int64_t cj[TENSOR_MAX_DIMS];
            unravel(j, nd, x->dims, cj);
            if (key_of(nd, x->dims, cj, mask) == key) s += exp(tensor_get_f64(x, j) - mx);
        }
        double v = tensor_get_f64(x, i);
        y[i] = kind == S_SOFT ? exp(v - mx) / s : kind == S_LOG ? v - mx - log(s) : (i == first);
    }
}

static const char *const sm_ops[3] = {"Softmax", "LogSoftmax", "Hardmax"};

/* How far Softmax/LogSoftmax of a row of n values spanning range may be
 * from the naive result (bounds.h): x - max is off by u * range, which
 * exp turns into a relative error, plus exp's ulp (2u); the sum of the n
 * positive terms adds gamma(n) relatively; Softmax divides (one more
 * rounding), LogSoftmax subtracts log(sum) (slope 1/sum, its ulp, the sum at
 * most n) and rounds. Hardmax is exact. */
static double softmax_bound(int kind, int64_t n, double range, double want, double u)
{
    double term = u * range + 2 * u, sum = term + sum_bound(n, 1, u);
    if (kind == S_SOFT) return (term + sum + u) * fabs(want);
    if (kind == S_LOG) return u * range + sum + 2 * u * log((double)n) + u * fabs(want);
    return 0;
}

/* Runs at the opset; returns the worst error over its bound against the
 * naive result with the semantics `as13` (1: one axis; 0: coerced to 2-D),
 * or -1 on error. */
static double softmax_err(int kind, const tensor_t *x, int opset, int64_t axis, int has_axis, int as13)
{
    tnode_t t;
    perr_t e;
    tn_init(&t, sm_ops[kind], opset, 1, 1);
    if (has_axis) tn_int(&t, "axis", axis);
    const tensor_t *in[1] = {x};
    tensor_t y = {0}, *out[1] = {&y};
    if (tn_run(&t, in, out, &e)) { diag("%s", e.msg); return -1; }
    int nd = x->ndim, mask[TENSOR_MAX_DIMS] = {0};
    int64_t a = has_axis ? axis : opset >= 13 ? -1 : 1;
    if (a < 0) a += nd;
    for (int d = 0; d < nd; d++) mask[d] = as13 ? d == a : d >= a;
    int64_t n = tensor_numel(x), row = 1;
    for (int d = 0; d < nd; d++) row *= mask[d] ? x->dims[d] : 1;
    double lo = INFINITY, hi = -INFINITY, u = x->dtype == DT_FLOAT ? U_FLOAT : U_DOUBLE;
    for (int64_t i = 0; i < n; i++) lo = fmin(lo, tensor_get_f64(x, i)), hi = fmax(hi, tensor_get_f64(x, i));
    double *want = malloc(n * sizeof *want), err = 0;
    naive_softmax(kind, x, mask, want);
    for (int64_t i = 0; i < n; i++) {
        double d = fabs(tensor_get_f64(&y, i) - want[i]);
        err = fmax(err, d == 0 ? 0 : d / softmax_bound(kind, row, hi - lo, want[i], u));
    }
    if (!tensor_same_shape(&y, x)) err = -1;
    free(want);
    tensor_free_data(&y);
    return err;
}

static void test_softmax(void)
{
    const int64_t dims[4] = {2, 3, 4, 5};
    tensor_t *x = rand_tensor(DT_FLOAT, 4, dims, -3, 3, 0);
    tensor_t *xd = rand_tensor(DT_DOUBLE, 4, dims, -3, 3, 0);
    for (int kind = 0; kind < 3; kind++) {
        int p11 = 1, p13 = 1, differs = 1;
        for (int64_t axis = -4; axis < 4; axis++) {
            double e11 = softmax_err(kind, x, 11, axis, 1, 0);
            double e13 = softmax_err(kind, x, 13, axis, 1, 1);
            p11 &= e11 >= 0 && e11 <= 1;
            p13 &= e13 >= 0 && e13 <= 1;
            p13 &= softmax_err(kind, xd, 13, axis, 1, 1) <= 1;
            p11 &= softmax_err(kind, xd, 11, axis, 1, 0) <= 1;
            /* the two semantics only coincide on the last axis: elsewhere
             * they differ far beyond any rounding */
            int a = (int)(axis < 0 ? axis + 4 : axis);
            if (a != 3) differs &= softmax_err(kind, x, 11, axis, 1, 1) > 1000;
        }
        ok(p11, "%s opset 11: coerced to 2-D at axis, every axis", sm_ops[kind]);
        ok(p13, "%s opset 13: along one axis, every axis", sm_ops[kind]);
        ok(differs, "%s opset 11 differs from single-axis semantics except on the last axis", sm_ops[kind]);
        double d11 = softmax_err(kind, x, 11, 0, 0, 0), d13 = softmax_err(kind, x, 13, 0, 0, 1);
        ok(d11 >= 0 && d11 <= 1 && d13 >= 0 && d13 <= 1,
           "%s default axis: 1 before opset 13 (2-D), -1 from 13", sm_ops[kind]);
    }
    /* large inputs do not overflow (max subtracted) */
    const int64_t d2[2] = {2, 3};
    tensor_t *big = rand_tensor(DT_FLOAT, 2, d2, 1000, 1010, 0);
    double e1 = softmax_err(S_SOFT, big, 13, -1, 1, 1), e2 = softmax_err(S_LOG, big, 13, -1, 1, 1);
    ok(e1 >= 0 && e1 <= 1 && e2 >= 0 && e2 <= 1, "Softmax/LogSoftmax stable at x ~ 1000");
    tensor_free(big);
    tensor_free(x);
    tensor_free(xd);
}

/* Float32 rows long enough to be spread over the pool (and with lengths
 * that leave a vector tail): the same bits on 1 and 3 threads, and close to
 * the naive double result; NaN and inf rows as numpy gives them. */
static tensor_t *run_softmax(int kind, const tensor_t *x, int threads)
{
    tnode_t t;
    perr_t e;
    pool_set_threads(threads);
    tn_init(&t, sm_ops[kind], 13, 1, 1);
    const tensor_t *in[1] = {x};
    tensor_t *y = calloc(1, sizeof *y), *out[1] = {y};
    int rc = tn_run(&t, in, out, &e);
    pool_set_threads(1);
    if (rc) { diag("%s", e.msg); tensor_free(y); return NULL; }
    return y;
}

static void test_softmax_rows(void)
{
    const int64_t dims[2] = {203, 259};
    tensor_t *x = rand_tensor(DT_FLOAT, 2, dims, -8, 8, 0);
    float *xp = x->data;
    xp[5 * 259 + 7] = NAN;                   /* row 5: all NaN */
    xp[9 * 259 + 0] = INFINITY;              /* row 9: all NaN (numpy too) */
    for (int kind = 0; kind < 2; kind++) {
        tensor_t *y1 = run_softmax(kind, x, 1), *y3 = run_softmax(kind, x, 3);
        int same = y1 && y3 && !memcmp(y1->data, y3->data, 203 * 259 * sizeof(float));
        double *want = malloc(203 * 259 * sizeof *want), err = 0;
        int mask[2] = {0, 1}, specials = y1 != NULL;
        naive_softmax(kind, x, mask, want);
        for (int64_t i = 0; y1 && i < 203 * 259; i++) {
            double got = tensor_get_f64(y1, i);
            if (i / 259 == 5 || i / 259 == 9) specials &= isnan(got);   /* exp(inf - inf) in the sum */
            else err = fmax(err, fabs(got - want[i]) / softmax_bound(kind, 259, 16, want[i], U_FLOAT));
        }
        ok(same, "%s float32 203x259: same bits on 1 and 3 threads", sm_ops[kind]);
        ok(err <= 1 && specials, "%s float32 203x259: error %.2g of its bound against double, NaN/inf rows NaN",
           sm_ops[kind], err);
        free(want);
        tensor_free(y1);
        tensor_free(y3);
    }
    tensor_free(x);
}

/* ---- ArgMax, TopK, CumSum ---- */

/* Whether value a at index ia ranks before b at ib ("largest" order, NaN top). */
static int ranks_before(double a, int64_t ia, double b, int64_t ib, int largest)
{
    if (isnan(a) || isnan(b)) {
        if (isnan(a) && isnan(b)) return ia < ib;
        return largest ? isnan(a) : isnan(b);
    }
    if (a != b) return largest ? a > b : a < b;
    return ia < ib;
}

static void test_argmax_topk(void)
{
    const int64_t dims[3] = {4, 7, 5};
    tensor_t *x = rand_tensor(DT_FLOAT, 3, dims, 0, 4, 1);   /* small integers: many ties */
    ((float *)x->data)[9] = NAN;
    int pass = 1;
    for (int op = 0; op < 2; op++)
        for (int last = 0; last <= 1; last++)
            for (int axis = 0; axis < 3; axis++) {
                tnode_t t;
                perr_t e;
                tn_init(&t, op ? "ArgMin" : "ArgMax", 13, 1, 1);
                tn_int(&t, "axis", axis);
                tn_int(&t, "select_last_index", last);
                const tensor_t *in[1] = {x};
                tensor_t y = {0}, *out[1] = {&y};
                if (tn_run(&t, in, out, &e)) { diag("%s", e.msg); pass = 0; continue; }
                int mask[3] = {0};
                mask[axis] = 1;
                int64_t c[3];
                for (int64_t k = 0; k < tensor_numel(&y); k++) {
                    /* naive: scan the group in index order; NaN wins (numpy) */
                    int64_t best = -1, pos = 0, bpos = -1;
                    double bv = 0;
                    for (int64_t i = 0; i < tensor_numel(x); i++) {
                        unravel(i, 3, x->dims, c);
                        if (key_of(3, x->dims, c, mask) != k) continue;
                        double v = tensor_get_f64(x, i);
                        int take = best < 0 || (isnan(v) && (!isnan(bv) || last)) ||
                                   (!isnan(bv) && !isnan(v) && (op ? v < bv : v > bv)) ||
                                   (!isnan(bv) && last && v == bv);
                        if (take) { best = i; bv = v; bpos = pos; }
                        pos++;
                    }
                    pass &= ((int64_t *)y.data)[k] == bpos;
                }
                tensor_free_data(&y);
            }
    ok(pass, "ArgMax/ArgMin every axis, select_last_index 0/1, ties and a NaN");

    pass = 1;
    for (int largest = 0; largest <= 1; largest++)
        for (int axis = 0; axis < 3; axis++)
            for (int64_t k = 0; k <= dims[axis]; k += 2) {
                tnode_t t;
                perr_t e;
                tn_init(&t, "TopK", 11, 2, 2);
                tn_int(&t, "axis", axis - 3);
                tn_int(&t, "largest", largest);
                tensor_t *kt = i64_tensor(1, &k), v = {0}, ix = {0}, *out[2] = {&v, &ix};
                const tensor_t *in[2] = {x, kt};
                if (tn_run(&t, in, out, &e)) { diag("%s", e.msg); pass = 0; tensor_free(kt); continue; }
                /* naive: selection by repeated scans of each line */
                int64_t n = dims[axis], inner = 1, outer = 1;
                for (int d = axis + 1; d < 3; d++) inner *= dims[d];
                for (int d = 0; d < axis; d++) outer *= dims[d];
                for (int64_t o = 0; o < outer; o++)
                    for (int64_t i = 0; i < inner; i++) {
                        char used[16] = {0};
                        for (int64_t r = 0; r < k; r++) {
                            int64_t b = -1;
                            for (int64_t j = 0; j < n; j++) {
                                if (used[j]) continue;
                                double vj = tensor_get_f64(x, (o * n + j) * inner + i);
                                if (b < 0 || ranks_before(vj, j, tensor_get_f64(x, (o * n + b) * inner + i), b, largest)) b = j;
                            }
                            used[b] = 1;
                            int64_t at = (o * k + r) * inner + i;
                            double want = tensor_get_f64(x, (o * n + b) * inner + i), got = tensor_get_f64(&v, at);
                            pass &= ((int64_t *)ix.data)[at] == b && (got == want || (isnan(got) && isnan(want)));
                        }
                    }
                tensor_free_data(&v);
                tensor_free_data(&ix);
                tensor_free(kt);
            }
    ok(pass, "TopK largest/smallest, every axis and k: ties by lower index, NaN ranks highest");
    tensor_free(x);
}

static void test_cumsum(void)
{
    const int64_t dims[3] = {3, 4, 5};
    tensor_t *x = rand_tensor(DT_DOUBLE, 3, dims, -2, 2, 0);
    tensor_t *xi = rand_tensor(DT_INT64, 3, dims, -50, 50, 1);
    int pass = 1;
    for (int which = 0; which < 2; which++)
        for (int axis = -3; axis < 3; axis++)
            for (int mode = 0; mode < 4; mode++) {
                const tensor_t *src = which ? xi : x;
                tnode_t t;
                perr_t e;
                tn_init(&t, "CumSum", 14, 2, 1);
                tn_int(&t, "exclusive", mode & 1);
                tn_int(&t, "reverse", mode >> 1);
                int64_t a64 = axis;
                tensor_t *at = i64_tensor(1, &a64), y = {0}, *out[1] = {&y};
                at->ndim = 0;
                const tensor_t *in[2] = {src, at};
                if (tn_run(&t, in, out, &e)) { diag("%s", e.msg); pass = 0; tensor_free(at); continue; }
                int a = axis < 0 ? axis + 3 : axis;
                int64_t c[3], cj[3];
                for (int64_t i = 0; i < tensor_numel(src); i++) {
                    unravel(i, 3, dims, c);
                    double s = 0;
                    for (int64_t j = 0; j < tensor_numel(src); j++) {
                        unravel(j, 3, dims, cj);
                        int same = 1;
                        for (int d = 0; d < 3; d++) same &= d == a || cj[d] == c[d];
                        int in_range = (mode >> 1) ? cj[a] > c[a] || (!(mode & 1) && cj[a] == c[a])
                                                   : cj[a] < c[a] || (!(mode & 1) && cj[a] == c[a]);
                        if (same && in_range) s += tensor_get_f64(src, j);
                    }
                    /* at most dims[a] terms of at most 2 (integers: exact) */
                    pass &= close_to(tensor_get_f64(&y, i), s, which ? 0 : sum_bound(dims[a], dims[a] * 2.0, U_DOUBLE));
                }
                tensor_free_data(&y);
                tensor_free(at);
            }
    ok(pass, "CumSum float64/int64, every axis, exclusive x reverse");
    tensor_free(x);
    tensor_free(xi);
}

/* Reducing the last axis with more than 1024 outputs runs its rows on the
 * pool (reduce_walk.c; float32 Sum, Mean, L1, L2 and SumSquare on a path
 * of their own, vectorised at AVX2): every kind, float32 [4, 400, L] over
 * axis -1 for runs of 12, 13 and 15 terms (none, one and three past a
 * multiple of four), at 1 and 3 threads, against the same rows reduced a
 * block of 400 at a time (the serial walk), bit for bit. The second input
 * mixes in negative values, magnitudes from 2^-40 to 2^40 (so a change in
 * the order of the additions changes sums), rows of -0 and NaN. */
static tensor_t *reduce_last(int kind, const tensor_t *x, int threads)
{
    tnode_t t;
    perr_t e;
    int64_t axes[1] = {-1};
    pool_set_threads(threads);
    tn_init(&t, red_ops[kind], 11, 1, 1);
    tn_ints(&t, "axes", 1, axes);
    tn_int(&t, "keepdims", 0);
    const tensor_t *in[1] = {x};
    tensor_t *y = calloc(1, sizeof *y), *out[1] = {y};
    int rc = tn_run(&t, in, out, &e);
    pool_set_threads(1);
    if (rc) {
        diag("%s: %s", red_ops[kind], e.msg);
        tensor_free(y);
        return NULL;
    }
    return y;
}

static int rows_pool_same(int kind, const tensor_t *x, int64_t L)
{
    const int64_t one[3] = {1, 400, L};
    tensor_t *y1 = reduce_last(kind, x, 1), *y3 = reduce_last(kind, x, 3);
    int same = y1 && y3 && !memcmp(y1->data, y3->data, tensor_nbytes(y1));
    for (int b = 0; same && b < 4; b++) {
        perr_t e = {0};
        tensor_t *xb = tensor_new(DT_FLOAT, 3, one, &e);
        memcpy(xb->data, (const float *)x->data + b * 400 * L, 400 * L * sizeof(float));
        tensor_t *yb = reduce_last(kind, xb, 1);
        same = yb && !memcmp(yb->data, (const float *)y1->data + b * 400, 400 * sizeof(float));
        tensor_free(xb);
        if (yb) tensor_free(yb);
    }
    if (y1) tensor_free(y1);
    if (y3) tensor_free(y3);
    return same;
}

static void test_reduce_rows_pool(void)
{
    static const int64_t lens[3] = {12, 13, 15};
    int bad = 0;
    for (int l = 0; l < 3; l++)
        for (int specials = 0; specials <= 1; specials++) {
            const int64_t L = lens[l], dims[3] = {4, 400, L};
            tensor_t *x = rand_tensor(DT_FLOAT, 3, dims, specials ? -1.5 : 0.5, 1.5, 0);
            float *xv = x->data;
            for (int64_t i = 0; specials && i < 1600 * L; i++)   /* magnitudes 2^-40..2^40: order shows in the sums */
                xv[i] = ldexpf(xv[i], (int)(i * 7919 % 81) - 40);
            for (int64_t r = 0; specials && r < 1600; r += 37) {
                for (int64_t q = 0; q < L; q++) xv[r * L + q] = -0.0f;                 /* a row of -0 */
                if (r + 5 < 1600) xv[(r + 5) * L + (r % L)] = NAN;                    /* a NaN somewhere */
            }
            for (int kind = 0; kind < K_N; kind++) {
                int same = rows_pool_same(kind, x, L);
                if (!same) diag("%s over the last axis (%lld terms%s): the pooled rows differ", red_ops[kind],
                                (long long)L, specials ? ", specials" : "");
                bad += !same;
            }
            tensor_free(x);
        }
    ok(bad == 0, "Reduce* over the last axis of [4, 400, 12|13|15], specials or not: pooled rows equal the serial "
       "walk, 1 and 3 threads");
}

int main(void)
{
    test_reductions();
    test_reduce_rows_pool();
    test_reduce_edges();
    test_softmax();
    test_softmax_rows();
    test_argmax_topk();
    test_cumsum();
    scratch_pool_free(&pool);
    return done_testing();
}
