/* emit.c — writing the make fragment (build/NAME/plan.mk) and its
 * machine-readable twin (build/NAME/plan.json, read by report).
 *
 * Every matrix cell is an ordinary chain of targets:
 *   pre/VARIANT.done -> engines/PRECISION.engine -> cells/V__P/out.done
 *   -> compare.json, map.json, and for precision cells dump/layerwise/local.
 * The arguments of each step that come from the config live in its .args
 * file (a JSON array the stage reads with @FILE), rewritten only when they
 * change, so editing one precision config or tolerance reruns exactly the
 * steps that use it, and no config value is ever make or shell syntax. The
 * names and paths that make needs as targets pass write.c's check on the
 * way in (and are single-quoted in recipes as well). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "emit.h"
#include "write.h"
#include "shard.h"
#include "twins.h"
#include "util/fsutil.h"
#include "util/jsonfile.h"


static const char *ref_cell(const model_cfg_t *m, char *buf, size_t n)
{
    snprintf(buf, n, "%s__%s", m->variants[m->ref_variant].name, m->precisions[m->ref_precision].name);
    return buf;
}

/* Where a variant's input tensor sets are. */
static void pre_sets(const model_cfg_t *m, const char *dir, int v, char *sets, size_t n)
{
    if (m->inputs) snprintf(sets, n, "%s", m->inputs);
    else snprintf(sets, n, "%s/pre/%s", dir, m->variants[v].name);
}

/* The prerequisites that say a variant's sets are complete: its index.json
 * (newer only where its tensors changed: emit_preprocess), or for ready
 * tensor sets the files the Makefile makes first. */
static void put_stamp(plan_out_t *o, const char *dir, int v)
{
    const model_cfg_t *m = o->m;
    if (!m->inputs) mk_printf(o, " %s/pre/%s/index.json", dir, m->variants[v].name);
    for (int i = 0; m->inputs && i < m->n_depends; i++) mk_printf(o, " %s", m->depends[i]);
}

static void queue_args(plan_out_t *o, const char *dir, const char *name, json_t *args)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    plan_file_args(o, path, args);
}

/* Every stage the matrix runs goes through `timed`, which appends its wall
 * and CPU time to DIR/timing.jsonl (util/timing.h); the order-only
 * prerequisite empties that log once per make run, before the first stage
 * starts, so a summary never mixes runs. Stage names are fixed words, cells
 * and paths passed write.c's check. */
static void put_timed(plan_out_t *o, const char *dir, const char *stage, const char *cell)
{
    mk_printf(o, "$(PARITY_BIN)/timed --log '%s/timing.jsonl' --stage %s", dir, stage);
    if (cell) mk_printf(o, " --cell '%s'", cell);
    mk_printf(o, " -- ");
}

static void put_reset(plan_out_t *o)
{
    mk_printf(o, " | timing-reset-%s\n", o->m->name);
}

/* Every value of a step lives in its argument file, the recipe names the file.
 * One preprocess runs every variant: each image is decoded once, and resized
 * once for the variants that resize it alike (stages/preprocess/main.c).
 * A variant whose tensors come out the same keeps its folder as it was, and
 * what reads a variant's tensors depends on its index.json, not on the
 * group's stamps, so rerunning the group (one config edited, preprocess
 * rebuilt) reruns only the cells whose inputs changed. */
static void emit_preprocess(plan_out_t *o, const char *dir)
{
    const model_cfg_t *m = o->m;
    if (m->inputs) return;
    for (int v = 0; v < m->n_variants; v++) {
        json_t *a = json_array();
        args_add(o, a, "--config"); args_add(o, a, m->variants[v].config);
        for (int i = 0; i < m->n_pre_set; i++) { args_add(o, a, "--set"); args_add(o, a, m->pre_set[i]); }
        if (m->gt) { args_add(o, a, "--dataset"); args_add(o, a, m->gt); }
        args_add(o, a, "--images"); args_add(o, a, m->images);
        char an[256];
        snprintf(an, sizeof an, "pre/%s.args", m->variants[v].name);
        queue_args(o, dir, an, a);
    }
    /* the variants this run needs: the selected ones, the reference's, and
     * the twins of each (their cells are one infer process: emit_infer) */
    int twins[PLAN_MAX];
    plan_twins(m, twins);
    const char *M = m->name;
    for (int v = 0; v < m->n_variants; v++) {
        int b = twins[v] < 0 ? v : twins[v];
        mk_printf(o, "%s_PRE_WITH_%s :=", M, m->variants[v].name);
        for (int w = 0; w < m->n_variants; w++)
            if (w == b || twins[w] == b) mk_printf(o, " %s", m->variants[w].name);
        mk_printf(o, "\n");
    }
    mk_printf(o, "%s_PRE_SEL := $(filter $(foreach v,%s $(%s_SEL_V),$(%s_PRE_WITH_$(v))),$(%s_VARIANTS))\n", M,
              m->variants[m->ref_variant].name, M, M, M);
    shard_guard_begin(o);
    for (int v = 0; v < m->n_variants; v++) mk_printf(o, v ? " %s/pre/%s.done" : "%s/pre/%s.done", dir, m->variants[v].name);
    /* one recipe makes them all: grouped targets (GNU make 4.3); it makes
     * the ones this run needs, and a later run that needs another finds
     * that one's stamp missing and runs it again */
    mk_printf(o, m->n_variants > 1 ? " &:" : ":");
    for (int v = 0; v < m->n_variants; v++) mk_printf(o, " %s/pre/%s.args %s", dir, m->variants[v].name, m->variants[v].config);
    /* the ground truth lists the images; a folder alone is its own list
     * (its time changes when an image is added or removed; $(wildcard):
     * a folder that depends: makes is not there when make starts) */
    mk_printf(o, " $(PARITY_BIN)/preprocess");
    if (m->gt) mk_printf(o, " %s", m->gt);
    else mk_printf(o, " $(wildcard %s)", m->images);
    for (int i = 0; i < m->n_depends; i++) mk_printf(o, " %s", m->depends[i]);
    put_reset(o);
    mk_printf(o, "\t@echo '  PRE     %s $(%s_PRE_SEL)'\n", m->name, M);
    mk_printf(o, "\t$(Q)rm -f $(foreach v,$(%s_PRE_SEL),'%s/pre/$(v).done') && ", M, dir);
    mk_printf(o, "$(PARITY_BIN)/timed --log '%s/timing.jsonl' --stage preprocess --cell '$(subst $() $(),+,$(%s_PRE_SEL))' -- ",
              dir, M);
    mk_printf(o, "$(PARITY_BIN)/preprocess -j $(JOBS) $(foreach v,$(%s_PRE_SEL),@'%s/pre/$(v).args' -o '%s/pre/$(v)') "
                 "&& touch $(foreach v,$(%s_PRE_SEL),'%s/pre/$(v).done')\n", M, dir, dir, M, dir);
    shard_merge_pre(o, dir);
    /* what reads a variant's tensors depends on this: newer only where they changed */
    for (int v = 0; v < m->n_variants; v++)
        mk_printf(o, "%s/pre/%s/index.json: %s/pre/%s.done ;\n", dir, m->variants[v].name, dir, m->variants[v].name);
    mk_printf(o, "\n");
}

