/* run.c — the one path from a node to its kernel (see run.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ops/run.h"
#include "ops/elementwise/vmath.h"
#include "util/pool.h"
#include "tensor/half.h"

void scratch_pool_free(scratch_pool_t *p)
{
    for (int i = 0; i < 8; i++) free(p->blocks[i]);
    memset(p, 0, sizeof *p);
}

/* Block k of the pool, grown to hold bytes. */
static void *pool_block(scratch_pool_t *p, int k, size_t bytes)
{
    if (p->sizes[k] < bytes) {
        free(p->blocks[k]);
        p->blocks[k] = xmalloc_huge(bytes);
        p->sizes[k] = bytes;
    }
    return p->blocks[k];
}

static void *scratch_get(op_ctx_t *c, size_t bytes)
{
    scratch_pool_t *p = c->scratch_owner;
    if (!p || p->used + p->reserved >= 8) return NULL;
    return pool_block(p, p->used++, bytes);
}

/* Where the rounded copy of an input goes: one of the pool's last two
 * blocks, kept across nodes and runs, or a fresh allocation (*owns = 1)
 * when there is no pool, both are taken, or the node runs subgraphs (whose
 * nodes take the same pool). Issue 41: a fresh block per copy made the
 * TF32 rounding of every Conv/MatMul input write to cold, newly faulted
 * pages. */
#define ROUND_BLOCKS 2
static void *round_buffer(scratch_pool_t *p, const node_t *n, size_t bytes, int *owns)
{
    *owns = !p || n->n_sub || p->reserved == ROUND_BLOCKS;
    if (*owns) return xmalloc(bytes);
    return pool_block(p, 7 - p->reserved++, bytes);
}

int resolve_ops(graph_t *g, perr_t *e)
{
    for (int i = 0; i < g->n_nodes; i++) {
        node_t *n = &g->nodes[i];
        const op_def_t *near = NULL;
        n->op = op_lookup(n->domain, n->op_type, n->opset, &near);
        for (int k = 0; n->op && k < n->n_sub; k++)
            if (resolve_ops(n->sub[k], e)) return -1;
        if (n->op) continue;
        if (near)
            return BAD(e, "%s: node '%s' (%s%s%s, opset %d): operator not supported at this opset (parity has it from opset %d)",
                       g->source, n->name, n->domain, n->domain[0] ? "." : "", n->op_type, n->opset, near->since);
        return BAD(e, "%s: node '%s' (%s%s%s, opset %d): operator not supported",
                   g->source, n->name, n->domain, n->domain[0] ? "." : "", n->op_type, n->opset);
    }
    return 0;
}

static int is_half(dtype_t t) { return t == DT_FLOAT16 || t == DT_BFLOAT16; }

int node_infer_shapes(const node_t *n, const tensor_t *const *in, tensor_t **out, perr_t *e)
{
    /* shape functions of typed kernels see float32 in place of half types */
    tensor_t wide[16];
    const tensor_t *args[16];
    const tensor_t *const *use = in;
    dtype_t half = DT_UNDEFINED;
    if (!n->op->any_type && n->n_in <= 16) {
        for (int i = 0; i < n->n_in; i++) {
            args[i] = in[i];
            if (in[i] && is_half(in[i]->dtype)) {
                half = in[i]->dtype;
                wide[i] = *in[i];
                wide[i].dtype = DT_FLOAT;
                wide[i].data = NULL;   /* half data is not float data */
                args[i] = &wide[i];
            }
        }
        use = args;
    }
    op_ctx_t c = {.node = n, .n_in = n->n_in, .in = use, .n_out = n->n_out, .out = out, .err = e};
    int rc = n->op->shape(&c);
    if (rc == OP_OK && half)
        for (int i = 0; i < n->n_out; i++)
            if (out[i] && out[i]->dtype == DT_FLOAT) out[i]->dtype = half;
    return rc;
}

/* y = x rounded to p (y may be x), a block of ROUND_BLOCK elements per
 * task on the pool: the rounding of a float32 input to the node's compute
 * precision (precision.c decides which inputs need it: GEMM inputs, and
 * casts at boundaries) and of FP16/BF16-stored outputs. Elementwise, so
 * the bits do not depend on the blocks. */
#define ROUND_BLOCK ((int64_t)1 << 16)
typedef struct round_job { float *y; const float *x; int64_t count; precision_t p; } round_job_t;

static void round_block(void *ctx, int64_t t)
{
    const round_job_t *j = ctx;
    int64_t s = t * ROUND_BLOCK, len = j->count - s < ROUND_BLOCK ? j->count - s : ROUND_BLOCK;
    float *y = j->y + s;
    const float *x = j->x + s;
    switch (j->p) {
    case PREC_TF32: round_tf32_copy(y, x, len); break;
    case PREC_FP16: round_f16_copy(y, x, len); break;
    case PREC_BF16: round_bf16_copy(y, x, len); break;
    default: if (y != x) memcpy(y, x, (size_t)len * sizeof *y); break;
    }
}

