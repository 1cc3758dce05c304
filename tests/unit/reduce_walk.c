/* reduce_walk.c — checks how reduce_walk.c spreads a reduction over the
 * last axis across the pool: with more than 1024 outputs its rows run as
 * tasks (float32 Sum, Mean, L1, L2 and SumSquare on a path of their own,
 * vectorised at AVX2; Max and Min with the serial walk's code per row), and must give the bits of the same rows reduced a
 * block of 400 at a time (the serial walk). The Reduce* results themselves
 * are checked against references by the op harness (tests/ops/). */
#include "nn_testutil.h"
#include "util/pool.h"

enum { K_N = 10 };
static const char *const red_ops[K_N] = {"ReduceMax", "ReduceMin", "ReduceMean", "ReduceSum",
    "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};

/* Every kind, float32 [4, 400, L] over
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
    node_init(&t, red_ops[kind], 11, 1, 1);
    set_ints(&t, "axes", 1, axes);
    set_int(&t, "keepdims", 0);
    const tensor_t *in[1] = {x};
    tensor_t *y = calloc(1, sizeof *y), *out[1] = {y};
    int rc = run_node(&t, in, out, &e);
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
            tensor_t *x = random_tensor(DT_FLOAT, 3, dims, specials ? -1.5 : 0.5, 1.5);
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
    test_reduce_rows_pool();
    scratch_pool_free(&pool);
    return done_testing();
}