static void emit_engines(plan_out_t *o, const char *dir)
{
    const model_cfg_t *m = o->m;
    for (int p = 0; p < m->n_precisions; p++) {
        const char *pn = m->precisions[p].name;
        if (m->precisions[p].backend) continue;   /* run by its backend, from the ONNX file */
        json_t *a = json_array();
        args_add(o, a, "--config"); args_add(o, a, m->precisions[p].config);
        for (int i = 0; i < m->n_shapes; i++) { args_add(o, a, "--input-shape"); args_add(o, a, m->shapes[i]); }
        char an[256];
        snprintf(an, sizeof an, "engines/%s.args", pn);
        queue_args(o, dir, an, a);
        mk_printf(o, "%s/engines/%s.engine: %s %s %s/engines/%s.args $(PARITY_BIN)/build-engine", dir, pn, m->model,
                  m->precisions[p].config, dir, pn);
        for (int i = 0; i < m->n_depends; i++) mk_printf(o, " %s", m->depends[i]);
        put_reset(o);
        mk_printf(o, "\t@echo '  ENGINE  %s %s'\n", m->name, pn);
        mk_printf(o, "\t$(Q)");
        put_timed(o, dir, "build-engine", pn);
        mk_printf(o, "$(PARITY_BIN)/build-engine '%s' -o $@ --layers-out '%s/engines/%s.layers.json' @'%s/engines/%s.args' "
                     "2>'%s/engines/%s.log' || { cat '%s/engines/%s.log' >&2; exit 2; }\n\n",
                  m->model, dir, pn, dir, pn, dir, pn, dir, pn);
    }
}

/* The sample a layerwise dump runs on: the configured subfolder, else the first
 * sample folder of the set in sorted order (resolved when the recipe runs, after
 * preprocessing), else the set itself. One sample, never the whole data set: a
 * dump of every layer is about 100 MB per image on RT-DETR. */
static void put_dump_input(plan_out_t *o, const char *sets)
{
    if (o->m->layerwise_sample) mk_printf(o, "'%s/%s'", sets, o->m->layerwise_sample);
    else mk_printf(o, "'$(call parity_first_sample,%s)'", sets);
}

/* Runs compare but keeps its verdict (exit 1) as data, not a make failure. */
static const char compare_tail[] =
    " --json $@.tmp -q; rc=$$?; if [ $$rc -le 1 ] && [ -f $@.tmp ]; then mv $@.tmp $@; else rm -f $@.tmp; exit 2; fi\n\n";

static void queue_compare_args(plan_out_t *o, const char *dir)
{
    const model_cfg_t *m = o->m;
    char num[64];
    json_t *a = json_array();
    snprintf(num, sizeof num, "%.10g", m->atol);
    args_add(o, a, "--atol"); args_add(o, a, num);
    snprintf(num, sizeof num, "%.10g", m->rtol);
    args_add(o, a, "--rtol"); args_add(o, a, num);
    args_add(o, a, "--check-error-stat"); args_add(o, a, m->error_stat);
    for (int i = 0; i < m->n_tols; i++) {
        snprintf(num, sizeof num, "=%.10g,%.10g", m->tols[i].atol, m->tols[i].rtol);
        args_add(o, a, "--per-tensor"); args_add2(o, a, m->tols[i].name, num);
    }
    for (int i = 0; i < m->n_judge; i++) { args_add(o, a, "--judge"); args_add(o, a, m->judge[i]); }
    for (int i = 0; i < m->n_ignore; i++) { args_add(o, a, "--ignore"); args_add(o, a, m->ignore[i]); }
    if (m->layer_snr_db > 0) {
        snprintf(num, sizeof num, "%.10g", m->layer_snr_db);
        args_add(o, a, "--layer-snr-db"); args_add(o, a, num);
    }
    queue_args(o, dir, "compare.args", a);
    /* outputs of a detector: matched by detection (empty for element-wise) */
    json_t *d = json_array();
    if (m->det_spec) { args_add(o, d, "--detection"); args_add(o, d, m->det_spec); }
    queue_args(o, dir, "detect.args", d);
}

