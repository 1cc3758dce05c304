/* cases_softmax.c — the rest of the REDUCE family: Softmax, LogSoftmax and
 * Hardmax at opset 11 (coerced to 2-D at the axis) and 13 (one axis), every
 * axis, float32 and float64, the default axis, large inputs, long rows on
 * 3 threads with NaN and inf rows; ArgMax/ArgMin (ties, select_last_index,
 * NaN), TopK (ties by lower index, NaN ranks highest, every k) and CumSum
 * (exclusive, reverse) against loops written here. */
#include <stdlib.h>
#include <string.h>
#include "harness.h"

enum { S_SOFT, S_LOG, S_HARD };

static int sm_kind(const char *op) { return !strcmp(op, "Softmax") ? S_SOFT : !strcmp(op, "LogSoftmax") ? S_LOG : S_HARD; }

/* Row-major index of element c in dims with the masked axes zeroed: the
 * group it is normalised with (with dims the output's, its output element). */
static int64_t key_of(int nd, const int64_t *dims, const int64_t *c, const int *mask)
{
    int64_t k = 0;
    for (int d = 0; d < nd; d++) k = k * dims[d] + (mask[d] ? 0 : c[d]);
    return k;
}

/* The normalisation of each group (mask: the axes normalised over): max,
 * sum of exp(x - max), first index of the max, group by group. */
static void naive_softmax(int kind, const tensor_t *x, const int *mask, double *y)
{
    int nd = x->ndim;
    int64_t n = tensor_numel(x), c[TENSOR_MAX_DIMS];
    double *mx = malloc((size_t)n * sizeof *mx), *s = calloc((size_t)n, sizeof *s);
    int64_t *first = malloc((size_t)n * sizeof *first);
    for (int64_t i = 0; i < n; i++) mx[i] = -INFINITY, first[i] = -1;
    for (int pass = 0; pass < 3; pass++)
        for (int64_t i = 0; i < n; i++) {
            oc_unravel(i, nd, x->dims, c);
            int64_t k = key_of(nd, x->dims, c, mask);
            double v = tensor_get_f64(x, i);
            if (pass == 0 && v > mx[k]) mx[k] = v, first[k] = i;
            if (pass == 1) s[k] += exp(v - mx[k]);
            if (pass == 2) y[i] = kind == S_SOFT ? exp(v - mx[k]) / s[k] : kind == S_LOG ? v - mx[k] - log(s[k]) : i == first[k];
        }
    free(mx), free(s), free(first);
}

/* How far Softmax/LogSoftmax of a row of n values spanning range may be
 * from the exact result (bounds.h): x - max is off by u * range, which
 * exp turns into a relative error, plus exp's ulp (2u); the sum of the n
 * positive terms adds gamma(n) relatively; Softmax divides (one more
 * rounding), LogSoftmax subtracts log(sum) (slope 1/sum, its ulp, the sum at
 * most n) and rounds. Hardmax is exact. */
static double softmax_bound(int kind, int64_t n, double range, double want, double u)
{
    double term = u * range + 2 * u, sum = term + sum_bound((double)n, 1, u);
    if (kind == S_SOFT) return (term + sum + u) * fabs(want);
    if (kind == S_LOG) return u * range + sum + 2 * u * log((double)n) + u * fabs(want);
    return 0;
}

/* The worst error over its bound of y against semantics mask; fills the bounds. */
static double softmax_want(const oc_inst_t *t, const int *mask, double *y, double *bound)
{
    const tensor_t *x = t->in[0];
    int kind = sm_kind(t->c->op);
    int64_t n = tensor_numel(x), row = 1;
    for (int d = 0; d < x->ndim; d++) row *= mask[d] ? x->dims[d] : 1;
    double lo = INFINITY, hi = -INFINITY, u = x->dtype == DT_FLOAT ? U_FLOAT : U_DOUBLE;
    for (int64_t i = 0; i < n; i++) {
        double v = tensor_get_f64(x, i);
        if (isfinite(v)) lo = fmin(lo, v), hi = fmax(hi, v);
    }
    naive_softmax(kind, x, mask, y);
    for (int64_t i = 0; i < n; i++) bound[i] = softmax_bound(kind, row, hi - lo, y[i], u);
    return 0;
}

