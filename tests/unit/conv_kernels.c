/* conv_kernels.c — checks parity's own float32 GEMM (ops/gemm/fgemm.c) and the
 * convolution paths built on it: the AVX-512 kernel against the plain-C
 * FMA chain (same bits), both against a double-precision triple loop
 * within the rounding bound of their sums (tests/bounds.h); the
 * epilogue's Relu/Clip/LeakyRelu on NaN, -0 and Clip with min > max, as
 * the standalone kernels define them; the same bits for 1 and 3 threads;
 * Conv through node_run with a fused activation, with the kernel on and
 * off, against a direct loop (the activation applied exactly once); and
 * the 2-D pools' fast rows (ops/nn/poolrow.c) against window loops written
 * here, bit for bit, NaN and signed zeros included; a residual in the
 * epilogue against the unfused layers' bits; and fconv_px's pixel tiles
 * (the 16-channel one at every m from 1 to 16) against fconv_rows. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "bounds.h"
#include "ops/gemm/fgemm.h"
#include "ops/gemm/fgemm_impl.h"
#include "util/pool.h"
#include "nn_testutil.h"
#include "isa_each.h"

static float *random_floats(int64_t n)
{
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    for (int64_t i = 0; i < n; i++) p[i] = (float)(uniform() * 2 - 1);
    return p;
}

/* The activations written out as the standalone kernels define them. */
static double act_ref(double x, int act, float a, float b)
{
    switch (act) {
    case ACT_RELU: return x < 0 ? 0 : x;
    case ACT_LEAKY: return x < 0 ? a * x : x;
    case ACT_CLIP: return x < a ? (a > b ? b : a) : x > b ? b : x;
    case ACT_SIGMOID: return 1 / (1 + exp(-x));
    case ACT_SILU: return x / (1 + exp(-x));
    default: return x;
    }
}

/* The float32 error bound after the activation, for a pre-activation value
 * known within d (bounds.h): Relu and Clip are exact and 1-Lipschitz,
 * LeakyRelu rounds one product, Sigmoid is 1/4-Lipschitz and within 3 ulp
 * (tests/unit/vmath.c), SiLU's x * sigmoid(x) is 1.1-Lipschitz (its slope
 * peaks at 1.0998) and adds the product's rounding. */
static double act_bound(int act, float a, double d, double want)
{
    switch (act) {
    case ACT_LEAKY: return fn_bound(d, fmax(1, fabs(a)), 0.5, want, U_FLOAT);
    case ACT_SIGMOID: return fn_bound(d, 0.25, 3, want, U_FLOAT);
    case ACT_SILU: return fn_bound(d, 1.1, 3.5, want, U_FLOAT);
    default: return d;
    }
}

/* One GEMM shape: kernel vs plain C (bits), and vs a double loop. */
static int check_gemm(int64_t m, int64_t n, int64_t k, int64_t pad, int act, int bias)
{
    int64_t lda = k + pad, ldb = n + pad, ldc = n + 2 * pad;
    float *a = random_floats(m * lda), *b = random_floats(k * ldb), *bv = random_floats(m), *cb = random_floats(n);
    float *c1 = calloc((size_t)(m * ldc), sizeof *c1), *c2 = calloc((size_t)(m * ldc), sizeof *c2);
    fgemm_epi_t e = {bias & 1 ? bv : NULL, act, -0.25f, 0.5f, bias & 2 ? cb : NULL};   /* row and/or column bias */
    if (act == ACT_LEAKY) e.a = 0.1f;
    fgemm(m, n, k, a, lda, b, ldb, c1, ldc, &e);
    fgemm_ref(m, n, k, a, lda, b, ldb, c2, ldc, &e);
    int same = memcmp(c1, c2, (size_t)(m * ldc) * sizeof *c1) == 0;
    double worst = 0;   /* error over its bound */
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double acc = 0, mag = 0;
            for (int64_t p = 0; p < k; p++) {
                acc += (double)a[i * lda + p] * b[p * ldb + j];
                mag += fabs((double)a[i * lda + p] * b[p * ldb + j]);
            }
            if (bias & 1) { acc += bv[i]; mag += fabs(bv[i]); }
            if (bias & 2) { acc += cb[j]; mag += fabs(cb[j]); }
            double want = act_ref(acc, act, e.a, e.b), d = fabs(c1[i * ldc + j] - want);
            double r = d == 0 ? 0 : d / act_bound(act, e.a, sum_bound(dot_rounds(k) + 2, mag, U_FLOAT), want);
            if (!(r <= worst)) worst = r;
        }
    /* padding columns of C stay untouched */
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = n; j < ldc; j++) same = same && c1[i * ldc + j] == 0;
    int good = same && worst <= 1;
    ok(good, "fgemm %lldx%lldx%lld pad %lld act %d bias %d: same bits as fgemm_ref (the blocked order in C) %d, error %.3g of its bound",
       (long long)m, (long long)n, (long long)k, (long long)pad, act, bias, same, worst);
    free(a); free(b); free(bv); free(cb); free(c1); free(c2);
    return good;
}

static void test_gemm_shapes(void)
{
    /* tails on every side of the 8 x 32 tile and of the 64 x 256 task;
     * k over one packed panel of FG_KC steps (partial sums through C: one
     * split, two and a tail, a whole second panel); more than 256 rows: B
     * packed whole once (with k over a panel too) */
    static const int64_t shapes[][3] = {{1, 1, 1}, {8, 32, 5}, {7, 33, 9}, {9, 17, 27}, {3, 16, 0},
                                        {65, 257, 13}, {16, 300, 72}, {130, 40, 33}, {5, 1000, 3},
                                        {20, 70, 600}, {9, 33, FG_KC}, {3, 40, FG_KC + 1},
                                        {10, 50, 2 * FG_KC + 97}, {17, 40, 2 * FG_KC},
                                        {300, 70, 40}, {261, 45, 300}, {270, 40, FG_KC + 30},
                                        {5, 40, FG_KB}, {6, 35, FG_KB + 1}, {9, 64, 3 * FG_KB - 1},
                                        {2, 40, 12544}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int act = ACT_NONE; act <= ACT_LEAKY; act++)
            check_gemm(shapes[i][0], shapes[i][1], shapes[i][2], i % 3, act, (int)(i + act) % 4);
}