/* The task metric of a cell other than detection's (task-eval): its
 * settings live in task.args; a classifier's cells also count their top-1
 * flips against the reference cell's outputs (the reference's own: 0). */
static int has_task_eval(const model_cfg_t *m)
{
    return m->task && strcmp(m->task, "detection");
}

static void emit_task(plan_out_t *o, const char *dir, const char *cd, const char *cell, const char *ref, int is_ref)
{
    const model_cfg_t *m = o->m;
    int flips = !strcmp(m->task, "classification");   /* the reference against itself: 0, measured */
    mk_printf(o, "%s/task.json: %s/out.done %s/task.args $(PARITY_BIN)/task-eval", cd, cd, dir);
    if (flips) mk_printf(o, " %s/cells/%s/out.done", dir, ref);
    for (int i = 0; i < 4; i += 3)   /* the files among the ground truth: labels, classes */
        if (m->task_gt[i]) mk_printf(o, " %s", m->task_gt[i]);
    for (int i = 0; i < m->n_depends; i++) mk_printf(o, " %s", m->depends[i]);
    put_reset(o);
    mk_printf(o, "\t@echo '  TASK    %s %s'\n\t$(Q)", m->name, cell);
    put_timed(o, dir, "task-eval", cell);
    mk_printf(o, "$(PARITY_BIN)/task-eval @'%s/task.args' --dt '%s/out'", dir, cd);
    if (flips) mk_printf(o, " --ref '%s/cells/%s/out'", dir, ref);
    mk_printf(o, " --json $@ -q\n\n");
}

/* dump.budget shared by the dumps that coexist in build/NAME: the
 * reference's, and each other parity precision's dump and local run (all
 * the size of the reference's at most, since they hold the same tensors). */
static int n_dumps(const model_cfg_t *m)
{
    if (m->precisions[m->ref_precision].backend) return 0;
    int n = 1;
    for (int p = 0; p < m->n_precisions; p++) n += 2 * (p != m->ref_precision && !m->precisions[p].backend);
    return n > 1 ? n : 0;
}

/* dump.budget is what the whole run keeps in build/NAME: the reference's
 * dump gets its share of what the engines and the cells' outputs leave
 * (infer --run-budget works it out from the engine and the sample's
 * outputs; the samples are counted when the recipe runs). Every configured
 * cell counts, whatever VARIANTS=/PRECISIONS= select, so the dump and the
 * diagnosis do not depend on the selection. */
static void queue_dump_args(plan_out_t *o, const char *dir)
{
    const model_cfg_t *m = o->m;
    char num[64];
    json_t *a = json_array();
    int engines = 0;
    for (int p = 0; p < m->n_precisions; p++) engines += !m->precisions[p].backend;
    snprintf(num, sizeof num, "%.0f", floor(m->dump_budget));
    args_add(o, a, "--run-budget"); args_add(o, a, num);
    snprintf(num, sizeof num, "%d", n_dumps(m) ? n_dumps(m) : 1);
    args_add(o, a, "--dumps"); args_add(o, a, num);
    snprintf(num, sizeof num, "%d", engines);
    args_add(o, a, "--engines"); args_add(o, a, num);
    snprintf(num, sizeof num, "%d", m->n_variants * m->n_precisions);
    args_add(o, a, "--cells"); args_add(o, a, num);
    queue_args(o, dir, "dump.args", a);
}

/* What infer keeps (infer.args): the judged outputs of every sample, every
 * output of the sample the report shows; unjudged side outputs of a
 * 1024x1024 model are most of a cell's disk use (issue 34). */
static void queue_infer_args(plan_out_t *o, const char *dir)
{
    const model_cfg_t *m = o->m;
    json_t *a = json_array();
    for (int i = 0; i < m->n_judge; i++) { args_add(o, a, "--judge"); args_add(o, a, m->judge[i]); }
    for (int i = 0; i < m->n_ignore; i++) { args_add(o, a, "--ignore"); args_add(o, a, m->ignore[i]); }
    if ((m->n_judge || m->n_ignore) && m->layerwise_sample) { args_add(o, a, "--show-sample"); args_add(o, a, m->layerwise_sample); }
    queue_args(o, dir, "infer.args", a);
}

/* The cells of variant v and the variants whose base it is (twins.c) at
 * precision p and the precisions whose base it is: one infer process, each
 * set with its output and stats, each precision after the first given its
 * engine with --engine. */