/* Opset 13 normalises along the axis (default -1); before, the input is
 * coerced to 2-D at the axis (default 1) and rows normalised whole. For a
 * coerced instance whose axis is not the last, the single-axis result must
 * differ far beyond any rounding (else the instance would not tell the two
 * semantics apart: -1). */
static int ref_softmax(const oc_inst_t *t, oc_want_t *w)
{
    const tensor_t *x = t->in[0];
    int nd = x->ndim, m13[TENSOR_MAX_DIMS], m11[TENSOR_MAX_DIMS], is13 = t->node.opset >= 13;
    int64_t a = oc_int(t, "axis", is13 ? -1 : 1), n = tensor_numel(x);
    if (a < 0) a += nd;
    for (int d = 0; d < nd; d++) m13[d] = d == a, m11[d] = d >= a;
    oc_want_shape(w, x->dtype, nd, x->dims, 0);
    softmax_want(t, is13 ? m13 : m11, w->val, w->bound);
    if (is13 || a == nd - 1) return 0;
    double *other = malloc((size_t)n * sizeof *other), *ob = malloc((size_t)n * sizeof *ob), far = 0;
    softmax_want(t, m13, other, ob);
    for (int64_t i = 0; i < n; i++) {
        double d = fabs(other[i] - w->val[i]);
        far = fmax(far, d == 0 ? 0 : w->bound[i] > 0 ? d / w->bound[i] : INFINITY);
    }
    free(other), free(ob);
    return far > 1000 ? 0 : -1;
}

/* Variant v: axis v % 8 - 4 (every axis of the rank-4 input, both
 * spellings), float32 for v < 8, float64 after. */
static void gen_axis_type(oc_inst_t *t, int v)
{
    oc_set_int(t, "axis", v % 8 - 4);
    oc_input(t, 0)->dt = v < 8 ? DT_FLOAT : DT_DOUBLE;
}

/* 203x259 float32 in [-8, 8): row 5 has a NaN, row 9 an inf (all NaN, as numpy gives them) */
static void gen_rows(oc_inst_t *t, int v)
{
    (void)v;
    tensor_t *x = oc_tensor(DT_FLOAT, 2, (int64_t[]){203, 259});
    float *xp = x->data;
    for (int64_t i = 0; i < 203 * 259; i++) xp[i] = (float)oc_uniform(-8, 8);
    xp[5 * 259 + 7] = NAN;
    xp[9 * 259 + 0] = INFINITY;
    t->in[0] = x;
}

/* ---- ArgMax, ArgMin, TopK ---- */

/* 4x7x5 small integers (many ties) as float32, a NaN at 9 */
static tensor_t *tie_tensor(void)
{
    tensor_t *x = oc_tensor(DT_FLOAT, 3, (int64_t[]){4, 7, 5});
    for (int64_t i = 0; i < 140; i++) ((float *)x->data)[i] = (float)oc_range(0, 3);
    ((float *)x->data)[9] = NAN;
    return x;
}

static void gen_argmax(oc_inst_t *t, int v)
{
    t->in[0] = tie_tensor();
    oc_set_int(t, "axis", v % 3);
    oc_set_int(t, "select_last_index", v / 3);
}

/* scan each group in index order; NaN wins (numpy); ties: the first, or
 * with select_last_index the last */
static int ref_argmax(const oc_inst_t *t, oc_want_t *w)
{
    const tensor_t *x = t->in[0];
    int axis = (int)oc_int(t, "axis", 0), last = (int)oc_int(t, "select_last_index", 0), is_min = !strcmp(t->c->op, "ArgMin");
    int mask[3] = {0};
    int64_t od[3], c[3];
    mask[axis] = 1;
    for (int d = 0; d < 3; d++) od[d] = mask[d] ? 1 : x->dims[d];
    oc_want_shape(w, DT_INT64, 3, od, 0);
    for (int64_t k = 0; k < oc_numel(3, od); k++) {
        int64_t best = -1, pos = 0, bpos = -1;
        double bv = 0;
        for (int64_t i = 0; i < tensor_numel(x); i++) {
            oc_unravel(i, 3, x->dims, c);
            if (key_of(3, od, c, mask) != k) continue;   /* (od: the masked axis is 1) */
            double v = tensor_get_f64(x, i);
            int take = best < 0 || (isnan(v) && (!isnan(bv) || last)) ||
                       (!isnan(bv) && !isnan(v) && (is_min ? v < bv : v > bv)) || (!isnan(bv) && last && v == bv);
            if (take) best = i, bv = v, bpos = pos;
            pos++;
        }
        w->val[k] = (double)bpos;
    }
    return 0;
}

