/* ops_elementwise.c — checks the ELEMENTWISE family against oracles written
 * here independently of the kernels: the broadcasting walk (bcast.h) against
 * offsets computed by unravelling every output index; kernels (run through
 * node_run, the executor's one path) against explicit coordinate loops with
 * libm in double or exact 64-bit integer arithmetic; Cast against GCC's own
 * _Float16 conversions (half_ref.h) and integer-arithmetic rounding to bfloat16. Also the
 * defined results of integer edge cases (division by zero, INT_MIN / -1,
 * shifts past the width) and that bad nodes fail cleanly. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "half_ref.h"
#include "ops/run.h"
#include "ops/bcast.h"
#include "tensor/half.h"
#include "util/pool.h"

/* ---- nodes from a spec: "Op@opset" plus attributes "name=i:3", "name=f:0.5", "name=s:LEFT" ---- */

typedef struct tnode {
    node_t n;
    char op[32];
    Onnx__AttributeProto at[6], *ap[6];
    char names[6][32], strs[6][32];
} tnode_t;

static void tnode(tnode_t *t, const char *spec, int n_in, const char *attrs)
{
    memset(t, 0, sizeof *t);
    const char *at = strchr(spec, '@');
    snprintf(t->op, sizeof t->op, "%.*s", (int)(at - spec), spec);
    t->n.name = "t";
    t->n.op_type = t->op;
    t->n.domain = "";
    t->n.opset = atoi(at + 1);
    t->n.n_in = n_in;
    t->n.n_out = 1;
    t->n.attr = t->ap;
    for (const char *p = attrs; p && *p;) {
        int k = t->n.n_attr++;
        Onnx__AttributeProto *a = &t->at[k];
        onnx__attribute_proto__init(a);
        const char *eq = strchr(p, '='), *end = strchr(p, ',');
        if (!end) end = p + strlen(p);
        snprintf(t->names[k], 32, "%.*s", (int)(eq - p), p);
        a->name = t->names[k];
        char kind = eq[1];
        const char *v = eq + 3;
        if (kind == 'i') { a->has_i = 1; a->i = strtoll(v, NULL, 10); }
        if (kind == 'f') { a->has_f = 1; a->f = strtof(v, NULL); }
        if (kind == 's') {
            snprintf(t->strs[k], 32, "%.*s", (int)(end - v), v);
            a->has_s = 1;
            a->s.data = (uint8_t *)t->strs[k];
            a->s.len = strlen(t->strs[k]);
        }
        t->ap[k] = a;
        p = *end ? end + 1 : end;
    }
    t->n.op = op_lookup("", t->op, t->n.opset, NULL);
}

static scratch_pool_t pool;

/* Runs spec on inputs; returns the output (caller frees) or NULL with *e set. */
static tensor_t *run(const char *spec, const char *attrs, int n_in, const tensor_t *const *in, perr_t *e)
{
    tnode_t t;
    tnode(&t, spec, n_in, attrs);
    memset(e, 0, sizeof *e);
    if (!t.n.op) {
        BAD(e, "no row for %s", spec);
        return NULL;
    }
    tensor_t *out = calloc(1, sizeof *out);
    tensor_t *outs[1] = {out};
    if (node_run(&t.n, in, outs, 1, &pool, NULL, e)) {
        tensor_free(out);
        return NULL;
    }
    return out;
}

/* ---- data ---- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next64(void)
{
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return rng;
}
static double urand(double lo, double hi) { return lo + (hi - lo) * (double)(next64() >> 11) / 9007199254740992.0; }

static tensor_t *mk(dtype_t dt, int ndim, const int64_t *dims)
{
    perr_t e = {0};
    return tensor_new(dt, ndim, dims, &e);
}

static tensor_t *mk_float(int ndim, const int64_t *dims, double lo, double hi)
{
    tensor_t *t = mk(DT_FLOAT, ndim, dims);
    for (int64_t i = 0; i < tensor_numel(t); i++) ((float *)t->data)[i] = (float)urand(lo, hi);
    return t;
}

/* Offset into a tensor of shape (nd, d) of output coordinate idx (rank r),
 * by numpy's rule: align right, size-1 axes read index 0. */
static int64_t bcast_offset(int nd, const int64_t *d, int r, const int64_t *idx)
{
    int64_t off = 0;
    for (int k = 0; k < nd; k++) {
        int64_t i = d[k] == 1 ? 0 : idx[r - nd + k];
        off = off * d[k] + i;
    }
    return off;
}

static void unravel(int64_t lin, int r, const int64_t *dims, int64_t *idx)
{
    for (int k = r - 1; k >= 0; k--) {
        idx[k] = dims[k] ? lin % dims[k] : 0;
        lin = dims[k] ? lin / dims[k] : 0;
    }
}

/* ---- 1. the broadcasting walk ---- */

