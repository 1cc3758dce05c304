/* engine.c — fuzz harness: an engine file as infer reads it (engine/engine.c),
 * the layer report written from it, and, for small graphs, one run on zero
 * inputs of the declared shapes (unknown dimensions as 1): what the reader
 * accepts, the executor must run or refuse as bad input. */
#include <stdio.h>
#include "fuzz/fuzz.h"
#include "engine/engine.h"
#include "engine/exec.h"

/* Zero inputs of the declared shapes; 0 when they are too big to bother. */
static int zero_inputs(const graph_t *g, tensor_set_t *in)
{
    for (int k = 0; k < g->n_inputs; k++) {
        const value_t *v = &g->vals[g->inputs[k]];
        int64_t dims[TENSOR_MAX_DIMS], numel = 1;
        for (int i = 0; i < v->t.ndim && numel <= 4096; i++) numel *= dims[i] = v->t.dims[i] < 0 ? 1 : v->t.dims[i] > 4096 ? 4097 : v->t.dims[i];
        perr_t e = {0};
        tensor_t *t = numel <= 4096 ? tensor_new(v->t.dtype ? v->t.dtype : DT_FLOAT, v->t.ndim, dims, &e) : NULL;
        if (!t) return 0;
        tensorset_add(in, v->name, t);
    }
    return 1;
}

FUZZ_READER(engine)
{
    engine_meta_t meta;
    graph_t *g = engine_read(fuzz_file("model.engine", d, n), &meta, e);
    if (!g) return -1;
    char out[300];
    snprintf(out, sizeof out, "%s/layers.json", fuzz_dir());
    int rc = layers_write_json(g, &meta, out, e);
    tensor_set_t in = {0}, res = {0};
    if (!rc && g->n_nodes <= 64 && meta.arena_bytes <= (1 << 20) && zero_inputs(g, &in)) {
        const exec_config_t xc = {.threads = 1};
        rc = exec_once(g, &xc, &in, NULL, &res, e);
    }
    tensorset_free(&in);
    tensorset_free(&res);
    graph_free(g);
    return rc;
}
