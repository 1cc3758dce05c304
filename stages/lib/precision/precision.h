/* precision.h — assigning each layer its compute precision and storage type
 * (docs/precision.md): a global policy, per-layer constraints
 * from YAML (layer-name globs and op types, obey | prefer | none), or the
 * model's own types (strongly typed). It also marks where a value crosses
 * into a narrower precision, so the executor rounds it there: the casts a
 * GPU engine inserts at layer boundaries. */
#ifndef PARITY_PRECISION_H
#define PARITY_PRECISION_H

#include <stdio.h>
#include "graph/graph.h"

typedef enum { CONSTRAINTS_NONE, CONSTRAINTS_PREFER, CONSTRAINTS_OBEY } constraints_t;

typedef struct precision_rule {
    char *glob;            /* layer-name glob, or NULL */
    char *op;              /* op type, or NULL */
    precision_t p;
    char where[256];       /* file:line:col of the rule, for the report */
    int matched;
} precision_rule_t;

typedef struct precision_policy {
    precision_t global;
    constraints_t constraints;
    int strongly_typed;
    int accumulate_fp16;   /* recorded; GEMMs accumulate in fp32 (see docs/precision.md) */
    precision_rule_t *rules;
    int n_rules;
    char *source;          /* config file, or "" */
    unsigned folds;        /* which build-time folds run (FOLD_* of passes/passes.h; config key fold:) */
} precision_policy_t;

/* Loads a precision config (path may be NULL); cli_precision, when given,
 * overrides its global precision. */
int precision_policy_load(precision_policy_t *pp, const char *path, const char *cli_precision, perr_t *e);
void precision_policy_free(precision_policy_t *pp);
/* Two build passes, with the folds of passes/passes.h between them (only
 * layers of equal precision fuse; folded weights are rounded once):
 * precision_assign gives every node (subgraphs included) its precision,
 * storage type and reason, warns on `warn` (if not NULL) about each rule
 * that matches no layer and returns how many do; precision_mark_boundaries
 * notes constants beyond a layer's range (range.c, warning on `warn`),
 * marks the inputs rounded at a precision boundary and rounds constants
 * read in one narrower precision only, and returns how many layers have a
 * range note. */
int precision_assign(graph_t *g, const precision_policy_t *pp, FILE *warn);
int precision_mark_boundaries(graph_t *g, const precision_policy_t *pp, FILE *warn);

/* range.c: notes on each layer of g (node->range_note; not its subgraphs)
 * the float32 constants it reads that lie beyond its precision's range
 * (FP16 65504, BF16 3.39e38) and prints them on warn while fewer than
 * RANGE_SHOWN were shown before (shown); returns how many layers have one. */
#define RANGE_SHOWN 5
int precision_check_range(graph_t *g, FILE *warn, int shown);

/* kept.c: sets node->keeps_storage on each FP16/BF16-stored layer of g
 * (not its subgraphs) that only moves values its inputs already hold in
 * that storage type, so rounding its outputs is skipped (no bit changes);
 * returns how many. Run on a loaded engine (engine_read). */
int precision_mark_kept_storage(graph_t *g);

#endif