static void test_plan_shapes(void)
{
    bcast_t b;
    const int64_t a4[4] = {2, 3, 4, 5}, c4[4] = {1, 3, 1, 1};
    const int64_t *dd[2] = {a4, c4};
    int nd[2] = {4, 4};
    ok(bcast_plan(&b, 2, nd, dd, 4, a4) == 0 && b.rank == 3 && b.dims[0] == 2 && b.dims[1] == 3 &&
       b.dims[2] == 20 && b.inner == 20 && b.rows == 6 && b.is[0] == 1 && b.is[1] == 0,
       "NCHW + 1C11 collapses to 2x3x20 rows of 20, channel operand stride 0");
    dd[1] = a4;
    ok(bcast_plan(&b, 2, nd, dd, 4, a4) == 0 && b.rank == 1 && b.inner == 120 && b.rows == 1,
       "same shapes collapse to one row");
    nd[1] = 0;
    ok(bcast_plan(&b, 2, nd, dd, 4, a4) == 0 && b.rank == 1 && b.inner == 120 && b.is[1] == 0,
       "scalar operand: one row, stride 0");
    const int64_t row[1] = {5};
    dd[1] = row;
    nd[1] = 1;
    ok(bcast_plan(&b, 2, nd, dd, 4, a4) == 0 && b.rank == 2 && b.inner == 5 && b.rows == 24 && b.is[1] == 1,
       "row broadcast: 24 rows of 5");
    const int64_t bad[1] = {4};
    dd[1] = bad;
    ok(bcast_plan(&b, 2, nd, dd, 4, a4) == -1, "non-broadcastable shape refused");
    const int64_t e3[3] = {2, 0, 3};
    const int64_t *de[1] = {e3};
    int ne[1] = {3};
    ok(bcast_plan(&b, 1, ne, de, 3, e3) == 0 && b.rows == 0, "empty output: no rows");
}

/* Random shapes: every row's offsets against unravelled indices. */
static void test_plan_random(void)
{
    int bad = 0, cases = 0;
    for (int it = 0; it < 400; it++) {
        int r = (int)(next64() % 6);
        int64_t od[8];
        for (int k = 0; k < r; k++) od[k] = 1 + (int64_t)(next64() % 4);
        int n = 2 + (int)(next64() % 2);
        int64_t id[3][8];
        int nd[3];
        const int64_t *dd[3];
        for (int i = 0; i < n; i++) {
            nd[i] = r - (int)(next64() % (r + 1));
            for (int k = 0; k < nd[i]; k++) id[i][k] = next64() % 3 == 0 ? 1 : od[r - nd[i] + k];
            dd[i] = id[i];
        }
        bcast_t b;
        if (bcast_plan(&b, n, nd, dd, r, od)) { bad++; continue; }
        cases++;
        int64_t idx[8], total = 0;
        BCAST_FOR_ROWS(&b, itr) {
            for (int64_t j = 0; j < b.inner; j++) {
                int64_t lin = itr.row * b.inner + j;
                unravel(lin, r, od, idx);
                for (int i = 0; i < n; i++)
                    if (itr.off[i] + j * b.is[i] != bcast_offset(nd[i], id[i], r, idx)) bad++;
                total++;
            }
        }
        int64_t want = 1;
        for (int k = 0; k < r; k++) want *= od[k];
        if (total != want) bad++;
    }
    ok(bad == 0 && cases == 400, "400 random broadcasts: every offset matches the unravelled index (%d bad)", bad);
}

/* ---- 2. float kernels against loops ---- */

typedef double (*f2)(double, double);
static double f_add(double a, double b) { return (float)a + (float)b; }
static double f_sub(double a, double b) { return (float)a - (float)b; }
static double f_mul(double a, double b) { return (float)a * (float)b; }
static double f_div(double a, double b) { return (float)a / (float)b; }

static void test_binary_float(void)
{
    const struct { const char *op; f2 f; } ops[] = {
        {"Add@14", f_add}, {"Sub@14", f_sub}, {"Mul@14", f_mul}, {"Div@14", f_div}};
    const int64_t ad[3] = {2, 3, 4};
    const int64_t shapes[4][3] = {{3, 1}, {4}, {0}, {2, 1, 4}};
    const int ranks[4] = {2, 1, 0, 3};
    for (int s = 0; s < 4; s++) {
        tensor_t *a = mk_float(3, ad, -3, 3), *b = mk_float(ranks[s], shapes[s], 0.5, 2);
        const tensor_t *in[2] = {a, b};
        for (int o = 0; o < 4; o++) {
            perr_t e;
            tensor_t *y = run(ops[o].op, NULL, 2, in, &e);
            int bad = !y || y->ndim != 3;
            for (int64_t i = 0; !bad && i < 24; i++) {
                int64_t idx[3];
                unravel(i, 3, ad, idx);
                float want = (float)ops[o].f(((float *)a->data)[i],
                                             ((float *)b->data)[bcast_offset(ranks[s], shapes[s], 3, idx)]);
                if (((float *)y->data)[i] != want) bad = 1;
            }
            ok(!bad, "%s 2x3x4 with operand of rank %d equals the loop", ops[o].op, ranks[s]);
            tensor_free(y);
        }
        tensor_free(a);
        tensor_free(b);
    }
}

