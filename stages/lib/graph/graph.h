/* graph.h — parity's graph IR: values (tensors by name) and nodes in
 * execution order. Both the ONNX loader and the engine-file reader produce
 * it; the build passes (stages/lib/passes/, walked by engine/build.c)
 * transform it; the executor runs it. The IR knows nothing of kernels: a
 * node's `op` is an opaque pointer into the op table that ops/ fills in. */
#ifndef PARITY_GRAPH_H
#define PARITY_GRAPH_H

#include <stdint.h>
#include "graph/act.h"
#include "tensor/tensor.h"
#include "util/nameidx.h"
#include "onnx.pb-c.h"

struct op_def;

typedef enum value_kind {
    VAL_ACTIVATION = 0,   /* produced by a node */
    VAL_INPUT,            /* graph input, bound at run time */
    VAL_CONST,            /* initializer, Constant, or folded */
} value_kind_t;

/* Compute precisions (docs/precision.md). */
typedef enum precision {
    PREC_FP32 = 0, PREC_TF32, PREC_FP16, PREC_BF16,
} precision_t;
const char *precision_name(precision_t p);
int precision_from_name(const char *s);       /* -1 if unknown */

typedef struct value {
    char *name;
    tensor_t t;          /* dtype + dims once known; data for constants and at run time */
    value_kind_t kind;
    int shape_known;     /* dims are static and final */
    int producer;        /* node index, -1 for inputs/constants */
    int last_use;        /* index of the last node reading it, -1 if none */
    int is_output;
    int64_t offset;      /* arena offset from memory planning, -1 = dynamic */
    dtype_t half_typed;  /* the model's half type of a value carried as float32 (passes/widen.c); build only */
} value_t;

typedef struct node {
    char *name;
    char *op_type;
    char *domain;        /* "" for ai.onnx */
    int opset;           /* version of the node's domain the model imports */
    int n_in, n_out;
    int *in;             /* value indices; -1 for an omitted optional input */
    int *out;
    int n_attr;
    Onnx__AttributeProto **attr;   /* owned by the graph's attribute arena */
    const struct op_def *op;       /* resolved from the op table */
    /* precision assignment (filled by the precision pass; fp32 by default) */
    precision_t precision;
    dtype_t storage;               /* storage type of float outputs */
    char *reason;                  /* which rule chose the precision */
    uint64_t round_inputs;         /* bit i: round input i to the compute precision
                                      (the cast at a precision boundary) */
    char *fused_from;              /* comma-separated original node names */
    dtype_t model_storage;         /* the model's half type of its float outputs when the build
                                      carries them as float32 (passes/widen.c); build only */
    char *range_note;              /* float32 constants this layer reads beyond its precision's
                                      range (precision/range.c; layer report only, not in the engine) */
    /* an activation fused into this layer's output (passes/fuse.c): applied in
     * float32 before the storage rounding, as a GPU engine's fused epilogue */
    int act;                       /* ACT_* (graph/act.h) */
    float act_a, act_b;            /* clip min/max, leaky alpha */
    int residual;                  /* a residual Add fused into this Conv (passes/fuseres.c): its last input is
                                      added to the output in float32, before the activation (in the
                                      convolution's epilogue, ops/gemm/fgemm.c, where it runs there) */
    int keeps_storage;             /* its outputs are already in its storage type: no rounding
                                      (precision/kept.c; set at engine load, not in the engine) */
    /* control flow (If, Loop, Scan): the subgraphs of its graph attributes,
     * and how many of in[] are implicit: the outer values the subgraphs read
     * (captures), appended after the node's own inputs so liveness and the
     * memory plan see them */
    int n_sub;
    struct graph **sub;
    char **sub_attr;               /* "then_branch", "else_branch", "body" */
    int n_implicit;
} node_t;

typedef struct opset_import { char *domain; int version; } opset_import_t;

typedef struct graph {
    value_t *vals; int n_vals, cap_vals;
    name_index_t val_index;   /* vals by name, kept by graph_value (the only place values are added) */
    node_t *nodes; int n_nodes, cap_nodes;
    int *inputs; int n_inputs;
    int *outputs; int n_outputs;
    opset_import_t *opsets; int n_opsets;
    char *source;        /* file it came from, for messages */
    /* protobuf messages whose attributes nodes point into */
    void **keep; int n_keep;
    /* renamed attribute copies made while inlining functions (free()d) */
    Onnx__AttributeProto **attr_copies; int n_attr_copies;
    /* a subgraph's inputs are its formal inputs, then the outer values it
     * captures (same names as outside); n_formal_inputs counts the former
     * (equal to n_inputs in a top-level graph) */
    int n_formal_inputs;
    const struct graph *parent;    /* the enclosing graph while loading */
    int resorted;        /* nodes the loader moved to sort the graph (toposort.c) */
    int widened;         /* float16 activations carried as float32 (passes/widen.c) */
} graph_t;

graph_t *graph_new(const char *source);
void graph_free(graph_t *g);
/* Finds a value by name (hashed: constant time); -1 if absent. */
int graph_find(const graph_t *g, const char *name);
/* Finds or creates a value with this name. */
int graph_value(graph_t *g, const char *name);
/* Appends a node; in/out are value indices (copied). Returns node index. */
int graph_add_node(graph_t *g, const char *name, const char *op_type, const char *domain,
                   int opset, int n_in, const int *in, int n_out, const int *out);
int graph_opset(const graph_t *g, const char *domain);   /* 0 if not imported */
/* Frees what a node owns (not the node_t itself), subgraphs included. */
void node_free(node_t *n);
/* The subgraph of a graph attribute ("body", "then_branch"); NULL if none. */
struct graph *node_sub(const node_t *n, const char *attr);
/* Recomputes producer / last_use / is_output from the node list. */
void graph_index(graph_t *g);
/* toposort.c: orders the nodes so each follows the producers of what it
 * reads, keeping the file's order wherever it is already valid (stable,
 * deterministic). Returns how many nodes moved (also in g->resorted), or
 * -1 with an error naming a missing input, a write to an input or
 * constant, or a cycle. */
int graph_toposort(graph_t *g, perr_t *e);
/* Removes nodes whose outputs nobody reads (dead-node removal); returns count. */
int graph_remove_dead(graph_t *g);

/* Attribute access for kernels and shape functions. */
const Onnx__AttributeProto *node_attr(const node_t *n, const char *name);
int64_t attr_int(const node_t *n, const char *name, int64_t dflt);
float attr_float(const node_t *n, const char *name, float dflt);
/* Returns the string (not NUL-terminated in protobuf: copied into buf). */
const char *attr_string(const node_t *n, const char *name, const char *dflt, char *buf, size_t bufsz);
/* Number of ints (or -1 if the attribute is absent); *v points into the node. */
int attr_ints(const node_t *n, const char *name, const int64_t **v);
int attr_floats(const node_t *n, const char *name, const float **v);
/* Converts a TENSOR attribute into a new tensor; NULL with error if absent/bad. */
tensor_t *attr_tensor(const node_t *n, const char *name, perr_t *e);

#endif
