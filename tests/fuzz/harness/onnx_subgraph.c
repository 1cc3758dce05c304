/* onnx_subgraph.c — fuzz harness: an ONNX model indexed for cutting
 * (stages/lib/onnx/subgraph.c, reduce's reader), then the last node's
 * ancestry closed against the graph inputs and packed, as reduce does. */
#include <stdlib.h>
#include "fuzz/fuzz.h"
#include "onnx/subgraph.h"

static int cut_last(sg_model_t *s, perr_t *e)
{
    int out = -1;
    for (int i = s->n_nodes - 1; i >= 0 && out < 0; i--) if (s->n_out[i]) out = s->out[i][0];
    if (out < 0) return 0;
    unsigned char *keep = calloc(s->n_nodes + 1, 1), *have = calloc(s->n_vals + 1, 1);
    sg_ancestors(s, out, keep);
    for (int v = 0; v < s->n_vals; v++) have[v] = (unsigned char)s->is_input[v];
    int *cut = NULL, ncut = 0, rc = sg_close(s, keep, have, out, &cut, &ncut, e) < 0 ? -1 : 0;
    if (!rc) {
        tensor_t t = {.dtype = DT_FLOAT, .ndim = 1, .dims = {1}};
        const tensor_t **ts = calloc(ncut + 1, sizeof *ts), *ot = &t;
        for (int i = 0; i < ncut; i++) ts[i] = &t;
        uint8_t *buf;
        size_t len;
        if (!(rc = sg_pack(s, keep, cut, ts, ncut, &out, &ot, 1, "fuzz", &buf, &len, e))) free(buf);
        free(ts);
    }
    free(cut); free(keep); free(have);
    return rc;
}

FUZZ_READER(onnx_subgraph)
{
    sg_model_t s;
    int rc = sg_load(fuzz_file("model.onnx", d, n), &s, e);
    if (!rc) rc = cut_last(&s, e);
    sg_free(&s);
    return rc;
}
