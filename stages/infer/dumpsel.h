/* dumpsel.h — which dumped tensors infer writes (dumpsel.c). */
#ifndef PARITY_INFER_DUMPSEL_H
#define PARITY_INFER_DUMPSEL_H

#include "graph/graph.h"
#include "io/tensorset.h"
#include "util/namesel.h"

/* --run-budget: the dump's share of what the whole run may keep in its
 * build folder, after the engines and the cells' outputs (issue 34). */
typedef struct run_budget {
    int64_t bytes;        /* the run's budget; < 0 none */
    int dumps, engines, cells, samples;
    int64_t engine_bytes; /* this engine's file: each engine counted at its size */
} run_budget_t;

typedef struct dump_limit {
    int64_t budget;      /* bytes the dumped tensors of one sample may take; < 0 none */
    const char *like;    /* or: dump only the tensors this dump folder holds */
    const char *where;   /* the sample's output folder, as said on stderr (not its staging name) */
    const name_sel_t *keep;  /* --judge/--ignore: the graph outputs written for every sample; NULL all */
    int shown;           /* the sample the report shows: every graph output written */
    run_budget_t run;    /* sets budget from this sample's outputs when run.bytes >= 0 */
} dump_limit_t;

/* Drops from s the dumped tensors the limit leaves out (judged graph outputs
 * stay; the others are dumped tensors like any) and says on stderr what was
 * kept: "infer: dump OUT: 12 of 40 tensors, ...". */
int dump_select(const graph_t *g, tensor_set_t *s, const dump_limit_t *lim, const char *where);
/* Without --dump: drops the graph outputs not judged, except in the shown sample. */
void outputs_select(const graph_t *g, tensor_set_t *s, const dump_limit_t *lim);

#endif
