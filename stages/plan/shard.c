/* shard.c — the sharded form of a validation (docs/scale-out.md).
 *
 * With SHARDS=N on make's command line, every cell's preprocess and infer run
 * once per shard, into DIR/shards/N/I/ (pattern rules: the stem is "N/I"),
 * and the cell's own out.done (and a variant's pre/V.done) becomes the merge
 * of the N shards' folders (shard merge; the merged sets before the cell's
 * out.done, since map-eval and the dumps rely on that order); compare, map-eval, the layerwise
 * steps and report then run over the union as they do unsharded, so the
 * results are the same bytes. Without SHARDS the plan is what it always was.
 *
 *   make shard-prepare-NAME SHARDS=N     engines and generated inputs, once
 *   make shard-NAME SHARDS=N SHARD=I     shard I of every selected cell
 *   make shard-missing-NAME SHARDS=N     the shards not (or no longer) done
 *   make validate-NAME SHARDS=N PARITY_SHARD_MERGE=1
 *                                        the merge alone: a missing shard is
 *                                        an error, never run here
 *
 * Everything named here passes mk_printf's check; SHARDS and SHARD are
 * checked by make itself (digits only) before they reach a recipe. */
#include <stdio.h>
#include "shard.h"

/* Defined once whichever plan.mk comes first: make's own check of SHARDS. */
static const char shard_vars[] =
    "ifndef PARITY_SHARD_VARS\n"
    "PARITY_SHARD_VARS := 1\n"
    "parity_digits = $(strip $(subst 0,,$(subst 1,,$(subst 2,,$(subst 3,,$(subst 4,,$(subst 5,,$(subst 6,,"
    "$(subst 7,,$(subst 8,,$(subst 9,,$(1))))))))))))\n"
    "ifneq ($(SHARDS),)\n"
    "ifneq ($(words $(SHARDS))$(call parity_digits,$(SHARDS))$(filter 0%%,$(SHARDS)),1)\n"
    "$(error SHARDS='$(SHARDS)': give a number of shards, 1..4096)\n"
    "endif\n"
    "PARITY_SHARD_IDS := $(shell seq 0 $$(( $(SHARDS) - 1 )))\n"
    "$(if $(word 4097,$(PARITY_SHARD_IDS)),$(error SHARDS=$(SHARDS): at most 4096 shards))\n"
    "ifneq ($(SHARD),)\n"
    "$(if $(filter 1,$(words $(SHARD))),,$(error SHARD='$(SHARD)': one shard index))\n"
    "$(if $(filter $(SHARD),$(PARITY_SHARD_IDS)),,$(error SHARD='$(SHARD)': not one of 0..$(lastword $(PARITY_SHARD_IDS))))\n"
    "endif\n"
    "endif\n"
    "parity_shard_n = $(word 1,$(subst /, ,$(1)))\n"
    "parity_shard_i = $(word 2,$(subst /, ,$(1)))\n"
    "parity_shard_guard = $(if $(PARITY_SHARD_MERGE),@echo 'shard: $(1): not done: shard $(call parity_shard_i,$(2)) of "
    "$(call parity_shard_n,$(2)) did not finish (its array task log says why; rerun resubmits it)' >&2; exit 2)\n"
    "endif\n";

void shard_emit_vars(plan_out_t *o)
{
    mk_printf(o, shard_vars);   /* fixed make text: no value in it */
}

void shard_guard_begin(plan_out_t *o)
{
    mk_printf(o, "ifeq ($(SHARDS),)\n");
}

static void put_shard_outs(plan_out_t *o, const char *dir, const char *sub)
{
    mk_printf(o, " $(foreach i,$(PARITY_SHARD_IDS),%s/shards/$(SHARDS)/$(i)/%s)", dir, sub);
}

/* The sharded twin of the variants' preprocess: each variant's shards merged. */
void shard_merge_pre(plan_out_t *o, const char *dir)
{
    mk_printf(o, "else\n");
    for (int v = 0; v < o->m->n_variants; v++) {
        const char *vn = o->m->variants[v].name;
        char sub[512];
        snprintf(sub, sizeof sub, "pre/%s.done", vn);
        mk_printf(o, "%s/pre/%s.done:", dir, vn);
        put_shard_outs(o, dir, sub);
        mk_printf(o, " $(PARITY_BIN)/shard\n\t@echo '  MERGE   %s %s'\n", o->m->name, vn);
        mk_printf(o, "\t$(Q)rm -f $@ && $(PARITY_BIN)/shard merge -o '%s/pre/%s'", dir, vn);
        snprintf(sub, sizeof sub, "pre/%s", vn);
        put_shard_outs(o, dir, sub);
        mk_printf(o, " && touch $@\n");
    }
    mk_printf(o, "endif\n\n");
}

