/* share.h — the executor's side of partial reruns (share.c; the public
 * part, planning a share, is in exec.h). */
#ifndef PARITY_ENGINE_SHARE_H
#define PARITY_ENGINE_SHARE_H

#include "engine/exec.h"

/* A keeping run of graph g into n_keep shares planned from g: copies the
 * fixed inputs (rt bound) at its start, each wanted value as it is made,
 * and is valid only if it ends well. */
void share_keep_begin(exec_share_t *const *keep, int n_keep, const graph_t *g, tensor_t *const *rt);
void share_keep_value(exec_share_t *const *keep, int n_keep, int v, const tensor_t *t);
void share_keep_end(exec_share_t *const *keep, int n_keep, int ok);
/* A reusing run of g: 1 with the cut bound into rt where the share is
 * planned for g and its fixed inputs in rt are the kept ones byte for byte
 * (then only share_runs() nodes run), 0 where the run must run whole. */
int share_reuse_bind(const exec_share_t *s, const graph_t *g, tensor_t **rt);
int share_runs(const exec_share_t *s, int node);

#endif
