/* exec_int.h — the executor's inside, shared by exec.c (running a graph's
 * nodes) and control.c (If, Loop and Scan, which run subgraphs). */
#ifndef PARITY_EXEC_INT_H
#define PARITY_EXEC_INT_H

#include "engine/exec.h"
#include "ops/run.h"

/* One run's view of its session: what it reads (config, run options) and
 * the session's storage it fills (scratch, node cache slots). */
typedef struct exec_env {
    const exec_config_t *cfg;
    const exec_run_opts_t *ro;   /* never NULL: an empty one stands for none */
    tensor_set_t *out;           /* dumped tensors go here */
    scratch_pool_t *pool;
    void **node_cache;           /* one slot per node of the session's (top) graph */
    exec_share_t *const *keep;   /* the top graph's wanted values are copied into these (share.c) */
    int n_keep;
    const exec_share_t *reuse;   /* only the top graph's reached nodes run */
} exec_env_t;

/* Runs g's nodes with rt (current tensor per value: inputs and constants
 * bound) and owned (activation storage); path is NULL for the top graph,
 * else the subgraph's path ("Loop_0/body"), which names its dumped tensors. */
int exec_nodes(const graph_t *g, tensor_t **rt, tensor_t *owned, char *arena, exec_env_t *env, const char *path,
               perr_t *e);
/* Runs a subgraph on its inputs (formal, then captured: sub->n_inputs of
 * them); results[k] receives a copy of output k. */
int exec_subgraph(const graph_t *sub, const tensor_t *const *inputs, exec_env_t *env, const char *path,
                  tensor_t *results, perr_t *e);
/* Runs a control-flow node (control.c); rt holds g's current tensors, where
 * its subgraphs' captured values are found. */
int exec_control(const graph_t *g, const node_t *n, const tensor_t *const *args, tensor_t **outs, tensor_t **rt,
                 exec_env_t *env, perr_t *e);

#endif