/* Each unary float op against libm in double, within a few float32 ulps of
 * the operand's scale. */
static double r_sigmoid(double x) { return 1 / (1 + exp(-x)); }
static double r_softplus(double x) { return log(1 + exp(x)); }
static double r_gelu(double x) { return 0.5 * x * (1 + erf(x / sqrt(2.0))); }
static double r_gelu_tanh(double x) { return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }
static double r_mish(double x) { return x * tanh(log(1 + exp(x))); }
static double r_hardswish(double x) { return x * fmax(0, fmin(1, x / 6 + 0.5)); }
static double r_selu(double x) { return x > 0 ? 1.0507009873554805 * x : 1.0507009873554805 * 1.6732632423543772 * (exp(x) - 1); }
static double r_round(double x)
{
    double f = floor(x), d = x - f;
    if (d > 0.5 || (d == 0.5 && fmod(f, 2) != 0)) return f + 1;
    return f;
}

static void test_unary_float(void)
{
    const struct { const char *op; double (*f)(double); double lo, hi; const char *attrs; } ops[] = {
        {"Exp@13", exp, -10, 10, NULL}, {"Log@13", log, 0.01, 100, NULL}, {"Sqrt@13", sqrt, 0, 100, NULL},
        {"Tanh@13", tanh, -5, 5, NULL}, {"Erf@13", erf, -3, 3, NULL}, {"Sin@7", sin, -6, 6, NULL},
        {"Atanh@9", atanh, -0.99, 0.99, NULL}, {"Sigmoid@13", r_sigmoid, -20, 20, NULL},
        {"Softplus@1", r_softplus, -20, 20, NULL}, {"Gelu@20", r_gelu, -5, 5, NULL},
        {"Gelu@20", r_gelu_tanh, -5, 5, "approximate=s:tanh"}, {"Mish@18", r_mish, -5, 5, NULL},
        {"HardSwish@14", r_hardswish, -5, 5, NULL}, {"Selu@6", r_selu, -4, 4, NULL}, {"Round@11", r_round, -5, 5, NULL},
        {"Floor@13", floor, -5, 5, NULL}, {"Reciprocal@13", NULL, 0.1, 10, NULL},
    };
    const int64_t d[1] = {257};
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
        tensor_t *x = mk_float(1, d, ops[o].lo, ops[o].hi);
        float *xv = x->data;
        if (ops[o].f == r_round) { xv[0] = 2.5f; xv[1] = -2.5f; xv[2] = 3.5f; xv[3] = 0.5f; }
        const tensor_t *in[1] = {x};
        perr_t e;
        tensor_t *y = run(ops[o].op, ops[o].attrs, 1, in, &e);
        double worst = 0;
        for (int64_t i = 0; y && i < d[0]; i++) {
            double want = ops[o].f ? ops[o].f(xv[i]) : 1.0 / xv[i];
            double got = ((float *)y->data)[i];
            /* relative to max(|want|, |x|, 1): formulas like 1 + erf(x) or
             * exp(x) - 1 cancel in float32 by design (as in the reference) */
            double err = fabs(got - want) / fmax(fmax(fabs(want), fabs(xv[i])), 1.0);
            if (err > worst) worst = err;
        }
        ok(y && worst < 4e-7, "%s %s: 257 values within %.1e (scaled) of libm in double", ops[o].op,
           ops[o].attrs ? ops[o].attrs : "", worst);
        tensor_free(y);
        tensor_free(x);
    }
}

/* ---- 3. integer kernels: defined edge cases, exact oracles in int64 ---- */

static int32_t wrap32(int64_t v) { return (int32_t)(uint32_t)(uint64_t)v; }