/* The blocked order (fgemm_impl.h) where it and one FMA chain part: k =
 * 12544 terms of x = 1 + 3 * 2^-12 (a 7x7 x 256-channel box head's
 * length). A block's sum (256 x, below 2^9) is exact, and so is every
 * later sum of blocks (multiples of 2^-10 below 2^14): the result is
 * exactly k x. One chain over all of k rounds up by a quarter ulp at each
 * of the ~4360 steps past 2^13 (x is 0.75 of an ulp there past a whole
 * one) and more below, 2.06 too large -- beyond even the blocked rounding bound,
 * gamma(FG_KB + k / FG_KB) * k x = 0.23, that test_gemm_shapes holds
 * every instruction set to on random data of that length. */
static void test_gemm_blocked_order(void)
{
    enum { K = 12544, N = 64, M = 4 };
    float *a = malloc(sizeof(float) * M * K), *b = malloc(sizeof(float) * K * N), *c = malloc(sizeof(float) * M * N);
    const float x = 1.0f + 3.0f * 0x1p-12f;
    for (int i = 0; i < M * K; i++) a[i] = 1.0f;
    for (int i = 0; i < K * N; i++) b[i] = x;
    fgemm(M, N, K, a, K, b, N, c, N, NULL);
    int exact = 1;
    for (int i = 0; i < M * N; i++) exact &= c[i] == (float)((double)K * x);
    float chain = 0;
    for (int p = 0; p < K; p++) chain = fmaf(1.0f, x, chain);
    double rounds = dot_rounds(K), bound = sum_bound(rounds, (double)K * x, U_FLOAT);
    ok(exact && fabs(chain - (double)K * x) > bound,
       "fgemm at %s, k %d: blocks of %d give the exact sum %.4f (got %.4f); one chain would be off by %.3f, beyond the "
       "blocked bound %.3f", isa_name(isa_active()), K, FG_KB, (double)K * x, c[0], chain - (double)K * x, bound);
    free(a); free(b); free(c);
}

/* The epilogue on the values where formulas part: NaN, +-0, +-inf, Clip
 * with min > max. */
static void test_epilogue_specials(void)
{
    float a[1] = {1}, b[32];
    float vals[] = {NAN, -0.0f, 0.0f, -1.0f, 2.0f, -INFINITY, INFINITY, 0.3f};
    for (int j = 0; j < 32; j++) b[j] = vals[j % 8];
    int acts[] = {ACT_RELU, ACT_LEAKY, ACT_CLIP, ACT_CLIP};
    float lo[] = {0, 0.1f, -0.5f, 0.75f}, hi[] = {0, 0, 0.25f, -0.75f};
    for (int t = 0; t < 4; t++) {
        fgemm_epi_t e = {NULL, acts[t], lo[t], hi[t]};
        float c1[32], c2[32];
        fgemm(1, 32, 1, a, 1, b, 32, c1, 32, &e);
        fgemm_ref(1, 32, 1, a, 1, b, 32, c2, 32, &e);
        int good = memcmp(c1, c2, sizeof c1) == 0;
        for (int j = 0; j < 8; j++) {
            double want = act_ref(0.0f + vals[j], acts[t], lo[t], hi[t]);   /* the chain starts at +0 */
            if (isnan(want)) good = good && isnan(c1[j]);
            else good = good && c1[j] == (float)want && signbit(c1[j]) == signbit((float)want);
        }
        ok(good, "fgemm epilogue %d (%g, %g) on NaN, +-0, +-inf as the standalone kernel", acts[t], lo[t], hi[t]);
    }
}

/* The same bits at any thread count, where the tiling depends on it (two
 * tasks a thread past four threads: 512 x 400 gets 8 tasks at 1 thread, 32
 * at 16) and where it does not. */
static void test_threads(void)
{
    static const int64_t shapes[][3] = {{96, 1500, 150}, {512, 400, 576}, {300, 70, 40}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        int64_t m = shapes[i][0], n = shapes[i][1], k = shapes[i][2];
        float *a = random_floats(m * k), *b = random_floats(k * n), *bv = random_floats(m);
        float *c1 = malloc((size_t)(m * n) * sizeof *c1), *cx = malloc((size_t)(m * n) * sizeof *cx);
        fgemm_epi_t e = {bv, ACT_RELU, 0, 0};
        pool_set_threads(1);
        fgemm(m, n, k, a, k, b, n, c1, n, &e);
        int same = 1;
        for (int th = 3; th <= 16; th += 13) {
            pool_set_threads(th);
            fgemm(m, n, k, a, k, b, n, cx, n, &e);
            same = same && memcmp(c1, cx, (size_t)(m * n) * sizeof *c1) == 0;
        }
        pool_set_threads(1);
        ok(same, "fgemm %lldx%lldx%lld: same bits with 1, 3 and 16 threads", (long long)m, (long long)n, (long long)k);
        free(a); free(b); free(bv); free(c1); free(cx);
    }
}

/* fgemm_kept: B packed whole is kept in the slot on the first call, with
 * many rows (more than 256) or few, and used by the next ones, which then
 * ignore the (zeroed) B they are given, at any row count. The same bits as
 * fgemm_ref throughout, packed on 1 thread or on 3. */
