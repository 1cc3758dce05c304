/* engine.h — the engine file: a built graph serialised as a parity.Engine
 * protobuf message (engine.proto), and the layer report written beside it. */
#ifndef PARITY_ENGINE_H
#define PARITY_ENGINE_H

#include "graph/graph.h"

/* 2: float32 constants that float16/bfloat16 hold exactly are stored narrow
 * (Engine.widen); format 1 files are still read (docs/formats.md) */
#define ENGINE_FORMAT_VERSION 2
#define ENGINE_FORMAT_OLDEST 1

typedef struct engine_meta {
    char source_sha256[65];
    const char *source_path;
    const char *precision;     /* the global policy, e.g. "fp32" */
    int64_t arena_bytes;
    int no_narrow;             /* write: every constant in its own type (build-engine --no-narrow) */
} engine_meta_t;

int engine_write(const graph_t *g, const engine_meta_t *m, const char *path, perr_t *e);
/* Reads an engine; the graph is ready to execute (ops resolved, liveness indexed). */
graph_t *engine_read(const char *path, engine_meta_t *m, perr_t *e);
/* Writes the layer report JSON (one row per layer in execution order). */
int layers_write_json(const graph_t *g, const engine_meta_t *m, const char *path, perr_t *e);

#endif
