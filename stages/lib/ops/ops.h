/* ops.h — the operator table and the contract every kernel follows.
 *
 * One row per (domain, op, opset range): a shape function and a kernel
 * (optable.c holds the sorted table; kernels live one family per file).
 *
 * Shape functions set each output's dtype, ndim and dims. They are called at
 * build time, when only constant inputs carry data (in[i]->data == NULL for
 * the others), and again at run time with every input's data; a shape that
 * depends on non-constant data returns OP_DYNAMIC at build time.
 * Kernels are called with outputs already allocated to that shape, and must
 * not allocate in their hot loops; scratch comes from ctx->scratch().
 */
#ifndef PARITY_OPS_H
#define PARITY_OPS_H

#include "graph/graph.h"
#include "tensor/dispatch.h"

enum { OP_OK = 0, OP_ERROR = -1, OP_DYNAMIC = 1 };

typedef struct op_ctx {
    const node_t *node;
    int n_in;
    const tensor_t *const *in;   /* in[i] NULL when an optional input is omitted */
    int n_out;
    tensor_t **out;
    int threads;                 /* worker threads allowed for this kernel */
    perr_t *err;
    /* Scratch memory owned by the executor, valid until the kernel returns. */
    void *(*scratch)(struct op_ctx *c, size_t bytes);
    void *scratch_owner;
    /* This node's slot of memory kept across runs (by the execution
     * session, engine/exec.h, until it closes), or NULL.
     * Given only where every input past the first is a constant of the
     * graph, so a kernel may keep there what depends on those alone (its
     * packed weights); a malloc'ed block, freed with free(). */
    void **cache;
    /* Set by a kernel that applied node->act (the fused activation) itself,
     * so the executor does not apply it again. */
    int act_done;
    /* A fused residual (node->residual: the node's last input, not among
     * in[]), or NULL. A kernel that adds it itself -- after the bias, before
     * the activation, as the separate Add would -- sets res_done (and then
     * act_done); else the executor adds it and then applies the activation. */
    const tensor_t *residual;
    int res_done;
    /* The storage rounding of output 0 (DT_FLOAT16 or DT_BFLOAT16; else
     * DT_UNDEFINED), which the executor applies in a pass of its own after
     * the kernel, the residual and the activation. A kernel that rounds its
     * float output itself -- after everything else, while it is in cache --
     * sets round_done, and the executor skips that pass (issue 41: the
     * element-wise layers of an FP16 model). Given only where no residual
     * is left to add. */
    dtype_t round_out;
    int round_done;
} op_ctx_t;

typedef int (*op_shape_fn)(op_ctx_t *c);
typedef int (*op_kernel_fn)(op_ctx_t *c);

typedef struct op_def {
    const char *domain;          /* "" = ai.onnx */
    const char *op;
    int since, until;            /* opset range [since, until]; until 0 = open */
    op_shape_fn shape;
    op_kernel_fn run;
    /* GEMM-class ops round their inputs under TF32/FP16/BF16 (precision.c). */
    unsigned gemm_class : 1;
    /* Never folded at build time (random ops, ...). */
    unsigned no_fold : 1;
    /* Handles every element type itself, float16/bfloat16 included (ops that
     * only move bytes, Cast, Shape). Other ops never see half types: the
     * executor widens half inputs to float32, runs the kernel, and rounds
     * float outputs back to the storage type (docs/precision.md). */
    unsigned any_type : 1;
    /* Output 0 is input 0's bytes under another shape (Reshape, Flatten,
     * Squeeze, Unsqueeze, Identity): the memory plan may give both the
     * same bytes, and the kernel then copies nothing. */
    unsigned view : 1;
    /* If, Loop, Scan: run by the executor through their subgraphs
     * (engine/control.c); their kernel is never called. */
    unsigned control : 1;
    /* Output 0 may be written over an input of its shape and type: the
     * kernel reads each element of such an input for the last time no later
     * than it writes the output's element at the same place (elementwise
     * loops; Softmax, whose rows are read before they are written). The
     * memory plan then gives the output the bytes of such an input that no
     * later node reads (passes/memplan.c). */
    unsigned inplace : 1;
    /* The kernel keeps in op_ctx_t's cache only what depends on input 1
     * (MatMulInteger's B, packed): it gets the cache where
     * input 2 (A's zero point, computed per run by DynamicQuantizeLinear)
     * is not constant. */
    unsigned cache_in1 : 1;
} op_def_t;

/* Finds the row for an op at an opset; NULL if unsupported. If *nearest is
 * given it receives the nearest row of the same op (to say which opsets exist). */
const op_def_t *op_lookup(const char *domain, const char *op, int opset, const op_def_t **nearest);
/* Every row, for listing and sweeps. */
const op_def_t *op_table(int *n);

/* Error helpers that name the node ("node '/x/Conv' (Conv): ..."). */
int op_fail(op_ctx_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Checks the input count against [min, max]. */
int op_check_inputs(op_ctx_t *c, int min, int max);
/* Sets output i to a dtype and shape (with the usual size checks). */
int op_set_out(op_ctx_t *c, int i, dtype_t dt, int ndim, const int64_t *dims);
/* Shape function for ops whose output 0 has input 0's type and shape. */
int shape_same_as_input0(op_ctx_t *c);
/* Multidirectional (numpy) broadcasting of n shapes; returns rank or -1. */
int broadcast_shapes(int n, const tensor_t *const *ts, int64_t *out_dims, perr_t *e, const node_t *node);
/* Normalises a possibly negative axis against a rank; -1 (with error) if out of range. */
int op_axis(op_ctx_t *c, int64_t axis, int rank);
/* Reads an int64/int32 1-D tensor input (e.g. Reshape's shape) into dst. */
int op_read_ints(op_ctx_t *c, const tensor_t *t, int64_t *dst, int max);

/* Registration lists each family file provides (see optable.c). */
#define OP_FAMILY(name) extern const op_def_t name[]; extern const int name##_count
OP_FAMILY(ops_elementwise);
OP_FAMILY(ops_tensor);
OP_FAMILY(ops_nn);
OP_FAMILY(ops_reduce);
OP_FAMILY(ops_misc);
OP_FAMILY(ops_sequence);

#endif