/* Variant v: largest v / 10, then (axis, k) over k = 0, 2, ... dims[axis]
 * for each axis of 4x7x5 (3 + 4 + 3 pairs); opset 1 takes k as attribute. */
static void gen_topk(oc_inst_t *t, int v)
{
    static const int pairs[10][2] = {{0, 0}, {0, 2}, {0, 4}, {1, 0}, {1, 2}, {1, 4}, {1, 6}, {2, 0}, {2, 2}, {2, 4}};
    const int *p = pairs[v % 10];
    t->in[0] = tie_tensor();
    oc_set_int(t, "axis", p[0] - 3);
    if (t->c->opset >= 10) {
        oc_set_int(t, "largest", v / 10);
        *oc_input(t, 1) = (oc_input_t){.dt = DT_INT64, .nd = 1, .dims = {1}, .gen = GEN_INT64S, .nv = 1, .iv = {p[1]}};
    } else {
        oc_set_int(t, "k", p[1] ? p[1] : 1);
    }
}

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

/* selection by repeated scans of each line */
static int ref_topk(const oc_inst_t *t, oc_want_t *w)
{
    const tensor_t *x = t->in[0];
    int axis = (int)oc_int(t, "axis", -1) + 3, largest = (int)oc_int(t, "largest", 1);
    int64_t k = t->n_in > 1 ? tensor_get_i64(t->in[1], 0) : oc_int(t, "k", 1), od[3];
    int64_t n = x->dims[axis], inner = 1, outer = 1;
    for (int d = 0; d < 3; d++) od[d] = d == axis ? k : x->dims[d];
    for (int d = axis + 1; d < 3; d++) inner *= x->dims[d];
    for (int d = 0; d < axis; d++) outer *= x->dims[d];
    oc_want_shape(&w[0], x->dtype, 3, od, 0);
    oc_want_shape(&w[1], DT_INT64, 3, od, 0);
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
                w[0].val[at] = tensor_get_f64(x, (o * n + b) * inner + i);
                w[1].val[at] = (double)b;
            }
        }
    return 0;
}

/* ---- CumSum ---- */

/* Variant v: axis v % 6 - 3, exclusive v / 6 % 2, reverse v / 12 */
static void gen_cumsum(oc_inst_t *t, int v)
{
    *oc_input(t, 1) = (oc_input_t){.dt = DT_INT64, .nd = 0, .gen = GEN_INT64S, .nv = 1, .iv = {v % 6 - 3}};
    oc_set_int(t, "exclusive", v / 6 % 2);
    oc_set_int(t, "reverse", v / 12);
}

/* Each output the sum of the elements of its line before it (exclusive),
 * up to it, or after it (reverse): at most dims[a] terms (integers: exact). */
static int ref_cumsum(const oc_inst_t *t, oc_want_t *w)
{
    const tensor_t *x = t->in[0];
    int nd = x->ndim, a = (int)tensor_get_i64(t->in[1], 0), excl = (int)oc_int(t, "exclusive", 0);
    int rev = (int)oc_int(t, "reverse", 0);
    if (a < 0) a += nd;
    int64_t c[TENSOR_MAX_DIMS], cj[TENSOR_MAX_DIMS], n = tensor_numel(x);
    oc_want_shape(w, x->dtype, nd, x->dims, 0);
    double u = x->dtype == DT_DOUBLE ? U_DOUBLE : U_FLOAT, xmax = max_abs(x);
    for (int64_t i = 0; i < n; i++) {
        oc_unravel(i, nd, x->dims, c);
        double s = 0;
        for (int64_t j = 0; j < n; j++) {
            oc_unravel(j, nd, x->dims, cj);
            int same = 1;
            for (int d = 0; d < nd; d++) same &= d == a || cj[d] == c[d];
            int in_range = rev ? cj[a] > c[a] || (!excl && cj[a] == c[a]) : cj[a] < c[a] || (!excl && cj[a] == c[a]);
            if (same && in_range) s += tensor_get_f64(x, j);
        }
        w->val[i] = s;
        w->bound[i] = dtype_is_float(x->dtype) ? sum_bound((double)x->dims[a], (double)x->dims[a] * xmax, u) : 0;
    }
    return 0;
}