static void emit_infer(plan_out_t *o, const char *dir, const int *twins, const int *ptwins, int v, int p)
{
    const model_cfg_t *m = o->m;
    int vg[PLAN_MAX], nv = 0, pg[PLAN_MAX], np = 0;   /* v, then its twins; p, then its twins */
    for (int w = 0; w < m->n_variants; w++)
        if (w == v || twins[w] == v) vg[nv++] = w;
    for (int q = 0; q < m->n_precisions; q++)
        if (q == p || ptwins[q] == p) pg[np++] = q;
    int n = nv * np;
    size_t cap = 1;   /* the label: the cells joined by "+" */
    for (int i = 0; i < n; i++) cap += strlen(m->variants[vg[i % nv]].name) + strlen(m->precisions[pg[i / nv]].name) + 3;
    char (*cd)[512] = xcalloc((size_t)n, sizeof *cd), *label = xcalloc(cap, 1);
    for (int i = 0; i < n; i++) {
        const char *vn = m->variants[vg[i % nv]].name, *pn = m->precisions[pg[i / nv]].name;
        size_t l = strlen(label);
        snprintf(cd[i], sizeof cd[i], "%s/cells/%s__%s", dir, vn, pn);
        snprintf(label + l, cap - l, "%s%s__%s", i ? "+" : "", vn, pn);
        mk_printf(o, i ? " %s/out.done" : "%s/out.done", cd[i]);
    }
    /* one recipe makes them all: grouped targets (GNU make 4.3) */
    mk_printf(o, n > 1 ? " &:" : ":");
    for (int j = 0; j < np; j++) mk_printf(o, " %s/engines/%s.engine", dir, m->precisions[pg[j]].name);
    for (int i = 0; i < nv; i++) put_stamp(o, dir, vg[i]);
    mk_printf(o, " %s/infer.args $(PARITY_BIN)/infer", dir);
    put_reset(o);
    mk_printf(o, "\t@echo '  INFER   %s %s'\n\t$(Q)", m->name, label);
    for (int i = 0; i < n; i++) mk_printf(o, "rm -f '%s/out.done' && mkdir -p '%s' && ", cd[i], cd[i]);
    put_timed(o, dir, "infer", label);
    mk_printf(o, "$(PARITY_BIN)/infer '%s/engines/%s.engine'", dir, m->precisions[p].name);
    for (int i = 0; i < n; i++) {
        char sets[1024];
        if (i && i % nv == 0) mk_printf(o, " --engine '%s/engines/%s.engine'", dir, m->precisions[pg[i / nv]].name);
        pre_sets(m, dir, vg[i % nv], sets, sizeof sets);
        mk_printf(o, " -i '%s' -o '%s/out' --stats '%s/stats.json'", sets, cd[i], cd[i]);
    }
    mk_printf(o, " --threads $(THREADS) @'%s/infer.args' && touch", dir);
    for (int i = 0; i < n; i++) mk_printf(o, " '%s/out.done'", cd[i]);
    mk_printf(o, "\n\n");
    free(cd);
    free(label);
}

