/* twins.h — variants whose preprocessing makes the same tensors but for
 * their extra inputs, precisions whose engines may share layers (twins.c). */
#ifndef PARITY_PLAN_TWINS_H
#define PARITY_PLAN_TWINS_H

#include "modelcfg/model.h"

/* base[v]: the first earlier variant whose preprocess config equals v's
 * but for `name:` and `extra:` (and that has no base itself), or -1. */
void plan_twins(const model_cfg_t *m, int *base);
/* base[p]: the first earlier parity precision (no backend) whose config
 * sets the same global `precision:` as p's (and that has no base itself),
 * or -1. */
void plan_precision_twins(const model_cfg_t *m, int *base);

#endif