static void test_gemm_kept(void)
{
    static const int64_t shapes[][4] = {{300, 70, 40, 1}, {261, 45, 300, 3}, {257, 32, 256, 1}, {256, 70, 40, 1}, {100, 128, 128, 3}, {9, 33, 17, 1}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        int64_t m = shapes[i][0], n = shapes[i][1], k = shapes[i][2], ldb = n + 3;
        float *a = random_floats(m * k), *b = random_floats(k * ldb), *b0 = calloc((size_t)(k * ldb), sizeof *b0);
        float *want = malloc((size_t)(m * n) * sizeof *want), *got = malloc((size_t)(m * n) * sizeof *got);
        fgemm_epi_t e = {NULL, ACT_RELU, 0, 0, b + k * ldb - n};   /* a column bias: B's last row */
        fgemm_ref(m, n, k, a, k, b, ldb, want, n, &e);
        size_t bytes = (size_t)(m * n) * sizeof *got;
        void *slot = NULL;
        pool_set_threads((int)shapes[i][3]);
        fgemm_kept(m, n, k, a, k, b, ldb, got, n, &e, &slot);
        int first = !memcmp(want, got, bytes), kept = slot != NULL, later = 1;
        if (kept) {   /* B zeroed: only the kept pack can give the product */
            fgemm_epi_t e0 = e;
            float *cb = malloc((size_t)n * sizeof *cb);
            memcpy(cb, e.col_bias, (size_t)n * sizeof *cb);
            e0.col_bias = cb;
            fgemm_kept(m, n, k, a, k, b0, ldb, got, n, &e0, &slot);
            later = !memcmp(want, got, bytes);
            fgemm_kept(8, n, k, a, k, b0, ldb, got, n, &e0, &slot);   /* a later call with one tile of rows */
            later = later && !memcmp(want, got, (size_t)(8 * n) * sizeof *got);
            free(cb);
        }
        pool_set_threads(1);
        ok(first && later && kept,
           "fgemm_kept %lldx%lldx%lld on %d threads: same bits as fgemm_ref first %d, then from the kept pack %d "
           "(kept: %d)", (long long)m, (long long)n, (long long)k, (int)shapes[i][3], first, later, kept);
        free(slot); free(a); free(b); free(b0); free(want); free(got);
    }
}

/* Conv 2-D through node_run with a fused activation, against a direct loop. */
/* Runs a node into y with the AVX-512 kernels on or off. */
static int run_with_kernel(tnode_t *t, const tensor_t *const *in, tensor_t *y, int kernel_on, const char *name)
{
    tensor_t *out[1] = {y};
    perr_t e;
    fgemm_set_enabled(kernel_on);
    int rc = run_node(t, in, out, &e);
    fgemm_set_enabled(1);
    if (rc) diag("%s: %s", name, e.msg);
    return rc;
}

/* pads: top, left, bottom, right (ONNX order); dil: both axes. */
static void check_conv_geom(const char *name, int64_t c, int64_t m, int64_t h, int64_t w, int64_t k, int64_t s,
                            const int64_t *pads, int64_t dil, int act, int kernel_on)
{
    int64_t dk = (k - 1) * dil + 1;
    int64_t oh = (h + pads[0] + pads[2] - dk) / s + 1, ow = (w + pads[1] + pads[3] - dk) / s + 1;
    int64_t xd[4] = {1, c, h, w}, wd[4] = {m, c, k, k}, bd = m, od[4] = {1, m, oh, ow};
    tensor_t *x = random_tensor(DT_FLOAT, 4, xd, -1, 1), *wt = random_tensor(DT_FLOAT, 4, wd, -1, 1);
    tensor_t *b = random_tensor(DT_FLOAT, 1, &bd, -1, 1);
    tnode_t t;
    node_init(&t, "Conv", 11, 3, 1);
    int64_t st[2] = {s, s}, dl[2] = {dil, dil};
    set_ints(&t, "strides", 2, st);
    set_ints(&t, "dilations", 2, dl);
    set_ints(&t, "pads", 4, pads);
    t.n.act = act;
    t.n.act_a = act == ACT_LEAKY ? 0.2f : -0.5f;
    t.n.act_b = 0.5f;
    const tensor_t *in[3] = {x, wt, b};
    tensor_t y = {0};
    int rc = run_with_kernel(&t, in, &y, kernel_on, name);
    double *want = malloc((size_t)(m * oh * ow) * sizeof *want), *bound = malloc((size_t)(m * oh * ow) * sizeof *bound);
    for (int64_t o = 0; o < m; o++)
        for (int64_t i = 0; i < oh; i++)
            for (int64_t j = 0; j < ow; j++) {
                double acc = tensor_get_f64(b, o), mag = fabs(acc);
                for (int64_t ci = 0; ci < c; ci++)
                    for (int64_t u = 0; u < k; u++)
                        for (int64_t v = 0; v < k; v++) {
                            int64_t iy = i * s - pads[0] + u * dil, ix = j * s - pads[1] + v * dil;
                            if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                            double p = tensor_get_f64(x, (ci * h + iy) * w + ix) * tensor_get_f64(wt, ((o * c + ci) * k + u) * k + v);
                            acc += p;
                            mag += fabs(p);
                        }
                int64_t q = (o * oh + i) * ow + j;
                want[q] = act_ref(acc, act, t.n.act_a, t.n.act_b);
                bound[q] = act_bound(act, t.n.act_a, sum_bound((kernel_on ? dot_rounds(c * k * k) : c * k * k) + 1, mag, U_FLOAT), want[q]);
            }
    double err = rc ? INFINITY : bound_ratio(&y, want, bound, 4, od);
    ok(err <= 1, "Conv %s, activation %d, kernel %s: max error %.3g of its bound", name, act, kernel_on ? "on" : "off", err);
    free(want); free(bound);
    tensor_free(x); tensor_free(wt); tensor_free(b); tensor_free_data(&y);
}

static void check_conv_act(const char *name, int64_t c, int64_t m, int64_t h, int64_t w, int64_t k, int64_t s,
                           int64_t pad, int act, int kernel_on)
{
    int64_t pads[4] = {pad, pad, pad, pad};
    check_conv_geom(name, c, m, h, w, k, s, pads, 1, act, kernel_on);
}

