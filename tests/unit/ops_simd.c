/* ops_simd.c — the kernels with hand-written AVX2 paths (vmath.h's users:
 * Sigmoid, Exp, Tanh, Erf, Gelu, Softmax, LogSoftmax; LayerNormalization and
 * InstanceNormalization rows) and GridSample (scalar today: AVX2 gathers
 * were slower on this project's CPUs) give the same bits with
 * the vector path as with the scalar path (isa_force_generic(1): every
 * kernel family at the portable level), on 1 and on 3
 * threads, on shapes with vector tails and with NaN, inf and huge values
 * mixed in. Their accuracy is checked against references elsewhere
 * (vmath.c, the op harness tests/ops/, conformance);
 * this file pins down that neither the CPU nor the thread count changes an
 * output. On a CPU without AVX2 both runs take the scalar path. */
#include "nn_testutil.h"
#include "isa_each.h"
#include "ops/elementwise/vmath.h"
#include "util/pool.h"

/* Output of t on in with the vector path on or off, at `threads` threads. */
static int run_with(tnode_t *t, const tensor_t *const *in, int simd, int threads, tensor_t *y)
{
    perr_t e;
    tensor_t *o[1] = {y};
    isa_force_generic(!simd);
    pool_set_threads(threads);
    int rc = run_node(t, in, o, &e);
    pool_set_threads(1);
    isa_force_generic(0);
    if (rc) diag("%s: %s", t->n.op_type, e.msg);
    return rc;
}

/* 1 if t gives byte-identical outputs: vector path at 1 and 3 threads,
 * scalar path at 1 thread. */
static int same_bits(tnode_t *t, const tensor_t *const *in)
{
    tensor_t y[3] = {{0}, {0}, {0}};
    int rc = run_with(t, in, 1, 1, &y[0]) | run_with(t, in, 1, 3, &y[1]) | run_with(t, in, 0, 1, &y[2]);
    size_t nb = tensor_nbytes(&y[0]);
    int same = !rc && tensor_nbytes(&y[1]) == nb && tensor_nbytes(&y[2]) == nb &&
               !memcmp(y[0].data, y[1].data, nb) && !memcmp(y[0].data, y[2].data, nb);
    for (int k = 0; k < 3; k++) tensor_free_data(&y[k]);
    return same;
}

/* Random floats in [lo, hi] with a few specials sprinkled in. */
static tensor_t *data(int nd, const int64_t *dims, double lo, double hi)
{
    tensor_t *x = random_tensor(DT_FLOAT, nd, dims, lo, hi);
    float *p = x->data;
    int64_t n = tensor_numel(x);
    const float sp[6] = {NAN, INFINITY, -INFINITY, 1e30f, -1e30f, 1e-40f};
    for (int k = 0; k < 6 && n > 100; k++) p[(int64_t)(uniform() * (double)n)] = sp[k];
    return x;
}

static void test_unary(void)
{
    int64_t d[3] = {3, 37, 211};
    tensor_t *x = data(3, d, -20, 20);
    const char *ops[6] = {"Sigmoid", "Exp", "Tanh", "Erf", "Softmax", "LogSoftmax"};
    for (int k = 0; k < 6; k++) {
        tnode_t t;
        node_init(&t, ops[k], 13, 1, 1);
        ok(same_bits(&t, (const tensor_t *[]){x}), "%s: same bits, vector or scalar, 1 or 3 threads", ops[k]);
    }
    for (int k = 0; k < 2; k++) {
        tnode_t t;
        node_init(&t, "Gelu", 20, 1, 1);
        if (k) set_str(&t, "approximate", "tanh");
        ok(same_bits(&t, (const tensor_t *[]){x}), "Gelu%s: same bits, vector or scalar, 1 or 3 threads",
           k ? " (tanh)" : "");
    }
    /* softmax along a middle axis (the block layout) */
    tnode_t t;
    node_init(&t, "Softmax", 13, 1, 1);
    set_int(&t, "axis", 1);
    ok(same_bits(&t, (const tensor_t *[]){x}), "Softmax axis 1: same bits, vector or scalar, 1 or 3 threads");
    tensor_free(x);
}

static void test_norms(void)
{
    int64_t d[3] = {5, 13, 259}, pd[1] = {259}, cd[1] = {13};
    tensor_t *x = data(3, d, -4, 9), *sc = random_tensor(DT_FLOAT, 1, pd, -2, 2), *b = random_tensor(DT_FLOAT, 1, pd, -1, 1);
    tnode_t t;
    node_init(&t, "LayerNormalization", 17, 3, 1);
    ok(same_bits(&t, (const tensor_t *[]){x, sc, b}), "LayerNormalization rows of 259: same bits, vector or scalar");
    int64_t big[2] = {40, 1000};
    tensor_t *xb = random_tensor(DT_FLOAT, 2, big, 1000, 1001), *sb = random_tensor(DT_FLOAT, 1, big + 1, -2, 2);
    node_init(&t, "LayerNormalization", 17, 2, 1);
    ok(same_bits(&t, (const tensor_t *[]){xb, sb}), "LayerNormalization, large offset: same bits, vector or scalar");
    tensor_t *isc = random_tensor(DT_FLOAT, 1, cd, -2, 2), *ib = random_tensor(DT_FLOAT, 1, cd, -1, 1);
    node_init(&t, "InstanceNormalization", 6, 3, 1);
    ok(same_bits(&t, (const tensor_t *[]){x, isc, ib}), "InstanceNormalization: same bits, vector or scalar");
    tensor_free(x); tensor_free(sc); tensor_free(b); tensor_free(xb); tensor_free(sb);
    tensor_free(isc); tensor_free(ib);
}

static void test_gridsample(void)
{
    int64_t xd[4] = {3, 7, 11, 13}, gd[4] = {3, 37, 5, 2};
    tensor_t *x = data(4, xd, -3, 3), *g = random_tensor(DT_FLOAT, 4, gd, -1.2, 1.2);
    const char *modes[3] = {"bilinear", "nearest", "bicubic"}, *pads[3] = {"zeros", "border", "reflection"};
    int pass = 1;
    for (int m = 0; m < 3; m++)
        for (int p = 0; p < 3; p++)
            for (int a = 0; a < 2; a++) {
                tnode_t t;
                node_init(&t, "GridSample", 16, 2, 1);
                set_str(&t, "mode", modes[m]);
                set_str(&t, "padding_mode", pads[p]);
                set_int(&t, "align_corners", a);
                pass &= same_bits(&t, (const tensor_t *[]){x, g});
            }
    ok(pass, "GridSample, every mode x padding x align_corners: same bits, vector or scalar");
    tensor_free(x); tensor_free(g);
}

static void checks_at_level(void)
{
    test_unary();
    test_norms();
    test_gridsample();
}

int main(void)
{
    diag("best level: %s", isa_name(isa_cpu()));
    at_each_isa(checks_at_level);
    scratch_pool_free(&pool);
    return done_testing();
}