static void test_int_div_mod(void)
{
    const int32_t xs[] = {7, -7, 7, -7, INT32_MIN, INT32_MIN, 5, 0, 13, -13, INT32_MAX};
    const int32_t ys[] = {2, 2, -2, -2, -1, 0, 0, 3, 5, 5, -1};
    const int64_t d[1] = {11};
    tensor_t *a = mk(DT_INT32, 1, d), *b = mk(DT_INT32, 1, d);
    memcpy(a->data, xs, sizeof xs);
    memcpy(b->data, ys, sizeof ys);
    const tensor_t *in[2] = {a, b};
    perr_t e;
    tensor_t *q = run("Div@14", NULL, 2, in, &e), *m = run("Mod@13", NULL, 2, in, &e);
    tensor_t *f = run("Mod@13", "fmod=i:1", 2, in, &e);
    int bad = !q || !m || !f;
    for (int i = 0; !bad && i < 11; i++) {
        int64_t x = xs[i], y = ys[i];
        /* oracles in int64: truncating quotient, floor-based Python remainder */
        int32_t wq = y ? wrap32(x / y) : 0;
        int64_t fl = y ? (x / y - ((x % y != 0) && ((x < 0) != (y < 0)))) : 0;
        int32_t wm = y ? wrap32(x - y * fl) : 0;
        int32_t wf = y ? wrap32(x % y) : 0;
        if (((int32_t *)q->data)[i] != wq || ((int32_t *)m->data)[i] != wm || ((int32_t *)f->data)[i] != wf) {
            diag("x=%d y=%d: div %d/%d mod %d/%d fmod %d/%d", xs[i], ys[i], ((int32_t *)q->data)[i], wq,
                 ((int32_t *)m->data)[i], wm, ((int32_t *)f->data)[i], wf);
            bad = 1;
        }
    }
    ok(!bad, "int32 Div/Mod/fmod: truncation, Python sign rule, /0 -> 0, INT_MIN/-1 wraps");
    tensor_free(q); tensor_free(m); tensor_free(f); tensor_free(a); tensor_free(b);
}

static void test_int_wrap(void)
{
    const int64_t d[1] = {64};
    tensor_t *a = mk(DT_INT8, 1, d), *b = mk(DT_INT8, 1, d);
    for (int i = 0; i < 64; i++) {
        ((int8_t *)a->data)[i] = (int8_t)(next64() & 0xff);
        ((int8_t *)b->data)[i] = (int8_t)(next64() & 0xff);
    }
    ((int8_t *)a->data)[0] = INT8_MIN;
    const tensor_t *in[2] = {a, b};
    perr_t e;
    tensor_t *s = run("Add@14", NULL, 2, in, &e), *p = run("Mul@14", NULL, 2, in, &e);
    tensor_t *ab = run("Abs@13", NULL, 1, in, &e), *ng = run("Neg@13", NULL, 1, in, &e);
    int bad = !s || !p || !ab || !ng;
    for (int i = 0; !bad && i < 64; i++) {
        int x = ((int8_t *)a->data)[i], y = ((int8_t *)b->data)[i];
        /* wrap into [-128, 127] by explicit modular arithmetic on ints */
        int ws = ((x + y + 128) % 256 + 256) % 256 - 128;
        int wp = ((x * y + 128) % 256 + 256) % 256 - 128;
        int wa = (abs(x) + 128) % 256 - 128;
        int wn = (-x + 384) % 256 - 128;
        if (((int8_t *)s->data)[i] != ws || ((int8_t *)p->data)[i] != wp ||
            ((int8_t *)ab->data)[i] != wa || ((int8_t *)ng->data)[i] != wn) bad = 1;
    }
    ok(!bad, "int8 Add/Mul/Abs/Neg wrap modulo 256 (|-128| = -128)");
    tensor_free(s); tensor_free(p); tensor_free(ab); tensor_free(ng); tensor_free(a); tensor_free(b);
}

static void test_pow(void)
{
    const int64_t d[1] = {40};
    tensor_t *xf = mk_float(1, d, 0.1, 3), *ei = mk(DT_INT64, 1, d), *xi = mk(DT_INT32, 1, d), *ej = mk(DT_INT32, 1, d);
    for (int i = 0; i < 40; i++) {
        ((int64_t *)ei->data)[i] = (int64_t)(next64() % 9) - 4;
        ((int32_t *)xi->data)[i] = (int32_t)(next64() % 21) - 10;
        ((int32_t *)ej->data)[i] = (int32_t)(next64() % 25) - 3;
    }
    perr_t e;
    const tensor_t *in1[2] = {xf, ei}, *in2[2] = {xi, ej};
    tensor_t *y1 = run("Pow@15", NULL, 2, in1, &e), *y2 = run("Pow@15", NULL, 2, in2, &e);
    int bad1 = !y1, bad2 = !y2;
    for (int i = 0; !bad1 && i < 40; i++) {
        double want = pow(((float *)xf->data)[i], (double)((int64_t *)ei->data)[i]);
        if (fabs(((float *)y1->data)[i] - want) > 2e-7 * fabs(want)) bad1 = 1;
    }
    for (int i = 0; !bad2 && i < 40; i++) {
        int64_t x = ((int32_t *)xi->data)[i], n = ((int32_t *)ej->data)[i];
        uint32_t want;
        if (n < 0) want = x == 1 ? 1u : x == -1 ? ((n & 1) ? UINT32_MAX : 1u) : 0u;
        else { uint64_t r = 1; for (int k = 0; k < n; k++) r = (uint32_t)(r * (uint64_t)x); want = (uint32_t)r; }
        if ((uint32_t)((int32_t *)y2->data)[i] != want) bad2 = 1;
    }
    ok(!bad1, "Pow float base, int64 exponent (incl. negative) vs pow in double");
    ok(!bad2, "Pow int32^int32 exact, wrapping; negative exponents truncate (1, +-1, 0)");
    tensor_free(y1); tensor_free(y2); tensor_free(xf); tensor_free(ei); tensor_free(xi); tensor_free(ej);

    /* a scalar exponent 2 (float or int64): the correctly rounded square,
     * the exact square in double rounded once; specials as pow has them */
    enum { NS = 4096 };
    const int64_t ds[1] = {NS}, one[1] = {1};
    tensor_t *xs = mk_float(1, ds, -3e-3, 3e-3), *two_f = mk(DT_FLOAT, 1, one), *two_i = mk(DT_INT64, 1, one);
    float *xv = xs->data;
    const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-30f, -1e30f, 0x1.fffffep127f};
    for (int i = 0; i < 8; i++) xv[i] = specials[i];
    uint32_t powf_miss = 0xba6291a8u;   /* an input where glibc's powf is one ulp off */
    memcpy(&xv[8], &powf_miss, 4);
    *(float *)two_f->data = 2.0f;
    *(int64_t *)two_i->data = 2;
    int bad = 0;
    for (int k = 0; k < 2; k++) {
        const tensor_t *in[2] = {xs, k ? two_i : two_f};
        tensor_t *y = run("Pow@15", NULL, 2, in, &e);
        for (int i = 0; y && i < NS; i++) {
            float want = (float)((double)xv[i] * (double)xv[i]), got = ((float *)y->data)[i];
            bad += isnan(xv[i]) ? !isnan(got) : memcmp(&want, &got, 4) != 0;
        }
        bad += !y;
        tensor_free(y);
    }
    ok(bad == 0, "Pow x^2 (float and int64 exponent 2): the correctly rounded square, specials included (%d differ)", bad);
    tensor_free(xs); tensor_free(two_f); tensor_free(two_i);
}

