/* shard.h — the sharded form of a validation: rules emitted beside emit.c's
 * (shard.c says how). */
#ifndef PARITY_PLAN_SHARD_H
#define PARITY_PLAN_SHARD_H

#include "write.h"

/* SHARDS checked and its shard indices: before any rule. */
void shard_emit_vars(plan_out_t *o);
/* Wraps an unsharded rule: shard_guard_begin before it, a shard_merge_* after. */
void shard_guard_begin(plan_out_t *o);
void shard_merge_pre(plan_out_t *o, const char *dir);
void shard_merge_out(plan_out_t *o, const char *dir, const char *cell, const char *variant);
/* The per-shard rules and the shard-* targets of one model. */
void shard_emit(plan_out_t *o, const char *dir);

#endif