/* The sharded twin of a cell's inference: its shards' outputs merged. */
void shard_merge_out(plan_out_t *o, const char *dir, const char *cell, const char *vn)
{
    char sub[512];
    snprintf(sub, sizeof sub, "cells/%s/out.done", cell);
    mk_printf(o, "else\n%s/cells/%s/out.done:", dir, cell);
    put_shard_outs(o, dir, sub);
    /* the merged sets first: map-eval and the dumps read them after out.done */
    if (!o->m->inputs) mk_printf(o, " %s/pre/%s.done", dir, vn);
    mk_printf(o, " $(PARITY_BIN)/shard\n\t@echo '  MERGE   %s %s'\n", o->m->name, cell);
    mk_printf(o, "\t$(Q)rm -f $@ && $(PARITY_BIN)/shard merge -o '%s/cells/%s/out' --stats '%s/cells/%s/stats.json'",
              dir, cell, dir, cell);
    snprintf(sub, sizeof sub, "cells/%s/out", cell);
    put_shard_outs(o, dir, sub);
    mk_printf(o, " && touch $@\nendif\n\n");
}

/* A shard's input sets: preprocessed from its part of the dataset, or links
 * to its part of the ready tensor sets. */
static void emit_shard_inputs(plan_out_t *o, const char *dir)
{
    const model_cfg_t *m = o->m;
    if (m->inputs) {
        mk_printf(o, "%s/shards/%%/in.done: $(PARITY_BIN)/shard", dir);
        for (int i = 0; i < m->n_depends; i++) mk_printf(o, " %s", m->depends[i]);
        mk_printf(o, "\n\t$(call parity_shard_guard,$@,$*)\n\t@echo '  SHARD   %s $*'\n", m->name);
        mk_printf(o, "\t$(Q)rm -f $@ && mkdir -p '%s/shards/$*' && $(PARITY_BIN)/shard select --count $(call parity_shard_n,$*) --index $(call parity_shard_i,$*) "
                     "--dir '%s' -o '%s/shards/$*/in' && touch $@\n\n", dir, m->inputs, dir);
        return;
    }
    for (int v = 0; v < m->n_variants && !m->gt; v++) {
        /* a folder of images without ground truth: preprocessed whole, its
         * tensor sets split as ready ones are (sample ids: file stems) */
        const char *vn = m->variants[v].name;
        mk_printf(o, "%s/shards/%%/pre/%s.done: %s/pre/%s.done $(PARITY_BIN)/shard\n", dir, vn, dir, vn);
        mk_printf(o, "\t$(call parity_shard_guard,$@,$*)\n\t@echo '  SHARD   %s %s $*'\n", m->name, vn);
        mk_printf(o, "\t$(Q)rm -f $@ && mkdir -p '%s/shards/$*/pre' && $(PARITY_BIN)/shard select --count $(call parity_shard_n,$*) "
                     "--index $(call parity_shard_i,$*) --dir '%s/pre/%s' -o '%s/shards/$*/pre/%s' && touch $@\n\n", dir, dir, vn, dir, vn);
    }
    for (int v = 0; v < m->n_variants && m->gt; v++) {
        const char *vn = m->variants[v].name;
        mk_printf(o, "%s/shards/%%/pre/%s.done: %s/pre/%s.args %s %s $(PARITY_BIN)/preprocess $(PARITY_BIN)/shard\n",
                  dir, vn, dir, vn, m->variants[v].config, m->gt);
        mk_printf(o, "\t$(call parity_shard_guard,$@,$*)\n\t@echo '  PRE     %s %s shard $*'\n", m->name, vn);
        mk_printf(o, "\t$(Q)rm -f $@ && mkdir -p '%s/shards/$*/pre' && $(PARITY_BIN)/shard select --count $(call parity_shard_n,$*) --index $(call parity_shard_i,$*) "
                     "--dataset '%s' --images '%s' -o '%s/shards/$*/pre/%s.list' && ", dir, m->gt, m->images, dir, vn);
        mk_printf(o, "$(PARITY_BIN)/preprocess @'%s/pre/%s.args' --list '%s/shards/$*/pre/%s.list' -o '%s/shards/$*/pre/%s' "
                     "-j $(JOBS) && touch $@\n\n", dir, vn, dir, vn, dir, vn);
    }
}

