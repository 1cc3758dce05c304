/* fgemm_round.c — checks the FP16/BF16 storage rounding in fgemm's
 * epilogue (fgemm_epi_t.round: in the tiles' registers where fgemm_rounds
 * says so, else in fgemm_tile_post's rows) against the pass node_run runs
 * over a whole output after the kernel (half.h's round_f16_inplace /
 * round_bf16_inplace): the same bits, for fgemm, fgemm_kept, fgemm_ref,
 * fconv_rows (stride 1 and stride phases) and fconv_px, with every
 * activation, with a residual, at 1 and 3 threads and every ISA level; and
 * Conv and MatMul nodes with FP16 storage through node_run (the kernels
 * taking the rounding: ops/nn/conv.c, gemm.c) against FP32 storage and
 * the pass. */
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "ops/gemm/fgemm.h"
#include "tensor/half.h"
#include "util/pool.h"
#include "nn_testutil.h"
#include "isa_each.h"

static float *random_floats(int64_t n)
{
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    for (int64_t i = 0; i < n; i++) p[i] = (float)(uniform() * 8 - 4);
    return p;
}

/* The executor's pass over a whole output. */
static void round_pass(float *y, int64_t n, int round)
{
    if (round == DT_FLOAT16) round_f16_inplace(y, n);
    else round_bf16_inplace(y, n);
}

static int same(const float *x, const float *y, int64_t n) { return !memcmp(x, y, (size_t)n * sizeof *x); }

/* fgemm with e (its round set) against fgemm without the rounding and then
 * the pass, and fgemm_ref with it; kept: through fgemm_kept with a slot. */
static int gemm_case(int64_t m, int64_t n, int64_t k, int act, int res, int round, int threads, int kept)
{
    float *a = random_floats(m * k), *b = random_floats(k * n), *bias = random_floats(m), *r = random_floats(m * n);
    float *cb = random_floats(n);   /* a MatMul's column bias where kept */
    float *want = random_floats(m * n), *got = random_floats(m * n), *ref = random_floats(m * n);
    fgemm_epi_t plain = {bias, act, act == ACT_LEAKY ? 0.2f : -0.5f, 0.5f, kept ? cb : NULL, res ? r : NULL, 0};
    fgemm_epi_t e = plain;
    e.round = round;
    void *slot = NULL;
    pool_set_threads(threads);
    fgemm(m, n, k, a, k, b, n, want, n, &plain);
    round_pass(want, m * n, round);
    if (kept) {
        fgemm_kept(m, n, k, a, k, b, n, got, n, &e, &slot);   /* packs into the slot */
        fgemm_kept(m, n, k, a, k, b, n, got, n, &e, &slot);   /* from the kept pack */
    } else fgemm(m, n, k, a, k, b, n, got, n, &e);
    pool_set_threads(1);
    fgemm_ref(m, n, k, a, k, b, n, ref, n, &e);
    int ok_ = same(want, got, m * n) && same(want, ref, m * n);
    if (!ok_)
        diag("fgemm %lldx%lldx%lld act %d res %d round %d threads %d kept %d: %s", (long long)m, (long long)n,
             (long long)k, act, res, round, threads, kept, same(want, got, m * n) ? "fgemm_ref differs" : "differs");
    free(slot); free(a); free(b); free(bias); free(cb); free(r); free(want); free(got); free(ref);
    return ok_;
}

static void test_gemm_round(void)
{
    /* edges: rows not a multiple of 8 or 6, columns past a strip and under
     * 16, k of one step, of two blocks and a tail, past one panel (2304) */
    static const int64_t shapes[][3] = {{13, 70, 300}, {40, 33, 2400}, {8, 32, 1}, {3, 1000, 27}, {100, 128, 128}};
    int all = 0, good = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int act = ACT_NONE; act <= ACT_SILU; act++)
            for (int round = DT_FLOAT16; round; round = round == DT_FLOAT16 ? DT_BFLOAT16 : 0)
                for (int v = 0; v < 4; v++, all++)   /* residual or not, 1 or 3 threads, kept */
                    good += gemm_case(shapes[s][0], shapes[s][1], shapes[s][2], act, v & 1, round, v & 2 ? 3 : 1,
                                      s == 4 || (v == 3));
    ok(good == all, "fgemm, fgemm_kept and fgemm_ref with the storage rounding: the pass's bits (%d of %d cases)",
       good, all);
    /* FP16 in the tiles at the x86 levels, after SiLU only where the tiles apply it (AVX-512) */
    int at_f16 = isa_active() != ISA_GENERIC, silu = isa_active() == ISA_AVX512;
    ok(fgemm_rounds(DT_FLOAT16, ACT_RELU) == at_f16 && fgemm_rounds(DT_FLOAT16, ACT_SILU) == silu &&
       !fgemm_rounds(DT_BFLOAT16, ACT_NONE) && !fgemm_rounds(0, ACT_NONE),
       "fgemm_rounds at %s: FP16 in the tiles %d, after SiLU %d", isa_name(isa_active()),
       fgemm_rounds(DT_FLOAT16, ACT_RELU), fgemm_rounds(DT_FLOAT16, ACT_SILU));
}

/* One convolution (c -> m, h x w, k x k, stride s, pad k/2) through
 * fconv_rows and fconv_px (where the level's tile takes it), rounded in
 * the epilogue, against fconv_rows and the pass. */
