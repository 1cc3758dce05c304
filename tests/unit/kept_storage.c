/* kept_storage.c — checks precision/kept.c on the tiny RT-DETR fixture
 * built at FP16 and BF16 storage: marking the layers that only move values
 * (Reshape, Transpose, Concat, ...) marks some, never one that reads a graph
 * input or rounds its inputs; and a run with the marks (their output
 * rounding skipped) gives every dumped tensor and output byte for byte as
 * the run without them, at 1 and 2 threads, and so does local-error mode fed
 * an FP32 dump (whose float32 inputs the marked layers must round). */
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "tiny_rtdetr.h"
#include "engine/build.h"
#include "engine/exec.h"
#include "ops/gemm/blas.h"
#include "precision/precision.h"
#include "util/pool.h"

static const char *fixture = "tests/fixtures/rtdetr-tiny/rtdetr_tiny_op16.onnx";

static graph_t *build(const char *precision)
{
    const char *shapes[] = {"images=1x3x160x160"};
    build_opts_t o = {.input_shapes = shapes, .n_input_shapes = 1, .precision = precision};
    engine_meta_t m;
    perr_t e = {0};
    graph_t *g = engine_build(fixture, &o, &m, &e);
    if (!g) diag("%s at %s: %s", fixture, precision, e.msg);
    return g;
}

/* Every tensor of one run (the dump of all, outputs included). */
static int run_all(const graph_t *g, int threads, const tensor_set_t *in, const tensor_set_t *ref,
                   tensor_set_t *out)
{
    const exec_config_t xc = {.threads = threads, .dump = "all"};
    const exec_run_opts_t ro = {.reference = ref};
    perr_t e = {0};
    memset(out, 0, sizeof *out);
    int rc = exec_once(g, &xc, in, &ro, out, &e);
    if (rc) diag("run: %s", e.msg);
    return rc;
}

/* No marked layer may read a graph input or round its inputs. */
static int marks_sound(const graph_t *g)
{
    for (int i = 0; i < g->n_nodes; i++) {
        const node_t *n = &g->nodes[i];
        if (!n->keeps_storage) continue;
        if (n->round_inputs || n->act || n->residual) return 0;
        for (int k = 0; k < n->n_in; k++) {
            int v = n->in[k];
            if (v >= 0 && g->vals[v].kind != VAL_CONST && g->vals[v].producer < 0 && g->vals[v].t.dtype == DT_FLOAT)
                return 0;
        }
    }
    return 1;
}

static void clear_marks(graph_t *g)
{
    for (int i = 0; i < g->n_nodes; i++) g->nodes[i].keeps_storage = 0;
}

static void check_precision(const char *precision, const tensor_set_t *in, const tensor_set_t *ref32)
{
    graph_t *g = build(precision);
    if (!g) {
        ok(0, "%s: engine built", precision);
        return;
    }
    clear_marks(g);
    tensor_set_t want, want_local;
    int rc = run_all(g, 1, in, NULL, &want) | run_all(g, 1, in, ref32, &want_local);
    int kept = precision_mark_kept_storage(g);
    ok(kept > 0 && marks_sound(g), "%s: %d value-moving layers keep their inputs' storage, none reads a graph "
       "input or rounds its inputs", precision, kept);
    for (int threads = 1; threads <= 2; threads++) {
        tensor_set_t got;
        int r = run_all(g, threads, in, NULL, &got);
        ok(!rc && !r && want.n > g->n_outputs && tensor_sets_same(&want, &got),
           "%s, %d thread(s): all %d tensors byte-identical with the rounding skipped", precision, threads, want.n);
        tensorset_free(&got);
    }
    tensor_set_t got_local;
    int r = run_all(g, 1, in, ref32, &got_local);
    ok(!rc && !r && tensor_sets_same(&want_local, &got_local),
       "%s: local-error mode fed an FP32 dump still rounds the marked layers (%d tensors identical)", precision,
       want_local.n);
    tensorset_free(&got_local);
    tensorset_free(&want_local);
    tensorset_free(&want);
    graph_free(g);
}

int main(void)
{
    blas_single_thread();
    pool_set_threads(2);
    tensor_set_t in, ref32;
    tiny_rtdetr_inputs(&in, 4242u);
    graph_t *g32 = build("fp32");
    int rc = !g32 || run_all(g32, 1, &in, NULL, &ref32);
    ok(!rc, "the FP32 engine runs (its dump is the local-error reference)");
    if (rc) return done_testing();
    /* an FP32 engine stores nothing narrower: nothing to mark */
    ok(precision_mark_kept_storage(g32) == 0, "fp32: no layer marked");
    check_precision("fp16", &in, &ref32);
    check_precision("bf16", &in, &ref32);
    tensorset_free(&ref32);
    tensorset_free(&in);
    graph_free(g32);
    return done_testing();
}
