/* exec.h — the executor: runs a built graph on one tensor set. Activations
 * are freed at their last use (liveness from the build); constants are
 * borrowed from the graph. */
#ifndef PARITY_EXEC_H
#define PARITY_EXEC_H

#include "graph/graph.h"
#include "io/tensorset.h"

typedef struct exec_opts {
    int threads;
    const char *dump;              /* NULL, "all", or a glob over tensor names */
    const tensor_set_t *reference; /* local-error mode: feed each node the reference's inputs */
    double *layer_ms;              /* if set: per-node time is added here (n_nodes entries) */
    void *arena;                   /* kept across runs by the caller: exec_run allocates it */
    struct scratch_pool *scratch;  /* the kernels' scratch blocks, kept across runs likewise */
    void **node_cache;             /* per node of cache_graph: what its kernel keeps (packed weights) */
    int node_cache_n;
    const graph_t *cache_graph;
} exec_opts_t;

/* Frees the arena, scratch and node caches an exec_opts_t kept across runs.
 * What it keeps belongs to the graph it first ran: release it before that
 * graph is freed (a new graph at the same address would find its caches). */
void exec_opts_release(exec_opts_t *o);

/* Binds inputs (by name; unnamed tensors by position), runs every node and
 * adds the graph outputs (and dumped tensors) to *out. */
int exec_run(const graph_t *g, const tensor_set_t *in, const exec_opts_t *o, tensor_set_t *out, perr_t *e);

#endif