static void emit_cells(plan_out_t *o, const char *dir)
{
    const model_cfg_t *m = o->m;
    char ref[256], sets[1024];
    int twins[PLAN_MAX], ptwins[PLAN_MAX];
    plan_twins(m, twins);
    plan_precision_twins(m, ptwins);
    ref_cell(m, ref, sizeof ref);
    queue_compare_args(o, dir);
    if (has_task_eval(m)) {
        json_t *a = json_array();
        for (int i = 0; i < m->n_task_args; i++) args_add(o, a, m->task_args[i]);
        queue_args(o, dir, "task.args", a);
    }
    queue_dump_args(o, dir);
    queue_infer_args(o, dir);
    for (int v = 0; v < m->n_variants; v++) {
        pre_sets(m, dir, v, sets, sizeof sets);
        for (int p = 0; p < m->n_precisions; p++) {
            char cell[256], cd[1024];
            snprintf(cell, sizeof cell, "%s__%s", m->variants[v].name, m->precisions[p].name);
            snprintf(cd, sizeof cd, "%s/cells/%s", dir, cell);
            const char *pn = m->precisions[p].name;
            int is_ref = v == m->ref_variant && p == m->ref_precision;
            const char *backend = m->precisions[p].backend;
            /* layerwise needs dumps of both sides: parity cells only */
            int precision_cell = v == m->ref_variant && !backend && !m->precisions[m->ref_precision].backend;
            shard_guard_begin(o);
            if (backend) {
                mk_printf(o, "%s/out.done: %s %s", cd, m->model, backend);
                put_stamp(o, dir, v);
                put_reset(o);
                mk_printf(o, "\t@echo '  BACKEND %s %s'\n", m->name, cell);
                mk_printf(o, "\t$(Q)rm -f $@ && mkdir -p '%s' && ", cd);
                put_timed(o, dir, "backend", cell);
                mk_printf(o, "'%s' run --model '%s' --input '%s' --output '%s/out' --threads $(THREADS) --stats '%s/stats.json' "
                             "&& touch $@\n\n", backend, m->model, sets, cd, cd);
            } else if (twins[v] < 0 && ptwins[p] < 0) {
                emit_infer(o, dir, twins, ptwins, v, p);
            }   /* else made by its base variant's or base precision's rule */
            shard_merge_out(o, dir, cell, m->variants[v].name);
            if (!is_ref) {
                /* by detection where both sides' boxes are in the same coordinates: a variant
                 * with its own decoding (box_coords: input), or another preprocessing of a raw
                 * YOLO head (input pixels), is judged by its mAP only */
                int same_coords = v == m->ref_variant || (!m->variants[v].detection && !m->variants[m->ref_variant].detection &&
                                                          !m->det_input_coords);
                mk_printf(o, "%s/compare.json: %s/out.done %s/cells/%s/out.done %s/compare.args %s/detect.args "
                             "$(PARITY_BIN)/compare", cd, cd, dir, ref, dir, dir);
                put_reset(o);
                mk_printf(o, "\t@echo '  COMPARE %s %s'\n\t$(Q)", m->name, cell);
                put_timed(o, dir, "compare", cell);
                mk_printf(o, "$(PARITY_BIN)/compare '%s/out' '%s/cells/%s/out' @'%s/compare.args'", cd, dir, ref, dir);
                if (same_coords) mk_printf(o, " @'%s/detect.args'", dir);
                mk_printf(o, compare_tail);
            }
            if (m->detection) {
                char decode[1100];
                if (m->variants[v].detection) snprintf(decode, sizeof decode, "%s", m->variants[v].detection);
                else snprintf(decode, sizeof decode, "%s/detection.yaml", dir);
                mk_printf(o, "%s/map.json: %s/out.done %s $(PARITY_BIN)/map-eval", cd, cd, decode);
                put_reset(o);
                mk_printf(o, "\t@echo '  MAP     %s %s'\n\t$(Q)", m->name, cell);
                put_timed(o, dir, "map-eval", cell);
                mk_printf(o, "$(PARITY_BIN)/map-eval --gt '%s' --dt '%s/out' --meta '%s' --decode '%s' "
                             "--section .", m->gt, cd, sets, decode);
                if (m->det_iou_type) mk_printf(o, " --iou-type %s", m->det_iou_type);
                mk_printf(o, " --json $@ -q\n\n");
            }
            if (has_task_eval(m)) emit_task(o, dir, cd, cell, ref, is_ref);
            if (precision_cell) {
                /* the reference's dump is held to its share of dump.budget; the
                 * others dump exactly the tensors it holds (layerwise pairs them by name) */
                mk_printf(o, "%s/dump.done: %s/engines/%s.engine", cd, dir, pn);
                put_stamp(o, dir, v);
                if (!is_ref) mk_printf(o, " %s/cells/%s/dump.done", dir, ref);
                mk_printf(o, " %s/dump.args %s/infer.args $(PARITY_BIN)/infer", dir, dir);
                put_reset(o);
                mk_printf(o, "\t@echo '  DUMP    %s %s'\n\t$(Q)rm -f $@ && ", m->name, cell);
                put_timed(o, dir, "dump", cell);
                mk_printf(o, "$(PARITY_BIN)/infer '%s/engines/%s.engine' -i ", dir, pn);
                put_dump_input(o, sets);
                mk_printf(o, " @'%s/infer.args'", dir);
                if (is_ref) mk_printf(o, " -o '%s/dump' --dump all @'%s/dump.args' --samples $(words $(or $(wildcard %s/*/.),.)) "
                                         "&& touch $@\n\n", cd, dir, sets);
                else mk_printf(o, " -o '%s/dump' --dump all --dump-like '%s/cells/%s/dump' && touch $@\n\n", cd, dir, ref);
            }
            if (precision_cell && !is_ref) {
                mk_printf(o, "%s/layerwise.json: %s/dump.done %s/cells/%s/dump.done %s/compare.args $(PARITY_BIN)/compare",
                          cd, cd, dir, ref, dir);
                put_reset(o);
                mk_printf(o, "\t@echo '  LAYERS  %s %s'\n\t$(Q)", m->name, cell);
                put_timed(o, dir, "layerwise", cell);
                mk_printf(o, "$(PARITY_BIN)/compare --layerwise --layers '%s/engines/%s.layers.json' '%s/dump' '%s/cells/%s/dump' "
                             "@'%s/compare.args'", dir, pn, cd, dir, ref, dir);
                mk_printf(o, compare_tail);
                mk_printf(o, "%s/local.done: %s/engines/%s.engine %s/cells/%s/dump.done %s/infer.args $(PARITY_BIN)/infer",
                          cd, dir, pn, dir, ref, dir);
                put_reset(o);
                mk_printf(o, "\t@echo '  LOCAL   %s %s'\n\t$(Q)rm -f $@ && ", m->name, cell);
                put_timed(o, dir, "local", cell);
                mk_printf(o, "$(PARITY_BIN)/infer '%s/engines/%s.engine' -i ", dir, pn);
                put_dump_input(o, sets);
                mk_printf(o, " @'%s/infer.args'", dir);
                mk_printf(o, " -o '%s/local' --dump all --dump-like '%s/cells/%s/dump' --reference '%s/cells/%s/dump' && touch $@\n\n",
                          cd, dir, ref, dir, ref);
                mk_printf(o, "%s/local.json: %s/local.done %s/cells/%s/dump.done %s/compare.args $(PARITY_BIN)/compare",
                          cd, cd, dir, ref, dir);
                put_reset(o);
                mk_printf(o, "\t@echo '  LOCAL   %s %s (compare)'\n\t$(Q)", m->name, cell);
                put_timed(o, dir, "local-compare", cell);
                mk_printf(o, "$(PARITY_BIN)/compare --layerwise --local --layers '%s/engines/%s.layers.json' '%s/local' "
                             "'%s/cells/%s/dump' @'%s/compare.args'", dir, pn, cd, dir, ref, dir);
                mk_printf(o, compare_tail);
            }
        }
    }
}