/* A shard's input sets (stamp: its stamp, with the stem as a pattern). */
static void put_shard_sets(plan_out_t *o, const char *dir, const char *vn, int stamp)
{
    if (o->m->inputs) mk_printf(o, stamp ? "%s/shards/%%/in.done" : "%s/shards/$*/in", dir);
    else mk_printf(o, stamp ? "%s/shards/%%/pre/%s.done" : "%s/shards/$*/pre/%s", dir, vn);
}

/* One cell's inference on one shard, as emit_cells runs it on all samples. */
static void emit_shard_cell(plan_out_t *o, const char *dir, int v, int p)
{
    const model_cfg_t *m = o->m;
    const char *vn = m->variants[v].name, *pn = m->precisions[p].name, *backend = m->precisions[p].backend;
    mk_printf(o, "%s/shards/%%/cells/%s__%s/out.done: ", dir, vn, pn);
    put_shard_sets(o, dir, vn, 1);
    if (backend) mk_printf(o, " %s %s", m->model, backend);
    else mk_printf(o, " %s/engines/%s.engine $(PARITY_BIN)/infer", dir, pn);
    mk_printf(o, "\n\t$(call parity_shard_guard,$@,$*)\n\t@echo '  INFER   %s %s__%s shard $*'\n", m->name, vn, pn);
    mk_printf(o, "\t$(Q)rm -f $@ && mkdir -p '%s/shards/$*/cells/%s__%s' && ", dir, vn, pn);
    if (backend) mk_printf(o, "'%s' run --model '%s' --input '", backend, m->model);
    else mk_printf(o, "$(PARITY_BIN)/infer '%s/engines/%s.engine' -i '", dir, pn);
    put_shard_sets(o, dir, vn, 0);
    mk_printf(o, backend ? "' --output " : "' -o ");
    mk_printf(o, "'%s/shards/$*/cells/%s__%s/out' --threads $(THREADS) --stats '%s/shards/$*/cells/%s__%s/stats.json' "
                 "&& touch $@\n\n", dir, vn, pn, dir, vn, pn);
}

void shard_emit(plan_out_t *o, const char *dir)
{
    const model_cfg_t *m = o->m;
    const char *M = m->name;
    mk_printf(o, "ifneq ($(SHARDS),)\n");
    emit_shard_inputs(o, dir);
    for (int v = 0; v < m->n_variants; v++)
        for (int p = 0; p < m->n_precisions; p++) {
            emit_shard_cell(o, dir, v, p);
            /* what a cell needs before the array: its engine */
            mk_printf(o, "%s_SHARD_NEEDS_%s__%s :=", M, m->variants[v].name, m->precisions[p].name);
            if (!m->precisions[p].backend) mk_printf(o, " %s/engines/%s.engine", dir, m->precisions[p].name);
            for (int i = 0; i < m->n_depends; i++) mk_printf(o, " %s", m->depends[i]);
            mk_printf(o, "\n");
        }
    mk_printf(o, "shard-prepare-%s: $(sort $(foreach c,$(%s_CELLS),$(%s_SHARD_NEEDS_$(c))))\n", M, M, M);
    mk_printf(o, "shard-%s: shard-prepare-%s $(foreach c,$(%s_CELLS),%s/shards/$(SHARDS)/$(SHARD)/cells/$(c)/out.done)\n",
              M, M, M, dir);
    /* a shard is done when every selected cell's stamp is there and newer than
     * what it was made from: make -q answers that without running anything */
    mk_printf(o, "shard-missing-%s:\n", M);
    mk_printf(o, "\t@for i in $(PARITY_SHARD_IDS); do $(MAKE) -s -q SHARDS=$(SHARDS) PARITY_SHARD_MERGE= "
                 "$(foreach c,$(%s_CELLS),%s/shards/$(SHARDS)/$$i/cells/$(c)/out.done) 2>/dev/null || echo $$i; done\n", M, dir);
    mk_printf(o, ".PHONY: shard-prepare-%s shard-%s shard-missing-%s\nendif\n\n", M, M, M);
}
