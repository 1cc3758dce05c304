/* passes.h — the build passes: transformations of the graph IR that
 * build-engine applies, each one job, walked in order by the table in
 * engine/build.c (docs/design.md, "The build passes"). They sit above both
 * the IR (graph/) and the kernels (ops/): folding runs kernels, and the
 * memory plan and widening read the op table. */
#ifndef PARITY_PASSES_H
#define PARITY_PASSES_H

#include "graph/graph.h"

/* shapes.c: applies "NAME=1x3x320x320" to a graph input (replacing symbolic dims). */
int graph_set_input_shape(graph_t *g, const char *spec, perr_t *e);
/* fold.c: walks nodes in order: infers output shapes where inputs are known
 * and folds nodes whose inputs are all constant (and Shape/Size of a static
 * shape), so the Shape->Gather->Concat arithmetic of exporters disappears.
 * Returns the number of folded nodes, or -1. */
int graph_fold(graph_t *g, int64_t max_fold_bytes, perr_t *e);
/* control.c: folds the subgraphs of control-flow node i (graph_fold calls
 * it); an If with a constant condition is replaced by its branch (returns
 * 1: node i is now the branch's first node). 0 otherwise, -1 on error. */
int graph_fold_control(graph_t *g, int i, int64_t max_fold_bytes, perr_t *e);
/* widen.c: a graph whose float16 (bfloat16) tensors come from float16
 * weights and Casts of float32 inputs carries them as float32 values
 * rounded to that type (the layers' storage), so layers fuse and nothing is
 * widened per run; the same values. Returns how many activations changed
 * type (0: left as it is), -1 on error. */
int graph_widen_half(graph_t *g, perr_t *e);
/* memplan.c: liveness-based memory plan: assigns arena offsets to
 * static-shaped activations so values whose lifetimes do not overlap share
 * memory. Returns the arena size in bytes. */
int64_t graph_plan_memory(graph_t *g);

/* The folds a deploy engine does at build time, after precision assignment
 * (only layers of equal precision fuse) and before the boundary rounding
 * (folded weights are rounded once), each of which a precision config may
 * turn off (fold: {batchnorm: false}; docs/precision.md). Each is one round
 * over the graph and its subgraphs and returns how many nodes it fused, in
 * this order (fuse.c, foldbn.c, fuseres.c):
 *   BatchNormalization into the Conv/ConvTranspose/Gemm before it (in
 *   float32, before weights are cast); */
int graph_fold_batchnorm(graph_t *g);
/*   per-channel scale/bias Mul/Add into a Conv, bias Add into a MatMul; */
int graph_fold_scale_bias(graph_t *g);
/*   Sigmoid and Mul (SiLU) into the layer producing their input; */
int graph_fuse_silu(graph_t *g);
/*   a residual Add into the Conv before it; */
int graph_fold_residual(graph_t *g);
/*   Relu/Clip/LeakyRelu/Sigmoid into the Conv/ConvTranspose/Gemm that feeds only them. */
int graph_fuse_activations(graph_t *g);
/* Which of them a build runs (precision config key fold:; SiLU goes with
 * the activations). */
enum { FOLD_BATCHNORM = 1, FOLD_SCALE_BIAS = 2, FOLD_ACTIVATION = 4, FOLD_RESIDUAL = 8, FOLD_ALL = 15 };

#endif
