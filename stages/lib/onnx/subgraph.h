/* subgraph.h — cutting a subgraph out of an ONNX model: the model indexed by
 * value (who produces each tensor, who reads it, outer-scope names read by
 * If/Loop/Scan bodies counted as inputs of their node), the closure of a set
 * of kept nodes (a tensor with no value at hand pulls its producer in), and
 * the standalone model of the kept nodes written as they are (opset, names,
 * attributes, subgraphs untouched) with the cut tensors as graph inputs. */
#ifndef PARITY_ONNX_SUBGRAPH_H
#define PARITY_ONNX_SUBGRAPH_H

#include <stdint.h>
#include "tensor/tensor.h"
#include "util/nameidx.h"
#include "onnx.pb-c.h"

typedef struct sg_model {
    Onnx__ModelProto *m;
    int n_nodes, n_vals;
    char **val;               /* value names (borrowed from m) */
    int *producer;            /* per value: node index, -1 for inputs and initializers */
    int *init;                /* per value: initializer index, -1 none */
    int *is_input;            /* per value: a graph input without initializer */
    int *n_in, **in;          /* per node: values read (explicit, then outer-scope), no empties */
    int *n_out, **out;
    name_index_t names;       /* val by name */
} sg_model_t;

/* Reads and indexes an ONNX file; BAD naming the file when it is none. */
int sg_load(const char *path, sg_model_t *s, perr_t *e);
void sg_free(sg_model_t *s);
/* Value index of a name, -1 when the model has none. */
int sg_value(const sg_model_t *s, const char *name);
/* Marks in anc (n_nodes bytes) every node the value depends on. */
void sg_ancestors(const sg_model_t *s, int value, unsigned char *anc);

/* The cut of a kept set: keep (n_nodes bytes) is closed under "a value read
 * by a kept node that has no value at hand (have[v] == 0) and is no
 * initializer brings its producer in"; kept nodes from which out cannot be
 * reached are dropped. Fills the cut inputs (values read by kept nodes,
 * produced by none of them, no initializer), in first-read order.
 * Returns the number of kept nodes, or -1 (BAD) when a value needed has
 * neither a value nor a producer. */
int sg_close(const sg_model_t *s, unsigned char *keep, const unsigned char *have, int out, int **cut, int *n_cut,
             perr_t *e);

/* Serialises the model of the kept nodes: graph inputs the cut values with
 * the types and shapes of the tensors given, outputs likewise, the kept
 * nodes in the model's order, the initializers they read. *buf malloc'd. */
int sg_pack(const sg_model_t *s, const unsigned char *keep, const int *in, const tensor_t *const *in_t, int n_in,
            const int *out, const tensor_t *const *out_t, int n_out, const char *graph_name, uint8_t **buf,
            size_t *len, perr_t *e);

#endif