static void round_to_precision(float *y, const float *x, int64_t count, precision_t p)
{
    round_job_t j = {y, x, count, p};
    pool_for((count + ROUND_BLOCK - 1) / ROUND_BLOCK, round_block, &j);
}

/* The fused epilogue (passes/fuse.c) on the layer's float32 output, a
 * block of elements per task: the same formulas as the Relu, Clip and
 * LeakyRelu kernels, the standalone Sigmoid's function (vmath.h, the same
 * bits on every CPU), and SiLU's product as the Mul computes it
 * (vm_silu_f32), so fusing changes no bit. */
#define ACT_BLOCK 16384
typedef struct act_job { const node_t *n; float *x; int64_t count; } act_job_t;

void node_act_range(const node_t *n, float *x, int64_t len)
{
    const float a = n->act_a, b = n->act_b;
    switch (n->act) {
    case ACT_RELU: for (int64_t i = 0; i < len; i++) x[i] = x[i] < 0 ? 0.0f : x[i]; break;
    case ACT_CLIP: for (int64_t i = 0; i < len; i++) x[i] = x[i] < a ? (a > b ? b : a) : x[i] > b ? b : x[i]; break;
    case ACT_LEAKY: for (int64_t i = 0; i < len; i++) x[i] = x[i] < 0 ? a * x[i] : x[i]; break;
    case ACT_SIGMOID: vm_sigmoid_f32(x, x, len); break;
    case ACT_SILU: vm_silu_f32(x, x, len); break;
    default: break;
    }
}

static void act_block(void *ctx, int64_t t)
{
    const act_job_t *j = ctx;
    int64_t s = t * ACT_BLOCK, len = j->count - s < ACT_BLOCK ? j->count - s : ACT_BLOCK;
    node_act_range(j->n, j->x + s, len);
}

static void apply_activation(const node_t *n, float *x, int64_t count)
{
    if (n->act == ACT_NONE) return;
    act_job_t j = {n, x, count};
    pool_for((count + ACT_BLOCK - 1) / ACT_BLOCK, act_block, &j);
}

/* y += r, elementwise in float32 (the residual Add a GPU engine runs in
 * the convolution's epilogue), a block per task. */
typedef struct res_job { float *y; const float *r; int64_t count; } res_job_t;

static void res_block(void *ctx, int64_t t)
{
    const res_job_t *j = ctx;
    int64_t s = t * ACT_BLOCK, len = j->count - s < ACT_BLOCK ? j->count - s : ACT_BLOCK;
    for (int64_t i = s; i < s + len; i++) j->y[i] = j->y[i] + j->r[i];
}

static int add_residual(const node_t *n, const tensor_t *r, tensor_t *y, perr_t *e)
{
    if (!r || !y || r->dtype != DT_FLOAT || y->dtype != DT_FLOAT || tensor_numel(r) != tensor_numel(y))
        return BAD(e, "node '%s' (%s): the fused residual does not match the output (%s, %lld values for %lld)",
                   n->name, n->op_type, r ? dtype_name(r->dtype) : "none", r ? (long long)tensor_numel(r) : 0LL,
                   y ? (long long)tensor_numel(y) : 0LL);
    res_job_t j = {y->data, r->data, tensor_numel(y)};
    pool_for((j.count + ACT_BLOCK - 1) / ACT_BLOCK, res_block, &j);
    return 0;
}

/* The storage rounding node_run would apply to output o after the kernel,
 * which the kernel may apply itself (op_ctx_t.round_out): FP16/BF16
 * storage of a float output, none for a layer that keeps its inputs'
 * storage, for a half-typed op (its result is narrowed, not rounded) or
 * with a residual still to add (the rounding comes after it). */
static dtype_t storage_rounding(const node_t *n, dtype_t half, const tensor_t *o)
{
    if (half || n->keeps_storage || n->residual || !o || o->dtype != DT_FLOAT) return DT_UNDEFINED;
    return n->storage == DT_FLOAT16 || n->storage == DT_BFLOAT16 ? n->storage : DT_UNDEFINED;
}

