/* build.c — the build-engine pipeline (see build.h): a table of named
 * passes walked in order, each row one job and one call into the library,
 * so the order a build runs in is read here and nowhere else
 * (docs/design.md's picture lists this table; tests/stage/build_passes.t
 * checks that it does). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine/build.h"
#include "passes/passes.h"
#include "onnx/load.h"
#include "ops/run.h"
#include "precision/precision.h"
#include "util/fsutil.h"
#include "util/sha256.h"

/* Folding never materialises constants larger than this (they would bloat
 * the engine file; such nodes run at inference time instead). */
#define MAX_FOLD_BYTES ((int64_t)64 << 20)

/* What the passes share: the options, the policy, the graph once loaded,
 * and the metadata the engine file records. */
typedef struct build {
    const char *path;
    const build_opts_t *o;
    engine_meta_t *m;
    precision_policy_t pp;
    graph_t *g;
} build_t;

typedef struct build_pass {
    const char *name;
    int (*run)(build_t *b, perr_t *e);   /* 0, or -1 with e set */
} build_pass_t;

static int hash_model(const char *path, char hex[65], perr_t *e)
{
    char *buf;
    size_t n;
    if (read_file(path, &buf, &n, e)) return -1;
    sha256_hex(buf, n, hex);
    free(buf);
    return 0;
}

static int pass_load(build_t *b, perr_t *e)
{
    if (hash_model(b->path, b->m->source_sha256, e)) return -1;
    b->g = onnx_load(b->path, e);
    if (!b->g) return -1;
    if (b->g->resorted)
        fprintf(stderr, "build-engine: note: %s: nodes not in topological order: %d moved (sorted as ONNX Runtime "
                        "does; noted in the layer report)\n", b->path, b->g->resorted);
    return 0;
}

static int pass_input_shapes(build_t *b, perr_t *e)
{
    for (int i = 0; i < b->o->n_input_shapes; i++)
        if (graph_set_input_shape(b->g, b->o->input_shapes[i], e)) return -1;
    return 0;
}

static int pass_resolve_ops(build_t *b, perr_t *e) { return resolve_ops(b->g, e); }

/* control flow folds inside it (graph_fold_control, per If/Loop/Scan node) */
static int pass_fold_constants(build_t *b, perr_t *e) { return graph_fold(b->g, MAX_FOLD_BYTES, e) < 0 ? -1 : 0; }

static int pass_remove_dead(build_t *b, perr_t *e)
{
    (void)e;
    graph_remove_dead(b->g);
    return 0;
}

static int pass_widen_half(build_t *b, perr_t *e)
{
    return b->o->no_widen || graph_widen_half(b->g, e) >= 0 ? 0 : -1;
}

static int pass_assign_precision(build_t *b, perr_t *e)
{
    (void)e;
    precision_assign(b->g, &b->pp, b->o->quiet_rules ? NULL : stderr);
    return 0;
}

/* A fold: --no-fusion turns them all off, the config's fold: each one. */
static int run_fold(const build_t *b, unsigned fold, int (*fn)(graph_t *g))
{
    if (!b->o->no_fusion && (b->pp.folds & fold)) fn(b->g);
    return 0;
}

static int pass_fold_batchnorm(build_t *b, perr_t *e)
{
    (void)e;
    return run_fold(b, FOLD_BATCHNORM, graph_fold_batchnorm);
}

static int pass_fold_scale_bias(build_t *b, perr_t *e)
{
    (void)e;
    return run_fold(b, FOLD_SCALE_BIAS, graph_fold_scale_bias);
}

static int pass_fuse_silu(build_t *b, perr_t *e)
{
    (void)e;
    return run_fold(b, FOLD_ACTIVATION, graph_fuse_silu);
}

static int pass_fold_residual(build_t *b, perr_t *e)
{
    (void)e;
    return run_fold(b, FOLD_RESIDUAL, graph_fold_residual);
}

static int pass_fuse_activations(build_t *b, perr_t *e)
{
    (void)e;
    return run_fold(b, FOLD_ACTIVATION, graph_fuse_activations);
}

static int pass_mark_boundaries(build_t *b, perr_t *e)
{
    (void)e;
    precision_mark_boundaries(b->g, &b->pp, b->o->quiet_rules ? NULL : stderr);
    return 0;
}

static int pass_plan_memory(build_t *b, perr_t *e)
{
    (void)e;
    b->m->arena_bytes = graph_plan_memory(b->g);
    return 0;
}

/* The build, in order (docs/design.md's picture lists this table). */
#define PASS(name) {#name, pass_##name}
static const build_pass_t build_passes[] = {
    PASS(load),              /* parse, toposort */
    PASS(input_shapes),      /* --input-shape */
    PASS(resolve_ops),       /* each node's row of the op table */
    PASS(fold_constants),    /* shapes inferred, constants folded, control flow too */
    PASS(remove_dead),
    PASS(widen_half),        /* FP16-storage models as float32 rounded to float16 */
    PASS(assign_precision),  /* each layer's precision and storage type */
    PASS(fold_batchnorm),    /* the folds: after precisions are chosen, */
    PASS(fold_scale_bias),
    PASS(fuse_silu),
    PASS(fold_residual),
    PASS(fuse_activations),  /* before the boundary rounding */
    PASS(mark_boundaries),   /* range notes, rounding at precision boundaries */
    PASS(plan_memory),
};
#undef PASS
#define N_PASSES ((int)(sizeof build_passes / sizeof build_passes[0]))

void engine_list_passes(FILE *f)
{
    for (int i = 0; i < N_PASSES; i++) fprintf(f, "%s\n", build_passes[i].name);
}

graph_t *engine_build(const char *model_path, const build_opts_t *o, engine_meta_t *m, perr_t *e)
{
    memset(m, 0, sizeof *m);
    m->source_path = model_path;
    build_t b = {.path = model_path, .o = o, .m = m};
    if (precision_policy_load(&b.pp, o->precision_config, o->precision, e)) return NULL;
    m->precision = b.pp.strongly_typed ? "strongly-typed" : precision_name(b.pp.global);
    for (int i = 0; i < N_PASSES; i++) {
        int before = b.g ? b.g->n_nodes : 0;
        if (build_passes[i].run(&b, e)) {
            precision_policy_free(&b.pp);
            graph_free(b.g);
            return NULL;
        }
        if (o->trace)
            fprintf(o->trace, "build-engine: pass %-17s %5d -> %5d nodes\n", build_passes[i].name, before, b.g->n_nodes);
    }
    precision_policy_free(&b.pp);
    return b.g;
}
