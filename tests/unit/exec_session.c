/* exec_session.c — checks the execution session (engine/exec.h) on the tiny
 * RT-DETR fixture (tests/fixtures/rtdetr-tiny: convolutions whose packed
 * weights the session keeps, attention, TopK): every run of one session
 * gives the bytes of a fresh one-run session (exec_once), the first run
 * (filling the node caches) and the later ones (reading them) alike, at 1
 * and 2 threads; two sessions on two graphs run in turn keep their caches
 * apart; the config is the session's own copy (the caller's dump glob
 * overwritten after open changes nothing); a run without a profile sink
 * leaves the caller's array untouched and one with it adds every layer's
 * time; a run fed a reference (local-error mode) leaves the reference's
 * bytes as they were and, fed the run's own FP32 dump, reproduces its
 * outputs; a negative thread count is bad input, no session. */
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "tiny_rtdetr.h"
#include "engine/build.h"
#include "engine/exec.h"
#include "ops/gemm/blas.h"
#include "util/pool.h"

static const char *fixture[2] = {"tests/fixtures/rtdetr-tiny/rtdetr_tiny_op16.onnx",
                                 "tests/fixtures/rtdetr-tiny/rtdetr_tiny_op17.onnx"};

static graph_t *build(const char *path)
{
    const char *shapes[] = {"images=1x3x160x160"};
    build_opts_t o = {.input_shapes = shapes, .n_input_shapes = 1};
    engine_meta_t m;
    perr_t e = {0};
    graph_t *g = engine_build(path, &o, &m, &e);
    if (!g) diag("%s: %s", path, e.msg);
    return g;
}

static int run(exec_session_t *s, const tensor_set_t *in, const exec_run_opts_t *ro, tensor_set_t *out)
{
    perr_t e = {0};
    memset(out, 0, sizeof *out);
    int rc = exec_session_run(s, in, ro, out, &e);
    if (rc) diag("run: %s", e.msg);
    return rc;
}

/* Runs of one session against a fresh session's one run, at `threads`. */
static void check_repeat(const graph_t *g, const tensor_set_t *in, const tensor_set_t *want, int threads)
{
    const exec_config_t xc = {.threads = threads};
    exec_session_t *s = exec_session_open(g, &xc, NULL);
    int same = 1;
    for (int r = 0; r < 3; r++) {
        tensor_set_t out;
        same = same && !run(s, in, NULL, &out) && tensor_sets_same(want, &out);
        tensorset_free(&out);
    }
    exec_session_close(s);
    ok(same, "three runs of one session at %d thread%s: a fresh session's bytes", threads, threads > 1 ? "s" : "");
}

/* Two sessions on two graphs, run in turn: each its own graph's bytes. */
static void check_interleaved(graph_t *const *g, const tensor_set_t *in, const tensor_set_t *want)
{
    const exec_config_t xc = {.threads = 1};
    exec_session_t *s[2] = {exec_session_open(g[0], &xc, NULL), exec_session_open(g[1], &xc, NULL)};
    int same = 1;
    for (int r = 0; r < 4; r++) {
        tensor_set_t out;
        same = same && !run(s[r % 2], in, NULL, &out) && tensor_sets_same(&want[r % 2], &out);
        tensorset_free(&out);
    }
    exec_session_close(s[0]);
    exec_session_close(s[1]);
    ok(same, "two sessions on the op16 and op17 graphs, run in turn: each its own graph's bytes");
}

/* The dump glob is copied at open; returns the dump of every tensor. */
static void check_config_copied(const graph_t *g, const tensor_set_t *in, tensor_set_t *dump)
{
    char glob[] = "*";
    const exec_config_t xc = {.threads = 1, .dump = glob};
    exec_session_t *s = exec_session_open(g, &xc, NULL);
    glob[0] = '\0';   /* the caller's buffer changes: the session's config does not */
    int rc = run(s, in, NULL, dump);
    exec_session_close(s);
    tensor_set_t all = {0};
    perr_t e = {0};
    const exec_config_t every = {.threads = 1, .dump = "all"};
    rc = rc || exec_once(g, &every, in, NULL, &all, &e);
    ok(!rc && dump->n > g->n_outputs && tensor_sets_same(&all, dump),
       "dump '*' overwritten after open still dumps every tensor (%d, as --dump all)", dump->n);
    tensorset_free(&all);
}