/* Geometries for check_conv_geom, in order:
 * - the implicit GEMM (stride 1, output rows as wide as the input's):
 *   uneven vertical pads, dilation, rows narrower than a 32-wide strip, a
 *   kernel taller than the input, 8x8 taps, 9x9 (beyond the kernel);
 * - its gathering strips (strided, or output rows narrower than the
 *   input's; 32 output channels or more, 256 output positions or more):
 *   stride 2 with uneven pads, stride 3 with dilation 2, a 7x7 stride-2
 *   stem, 1x1 stride 2, no padding;
 * - 260 x 3 x 3 = 2340 steps of k: two packed panels (FG_KC is 2304). */
typedef struct conv_case {
    const char *name;
    int64_t c, m, h, w, k, s, pads[4], dil;
    int act;
} conv_case_t;
static const conv_case_t geoms[] = {
    {"3x3 pads 0,1,3,1", 7, 13, 20, 23, 3, 1, {0, 1, 3, 1}, 1, ACT_CLIP},
    {"3x3 dilation 2", 4, 9, 17, 19, 3, 1, {2, 2, 2, 2}, 2, ACT_RELU},
    {"8x8 on 5-wide rows", 3, 8, 70, 5, 8, 1, {3, 3, 4, 4}, 1, ACT_NONE},
    {"5x5 kernel taller than the input", 2, 5, 3, 300, 5, 1, {4, 2, 2, 2}, 1, ACT_NONE},
    {"9x9", 2, 4, 30, 40, 9, 1, {4, 4, 4, 4}, 1, ACT_NONE},
    {"3x3 stride 2 pads 0,1,1,0", 6, 33, 37, 41, 3, 2, {0, 1, 1, 0}, 1, ACT_RELU},
    {"3x3 stride 3 dilation 2", 5, 40, 61, 59, 3, 3, {0, 1, 3, 1}, 2, ACT_NONE},
    {"7x7 stride 2 stem", 3, 34, 40, 50, 7, 2, {3, 3, 3, 3}, 1, ACT_CLIP},
    {"1x1 stride 2", 9, 32, 32, 34, 1, 2, {0, 0, 0, 0}, 1, ACT_LEAKY},
    {"3x3 valid, rows narrower", 4, 36, 20, 45, 3, 1, {0, 0, 0, 0}, 1, ACT_NONE},
    {"3x3, 260 channels", 260, 19, 12, 35, 3, 1, {1, 1, 1, 1}, 1, ACT_RELU},
};

static void test_conv_fused(void)
{
    for (int on = 0; on <= 1; on++)
        for (int act = ACT_NONE; act <= ACT_SILU; act++) {
            check_conv_act("3x3 pad 1", 5, 12, 9, 37, 3, 1, 1, act, on);
            check_conv_act("3x3 stride 2", 3, 8, 11, 10, 3, 2, 1, act, on);
            check_conv_act("1x1", 20, 9, 6, 7, 1, 1, 0, act, on);
        }
    /* many bands of rows; taps wholly in the padding (pad > width) */
    for (int on = 0; on <= 1; on++) {
        check_conv_act("5x5 pad 2, 6 bands", 8, 16, 50, 70, 5, 1, 2, ACT_RELU, on);
        check_conv_act("5x5 pad 2 on 2x1", 2, 3, 2, 1, 5, 1, 2, ACT_NONE, on);
        check_conv_act("3x3 stride 2, 4 bands", 6, 10, 99, 120, 3, 2, 1, ACT_LEAKY, on);
        for (size_t i = 0; i < sizeof geoms / sizeof geoms[0]; i++) {
            const conv_case_t *t = &geoms[i];
            check_conv_geom(t->name, t->c, t->m, t->h, t->w, t->k, t->s, t->pads, t->dil, t->act, on);
        }
    }
}

/* ---- 2-D pools: fast rows against a window loop, bit for bit ---- */

/* Specials sprinkled over the random input: NaN and signed zeros every
 * seventh element; dense: NaN every third, -0, 0 and -inf between (a max
 * keeps a window's NaN only where it is the first tap, finds the maximum
 * after a NaN, and keeps the first of equal zeros). */
static int dense_specials;

static void check_pool(const char *op, int64_t c, int64_t h, int64_t w, int64_t k, int64_t s, int64_t pad,
                       int ceil_mode, int include_pad, int kernel_on)
{
    int is_max = !strcmp(op, "MaxPool");
    int64_t xd[4] = {1, c, h, w};
    tensor_t *x = random_tensor(DT_FLOAT, 4, xd, -1, 1);
    float *xv = x->data;
    for (int64_t i = 0; i < tensor_numel(x); i += 7) xv[i] = i % 3 ? (i % 2 ? -0.0f : 0.0f) : NAN;
    for (int64_t i = 0; dense_specials && i < tensor_numel(x); i++)
        if (i % 3 == 0) xv[i] = NAN;
        else if (i % 11 == 1) xv[i] = -INFINITY;
        else if (i % 5 == 2) xv[i] = i % 2 ? -0.0f : 0.0f;
    tnode_t t;
    node_init(&t, op, 12, 1, 1);
    int64_t ks[2] = {k, k}, st[2] = {s, s}, pads[4] = {pad, pad, pad, pad};
    set_ints(&t, "kernel_shape", 2, ks);
    set_ints(&t, "strides", 2, st);
    set_ints(&t, "pads", 4, pads);
    set_int(&t, "ceil_mode", ceil_mode);
    if (!is_max) set_int(&t, "count_include_pad", include_pad);
    const tensor_t *in[1] = {x};
    tensor_t y = {0};
    int rc = run_with_kernel(&t, in, &y, kernel_on, op);
    int64_t span_h = h + 2 * pad - k, span_w = w + 2 * pad - k;
    int64_t oh = ceil_mode ? (span_h + s - 1) / s + 1 : span_h / s + 1, ow = ceil_mode ? (span_w + s - 1) / s + 1 : span_w / s + 1;
    if (ceil_mode && (oh - 1) * s >= h + pad) oh--;
    if (ceil_mode && (ow - 1) * s >= w + pad) ow--;
    int good = !rc && y.ndim == 4 && y.dims[2] == oh && y.dims[3] == ow;
    for (int64_t ch = 0; good && ch < c; ch++)
        for (int64_t i = 0; good && i < oh; i++)
            for (int64_t j = 0; good && j < ow; j++) {   /* stops at the first wrong output */
                float best = 0, want;
                int first = 1;
                double acc = 0;
                int64_t n = 0, npad = 0;
                for (int64_t u = 0; u < k; u++)
                    for (int64_t v = 0; v < k; v++) {
                        int64_t iy = i * s - pad + u, ix = j * s - pad + v;
                        if (iy < h + pad && ix < w + pad) npad++;
                        if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                        float xv1 = xv[(ch * h + iy) * w + ix];
                        if (first) best = xv1;
                        first = 0;
                        best = xv1 > best ? xv1 : best;
                        acc += xv1;
                        n++;
                    }
                int64_t cnt = include_pad ? npad : n;
                want = is_max ? best : cnt ? (float)(acc / (double)cnt) : 0.0f;
                float got = ((float *)y.data)[(ch * oh + i) * ow + j];
                good = memcmp(&got, &want, sizeof got) == 0 || (isnan(got) && isnan(want));
                if (!good) diag("%s at (%lld, %lld, %lld): %g, want %g", op, (long long)ch, (long long)i, (long long)j, got, want);
            }
    ok(good, "%s %lldx%lld stride %lld pad %lld ceil %d include_pad %d on %lldx%lld%s, fast rows %s: window loop's bits",
       op, (long long)k, (long long)k, (long long)s, (long long)pad, ceil_mode, include_pad, (long long)h,
       (long long)w, dense_specials ? " (dense NaN, -inf, zeros)" : "", kernel_on ? "AVX-512" : "plain C");
    tensor_free(x);
    tensor_free_data(&y);
}

