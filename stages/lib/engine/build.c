/* build.c — the build-engine pipeline (see build.h). */
#include <stdlib.h>
#include <string.h>
#include "engine/build.h"
#include "graph/passes.h"
#include "onnx/load.h"
#include "ops/run.h"
#include "util/fsutil.h"
#include "util/sha256.h"

/* Folding never materialises constants larger than this (they would bloat
 * the engine file; such nodes run at inference time instead). */
#define MAX_FOLD_BYTES ((int64_t)64 << 20)

int assign_precision(graph_t *g, const char *policy, perr_t *e)
{
    int p = precision_from_name(policy ? policy : "fp32");
    if (p < 0) return BAD(e, "unknown precision '%s' (expected fp32, tf32, fp16 or bf16)", policy);
    for (int i = 0; i < g->n_nodes; i++) {
        node_t *n = &g->nodes[i];
        n->precision = (precision_t)p;
        /* TF32 changes only GEMM inputs; FP16/BF16 also store tensors in that type */
        n->storage = p == PREC_FP16 ? DT_FLOAT16 : p == PREC_BF16 ? DT_BFLOAT16 : DT_FLOAT;
        free(n->reason);
        n->reason = xstrdup(p == PREC_FP32 ? "default" : "global precision");
    }
    return 0;
}

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
    m->precision = o->precision ? o->precision : "fp32";
    if (hash_model(model_path, m->source_sha256, e)) return NULL;
    graph_t *g = onnx_load(model_path, e);
    if (!g) return NULL;
    for (int i = 0; i < o->n_input_shapes; i++)
        if (graph_set_input_shape(g, o->input_shapes[i], e)) goto fail;
    if (resolve_ops(g, e)) goto fail;
    if (graph_fold(g, MAX_FOLD_BYTES, e) < 0) goto fail;
    graph_remove_dead(g);
    if (assign_precision(g, m->precision, e)) goto fail;
    m->arena_bytes = graph_plan_memory(g);
    return g;
fail:
    graph_free(g);
    return NULL;
}