static int conv_case(int64_t c, int64_t m, int64_t h, int64_t w, int k, int s, int act, int round)
{
    int64_t oh = (h + 2 * (k / 2) - k) / s + 1, ow = (w + 2 * (k / 2) - k) / s + 1, count = m * oh * ow;
    fconv_geom_t g = {c, h, w, oh, ow, k, k, s, s, {0}, {0}, NULL};
    for (int i = 0; i < k; i++) g.dh[i] = g.dw[i] = i - k / 2;
    float *x = random_floats(c * h * w), *wt = random_floats(m * c * k * k), *bias = random_floats(m);
    float *want = random_floats(count), *got = random_floats(count), *px = random_floats(count);
    int64_t ph = fconv_phase_floats(&g), need = fconv_px_floats(&g, m, 0);
    float *phase = ph ? malloc((size_t)ph * sizeof *phase) : NULL;
    float *scratch = need ? malloc((size_t)need * sizeof *scratch) : NULL;
    fgemm_epi_t plain = {bias, act, -0.5f, 0.5f, NULL, NULL, 0}, e = plain;
    e.round = round;
    g.phase = phase;
    int rc = fconv_rows(m, &g, wt, x, want, &plain);
    round_pass(want, count, round);
    rc |= fconv_rows(m, &g, wt, x, got, &e);
    g.phase = NULL;
    if (need) rc |= fconv_px(m, &g, wt, x, px, &e, scratch, NULL);
    else memcpy(px, want, (size_t)count * sizeof *px);
    int ok_ = !rc && same(want, got, count) && same(want, px, count);
    if (!ok_)
        diag("conv %lld->%lld %lldx%lld %dx%d/%d act %d round %d: %s", (long long)c, (long long)m, (long long)h,
             (long long)w, k, k, s, act, round, same(want, got, count) ? "fconv_px differs" : "fconv_rows differs");
    free(x); free(wt); free(bias); free(want); free(got); free(px); free(phase); free(scratch);
    return ok_;
}

static void test_conv_round(void)
{
    int all = 0, good = 0;
    for (int act = ACT_NONE; act <= ACT_SILU; act++)
        for (int round = DT_FLOAT16; round; round = round == DT_FLOAT16 ? DT_BFLOAT16 : 0) {
            good += conv_case(5, 40, 33, 37, 3, 2, act, round);   /* stride phases */
            good += conv_case(7, 33, 30, 31, 3, 1, act, round);   /* stride 1: fconv_px where it applies */
            good += conv_case(6, 20, 16, 19, 1, 1, act, round);   /* 1x1 */
            all += 3;
        }
    ok(good == all, "fconv_rows and fconv_px with the storage rounding: the pass's bits (%d of %d cases)", good, all);
}

/* A Conv or MatMul node with FP16 storage through node_run against the
 * same node with FP32 storage and the pass: conv.c and gemm.c hand the
 * rounding to the kernels only where nothing follows them. */
static int node_case(const char *op, const int64_t *xd, int xn, const int64_t *wd, int wn, int act)
{
    tnode_t t;
    node_init(&t, op, 13, 2, 1);
    t.n.act = act;
    tensor_t *x = random_tensor(DT_FLOAT, xn, xd, -2, 2), *w = random_tensor(DT_FLOAT, wn, wd, -1, 1);
    if (!strcmp(op, "Conv")) {
        set_ints(&t, "pads", 4, (const int64_t[]){1, 1, 1, 1});
        set_ints(&t, "strides", 2, (const int64_t[]){2, 2});
    }
    const tensor_t *in[2] = {x, w};
    tensor_t y32 = {0}, y16 = {0}, *o32[1] = {&y32}, *o16[1] = {&y16};
    perr_t e;
    int rc = run_node(&t, in, o32, &e);
    t.n.storage = DT_FLOAT16;
    rc |= run_node(&t, in, o16, &e);
    int64_t n = tensor_numel(&y32);
    if (!rc) round_pass(y32.data, n, DT_FLOAT16);
    int ok_ = !rc && n == tensor_numel(&y16) && same(y32.data, y16.data, n);
    if (!ok_) diag("%s act %d with FP16 storage: %s", op, act, rc ? e.msg : "differs from FP32 storage and the pass");
    tensor_free(x); tensor_free(w); tensor_free_data(&y32); tensor_free_data(&y16);
    return ok_;
}

static void test_nodes(void)
{
    int all = 0, good = 0;
    static const int acts[] = {ACT_NONE, ACT_RELU, ACT_SILU};
    for (int i = 0; i < 3; i++, all += 2) {
        good += node_case("Conv", (const int64_t[]){1, 6, 21, 24}, 4, (const int64_t[]){40, 6, 3, 3}, 4, acts[i]);
        good += node_case("MatMul", (const int64_t[]){1, 37, 48}, 3, (const int64_t[]){48, 70}, 2, acts[i]);
    }
    ok(good == all, "Conv (3x3 stride 2) and MatMul nodes with FP16 storage: FP32 storage's bits and the pass "
       "(%d of %d)", good, all);
}

static void checks_at_level(void)
{
    test_gemm_round();
    test_conv_round();
    test_nodes();
}

int main(void)
{
    at_each_isa(checks_at_level);
    scratch_pool_free(&pool);
    return done_testing();
}