static void test_pools(void)
{
    for (int on = 0; on <= 1; on++) {
        check_pool("MaxPool", 3, 41, 75, 3, 2, 1, 0, 0, on);
        check_pool("MaxPool", 2, 20, 50, 2, 2, 0, 1, 0, on);
        check_pool("MaxPool", 2, 19, 40, 3, 1, 1, 0, 0, on);
        check_pool("MaxPool", 2, 9, 70, 5, 3, 2, 1, 0, on);
        check_pool("MaxPool", 2, 21, 171, 3, 2, 1, 0, 0, on);   /* rows of 64 outputs at once, then 16, then the tail */
        check_pool("MaxPool", 2, 9, 150, 3, 1, 1, 0, 0, on);
        check_pool("AveragePool", 3, 41, 75, 2, 2, 0, 1, 1, on);
        check_pool("AveragePool", 2, 33, 61, 3, 2, 1, 1, 0, on);
        check_pool("AveragePool", 2, 19, 40, 3, 1, 1, 0, 1, on);
        dense_specials = 1;
        check_pool("MaxPool", 3, 41, 75, 3, 2, 1, 0, 0, on);
        check_pool("MaxPool", 2, 22, 37, 2, 1, 0, 0, 0, on);
        check_pool("MaxPool", 2, 17, 90, 4, 2, 1, 1, 0, on);
        dense_specials = 0;
    }
}

/* ---- fconv_px (the pixel-broadcast tile) against fconv_rows, bit for bit ---- */

typedef struct px_case {
    const char *name;
    int64_t c, m, h, w;
    int kh, kw, dil, pt, pl, pb, pr, act, s, in_place;   /* in_place 2: at AVX-512 only (the row kernel) */
} px_case_t;
/* Partial pixel strips (widths not a multiple of 8), partial channel
 * blocks (m not a multiple of 32), uneven pads, dilation, taps wholly in
 * the padding, 1x1 and 5x5, every fused activation; planes no window
 * leaves (read in place); and planes large enough to be read in place (in_place: the scratch then holds no copy of
 * the whole input), where only the frame's bands are copied -- with
 * strides, uneven pads, one strip in place per row; and planes too narrow
 * for that (one band). */
