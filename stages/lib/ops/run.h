/* run.h — running one node: the single place where a kernel is called, used
 * both by constant folding at build time and by the executor at run time.
 * It applies the precision semantics (docs/precision.md) around the kernel:
 * half-typed inputs widened to float32 for kernels that do not take them,
 * the inputs precision.c flagged rounded to TF32/FP16/BF16, and float outputs
 * rounded to the node's storage type. */
#ifndef PARITY_OPS_RUN_H
#define PARITY_OPS_RUN_H

#include "ops/ops.h"

/* The most inputs or outputs one node may have (SSD's anchor Concat has
 * over a hundred). */
#define MAX_NODE_IO 512

/* The executor's memory kept across nodes and runs: kernels take blocks
 * from the front (op_ctx_t.scratch), node_run the rounded copies of a
 * node's inputs from the back (`reserved` of them while the node runs). */
typedef struct scratch_pool {
    void *blocks[8];
    size_t sizes[8];
    int used;
    int reserved;
} scratch_pool_t;

void scratch_pool_free(scratch_pool_t *p);

/* Resolves node->op for every node; fails on the first unsupported one with
 * "node 'x' (Op, opset N): operator not supported". */
int resolve_ops(graph_t *g, perr_t *e);

/* Computes the output shapes of node n from its inputs (data may be NULL for
 * non-constant inputs). Returns OP_OK, OP_DYNAMIC or OP_ERROR. */
int node_infer_shapes(const node_t *n, const tensor_t *const *in, tensor_t **out, perr_t *e);

/* Runs node n: infers shapes, allocates outputs (freeing what they held) and
 * calls the kernel. cache: the node's slot kept across runs (op_ctx_t), or NULL. */
int node_run(const node_t *n, const tensor_t *const *in, tensor_t **out, int threads,
             scratch_pool_t *pool, void **cache, perr_t *e);

/* Node n's fused activation (passes/fuse.c) on len float32 outputs in
 * place: what node_run applies after a kernel that left it (act_done 0);
 * elementwise kernels apply it to each block of output they finish. */
void node_act_range(const node_t *n, float *x, int64_t len);

/* Where Slice node n's output lies in its input as one contiguous run: the
 * byte offset, or -1 (ops/tensor/slice.c). in[0] needs a shape only; the other
 * inputs are the node's (constants, or NULL). */
int64_t slice_run_at(const node_t *n, const tensor_t *const *in, int n_in);
/* Whether Pad node n pads nothing (every pad 0; ops/tensor/pad.c), the
 * inputs as for slice_run_at. */
int pad_is_noop(const node_t *n, const tensor_t *const *in, int n_in);

#endif
