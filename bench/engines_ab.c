/* engines_ab.c — two engines, or one engine at two instruction sets, timed
 * against each other in one process: A and B run in turn on the same input,
 * pair after pair, so the machine's drift (a shared host changes speed by
 * 5-10% between minutes) falls on both alike. Prints each engine's median
 * and the median of the per-pair ratios B/A, which is what a kernel change
 * is judged by (bench/README.md); a difference of 1% shows in 20 pairs
 * where two separate `infer --runs` calls need luck.
 *
 *   engines_ab ENGINE_A ENGINE_B INPUT [--threads N] [--pairs N]
 *
 * INPUT is one tensor set (a sample folder of .npy files). The outputs of
 * A and B are compared too: "outputs: identical" or "outputs: DIFFER". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "engine/engine.h"
#include "engine/exec.h"
#include "io/tensorset.h"
#include "ops/gemm/blas.h"
#include "util/isa.h"
#include "util/pool.h"

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One inference; its wall time in ms (the outputs kept in *out). */
static double run_once(exec_session_t *s, const tensor_set_t *in, tensor_set_t *out)
{
    perr_t e = {0};
    tensorset_free(out);
    memset(out, 0, sizeof *out);
    double t0 = now_ms();
    if (exec_session_run(s, in, NULL, out, &e)) {
        fprintf(stderr, "engines_ab: %s\n", e.msg);
        exit(3);
    }
    return now_ms() - t0;
}

static int same_outputs(const tensor_set_t *a, const tensor_set_t *b)
{
    if (a->n != b->n) return 0;
    for (int i = 0; i < a->n; i++) {
        const tensor_t *x = a->ts[i], *y = tensorset_get(b, a->names[i]);
        if (!y || x->dtype != y->dtype || tensor_nbytes(x) != tensor_nbytes(y) ||
            memcmp(x->data, y->data, tensor_nbytes(x)))
            return 0;
    }
    return 1;
}

int main(int argc, char **argv)
{
    int threads = 1, pairs = 20;
    const char *path[3] = {NULL, NULL, NULL};
    int np = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--pairs") && i + 1 < argc) pairs = atoi(argv[++i]);
        else if (argv[i][0] != '-' && np < 3) path[np++] = argv[i];
        else np = 4;
    }
    if (np != 3 || threads < 1 || threads > 256 || pairs < 1 || pairs > 10000) {
        fprintf(stderr, "usage: engines_ab ENGINE_A ENGINE_B INPUT [--threads N] [--pairs N]\n");
        return 2;
    }
    isa_configure("engines_ab", NULL, NULL);
    blas_single_thread();
    pool_set_threads(threads);
    perr_t e = {0};
    graph_t *g[2];
    for (int k = 0; k < 2; k++)
        if (!(g[k] = engine_read(path[k], NULL, &e))) {
            fprintf(stderr, "engines_ab: %s\n", e.msg);
            return 2;
        }
    tensor_set_t in = {0}, out[2] = {{0}, {0}};
    if (tensorset_read(path[2], &in, &e)) {
        fprintf(stderr, "engines_ab: %s\n", e.msg);
        return 2;
    }
    const exec_config_t xc = {.threads = threads};
    exec_session_t *xs[2];
    for (int k = 0; k < 2; k++)
        if (!(xs[k] = exec_session_open(g[k], &xc, &e))) {
            fprintf(stderr, "engines_ab: %s\n", e.msg);
            return 2;
        }
    double *t[2] = {calloc(pairs, sizeof(double)), calloc(pairs, sizeof(double))};
    double *ratio = calloc(pairs, sizeof(double));
    for (int k = 0; k < 2; k++) run_once(xs[k], &in, &out[k]);   /* warm: arena, caches */
    for (int i = 0; i < pairs; i++) {
        int first = i % 2;   /* alternate which goes first */
        t[first][i] = run_once(xs[first], &in, &out[first]);
        t[1 - first][i] = run_once(xs[1 - first], &in, &out[1 - first]);
        ratio[i] = t[1][i] / t[0][i];
    }
    printf("A %.2f ms  B %.2f ms  (medians of %d, %d thread%s)  B/A %.4f (median of per-pair ratios)\n",
           median(t[0], pairs), median(t[1], pairs), pairs, threads, threads > 1 ? "s" : "", median(ratio, pairs));
    printf("outputs: %s\n", same_outputs(&out[0], &out[1]) ? "identical" : "DIFFER");
    for (int k = 0; k < 2; k++) {
        tensorset_free(&out[k]);
        exec_session_close(xs[k]);
        graph_free(g[k]);
        free(t[k]);
    }
    tensorset_free(&in);
    free(ratio);
    return 0;
}