#define X2345 IN_U(DT_FLOAT, -3, 3, DIMS(2, 3, 4, 5))
#define SM(op_) \
    {.op = op_, .opset = 11, .what = "coerced to 2-D at the axis, every axis, float32/64 (unlike one axis)", .n_in = 1, \
     .in = {X2345}, .gen = gen_axis_type, .variants = 16, .ref = ref_softmax}, \
    {.op = op_, .opset = 13, .what = "along one axis, every axis, float32/64", .n_in = 1, .in = {X2345}, \
     .gen = gen_axis_type, .variants = 16, .ref = ref_softmax}, \
    {.op = op_, .opset = 11, .what = "default axis 1 (2-D)", .n_in = 1, .in = {X2345}, .ref = ref_softmax}, \
    {.op = op_, .opset = 13, .what = "default axis -1", .n_in = 1, .in = {X2345}, .ref = ref_softmax}

const op_case_t cases_softmax[] = {
    SM("Softmax"), SM("LogSoftmax"), SM("Hardmax"),
    {.op = "Softmax", .opset = 13, .what = "stable at x ~ 1000", .n_in = 1,
     .in = {IN_U(DT_FLOAT, 1000, 1010, DIMS(2, 3))}, .ref = ref_softmax},
    {.op = "LogSoftmax", .opset = 13, .what = "stable at x ~ 1000", .n_in = 1,
     .in = {IN_U(DT_FLOAT, 1000, 1010, DIMS(2, 3))}, .ref = ref_softmax},
    {.op = "Softmax", .opset = 13, .what = "float32 203x259 on 1 and 3 threads, NaN/inf rows NaN", .n_in = 1,
     .threads = 3, .in = {IN_GEN}, .gen = gen_rows, .ref = ref_softmax},
    {.op = "LogSoftmax", .opset = 13, .what = "float32 203x259 on 1 and 3 threads, NaN/inf rows NaN", .n_in = 1,
     .threads = 3, .in = {IN_GEN}, .gen = gen_rows, .ref = ref_softmax},
    {.op = "ArgMax", .opset = 13, .what = "every axis, select_last_index 0/1, ties and a NaN", .n_in = 1, .in = {IN_GEN},
     .gen = gen_argmax, .variants = 6, .ref = ref_argmax},
    {.op = "ArgMin", .opset = 13, .what = "every axis, select_last_index 0/1, ties and a NaN", .n_in = 1, .in = {IN_GEN},
     .gen = gen_argmax, .variants = 6, .ref = ref_argmax},
    {.op = "TopK", .opset = 11, .what = "largest/smallest, every axis and k: ties by lower index, NaN highest", .n_in = 2,
     .n_out = 2, .in = {IN_GEN, IN_GEN}, .gen = gen_topk, .variants = 20, .ref = ref_topk},
    {.op = "TopK", .opset = 1, .what = "k as attribute, every axis", .n_in = 1, .n_out = 2, .in = {IN_GEN}, .gen = gen_topk,
     .variants = 10, .ref = ref_topk},
    {.op = "CumSum", .opset = 14, .what = "float64, every axis, exclusive x reverse", .n_in = 2,
     .in = {IN_U(DT_DOUBLE, -2, 2, DIMS(3, 4, 5)), IN_GEN}, .gen = gen_cumsum, .variants = 24, .ref = ref_cumsum},
    {.op = "CumSum", .opset = 14, .what = "float32, every axis, exclusive x reverse", .n_in = 2,
     .in = {IN_U(DT_FLOAT, -2, 2, DIMS(3, 4, 5)), IN_GEN}, .gen = gen_cumsum, .variants = 24, .ref = ref_cumsum},
    {.op = "CumSum", .opset = 14, .what = "int64, every axis, exclusive x reverse", .n_in = 2,
     .in = {IN_I(DT_INT64, -50, 49, DIMS(3, 4, 5)), IN_GEN}, .gen = gen_cumsum, .variants = 24, .ref = ref_cumsum},
};
const int cases_softmax_n = sizeof cases_softmax / sizeof cases_softmax[0];