int node_run(const node_t *n, const tensor_t *const *in, tensor_t **out, int threads,
             scratch_pool_t *pool, void **cache, perr_t *e)
{
    enum { MAXIO = MAX_NODE_IO };
    if (n->n_in > MAXIO || n->n_out > MAXIO)
        return BAD(e, "node '%s' (%s): too many inputs or outputs", n->name, n->op_type);
    tensor_t tmp[MAXIO];
    int tmp_used[MAXIO] = {0};
    const tensor_t *args[MAXIO];
    dtype_t half = DT_UNDEFINED;
    int rc = 0, reserved = pool ? pool->reserved : 0;
    for (int i = 0; i < n->n_in; i++) {
        args[i] = in[i];
        if (!in[i]) continue;
        int widen = !n->op->any_type && is_half(in[i]->dtype);
        int reduce = i < 64 && (n->round_inputs >> i & 1) && n->precision != PREC_FP32 &&
                     (in[i]->dtype == DT_FLOAT || widen);
        if (!widen && !reduce) continue;
        memset(&tmp[i], 0, sizeof tmp[i]);
        if (widen) {
            half = in[i]->dtype;
            if (tensor_cast(in[i], DT_FLOAT, &tmp[i], e)) { rc = -1; goto done; }
        } else {   /* the rounded copy in one pass */
            tmp[i] = *in[i];
            tmp[i].data = round_buffer(pool, n, tensor_nbytes(in[i]) + 16, &tmp[i].owns);
            round_to_precision(tmp[i].data, in[i]->data, tensor_numel(in[i]), n->precision);
        }
        tmp_used[i] = 1;
        if (reduce && widen) round_to_precision(tmp[i].data, tmp[i].data, tensor_numel(&tmp[i]), n->precision);
        args[i] = &tmp[i];
    }
    /* an output may come with a preset buffer (the arena slot the memory plan
     * gave it): keep it when the shape fits, else allocate */
    void *preset[MAXIO];
    size_t preset_cap[MAXIO];
    for (int i = 0; i < n->n_out; i++) {
        preset[i] = NULL;
        if (!out[i]) continue;
        if (out[i]->data && !out[i]->owns) {
            preset[i] = out[i]->data;
            preset_cap[i] = out[i]->cap;
        }
        tensor_free_data(out[i]);
    }
    /* a fused residual: the kernel sees its own inputs, and the residual
     * apart (op_ctx_t.residual) to add in its epilogue where it can */
    op_ctx_t c = {.node = n, .n_in = n->n_in - (n->residual != 0), .in = args, .n_out = n->n_out, .out = out,
                  .threads = threads, .err = e, .scratch = scratch_get, .scratch_owner = pool, .cache = cache,
                  .residual = n->residual ? args[n->n_in - 1] : NULL};
    rc = n->op->shape(&c);
    if (rc == OP_DYNAMIC)
        rc = BAD(e, "node '%s' (%s): output shape unknown even with all inputs", n->name, n->op_type);
    if (rc) goto done;
    for (int i = 0; i < n->n_out; i++)
        if (out[i]) {
            if (preset[i] && tensor_nbytes(out[i]) <= preset_cap[i]) {
                out[i]->data = preset[i];
                out[i]->owns = 0;
                out[i]->cap = preset_cap[i];
                continue;
            }
            tensor_t shape = *out[i];
            if (tensor_alloc(out[i], shape.dtype, shape.ndim, shape.dims, e)) { rc = -1; goto done; }
        }
    if (pool) pool->used = 0;
    c.round_out = storage_rounding(n, half, out[0]);
    rc = n->op->run(&c);
    if (rc) goto done;
    if (n->residual && !c.res_done) {
        /* the activation comes after the residual: a kernel that applied it
         * without adding the residual got the order wrong */
        if (c.act_done) {
            rc = BAD(e, "node '%s' (%s): internal: activation applied before the fused residual", n->name, n->op_type);
            goto done;
        }
        if ((rc = add_residual(n, args[n->n_in - 1], out[0], e))) goto done;
    }
    int act_done = c.act_done;
    if (n->act && !act_done && out[0] && out[0]->dtype == DT_FLOAT) apply_activation(n, out[0]->data, tensor_numel(out[0]));
    for (int i = 0; i < n->n_out; i++) {
        tensor_t *o = out[i];
        if (!o || o->dtype != DT_FLOAT) continue;
        if (n->keeps_storage && !half) continue;   /* rounding would change no bit (precision/kept.c) */
        if (i == 0 && c.round_done) continue;       /* the kernel rounded it (op_ctx_t.round_out) */
        if (half) {   /* a half-typed op computed in float32 stores its result as half */
            tensor_t h = {0};
            if (tensor_cast(o, half, &h, e)) { rc = -1; goto done; }
            tensor_free_data(o);
            *o = h;
        } else if (n->storage == DT_FLOAT16) {
            round_to_precision(o->data, o->data, tensor_numel(o), PREC_FP16);
        } else if (n->storage == DT_BFLOAT16) {
            round_to_precision(o->data, o->data, tensor_numel(o), PREC_BF16);
        }
    }
done:
    for (int i = 0; i < n->n_in; i++)
        if (tmp_used[i]) tensor_free_data(&tmp[i]);
    if (pool) pool->reserved = reserved;
    return rc;
}