static void test_bitshift_clip(void)
{
    const int64_t d[1] = {5};
    tensor_t *a = mk(DT_UINT8, 1, d), *b = mk(DT_UINT8, 1, d);
    const uint8_t av[5] = {0x81, 0xff, 1, 16, 3}, bv[5] = {1, 8, 7, 200, 0};
    memcpy(a->data, av, 5);
    memcpy(b->data, bv, 5);
    const tensor_t *in[2] = {a, b};
    perr_t e;
    tensor_t *l = run("BitShift@11", "direction=s:LEFT", 2, in, &e);
    tensor_t *r = run("BitShift@11", "direction=s:RIGHT", 2, in, &e);
    const uint8_t wl[5] = {0x02, 0, 0x80, 0, 3}, wr[5] = {0x40, 0, 0, 0, 3};
    ok(l && r && !memcmp(l->data, wl, 5) && !memcmp(r->data, wr, 5), "BitShift uint8: shifts of >= 8 give 0");
    tensor_t *x = run("BitShift@11", "direction=s:UP", 2, in, &e);
    ok(!x && strstr(e.msg, "direction"), "BitShift with a bad direction fails: %s", e.msg);
    tensor_free(l); tensor_free(r);

    /* Clip int8 with min > max: every value becomes max */
    tensor_t *x8 = mk(DT_INT8, 1, d), *lo = mk(DT_INT8, 0, NULL), *hi = mk(DT_INT8, 0, NULL);
    const int8_t xv[5] = {-128, -3, 0, 5, 127};
    memcpy(x8->data, xv, 5);
    *(int8_t *)lo->data = 4;
    *(int8_t *)hi->data = 2;
    const tensor_t *cin[3] = {x8, lo, hi}, *cin2[3] = {x8, NULL, lo};
    tensor_t *c1 = run("Clip@13", NULL, 3, cin, &e), *c2 = run("Clip@13", NULL, 3, cin2, &e);
    const int8_t w1[5] = {2, 2, 2, 2, 2}, w2[5] = {-128, -3, 0, 4, 4};
    ok(c1 && !memcmp(c1->data, w1, 5), "Clip int8 with min 4 > max 2 gives max everywhere");
    ok(c2 && !memcmp(c2->data, w2, 5), "Clip int8 with min omitted clips only from above");
    tensor_free(c1); tensor_free(c2); tensor_free(x8); tensor_free(lo); tensor_free(hi);
    tensor_free(a); tensor_free(b);

    /* Clip-6 attributes; NaN passes */
    tensor_t *xf = mk(DT_FLOAT, 1, d);
    const float fv[5] = {-2, -0.5f, NAN, 0.25f, 9};
    memcpy(xf->data, fv, sizeof fv);
    const tensor_t *fin[1] = {xf};
    tensor_t *c3 = run("Clip@6", "min=f:-1,max=f:0.5", 1, fin, &e);
    const float *y = c3 ? c3->data : NULL;
    ok(y && y[0] == -1 && y[1] == -0.5f && isnan(y[2]) && y[3] == 0.25f && y[4] == 0.5f,
       "Clip-6 min/max attributes, NaN stays NaN");
    tensor_free(c3); tensor_free(xf);
}