static void check_profile(const graph_t *g, const tensor_set_t *in)
{
    const exec_config_t xc = {.threads = 1};
    exec_session_t *s = exec_session_open(g, &xc, NULL);
    double *ms = calloc((size_t)g->n_nodes + 1, sizeof *ms);
    tensor_set_t out;
    int rc = run(s, in, &(const exec_run_opts_t){0}, &out);
    tensorset_free(&out);
    int untouched = 1;
    for (int i = 0; i < g->n_nodes; i++) untouched = untouched && ms[i] == 0;
    ok(!rc && untouched, "a run without a profile sink writes no layer time");
    const exec_run_opts_t ro = {.layer_ms = ms};
    rc = run(s, in, &ro, &out);
    tensorset_free(&out);
    if (!rc) rc = run(s, in, &ro, &out);
    double total = 0;
    int negative = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        total += ms[i];
        negative += ms[i] < 0;
    }
    ok(!rc && total > 0 && !negative, "runs with a sink add each layer's time to it (%.3f ms over %d layers)", total,
       g->n_nodes);
    tensorset_free(&out);
    free(ms);
    exec_session_close(s);
}

/* Local-error mode fed the FP32 run's own dump: every layer computes what
 * it computed in that run, so the outputs are that run's; the reference's
 * bytes are read, never written. */
static void check_reference(const graph_t *g, const tensor_set_t *in, const tensor_set_t *want, tensor_set_t *dump)
{
    tensor_set_t before = {0};
    for (int i = 0; i < dump->n; i++) tensorset_add(&before, dump->names[i], tensor_clone(dump->ts[i]));
    const exec_config_t xc = {.threads = 1};
    const exec_run_opts_t ro = {.reference = dump};
    tensor_set_t out;
    exec_session_t *s = exec_session_open(g, &xc, NULL);
    int rc = run(s, in, &ro, &out);
    exec_session_close(s);
    ok(!rc && tensor_sets_same(want, &out), "fed its own dump as the reference, the run gives its outputs");
    ok(tensor_sets_same(&before, dump), "the reference's %d tensors are unchanged by the run", dump->n);
    tensorset_free(&out);
    tensorset_free(&before);
}

static void check_bad_config(const graph_t *g)
{
    perr_t e = {0};
    const exec_config_t xc = {.threads = -1};
    exec_session_t *s = exec_session_open(g, &xc, &e);
    ok(!s && e.code == EXIT_BADINPUT && strstr(e.msg, "-1 threads"), "threads -1: no session, bad input (%s)",
       e.msg);
    exec_session_close(s);
}

int main(void)
{
    blas_single_thread();
    pool_set_threads(2);
    graph_t *g[2] = {build(fixture[0]), build(fixture[1])};
    ok(g[0] && g[1], "the tiny RT-DETR fixtures build (op16, op17)");
    if (!g[0] || !g[1]) return done_testing();
    tensor_set_t in, want[2] = {{0}, {0}}, dump = {0};
    tiny_rtdetr_inputs(&in, 12345u);
    perr_t e = {0};
    const exec_config_t one = {.threads = 1};
    for (int k = 0; k < 2; k++)
        if (exec_once(g[k], &one, &in, NULL, &want[k], &e)) diag("%s: %s", fixture[k], e.msg);
    ok(want[0].n == 3 && want[1].n == 3 && !e.code, "exec_once: labels, boxes and scores of each graph");
    check_repeat(g[0], &in, &want[0], 1);
    check_repeat(g[0], &in, &want[0], 2);
    check_interleaved(g, &in, want);
    check_config_copied(g[0], &in, &dump);
    check_profile(g[0], &in);
    check_reference(g[0], &in, &want[0], &dump);
    check_bad_config(g[0]);
    tensorset_free(&dump);
    for (int k = 0; k < 2; k++) {
        tensorset_free(&want[k]);
        graph_free(g[k]);
    }
    tensorset_free(&in);
    return done_testing();
}
