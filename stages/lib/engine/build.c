/* build.c — the build-engine pipeline (see build.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine/build.h"
#include "graph/passes.h"
#include "onnx/load.h"
#include "ops/run.h"
#include "precision/precision.h"
#include "util/fsutil.h"
#include "util/sha256.h"

/* Folding never materialises constants larger than this (they would bloat
 * the engine file; such nodes run at inference time instead). */
#define MAX_FOLD_BYTES ((int64_t)64 << 20)

static int hash_model(const char *path, char hex[65], perr_t *e)
{
    char *buf;
    size_t n;
    if (read_file(path, &buf, &n, e)) return -1;
    sha256_hex(buf, n, hex);
    free(buf);
    return 0;
}

graph_t *engine_build(const char *model_path, const build_opts_t *o, engine_meta_t *m, perr_t *e)
{
    memset(m, 0, sizeof *m);
    m->source_path = model_path;
    precision_policy_t pp;
    if (precision_policy_load(&pp, o->precision_config, o->precision, e)) return NULL;
    m->precision = pp.strongly_typed ? "strongly-typed" : precision_name(pp.global);
    graph_t *g = NULL;
    if (hash_model(model_path, m->source_sha256, e)) goto fail;
    g = onnx_load(model_path, e);
    if (!g) goto fail;
    if (g->resorted)
        fprintf(stderr, "build-engine: note: %s: nodes not in topological order: %d moved (sorted as ONNX Runtime "
                        "does; noted in the layer report)\n", model_path, g->resorted);
    for (int i = 0; i < o->n_input_shapes; i++)
        if (graph_set_input_shape(g, o->input_shapes[i], e)) goto fail;
    if (resolve_ops(g, e)) goto fail;
    if (graph_fold(g, MAX_FOLD_BYTES, e) < 0) goto fail;
    graph_remove_dead(g);
    if (!o->no_widen && graph_widen_half(g, e) < 0) goto fail;
    pp.fuse = !o->no_fusion;
    if (precision_apply(g, &pp, o->quiet_rules ? NULL : stderr, e)) goto fail;
    m->arena_bytes = graph_plan_memory(g);
    precision_policy_free(&pp);
    return g;
fail:
    precision_policy_free(&pp);
    graph_free(g);
    return NULL;
}