/* ---- 4. variadic, Where, comparisons, legacy broadcast ---- */

static void test_variadic_where(void)
{
    const int64_t ad[2] = {3, 4}, bd[1] = {4}, cd[2] = {3, 1};
    tensor_t *a = mk_float(2, ad, -1, 1), *b = mk_float(1, bd, -1, 1), *c = mk_float(2, cd, -1, 1);
    ((float *)b->data)[2] = NAN;
    const tensor_t *in[3] = {a, b, c};
    perr_t e;
    tensor_t *s = run("Sum@13", NULL, 3, in, &e), *m = run("Mean@13", NULL, 3, in, &e);
    tensor_t *mx = run("Max@13", NULL, 3, in, &e), *mn = run("Min@13", NULL, 3, in, &e);
    int bad = !s || !m || !mx || !mn;
    for (int i = 0; !bad && i < 3; i++)
        for (int j = 0; j < 4; j++) {
            float x = ((float *)a->data)[i * 4 + j], y = ((float *)b->data)[j], z = ((float *)c->data)[i];
            float ws = (x + y) + z, wm = ((x + y) + z) / 3;
            float got_s = ((float *)s->data)[i * 4 + j], got_m = ((float *)m->data)[i * 4 + j];
            float got_x = ((float *)mx->data)[i * 4 + j], got_n = ((float *)mn->data)[i * 4 + j];
            if (j == 2) {
                if (!isnan(got_s) || !isnan(got_x) || !isnan(got_n)) bad = 1;
                continue;
            }
            if (got_s != ws || got_m != wm || got_x != fmaxf(fmaxf(x, y), z) || got_n != fminf(fminf(x, y), z)) bad = 1;
        }
    ok(!bad, "Sum/Mean/Max/Min of 3x4, 4, 3x1 equal the loops; Max/Min propagate NaN");
    tensor_free(s); tensor_free(m); tensor_free(mx); tensor_free(mn);

    /* Where: condition 3x1, x 4, y 3x4 (int64) */
    tensor_t *cond = mk(DT_BOOL, 2, cd), *xi = mk(DT_INT64, 1, bd), *yi = mk(DT_INT64, 2, ad);
    for (int i = 0; i < 3; i++) ((uint8_t *)cond->data)[i] = i != 1;
    for (int j = 0; j < 4; j++) ((int64_t *)xi->data)[j] = 100 + j;
    for (int k = 0; k < 12; k++) ((int64_t *)yi->data)[k] = -k;
    const tensor_t *win[3] = {cond, xi, yi};
    tensor_t *w = run("Where@16", NULL, 3, win, &e);
    bad = !w || w->ndim != 2;
    for (int i = 0; !bad && i < 3; i++)
        for (int j = 0; j < 4; j++)
            if (((int64_t *)w->data)[i * 4 + j] != (i != 1 ? 100 + j : -(i * 4 + j))) bad = 1;
    ok(!bad, "Where with 3-way broadcasting (3x1, 4, 3x4) equals the loop");
    tensor_free(w); tensor_free(cond); tensor_free(xi); tensor_free(yi);

    /* comparisons: Greater 3x4 vs 4, NaN compares false */
    const tensor_t *gin[2] = {a, b};
    tensor_t *g = run("GreaterOrEqual@16", NULL, 2, gin, &e);
    bad = !g || g->dtype != DT_BOOL;
    for (int k = 0; !bad && k < 12; k++)
        if (((uint8_t *)g->data)[k] != (((float *)a->data)[k] >= ((float *)b->data)[k % 4])) bad = 1;
    ok(!bad, "GreaterOrEqual broadcasts to bool 0/1 (NaN false)");
    tensor_free(g);

    /* opset-6 Add with broadcast=1, axis=0: B (3) along A's first axis */
    const int64_t b3[1] = {3};
    tensor_t *b0 = mk_float(1, b3, -1, 1);
    const tensor_t *lin[2] = {a, b0};
    tensor_t *l = run("Add@6", "broadcast=i:1,axis=i:0", 2, lin, &e);
    bad = !l || l->ndim != 2;
    for (int k = 0; !bad && k < 12; k++)
        if (((float *)l->data)[k] != ((float *)a->data)[k] + ((float *)b0->data)[k / 4]) bad = 1;
    ok(!bad, "Add-6 broadcast=1 axis=0 aligns B with A's first axis");
    tensor_free(l); tensor_free(b0);

    /* shapes that do not broadcast fail cleanly */
    const int64_t b5[1] = {5};
    tensor_t *b5t = mk_float(1, b5, 0, 1);
    const tensor_t *bin[2] = {a, b5t};
    tensor_t *z = run("Mul@14", NULL, 2, bin, &e);
    ok(!z && strstr(e.msg, "broadcast"), "3x4 * 5 fails: %s", e.msg);
    tensor_free(b5t); tensor_free(a); tensor_free(b); tensor_free(c);
}

