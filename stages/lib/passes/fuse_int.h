/* fuse_int.h — what the fusion passes (fuse.c, foldbn.c) share: the
 * conditions two layers fuse under and the bookkeeping of a fused pair. */
#ifndef PARITY_FUSE_INT_H
#define PARITY_FUSE_INT_H

#include "graph/graph.h"

/* Same storage type, and equal precisions (or a TF32 GEMM before an FP32 layer). */
int fuse_same_precision(const node_t *c, const node_t *a);
/* The node producing input `side` of node a when a is that value's only
 * reader and a's other input (1 - side) exists; -1 otherwise. */
int fuse_sole_producer(const graph_t *g, const node_t *a, int side, const int *readers, const char *drop);
/* Layer p takes over node i's output; node i is dropped (drop[i] = 1). */
void fuse_absorb(graph_t *g, int p, int i, char *drop);
/* A new float32 constant named LAYER/WHAT of these dims; its data, and its
 * value index in *index (g->vals may move: re-read pointers into it). */
float *fuse_new_const(graph_t *g, const char *layer, const char *what, int ndim, const int64_t *dims, int *index);
/* Makes value `bias` the layer's input 2 (its bias), adding the slot if needed. */
void fuse_set_bias(node_t *c, int bias);
/* fuseres.c: Conv + Add(residual) into one layer (node->residual). */
int fold_residual(graph_t *g, const int *readers, char *drop);
/* foldbn.c: BatchNormalization into the Conv/ConvTranspose/Gemm before it. */
int fold_batchnorm(graph_t *g, const int *readers, char *drop);

#endif