/* The results a cell's report needs, as make prerequisites. */
static void put_cell_results(plan_out_t *o, const char *dir, int v, int p)
{
    const model_cfg_t *m = o->m;
    char cd[1024];
    snprintf(cd, sizeof cd, "%s/cells/%s__%s", dir, m->variants[v].name, m->precisions[p].name);
    int is_ref = v == m->ref_variant && p == m->ref_precision;
    int layerwise = v == m->ref_variant && !is_ref && !m->precisions[p].backend && !m->precisions[m->ref_precision].backend;
    mk_printf(o, " %s/out.done", cd);
    if (!is_ref) mk_printf(o, " %s/compare.json", cd);
    if (m->detection) mk_printf(o, " %s/map.json", cd);
    if (has_task_eval(m)) mk_printf(o, " %s/task.json", cd);
    if (layerwise) mk_printf(o, " %s/layerwise.json %s/local.json", cd, cd);
}

static void emit_selection(plan_out_t *o, const char *dir)
{
    const model_cfg_t *m = o->m;
    const char *M = m->name;
    char ref[256];
    ref_cell(m, ref, sizeof ref);
    mk_printf(o, "%s_VARIANTS := ", M);
    for (int v = 0; v < m->n_variants; v++) mk_printf(o, "%s ", m->variants[v].name);
    mk_printf(o, "\n%s_PRECISIONS := ", M);
    for (int p = 0; p < m->n_precisions; p++) mk_printf(o, "%s ", m->precisions[p].name);
    mk_printf(o, "\n%s_REF := %s\n", M, ref);
    /* VARIANTS= / PRECISIONS= narrow the matrix; the reference cell always runs */
    mk_printf(o, "%s_SEL_V := $(if $(VARIANTS),$(filter $(VARIANTS),$(%s_VARIANTS)),$(%s_VARIANTS))\n", M, M, M);
    mk_printf(o, "%s_SEL_P := $(if $(PRECISIONS),$(filter $(PRECISIONS),$(%s_PRECISIONS)),$(%s_PRECISIONS))\n", M, M, M);
    mk_printf(o, "$(if $(%s_SEL_V),,$(error %s: VARIANTS='$(VARIANTS)' selects none of: $(%s_VARIANTS)))\n", M, M, M);
    mk_printf(o, "$(if $(%s_SEL_P),,$(error %s: PRECISIONS='$(PRECISIONS)' selects none of: $(%s_PRECISIONS)))\n", M, M, M);
    mk_printf(o, "%s_CELLS := $(sort %s $(foreach v,$(%s_SEL_V),$(foreach p,$(%s_SEL_P),$(v)__$(p))))\n", M, ref, M, M);
    /* each cell's result files */
    for (int v = 0; v < m->n_variants; v++)
        for (int p = 0; p < m->n_precisions; p++) {
            mk_printf(o, "%s_RESULTS_%s__%s :=", M, m->variants[v].name, m->precisions[p].name);
            put_cell_results(o, dir, v, p);
            mk_printf(o, "\n");
        }
    mk_printf(o, "\n%s/selection.txt: FORCE\n", dir);
    mk_printf(o, "\t@echo '$(%s_CELLS)' | cmp -s - $@ || echo '$(%s_CELLS)' > $@\n\n", M, M);
    mk_printf(o, "reports/%s/results.json: $(foreach c,$(%s_CELLS),$(%s_RESULTS_$(c))) %s/selection.txt %s/plan.json $(PARITY_BIN)/report",
              M, M, M, dir, dir);
    put_reset(o);
    mk_printf(o, "\t@echo '  REPORT  %s'\n\t$(Q)", M);
    put_timed(o, dir, "report", NULL);
    mk_printf(o, "$(PARITY_BIN)/report --plan '%s/plan.json' --cells \"$(%s_CELLS)\" --timing '%s/timing.jsonl' -o 'reports/%s'\n\n",
              dir, M, dir, M);
    mk_printf(o, "validate-%s: reports/%s/results.json\n", M, M);
    /* "not older" rather than "newer": file times are coarse, and the
     * stamp can share the report's timestamp */
    mk_printf(o, "\t@if [ -f '%s/.validated' ] && ! [ 'reports/%s/results.json' -nt '%s/.validated' ]; then "
                 "echo 'validate: %s: nothing changed since the last run'; fi; touch '%s/.validated'\n",
              dir, M, dir, M, dir);
    /* what the run keeps in build/NAME, said where it ends: the outputs, the
     * engines and the layerwise dumps (held to dump.budget together), and the
     * preprocessed inputs, which the budget does not count */
    char budget[64];
    snprintf(budget, sizeof budget, "%.0f", m->dump_budget / 1e6);
    mk_printf(o, "\t@mb() { du -scb \"$$@\" 2>/dev/null | awk 'END { printf \"%%.1f\", $$1 / 1e6 }'; }; "
                 "echo \"validate: %s: %s takes $$(mb '%s') MB: outputs $$(mb '%s'/cells/*/out) MB, engines $$(mb '%s'/engines/*.engine) MB and "
                 "layerwise dumps $$(mb '%s'/cells/*/dump '%s'/cells/*/local) MB, together $$(mb '%s'/cells/*/out '%s'/engines/*.engine '%s'/cells/*/dump '%s'/cells/*/local) MB "
                 "of the %s MB budget (dump.budget); preprocessed inputs $$(mb '%s'/pre) MB, not counted\"\n",
              M, dir, dir, dir, dir, dir, dir, dir, dir, dir, dir, budget, dir);
    mk_printf(o, "\t@$(PARITY_BIN)/report --timing '%s/timing.jsonl'\n", dir);
    mk_printf(o, "\t@$(PARITY_BIN)/report --verdict 'reports/%s/results.json' || true\n\n", M);
    /* phony: its recipe runs once in every make run that runs a timed stage, first */
    mk_printf(o, "timing-reset-%s: | $(PARITY_BIN)/timed\n\t@: > '%s/timing.jsonl'\n", M, dir);
    mk_printf(o, ".PHONY: validate-%s timing-reset-%s\n", M, M);
}

