/* run.h — infer's work: one sample or a folder of samples, timing, stats. */
#ifndef PARITY_INFER_RUN_H
#define PARITY_INFER_RUN_H

#include "engine/exec.h"
#include "dumpsel.h"

/* One -i IN -o OUT [--stats FILE] of the command line, and the engine it
 * runs (an index into infer_job_t.engines: 0 is ENGINE, others --engine). */
typedef struct infer_set {
    const char *in, *out, *stats;
    int engine;
} infer_set_t;

/* Sets after the first run sample by sample beside the first set's sample
 * of the same name; where only some inputs differ from it, or where the
 * set's engine computes some layers as the first set's does, only the
 * layers whose values differ (exec_share_t). */
typedef struct infer_job {
    infer_set_t *sets;
    int n_sets;
    const char *const *engines;   /* the engine files, as given (stats name the one shared with) */
    const char *reference, *profile;
    int warmup, runs;   /* untimed runs first, then timed ones, per sample */
    dump_limit_t dump;  /* --dump-budget / --dump-like; --judge / --ignore */
    const char *show_sample;  /* --show-sample: the sample whose every output is kept (default: the first) */
} infer_job_t;

/* Opens an execution session with cfg on each engine's graph (g[i] read
 * from job->engines[i]) and runs the job's samples. */
int infer_all(graph_t *const *g, const exec_config_t *cfg, const infer_job_t *job, perr_t *e);

#endif
