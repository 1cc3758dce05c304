/* emit.h — plan.mk and plan.json for one model config. */
#ifndef PARITY_PLAN_EMIT_H
#define PARITY_PLAN_EMIT_H

#include "modelcfg/model.h"

int plan_emit(const model_cfg_t *m, const char *dir, perr_t *e);

#endif