static json_t *plan_json(const model_cfg_t *m, const char *dir)
{
    json_t *root = json_object(), *cells = json_array();
    char ref[256], buf[2048], sets[1024];
    json_object_set_new(root, "model", json_string(m->name));
    json_object_set_new(root, "config", json_string(m->path));
    json_object_set_new(root, "onnx", json_string(m->model));
    json_object_set_new(root, "dataset", m->images ? json_pack("{s:s?, s:s}", "gt", m->gt, "images", m->images) : json_null());
    json_object_set_new(root, "reference", json_string(ref_cell(m, ref, sizeof ref)));
    json_object_set_new(root, "task", m->task ? json_string(m->task) : json_null());
    json_object_set_new(root, "task_metric", m->task_metric ? json_string(m->task_metric) : json_null());
    json_t *vs = json_array(), *ps = json_array();
    for (int v = 0; v < m->n_variants; v++) json_array_append_new(vs, json_string(m->variants[v].name));
    for (int p = 0; p < m->n_precisions; p++)
        json_array_append_new(ps, json_pack("{s:s, s:s?}", "name", m->precisions[p].name, "config", m->precisions[p].config));
    json_object_set_new(root, "variants", vs);
    json_object_set_new(root, "precisions", ps);
    json_t *tol = json_pack("{s:f, s:f, s:s, s:o}", "atol", m->atol, "rtol", m->rtol, "check_error_stat", m->error_stat,
                            "outputs", json_object());
    for (int i = 0; i < m->n_tols; i++)
        json_object_set_new(json_object_get(tol, "outputs"), m->tols[i].name,
                            json_pack("{s:f, s:f}", "atol", m->tols[i].atol, "rtol", m->tols[i].rtol));
    json_t *jg = json_array(), *ig = json_array();
    for (int i = 0; i < m->n_judge; i++) json_array_append_new(jg, json_string(m->judge[i]));
    for (int i = 0; i < m->n_ignore; i++) json_array_append_new(ig, json_string(m->ignore[i]));
    json_object_set_new(root, "outputs", jg);
    json_object_set_new(tol, "ignore", ig);
    json_object_set_new(tol, "layer_snr_db", m->layer_snr_db > 0 ? json_real(m->layer_snr_db) : json_null());
    json_object_set_new(tol, "match", json_string(m->match_detections ? "detections" : "elements"));
    json_t *pp = json_array();
    for (int i = 0; i < m->n_pre_post; i++) json_array_append_new(pp, json_string(m->pre_post[i]));
    json_object_set_new(tol, "pre_postprocess", pp);
    json_object_set_new(root, "tolerances", tol);
    json_t *th = json_object();
    if (m->max_map_drop >= 0) json_object_set_new(th, "max_map_drop", json_real(m->max_map_drop));
    if (m->min_map >= 0) json_object_set_new(th, "min_map", json_real(m->min_map));
    json_object_set_new(th, "require_compare", json_boolean(m->require_compare));
    const struct { const char *key; const struct metric_bound *b; int n; } bounds[] = {
        {"max_metric_drop", m->drops, m->n_drops}, {"min_metric", m->mins, m->n_mins}, {"max_metric", m->maxs, m->n_maxs}};
    for (int k = 0; k < 3; k++) {
        if (!bounds[k].n) continue;
        json_t *b = json_object();
        for (int i = 0; i < bounds[k].n; i++) json_object_set_new(b, bounds[k].b[i].metric, json_real(bounds[k].b[i].v));
        json_object_set_new(th, bounds[k].key, b);
    }
    json_object_set_new(root, "thresholds", th);
    for (int v = 0; v < m->n_variants; v++) {
        pre_sets(m, dir, v, sets, sizeof sets);
        for (int p = 0; p < m->n_precisions; p++) {
            int is_ref = v == m->ref_variant && p == m->ref_precision;
            int prec = v == m->ref_variant && !m->precisions[p].backend && !m->precisions[m->ref_precision].backend;
            snprintf(buf, sizeof buf, "%s/cells/%s__%s", dir, m->variants[v].name, m->precisions[p].name);
            json_t *c = json_object();
            snprintf(ref, sizeof ref, "%s__%s", m->variants[v].name, m->precisions[p].name);
            json_object_set_new(c, "name", json_string(ref));
            json_object_set_new(c, "variant", json_string(m->variants[v].name));
            json_object_set_new(c, "precision", json_string(m->precisions[p].name));
            json_object_set_new(c, "backend", json_string(m->precisions[p].backend ? m->precisions[p].backend : "parity"));
            json_object_set_new(c, "is_reference", json_boolean(is_ref));
            json_object_set_new(c, "dir", json_string(buf));
            json_object_set_new(c, "inputs", json_string(sets));
            char path[2200];
            snprintf(path, sizeof path, "%s/engines/%s.layers.json", dir, m->precisions[p].name);
            json_object_set_new(c, "layers", json_string(path));
#define CELL_FILE(key, name, cond) do { snprintf(path, sizeof path, "%s/%s", buf, name); \
            json_object_set_new(c, key, (cond) ? json_string(path) : json_null()); } while (0)
            CELL_FILE("out", "out", 1);
            CELL_FILE("stats", "stats.json", 1);
            CELL_FILE("compare", "compare.json", !is_ref);
            CELL_FILE("map", "map.json", m->detection);
            CELL_FILE("task", "task.json", has_task_eval(m));
            CELL_FILE("layerwise", "layerwise.json", prec && !is_ref);
            CELL_FILE("local", "local.json", prec && !is_ref);
#undef CELL_FILE
            json_t *checks = json_array();
            if (!is_ref && v == m->ref_variant && m->require_compare) json_array_append_new(checks, json_string("compare"));
            if (m->detection && !is_ref && m->max_map_drop >= 0) json_array_append_new(checks, json_string("map_drop"));
            if (m->detection && is_ref && m->min_map >= 0) json_array_append_new(checks, json_string("min_map"));
            if (!is_ref && m->n_drops) json_array_append_new(checks, json_string("metric_drop"));
            if (is_ref && (m->n_mins || m->n_maxs)) json_array_append_new(checks, json_string("min_metric"));
            json_array_append_new(checks, json_string("finite"));
            json_object_set_new(c, "checks", checks);
            json_object_set_new(c, "expected_failure", json_null());
            for (int k = 0; k < m->n_expect; k++)
                if ((m->expect[k].variant < 0 || m->expect[k].variant == v) && (m->expect[k].precision < 0 || m->expect[k].precision == p))
                    json_object_set_new(c, "expected_failure", json_string(m->expect[k].reason));
            json_array_append_new(cells, c);
        }
    }
    json_object_set_new(root, "cells", cells);
    return root;
}