/* ---- 5. chunked parallel runs: tensors of several 16K-element chunks
 * whose rows straddle chunk boundaries, on 3 threads ---- */

static void test_chunks(void)
{
    pool_set_threads(3);
    const int64_t ad[3] = {5, 3, 4099};
    const int64_t shapes[4][3] = {{3, 1}, {4099}, {5, 1, 4099}, {0}};
    const int ranks[4] = {2, 1, 3, 0};
    for (int s = 0; s < 4; s++) {
        tensor_t *a = mk_float(3, ad, -3, 3), *b = mk_float(ranks[s], shapes[s], -2, 2);
        const tensor_t *in[2] = {a, b}, *rev[2] = {b, a};
        perr_t e;
        tensor_t *y = run("Sub@14", NULL, 2, in, &e), *yr = run("Sub@14", NULL, 2, rev, &e);
        int bad = !y || !yr;
        for (int64_t i = 0; !bad && i < 5 * 3 * 4099; i++) {
            int64_t idx[3];
            unravel(i, 3, ad, idx);
            float x = ((float *)a->data)[i], v = ((float *)b->data)[bcast_offset(ranks[s], shapes[s], 3, idx)];
            if (((float *)y->data)[i] != x - v || ((float *)yr->data)[i] != v - x) bad = 1;
        }
        ok(!bad, "Sub 5x3x4099 with rank-%d operand, both orders, 3 threads: equals the loop", ranks[s]);
        tensor_free(y); tensor_free(yr); tensor_free(a); tensor_free(b);
    }
    /* Where over chunks: condition 5x1x4099, x 3x1, y scalar */
    const int64_t cd3[3] = {5, 1, 4099}, xd[2] = {3, 1};
    tensor_t *cond = mk(DT_BOOL, 3, cd3), *wx = mk_float(2, xd, 1, 2), *wy = mk_float(0, NULL, -2, -1);
    for (int64_t i = 0; i < 5 * 4099; i++) ((uint8_t *)cond->data)[i] = next64() & 1;
    const tensor_t *win[3] = {cond, wx, wy};
    perr_t we;
    tensor_t *w = run("Where@16", NULL, 3, win, &we);
    int wbad = !w || tensor_numel(w) != 5 * 3 * 4099;
    for (int64_t i = 0; !wbad && i < 5 * 3 * 4099; i++) {
        int64_t idx[3];
        unravel(i, 3, ad, idx);
        float want = ((uint8_t *)cond->data)[idx[0] * 4099 + idx[2]] ? ((float *)wx->data)[idx[1]]
                                                                     : *(float *)wy->data;
        if (((float *)w->data)[i] != want) wbad = 1;
    }
    ok(!wbad, "Where 5x1x4099 / 3x1 / scalar on 3 threads equals the loop");
    tensor_free(w); tensor_free(cond); tensor_free(wx); tensor_free(wy);

    /* a unary op gives the same bits on 1 and 3 threads */
    const int64_t d[1] = {100003};
    tensor_t *x = mk_float(1, d, -8, 8);
    const tensor_t *in[1] = {x};
    perr_t e;
    tensor_t *y3 = run("Sigmoid@13", NULL, 1, in, &e);
    pool_set_threads(1);
    tensor_t *y1 = run("Sigmoid@13", NULL, 1, in, &e);
    ok(y1 && y3 && !memcmp(y1->data, y3->data, 100003 * 4), "Sigmoid on 100003 values: same bits on 1 and 3 threads");
    tensor_free(y1); tensor_free(y3); tensor_free(x);
}

/* ---- 6. Cast ---- */

/* Rounds an integer to bfloat16 (8 significant bits) to nearest even, in
 * integer arithmetic; returns the rounded value as a double (exact). */
static double ref_int_to_bf16(int64_t v)
{
    uint64_t m = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    int bits = 64 - __builtin_clzll(m | 1);
    if (bits > 8) {
        int drop = bits - 8;
        uint64_t q = m >> drop, rem = m & ((1ull << drop) - 1), half = 1ull << (drop - 1);
        if (rem > half || (rem == half && (q & 1))) q++;
        return (v < 0 ? -1.0 : 1.0) * ldexp((double)q, drop);
    }
    return (double)v;
}

