/* build.h — from an ONNX file to an optimised graph ready to serialise,
 * through the named passes of build.c's table (load, input shapes,
 * operator resolution, shape inference with constant folding, dead-node
 * removal, widening, precision assignment, the folds, boundary rounding,
 * memory planning). */
#ifndef PARITY_BUILD_H
#define PARITY_BUILD_H

#include <stdio.h>
#include "engine/engine.h"

typedef struct build_opts {
    const char **input_shapes;   /* "NAME=1x3x320x320" */
    int n_input_shapes;
    const char *precision;       /* fp32 (default) | tf32 | fp16 | bf16; overrides the config's */
    const char *precision_config;/* YAML with per-layer constraints, or NULL */
    int no_fusion;               /* keep every layer separate (debugging) */
    int quiet_rules;             /* no warning for precision rules matching no layer (reduce's
                                    cut models match only some of a config's rules) */
    int no_widen;                /* keep float16 activations as float16 tensors (passes/widen.c) */
    FILE *trace;                 /* if not NULL: one line per pass, its name and node counts (-v) */
} build_opts_t;

/* Prints the passes' names, one a line, in the order engine_build runs them. */
void engine_list_passes(FILE *f);
graph_t *engine_build(const char *model_path, const build_opts_t *o, engine_meta_t *m, perr_t *e);

#endif
