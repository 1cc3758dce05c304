/* shapes.c — the input shapes a build fixes (--input-shape NAME=DIMS),
 * replacing the model's symbolic dimensions before shapes are inferred. */
#include <stdlib.h>
#include <string.h>
#include "passes/passes.h"

int graph_set_input_shape(graph_t *g, const char *spec, perr_t *e)
{
    const char *eq = strrchr(spec, '=');
    if (!eq) return BAD(e, "--input-shape '%s': expected NAME=1x3x320x320", spec);
    char *name = xstrndup(spec, eq - spec);
    int v = graph_find(g, name);
    int is_input = 0;
    for (int i = 0; i < g->n_inputs; i++) if (g->inputs[i] == v) is_input = 1;
    if (v < 0 || !is_input) {
        BAD(e, "--input-shape '%s': the model has no input named '%s'", spec, name);
        free(name);
        return -1;
    }
    free(name);
    int64_t dims[TENSOR_MAX_DIMS];
    int r = shape_parse(eq + 1, dims);
    if (r < 0) return BAD(e, "--input-shape '%s': bad shape '%s' (expected e.g. 1x3x320x320)", spec, eq + 1);
    value_t *val = &g->vals[v];
    if (val->t.ndim && val->t.ndim != r)
        return BAD(e, "--input-shape '%s': the model's input has rank %d", spec, val->t.ndim);
    for (int i = 0; i < val->t.ndim; i++)
        if (val->t.dims[i] >= 0 && val->t.dims[i] != dims[i])
            return BAD(e, "--input-shape '%s': dimension %d is fixed to %lld in the model", spec, i,
                       (long long)val->t.dims[i]);
    val->t.ndim = r;
    memcpy(val->t.dims, dims, r * sizeof *dims);
    val->shape_known = 1;
    return 0;
}
