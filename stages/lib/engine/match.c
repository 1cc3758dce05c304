/* match.c — which values of one built graph are, provably, values of
 * another: the layer correspondence behind sharing a run across engines
 * (share.c).
 *
 * The validation matrix builds the same model at several precisions. Its
 * fp16 and mixed engines compute the whole ResNet backbone with the same
 * layers (mixed pins only LayerNorm, Softmax and the reductions to fp32),
 * so a run of the mixed engine could take the backbone's values from the
 * fp16 run. Which layers agree is decided from the engines alone, never
 * from layer names or the plan: a value of b is a value of a when its
 * producing layer has the same op (domain, opset, kernel), attributes
 * (byte for byte), precision, storage, input rounding, fused activation
 * and residual, the same constant inputs byte for byte and the same other
 * inputs -- recursively, down to graph inputs that match by name, dtype
 * and shape. Layer names and fused_from lists do not change the
 * arithmetic and are not compared. The executor is deterministic (the same
 * kernel on the same bytes gives the same bytes at any thread count), so
 * such a value holds the same bytes in both runs.
 *
 * Hash-consing: a's layers go into a table under a signature of their
 * fields and inputs (a's own value indices; for a constant its type,
 * shape and a sample of its bytes); b's layers, in order, look up the
 * signature they would have with their inputs replaced by their matches,
 * and every candidate is then verified field by field and byte by byte.
 * A hash never decides anything. Control flow (If, Loop, Scan) and
 * layers never folded (random ops) match nothing: they and what they
 * reach run in b's own run. */
#include <stdlib.h>
#include <string.h>
#include "engine/match.h"
#include "ops/ops.h"

static uint64_t mix(uint64_t h, uint64_t x)
{
    h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

static uint64_t mix_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 0x100000001b3ull;
    return h;
}

static uint64_t mix_str(uint64_t h, const char *s) { return mix_bytes(h, s ? s : "", s ? strlen(s) + 1 : 1); }

/* A constant's type, shape and up to 128 bytes from each end: enough to
 * tell most weights of one shape apart without reading them whole (the
 * match is verified byte for byte anyway). */
static uint64_t const_sig(uint64_t h, const tensor_t *t)
{
    h = mix(h, (uint64_t)t->dtype);
    h = mix(h, (uint64_t)t->ndim);
    for (int d = 0; d < t->ndim; d++) h = mix(h, (uint64_t)t->dims[d]);
    if (t->dtype == DT_SEQUENCE || !t->data) return h;
    size_t n = tensor_nbytes(t), k = n < 128 ? n : 128;
    h = mix_bytes(h, t->data, k);
    return mix_bytes(h, (const char *)t->data + n - k, k);
}

/* May a layer of op o be taken from another run? Not control flow (its
 * subgraphs are not compared) and not the ops never folded (random). */
static int matchable(const node_t *n)
{
    return n->op && !n->op->control && !n->op->no_fold && n->n_sub == 0;
}

/* The signature of node n of g, its non-constant inputs named by cls[]
 * (a value of the table's graph; -1: no match, then 0 is returned). */
static int node_sig(const graph_t *g, const node_t *n, const int *cls, uint64_t *out)
{
    uint64_t h = mix_str(0x51ed270b27f1a3c9ull, n->op_type);
    h = mix_str(h, n->domain);
    h = mix(h, (uint64_t)n->opset);
    h = mix(h, (uint64_t)n->precision);
    h = mix(h, (uint64_t)n->storage);
    h = mix(h, n->round_inputs);
    h = mix(h, (uint64_t)n->act);
    h = mix(h, ((uint64_t)n->residual << 1) | (uint64_t)n->keeps_storage);
    h = mix(h, ((uint64_t)n->n_in << 32) | (uint64_t)n->n_out);
    h = mix(h, (uint64_t)n->n_attr);
    for (int k = 0; k < n->n_in; k++) {
        int v = n->in[k];
        if (v < 0) h = mix(h, 0xabcdefull);
        else if (g->vals[v].kind == VAL_CONST) h = const_sig(h, &g->vals[v].t);
        else if (cls[v] < 0) return 0;
        else h = mix(h, (uint64_t)cls[v] + 1);
    }
    *out = h;
    return 1;
}

/* Attribute lists equal byte for byte once serialised (the same order:
 * both engines were built by the same passes from the same model, and
 * another order only costs the match). */
static int same_attrs(const node_t *a, const node_t *b)
{
    if (a->n_attr != b->n_attr) return 0;
    int same = 1;
    for (int i = 0; i < a->n_attr && same; i++) {
        size_t na = onnx__attribute_proto__get_packed_size(a->attr[i]);
        size_t nb = onnx__attribute_proto__get_packed_size(b->attr[i]);
        if (na != nb) return 0;
        uint8_t *pa = xmalloc(na + 1), *pb = xmalloc(nb + 1);
        onnx__attribute_proto__pack(a->attr[i], pa);
        onnx__attribute_proto__pack(b->attr[i], pb);
        same = !memcmp(pa, pb, na);
        free(pa);
        free(pb);
    }
    return same;
}