int plan_emit(const model_cfg_t *m, const char *dir, perr_t *e)
{
    plan_out_t o = {.m = m, .e = e};
    char path[1024];
    for (int v = 0; v < m->n_variants; v++)
        if (m->variants[v].text) plan_file(&o, m->variants[v].config, xstrdup(m->variants[v].text));
    for (int p = 0; p < m->n_precisions; p++)
        if (m->precisions[p].text) plan_file(&o, m->precisions[p].config, xstrdup(m->precisions[p].text));
    for (int v = 0; v < m->n_variants; v++)
        if (m->variants[v].detection_text) plan_file(&o, m->variants[v].detection, xstrdup(m->variants[v].detection_text));
    if (m->detection) {
        json_t *d = cfg_node_to_json(config_get(m->cfg, "detection"));
        snprintf(path, sizeof path, "%s/detection.yaml", dir);
        plan_file(&o, path, json_file_text(d, JSON_SORT_KEYS | JSON_INDENT(1)));   /* JSON is YAML */
        json_decref(d);
    }
    /* the header names the config file: a comment, but a newline would end it */
    mk_printf(&o, "# %s/plan.mk — generated by `plan` from %s; do not edit.\n", dir, m->path);
    mk_printf(&o, "PLAN_MODELS += %s\n", m->name);
    /* which variants share an inference reads their preprocess configs
     * (twins.c): a changed one plans again */
    for (int v = 0; v < m->n_variants && !m->inputs; v++)
        if (!m->variants[v].text && m->variants[v].config) mk_printf(&o, "%s/plan.mk: %s\n", dir, m->variants[v].config);
    /* and which precisions do, their precision configs */
    for (int p = 0; p < m->n_precisions; p++)
        if (!m->precisions[p].text && !m->precisions[p].backend && m->precisions[p].config)
            mk_printf(&o, "%s/plan.mk: %s\n", dir, m->precisions[p].config);
    mk_printf(&o, "parity_first_sample = $(or $(firstword $(sort $(patsubst %%/,%%,$(dir $(wildcard $(1)/*/.))))),$(1))\n");
    shard_emit_vars(&o);
    emit_selection(&o, dir);
    emit_preprocess(&o, dir);
    emit_engines(&o, dir);
    emit_cells(&o, dir);
    shard_emit(&o, dir);
    json_t *pj = plan_json(m, dir);
    snprintf(path, sizeof path, "%s/plan.json", dir);
    plan_file(&o, path, json_file_text(pj, JSON_INDENT(1) | JSON_PRESERVE_ORDER));
    json_decref(pj);
    const char *subs[] = {"pre", "engines", "cells"};
    for (size_t i = 0; !e->code && i < sizeof subs / sizeof *subs; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, subs[i]);
        if (mkdir_p(path, e)) break;
    }
    int rc = plan_out_commit(&o, dir);
    plan_out_free(&o);
    return rc;
}
