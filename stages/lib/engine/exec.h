/* exec.h — the executor: runs a built graph on one tensor set. Activations
 * are freed at their last use (liveness from the build); constants are
 * borrowed from the graph.
 *
 * An execution session (in the manner of ONNX Runtime's InferenceSession)
 * binds one graph to a fixed configuration and owns what persists from one
 * run to the next: the activation arena, the kernels' scratch blocks and
 * each node's cache (packed weights). What may change between runs (a
 * reference to feed layers from, a sink for layer times) is passed to each
 * run as const options. Closing the session frees everything it kept. */
#ifndef PARITY_EXEC_H
#define PARITY_EXEC_H

#include "graph/graph.h"
#include "io/tensorset.h"

/* Fixed for a session's life; the session keeps its own copy. */
typedef struct exec_config {
    int threads;                   /* worker threads a kernel may use; 0 = 1 */
    const char *dump;              /* NULL, "all", or a glob over tensor names */
} exec_config_t;

/* A share (share.c): what a run keeps so that a later run -- of the same
 * graph with inputs that differ only in the varying ones, or of another
 * graph that computes some layers alike (match.c) -- recomputes only the
 * layers whose values differ. */
typedef struct exec_share exec_share_t;

/* One run's options; the executor writes only the sinks (layer_ms,
 * layers_run) and the share it is told to keep into. */
typedef struct exec_run_opts {
    const tensor_set_t *reference; /* local-error mode: feed each node the reference's inputs */
    double *layer_ms;              /* profile sink: each node's time is added to layer_ms[node] (n_nodes entries) */
    exec_share_t *const *keep;     /* copy what a rerun with each of these as `reuse` needs (the cut, the
                                      fixed inputs): n_keep shares planned from this run's graph */
    int n_keep;
    const exec_share_t *reuse;     /* run only the layers whose values differ, on the kept cut, where the
                                      fixed inputs are the kept ones byte for byte (else the whole graph) */
    int *layers_run;               /* sink: how many layers this run ran */
} exec_run_opts_t;

typedef struct exec_session exec_session_t;

/* Opens a session on g, which must outlive it (the node caches belong to
 * g's nodes). cfg NULL is one thread, no dump. NULL on a bad config. */
exec_session_t *exec_session_open(const graph_t *g, const exec_config_t *cfg, perr_t *e);
/* Binds inputs (by name; unnamed tensors by position), runs every node and
 * adds the graph outputs (and dumped tensors) to *out. ro may be NULL. One
 * run at a time per session. */
int exec_session_run(exec_session_t *s, const tensor_set_t *in, const exec_run_opts_t *ro, tensor_set_t *out,
                     perr_t *e);
/* Plans a share from runs of `from` to runs of g for the graph inputs of g
 * marked in vary (one flag per g->inputs entry): the layers of g whose
 * values differ (within one graph, from == g: the layers the varying
 * inputs reach; across graphs: those match.c does not match), the values
 * those read from the rest. Both graphs must outlive it. Dumps and
 * reference runs never keep or reuse. */
exec_share_t *exec_share_plan(const graph_t *from, const graph_t *g, const unsigned char *vary);
/* Chains shares: a run reusing s that keeps into next (planned from s's
 * reusing graph) gets bound, from s's copies, the values next wants that
 * it does not run itself. Call before the run that keeps into s. */
void exec_share_also(exec_share_t *s, const exec_share_t *next);
int exec_share_layers(const exec_share_t *s);      /* layers a reusing run runs */
const unsigned char *exec_share_vary(const exec_share_t *s);
/* s was planned from `from` to g for these varying inputs (s may be NULL). */
int exec_share_is(const exec_share_t *s, const graph_t *from, const graph_t *g, const unsigned char *vary);
void exec_share_free(exec_share_t *s);
/* Frees the session's arena, scratch and node caches; NULL is a no-op. */
void exec_session_close(exec_session_t *s);
/* One run in a session of its own: open, run, close. */
int exec_once(const graph_t *g, const exec_config_t *cfg, const tensor_set_t *in, const exec_run_opts_t *ro,
              tensor_set_t *out, perr_t *e);

#endif