static const px_case_t px_cases[] = {
    {"3x3 pad 1, 32 -> 40, 37 wide", 6, 40, 31, 37, 3, 3, 1, 1, 1, 1, 1, ACT_RELU},
    {"3x3 pad 1, 31 wide (strips of 7: 4 + 3 pixels at AVX2)", 4, 48, 40, 31, 3, 3, 1, 1, 1, 1, 1, ACT_NONE},
    {"3x3 pads 0,2,3,1, 13 channels out", 5, 13, 40, 33, 3, 3, 1, 0, 2, 3, 1, ACT_CLIP},
    {"3x3 dilation 2, 70 out", 4, 70, 36, 36, 3, 3, 2, 2, 2, 2, 2, ACT_SILU},
    {"5x5 pad 2, 9 wide", 3, 33, 130, 9, 5, 5, 1, 2, 2, 2, 2, ACT_LEAKY},
    {"1x1, 64 out (in place: no window leaves the input)", 17, 64, 32, 33, 1, 1, 1, 0, 0, 0, 0, ACT_SIGMOID, 1, 1},
    {"3x3 no pad (in place: no window leaves the input)", 3, 32, 40, 41, 3, 3, 1, 0, 0, 0, 0, ACT_NONE, 1, 1},
    {"3x5 pads 4,1,4,3 (taps in the padding)", 2, 32, 3, 400, 3, 5, 1, 4, 1, 4, 3, ACT_NONE},
    {"3x3 stride 2 pad 1, even", 5, 40, 72, 80, 3, 3, 1, 1, 1, 1, 1, ACT_RELU, 2},
    {"3x3 stride 2 pads 0,1,1,0, odd", 4, 33, 75, 91, 3, 3, 1, 0, 1, 1, 0, ACT_SILU, 2},
    {"7x7 stride 2 pad 3, 3 channels (a stem)", 3, 32, 90, 77, 7, 7, 1, 3, 3, 3, 3, ACT_CLIP, 2},
    {"3x3 pad 1, 29 channels (k 261: a block and 5 steps)", 29, 40, 40, 37, 3, 3, 1, 1, 1, 1, 1, ACT_RELU},
    {"3x3 pad 1, 64 channels (k 576: two blocks and a tail)", 64, 33, 33, 35, 3, 3, 1, 1, 1, 1, 1, ACT_NONE},
    {"1x1, 512 channels (k 512: two whole blocks)", 512, 32, 32, 33, 1, 1, 1, 0, 0, 0, 0, ACT_NONE, 1, 1},
    {"1x1 stride 2", 9, 32, 70, 71, 1, 1, 1, 0, 0, 0, 0, ACT_NONE, 2},
    {"in place: 3x3 pad 1, 261 wide", 2, 40, 257, 261, 3, 3, 1, 1, 1, 1, 1, ACT_SILU, 1, 1},
    {"in place: 3x3 stride 2 pad 1 (a stem)", 3, 32, 300, 301, 3, 3, 1, 1, 1, 1, 1, ACT_RELU, 2, 1},
    {"in place: 5x5 dilation 2, pads 0,3,2,1", 2, 33, 256, 259, 5, 5, 2, 0, 3, 2, 1, ACT_CLIP, 1, 1},
    {"in place: 7x7 stride 2 pads 3,2,1,3, odd", 3, 32, 257, 263, 7, 7, 1, 3, 2, 1, 3, ACT_LEAKY, 2, 1},
    {"in place: 3x3 pad 1, 24 wide (a strip in place)", 2, 32, 3000, 24, 3, 3, 1, 1, 1, 1, 1, ACT_NONE, 1, 1},
    {"3x3 pad 1, 10 wide, 7000 high (the frame would be all)", 2, 32, 7000, 10, 3, 3, 1, 1, 1, 1, 1, ACT_NONE, 1, 0},
    {"5x5 pad 2, 9 wide, 8000 high (no strip in place)", 1, 32, 8000, 9, 5, 5, 1, 2, 2, 2, 2, ACT_NONE, 1, 0},
    /* the row kernel at AVX-512 (fconv_px.c's rows_of): two groups of 16
     * channels, the second partial; k 252, the most one block holds; rows
     * of 16 and 45 pixels; stride 2 on a plane read in place, 17 out */
    {"row kernel: 3x3 pad 1, 16 -> 24, 45 wide", 16, 24, 40, 45, 3, 3, 1, 1, 1, 1, 1, ACT_SILU, 1, 2},
    {"row kernel: 3x3 pad 1, 28 channels (k 252), 32 out, 16 wide", 28, 32, 70, 16, 3, 3, 1, 1, 1, 1, 1, ACT_CLIP, 1, 2},
    {"row kernel: 3x3 stride 2 pad 1, 17 out, 263 wide", 2, 17, 260, 263, 3, 3, 1, 1, 1, 1, 1, ACT_LEAKY, 2, 1},
};

/* The case's output size and fconv geometry. */
static fconv_geom_t px_geom(const px_case_t *t, int64_t *oh, int64_t *ow)
{
    int s = t->s ? t->s : 1;
    *oh = (t->h + t->pt + t->pb - (t->kh - 1) * t->dil - 1) / s + 1;
    *ow = (t->w + t->pl + t->pr - (t->kw - 1) * t->dil - 1) / s + 1;
    fconv_geom_t g = {t->c, t->h, t->w, *oh, *ow, t->kh, t->kw, s, s, {0}, {0}, NULL};
    for (int a = 0; a < t->kh; a++) g.dh[a] = a * t->dil - t->pt;
    for (int b = 0; b < t->kw; b++) g.dw[b] = b * t->dil - t->pl;
    return g;
}

/* fconv_px on one case against fconv_rows, with its weights packed per
 * call and kept (kept_only: kept in both calls, as small planes take the
 * tile only then): 1 the same bits, 0 not (or a scratch size out of its
 * bounds), -1 where the tile does not apply. */
static int px_same_as_rows(const px_case_t *t, int kept_only)
{
    int64_t oh, ow;
    fconv_geom_t g = px_geom(t, &oh, &ow);
    int s = t->s ? t->s : 1;
    int64_t need = fconv_px_floats(&g, t->m, kept_only);
    if (!need) return -1;
    int64_t k = t->c * t->kh * t->kw;
    /* never more scratch than a padded copy of the whole input (stride
     * phases rounded up) and the weights (blocks of 32 channels; of 16 for
     * at most 16 at AVX-512, tile_px16); read in place, less than the
     * input and the weights */
    int64_t oc = t->m <= 16 && isa_active() == ISA_AVX512 ? 16 : 32;
    int64_t packed = (t->m + oc - 1) / oc * oc * k + 16;
    int64_t whole = t->c * (t->h + t->pt + t->pb + s) * (t->w + t->pl + t->pr + s) + packed;
    /* in_place 2: read in place by the row kernel where the set has it (AVX-512), else through a copy */
    int in_place = t->in_place == 1 || (t->in_place == 2 && isa_active() == ISA_AVX512);
    if (need > whole || (need < t->c * t->h * t->w + packed) != in_place) {
        diag("fconv_px %s, m %lld: scratch %lld floats (a whole copy %lld, the input %lld): %s in place", t->name,
             (long long)t->m, (long long)need, (long long)whole, (long long)(t->c * t->h * t->w),
             in_place ? "not" : "read");
        return 0;
    }
    float *x = random_floats(t->c * t->h * t->w), *w = random_floats(t->m * k), *bias = random_floats(t->m);
    float *y1 = random_floats(t->m * oh * ow), *y2 = random_floats(t->m * oh * ow), *scratch = malloc((size_t)need * sizeof *scratch);
    fgemm_epi_t e = {bias, t->act, t->act == ACT_LEAKY ? 0.2f : -0.5f, 0.5f, NULL};
    /* the reference: fconv_rows (on the stride phases where it takes them) */
    int64_t ph = fconv_phase_floats(&g);
    float *phase = ph ? malloc((size_t)ph * sizeof *phase) : NULL;
    g.phase = phase;
    int rc = fconv_rows(t->m, &g, w, x, y1, &e);
    g.phase = NULL;
    memset(scratch, 0xff, (size_t)need * sizeof *scratch);   /* NaN: a part of the copy left unfilled shows */
    void *slot2 = NULL;
    rc |= fconv_px(t->m, &g, w, x, y2, &e, scratch, kept_only ? &slot2 : NULL);
    free(phase);
    free(slot2);
    /* with a cache slot: the first call packs the weights into it, the
     * second uses them (so it ignores the zeroed weights it is given) */
    void *slot = NULL;
    float *y3 = random_floats(t->m * oh * ow), *w0 = calloc((size_t)(t->m * k), sizeof *w0);
    rc |= fconv_px(t->m, &g, w, x, y3, &e, scratch, &slot);
    int kept = slot != NULL && !memcmp(y1, y3, (size_t)(t->m * oh * ow) * sizeof *y1);
    rc |= fconv_px(t->m, &g, w0, x, y3, &e, scratch, &slot);
    kept = kept && !memcmp(y1, y3, (size_t)(t->m * oh * ow) * sizeof *y1);
    int same = !rc && kept && !memcmp(y1, y2, (size_t)(t->m * oh * ow) * sizeof *y1);
    if (!same)
        diag("fconv_px %s, m %lld: differs from fconv_rows%s", t->name, (long long)t->m,
             kept ? "" : " (with its weights kept)");
    free(slot); free(y3); free(w0);
    free(x); free(w); free(bias); free(y1); free(y2); free(scratch);
    return same;
}

