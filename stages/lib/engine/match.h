/* match.h — the values of one built graph that are provably values of
 * another (match.c): what a run of b may take from a run of a. */
#ifndef PARITY_ENGINE_MATCH_H
#define PARITY_ENGINE_MATCH_H

#include "graph/graph.h"

/* Per value of b (b->n_vals entries, malloc'd): the value of a that holds
 * the same bytes whenever b's matched graph inputs hold a's (the caller
 * checks those at run time), or -1. Graph inputs marked in vary (one flag
 * per b->inputs entry) match nothing; constants are not mapped (b has its
 * own). *n_matched (may be NULL): the layers of b matched. */
int *graph_match(const graph_t *a, const graph_t *b, const unsigned char *vary, int *n_matched);

#endif
