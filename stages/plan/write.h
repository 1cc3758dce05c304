/* write.h — the single place plan text is made. Every value that goes into
 * plan.mk passes mk_printf's check (letters, digits and . _ - / + only, no
 * leading '-'); every other value goes into an argument file (a JSON array
 * of strings that the stage reads with "@FILE", util/args.h), verbatim but
 * for control characters. A value that fails is reported as the config key
 * that holds it, so a key added to the schema is covered without code. */
#ifndef PARITY_PLAN_WRITE_H
#define PARITY_PLAN_WRITE_H

#include <jansson.h>
#include "modelcfg/model.h"

typedef struct plan_out {
    const model_cfg_t *m;
    perr_t *e;
    char *mk; size_t n, cap;    /* plan.mk */
    char **paths, **texts;      /* files written with it (argument files, configs) */
    int nfiles;
} plan_out_t;

/* Appends to plan.mk. fmt takes %s and %% only: the fixed text is make
 * syntax, each %s a value, checked. */
void mk_printf(plan_out_t *o, const char *fmt, ...);
/* An argument file: args_add checks and appends a value, args_add2 the
 * concatenation a + b ("KEY=" + value); plan_file queues the file (or any
 * other text file) to be written with plan.mk. */
void args_add(plan_out_t *o, json_t *args, const char *a);
void args_add2(plan_out_t *o, json_t *args, const char *a, const char *b);
void plan_file(plan_out_t *o, const char *path, char *text);   /* takes text */
void plan_file_args(plan_out_t *o, const char *path, json_t *args);   /* takes args */
/* Writes the queued files then plan.mk, or nothing when a value was refused. */
int plan_out_commit(plan_out_t *o, const char *dir);
void plan_out_free(plan_out_t *o);

#endif