/* Geometries run at every m from 1 to 16 (tile_px16 at AVX-512, the wide
 * tile's channels past m elsewhere): widths not a multiple of 16 (a last
 * strip of 5, 1 or 11 pixels whose pixels repeat) and of 8, stride 2,
 * k past one accumulation block, read in place and in bands. */
static const px_case_t px16_cases[] = {
    {"3x3 pad 1, 37 wide (the row kernel at AVX-512)", 4, 0, 45, 37, 3, 3, 1, 1, 1, 1, 1, ACT_RELU, 1, 2},
    {"3x3 stride 2 pad 1, 33 wide, odd", 3, 0, 71, 65, 3, 3, 1, 1, 1, 1, 1, ACT_SILU, 2},
    {"3x3 pad 1, 30 channels (k 270: a block and 14 steps), 27 wide", 30, 0, 40, 27, 3, 3, 1, 1, 1, 1, 1, ACT_CLIP},
    {"in place: 3x3 pad 1, 261 wide", 2, 0, 257, 261, 3, 3, 1, 1, 1, 1, 1, ACT_LEAKY, 1, 1},
    {"in place: 3x3 stride 2 pad 1 (a stem), 150 wide", 3, 0, 300, 299, 3, 3, 1, 1, 1, 1, 1, ACT_SIGMOID, 2, 1},
    {"1x1, 33 wide (in place: no window leaves the input)", 5, 0, 40, 33, 1, 1, 1, 0, 0, 0, 0, ACT_NONE, 1, 1},
};

/* Small planes, which take the tile only with the weights kept and at
 * least 128 channels (fconv_px.c): strips of consecutive pixels across
 * rows (px_run), rows of 10, 9 and 5 pixels, stride 2, partial blocks of
 * channels, k past one accumulation block, a 1x1 read in place. */
static const px_case_t px_small_cases[] = {
    {"small: 3x3 pad 1, 10x10, 128 out", 20, 128, 10, 10, 3, 3, 1, 1, 1, 1, 1, ACT_RELU},
    {"small: 3x3 stride 2 pad 1, 19x21 -> 10x11, 140 out", 12, 140, 19, 21, 3, 3, 1, 1, 1, 1, 1, ACT_SILU, 2},
    {"small: 3x3 pad 1, 30 channels (k 270), 7x9, 133 out", 30, 133, 7, 9, 3, 3, 1, 1, 1, 1, 1, ACT_CLIP},
    {"small: 3x3 pads 0,1,2,1, 5x5, 256 out", 8, 256, 5, 5, 3, 3, 1, 0, 1, 2, 1, ACT_LEAKY},
    {"small: 1x1 stride 2, 13x15 -> 7x8", 16, 160, 13, 15, 1, 1, 1, 0, 0, 0, 0, ACT_SIGMOID, 2},
};

static void test_px_bits(void)
{
    int compared = 0, same = 0, all = 0;
    for (size_t i = 0; i < sizeof px_cases / sizeof px_cases[0]; i++, all++) {
        int r = px_same_as_rows(&px_cases[i], 0);
        compared += r >= 0;
        same += r == 1;
    }
    for (size_t i = 0; i < sizeof px16_cases / sizeof px16_cases[0]; i++)
        for (int64_t m = 1; m <= 16; m++, all++) {
            px_case_t t = px16_cases[i];
            t.m = m;
            int r = px_same_as_rows(&t, 0);
            compared += r >= 0;
            same += r == 1;
        }
    for (size_t i = 0; i < sizeof px_small_cases / sizeof px_small_cases[0]; i++, all++) {
        int r = px_same_as_rows(&px_small_cases[i], 1);
        compared += r >= 0;
        same += r == 1;
    }
    if (isa_active() >= ISA_AVX2)
        ok(compared == all && same == compared,
           "fconv_px at %s: the same bits as fconv_rows on %d geometries (%d compared; m 1..16 on %d of them; %d small planes), weights packed per call and kept",
           isa_name(isa_active()), same, compared, (int)(sizeof px16_cases / sizeof px16_cases[0]),
           (int)(sizeof px_small_cases / sizeof px_small_cases[0]));
    else
        ok(compared == 0, "fconv_px: no tile in portable C (conv.c keeps the packed path): %d run", compared);
}