static void test_cast(void)
{
    perr_t e;
    /* double -> float16 against GCC's direct _Float16 conversion, including
     * values just off float16 ties (double rounding through float32 fails them) */
    const int64_t d[1] = {4096};
    tensor_t *x = mk(DT_DOUBLE, 1, d);
    double *xv = x->data;
    for (int i = 0; i < 4096; i++) {
        if (i < 2048) {
            double tie = (1.0 + (2 * (i % 512) + 1) / 2048.0) * ldexp(1.0, i % 7 - 3);   /* half-way between f16 values */
            xv[i] = tie + (i & 1 ? 1 : -1) * ldexp(tie, -40);                            /* just above / below */
        } else {
            xv[i] = urand(-70000, 70000) * (i % 3 ? 1e-4 : 1);
        }
    }
    const tensor_t *in[1] = {x};
    tensor_t *h = run("Cast@13", "to=i:10", 1, in, &e);
    int bad = !h || h->dtype != DT_FLOAT16;
    for (int i = 0; !bad && i < 4096; i++) {
        half_ref_t r = (half_ref_t)xv[i];
        uint16_t u;
        memcpy(&u, &r, 2);
        if (((uint16_t *)h->data)[i] != u) { diag("%.17g -> %04x, want %04x", xv[i], ((uint16_t *)h->data)[i], u); bad = 1; }
    }
    ok(!bad, "Cast double -> float16 rounds once (4096 values, 2048 next to ties) like _Float16");
    tensor_free(h);
    tensor_free(x);

    /* int64 -> bfloat16 against integer rounding */
    tensor_t *xi = mk(DT_INT64, 1, d);
    for (int i = 0; i < 4096; i++) {
        int sh = (int)(next64() % 62);
        int64_t v = (int64_t)(next64() >> (63 - sh)) + (i & 1);
        ((int64_t *)xi->data)[i] = i % 2 ? v : -v;
    }
    ((int64_t *)xi->data)[0] = ((int64_t)1 << 62) + ((int64_t)1 << 54) + 1;   /* double rounding would tie */
    ((int64_t *)xi->data)[1] = INT64_MIN;
    const tensor_t *in2[1] = {xi};
    tensor_t *bf = run("Cast@13", "to=i:16", 1, in2, &e);
    bad = !bf || bf->dtype != DT_BFLOAT16;
    for (int i = 0; !bad && i < 4096; i++) {
        double got = bf16_to_f32(((uint16_t *)bf->data)[i]), want = ref_int_to_bf16(((int64_t *)xi->data)[i]);
        if (got != want) { diag("%lld -> %.17g, want %.17g", (long long)((int64_t *)xi->data)[i], got, want); bad = 1; }
    }
    ok(!bad, "Cast int64 -> bfloat16 rounds once to nearest even (4096 values)");
    tensor_free(bf);
    tensor_free(xi);

    /* float -> int: truncation, saturation, NaN -> 0; float -> bool: NaN true */
    const int64_t d6[1] = {6};
    tensor_t *xf = mk(DT_FLOAT, 1, d6);
    const float fv[6] = {-1.9f, 2.9f, 1e10f, -1e10f, NAN, -0.0f};
    memcpy(xf->data, fv, sizeof fv);
    const tensor_t *in3[1] = {xf};
    tensor_t *i8 = run("Cast@13", "to=i:3", 1, in3, &e), *u8 = run("Cast@13", "to=i:2", 1, in3, &e);
    tensor_t *bo = run("Cast@13", "to=i:9", 1, in3, &e);
    const int8_t w8[6] = {-1, 2, 127, -128, 0, 0};
    const uint8_t wu[6] = {0, 2, 255, 0, 0, 0}, wb[6] = {1, 1, 1, 1, 1, 0};
    ok(i8 && u8 && bo && !memcmp(i8->data, w8, 6) && !memcmp(u8->data, wu, 6) && !memcmp(bo->data, wb, 6),
       "Cast float -> int8/uint8 truncates and saturates (NaN -> 0); -> bool: NaN true, -0 false");
    tensor_free(i8); tensor_free(u8); tensor_free(bo); tensor_free(xf);

    /* CastLike takes the type of its second input; string is refused */
    tensor_t *src = mk(DT_INT32, 1, d6), *like = mk(DT_DOUBLE, 0, NULL);
    for (int i = 0; i < 6; i++) ((int32_t *)src->data)[i] = i * 1000003 - 2;
    const tensor_t *in4[2] = {src, like};
    tensor_t *cl = run("CastLike@15", NULL, 2, in4, &e);
    bad = !cl || cl->dtype != DT_DOUBLE;
    for (int i = 0; !bad && i < 6; i++) if (((double *)cl->data)[i] != i * 1000003.0 - 2) bad = 1;
    ok(!bad, "CastLike int32 -> double (type of the second input)");
    tensor_t *cs = run("Cast@13", "to=i:8", 1, in4, &e);
    ok(!cs && strstr(e.msg, "string"), "Cast to string fails cleanly: %s", e.msg);
    tensor_free(cl); tensor_free(src); tensor_free(like);
}

int main(void)
{
    test_plan_shapes();
    test_plan_random();
    test_binary_float();
    test_unary_float();
    test_int_div_mod();
    test_int_wrap();
    test_pow();
    test_bitshift_clip();
    test_variadic_where();
    test_chunks();
    test_cast();
    scratch_pool_free(&pool);
    return done_testing();
}
