/* act.h — the activations a layer may apply to its output before storing
 * it (node_t.act in the IR, the GEMM tiles' epilogue in ops/gemm/fgemm.h). A
 * header of its own so that the kernels name them without the whole IR. */
#ifndef PARITY_ACT_H
#define PARITY_ACT_H

/* ACT_SILU: x * Sigmoid(x), fused from Sigmoid and Mul (passes/fuse.c) */
enum { ACT_NONE = 0, ACT_RELU, ACT_CLIP, ACT_LEAKY, ACT_SIGMOID, ACT_SILU };

#endif