/* A residual in the epilogue (fgemm_epi_t.res) gives the bits of the
 * unfused layers: the product with its bias alone, then + r elementwise,
 * then the activation as the executor applies it (node_act_range) -- for
 * fgemm (one panel and several: k > FG_KC; partial tiles), fgemm_ref,
 * fconv_rows and fconv_px, every activation, on 1 and 3 threads. */
static void unfused(float *y, const float *r, int64_t count, int act, float a, float b)
{
    node_t nd = {0};
    nd.act = act;
    nd.act_a = a;
    nd.act_b = b;
    for (int64_t i = 0; i < count; i++) y[i] = y[i] + r[i];
    node_act_range(&nd, y, count);
}

static int same_floats(const float *x, const float *y, int64_t n) { return !memcmp(x, y, (size_t)n * sizeof *x); }

/* One case with a residual in the epilogue, on 3 threads: fconv_rows
 * and fconv_px (where the level has its tile; kept: its weights kept in a
 * slot) against the unfused layers' bits; 1 where all agree. */
static int px_residual_same(const px_case_t *t, int kept)
{
    int64_t oh, ow;
    fconv_geom_t g = px_geom(t, &oh, &ow);
    int64_t count = t->m * oh * ow, need = fconv_px_floats(&g, t->m, kept);
    void *slot = NULL;
    float *x = random_floats(t->c * t->h * t->w), *w = random_floats(t->m * t->c * t->kh * t->kw);
    float *bias = random_floats(t->m), *r = random_floats(count), *want = random_floats(count);
    float *got = random_floats(count), *px = random_floats(count);
    float *scratch = malloc((size_t)(need > 0 ? need : 1) * sizeof *scratch);
    float lo = t->act == ACT_LEAKY ? 0.2f : -0.5f;
    fgemm_epi_t bare = {bias, ACT_NONE, 0, 0, NULL}, e = {bias, t->act, lo, 0.5f, NULL, r};
    pool_set_threads(3);
    int rc = fconv_rows(t->m, &g, w, x, want, &bare);
    unfused(want, r, count, t->act, lo, 0.5f);
    rc |= fconv_rows(t->m, &g, w, x, got, &e);
    if (need) rc |= fconv_px(t->m, &g, w, x, px, &e, scratch, kept ? &slot : NULL);
    else memcpy(px, want, (size_t)count * sizeof *px);
    pool_set_threads(1);
    free(slot);
    int same = !rc && same_floats(want, got, count) && same_floats(want, px, count);
    if (!same) diag("conv + residual %s, m %lld: differs from the unfused layers", t->name, (long long)t->m);
    free(x); free(w); free(bias); free(r); free(want); free(got); free(px); free(scratch);
    return same;
}

static void test_residual(void)
{
    static const int64_t shapes[][3] = {{13, 70, 300}, {40, 33, 2400}, {8, 32, 1}, {3, 1000, 27}};
    int gemm_same = 0, gemm_all = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int act = ACT_NONE; act <= ACT_SILU; act++)
            for (int threads = 1; threads <= 3; threads += 2) {
                int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
                float *a = random_floats(m * k), *b = random_floats(k * n), *bv = random_floats(m);
                float *r = random_floats(m * n), *want = random_floats(m * n), *got = random_floats(m * n);
                float *ref = random_floats(m * n);
                float lo = act == ACT_LEAKY ? 0.2f : -0.5f;
                fgemm_epi_t bare = {bv, ACT_NONE, 0, 0, NULL}, e = {bv, act, lo, 0.5f, NULL, r};
                pool_set_threads(threads);
                fgemm(m, n, k, a, k, b, n, want, n, &bare);
                unfused(want, r, m * n, act, lo, 0.5f);
                fgemm(m, n, k, a, k, b, n, got, n, &e);
                pool_set_threads(1);
                fgemm_ref(m, n, k, a, k, b, n, ref, n, &e);
                gemm_all++;
                if (same_floats(want, got, m * n) && same_floats(want, ref, m * n)) gemm_same++;
                else diag("fgemm + residual %lldx%lldx%lld act %d, %d threads: differs from the unfused layers",
                          (long long)m, (long long)n, (long long)k, act, threads);
                free(a); free(b); free(bv); free(r); free(want); free(got); free(ref);
            }
    ok(gemm_same == gemm_all, "fgemm and fgemm_ref with a residual: the unfused layers' bits (%d of %d cases)",
       gemm_same, gemm_all);
    /* the convolutions: px_cases' geometries (fconv_px where the level
     * has its tile), px16_cases' at m 1..16, every activation in turn, and
     * the small planes */
    int conv_same = 0, conv_all = 0;
    for (size_t i = 0; i < sizeof px_cases / sizeof px_cases[0]; i += 3, conv_all++)
        conv_same += px_residual_same(&px_cases[i], 0);
    for (size_t i = 0; i < sizeof px16_cases / sizeof px16_cases[0]; i++)
        for (int64_t m = 1; m <= 16; m++, conv_all++) {
            px_case_t t = px16_cases[i];
            t.m = m;
            t.act = (int)(m + (int64_t)i) % (ACT_SILU + 1);
            conv_same += px_residual_same(&t, 0);
        }
    for (size_t i = 0; i < sizeof px_small_cases / sizeof px_small_cases[0]; i++, conv_all++)
        conv_same += px_residual_same(&px_small_cases[i], 1);
    ok(conv_same == conv_all, "fconv_rows and fconv_px with a residual on %d geometries: the unfused layers' bits (%d)",
       conv_all, conv_same);
}

static void checks_at_level(void)
{
    test_residual();
    test_px_bits();
    test_gemm_shapes();
    test_gemm_blocked_order();
    test_epilogue_specials();
    test_threads();
    test_gemm_kept();
    test_conv_fused();
    test_pools();
}

int main(void)
{
    diag("AVX-512 kernel %s on this CPU", fgemm_available() ? "runs" : "does not run");
    at_each_isa(checks_at_level);
    scratch_pool_free(&pool);
    return done_testing();
}
