/* dumpsel.h — which dumped tensors infer writes (dumpsel.c). */
#ifndef PARITY_INFER_DUMPSEL_H
#define PARITY_INFER_DUMPSEL_H

#include "graph/graph.h"
#include "io/tensorset.h"

typedef struct dump_limit {
    int64_t budget;      /* bytes the dumped tensors of one sample may take; < 0 none */
    const char *like;    /* or: dump only the tensors this dump folder holds */
    const char *where;   /* the sample's output folder, as said on stderr (not its staging name) */
} dump_limit_t;

/* Drops from s the dumped tensors the limit leaves out (graph outputs stay)
 * and says on stderr what was kept: "infer: dump OUT: 12 of 40 tensors, ...". */
int dump_select(const graph_t *g, tensor_set_t *s, const dump_limit_t *lim, const char *where);

#endif