static int same_str(const char *a, const char *b) { return !strcmp(a ? a : "", b ? b : ""); }

static int same_type(const tensor_t *a, const tensor_t *b)
{
    return a->dtype == b->dtype && a->ndim == b->ndim && !memcmp(a->dims, b->dims, (size_t)a->ndim * sizeof *a->dims);
}

/* Every field of the two layers that changes their arithmetic, their
 * constant inputs byte for byte, and b's other inputs matched to a's. */
static int same_layer(const graph_t *ga, const node_t *a, const graph_t *gb, const node_t *b, const int *src)
{
    if (a->op != b->op || !same_str(a->op_type, b->op_type) || !same_str(a->domain, b->domain) || a->opset != b->opset ||
        a->n_in != b->n_in || a->n_out != b->n_out || a->n_implicit != b->n_implicit || a->precision != b->precision ||
        a->storage != b->storage || a->round_inputs != b->round_inputs || a->act != b->act || a->residual != b->residual ||
        a->keeps_storage != b->keeps_storage || memcmp(&a->act_a, &b->act_a, sizeof a->act_a) ||
        memcmp(&a->act_b, &b->act_b, sizeof a->act_b))
        return 0;
    for (int k = 0; k < a->n_in; k++) {
        int va = a->in[k], vb = b->in[k];
        if (va < 0 || vb < 0) {
            if (va != vb) return 0;
            continue;
        }
        const value_t *xa = &ga->vals[va], *xb = &gb->vals[vb];
        if ((xa->kind == VAL_CONST) != (xb->kind == VAL_CONST)) return 0;
        if (xb->kind == VAL_CONST ? !tensor_identical(&xa->t, &xb->t) : src[vb] != va) return 0;
    }
    for (int k = 0; k < a->n_out; k++) {
        int va = a->out[k], vb = b->out[k];
        if (va < 0 || vb < 0) {
            if (va != vb) return 0;
            continue;
        }
        const value_t *ya = &ga->vals[va], *yb = &gb->vals[vb];
        if (ya->kind != VAL_ACTIVATION || yb->kind != VAL_ACTIVATION || ya->shape_known != yb->shape_known ||
            !same_type(&ya->t, &yb->t))
            return 0;
    }
    return same_attrs(a, b);
}

/* The graph inputs of b that are a's: not varying, the same name, dtype
 * and shape (the bytes are checked at run time: share.c). */
static void match_inputs(const graph_t *a, const graph_t *b, const unsigned char *vary, int *src)
{
    for (int k = 0; k < b->n_inputs; k++) {
        int vb = b->inputs[k], va = graph_find(a, b->vals[vb].name);
        if (vary[k] || va < 0 || a->vals[va].kind != VAL_INPUT) continue;
        const value_t *xa = &a->vals[va], *xb = &b->vals[vb];
        if (xa->shape_known == xb->shape_known && same_type(&xa->t, &xb->t)) src[vb] = va;
    }
}

int *graph_match(const graph_t *a, const graph_t *b, const unsigned char *vary, int *n_matched)
{
    int *src = xmalloc(((size_t)b->n_vals + 1) * sizeof *src);
    int *self = xmalloc(((size_t)a->n_vals + 1) * sizeof *self);
    for (int v = 0; v < b->n_vals; v++) src[v] = -1;
    for (int v = 0; v < a->n_vals; v++) self[v] = v;
    match_inputs(a, b, vary, src);
    /* open addressing, at most half full; slots hold a node index + 1 */
    size_t cap = 16;
    while (cap < 2 * (size_t)a->n_nodes + 2) cap <<= 1;
    int *slot = xcalloc(cap, sizeof *slot);
    uint64_t *hash = xcalloc(cap, sizeof *hash);
    for (int i = 0; i < a->n_nodes; i++) {
        uint64_t h;
        if (!matchable(&a->nodes[i]) || !node_sig(a, &a->nodes[i], self, &h)) continue;
        size_t j = h & (cap - 1);
        while (slot[j]) j = (j + 1) & (cap - 1);
        slot[j] = i + 1;
        hash[j] = h;
    }
    int matched = 0;
    for (int i = 0; i < b->n_nodes; i++) {
        const node_t *nb = &b->nodes[i];
        uint64_t h;
        if (!matchable(nb) || !node_sig(b, nb, src, &h)) continue;
        for (size_t j = h & (cap - 1); slot[j]; j = (j + 1) & (cap - 1)) {
            const node_t *na = &a->nodes[slot[j] - 1];
            if (hash[j] != h || !same_layer(a, na, b, nb, src)) continue;
            for (int k = 0; k < nb->n_out; k++)
                if (nb->out[k] >= 0) src[nb->out[k]] = na->out[k];
            matched++;
            break;
        }
    }
    free(slot);
    free(hash);
    free(self);
    if (n_matched) *n_matched = matched;
    return src;
}
