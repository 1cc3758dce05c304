/* emit.c — writing the make fragment (build/NAME/plan.mk) and its
 * machine-readable twin (build/NAME/plan.json, read by report).
 *
 * Every matrix cell is an ordinary chain of targets:
 *   pre/VARIANT.done -> engines/PRECISION.engine -> cells/V__P/out.done
 *   -> compare.json, map.json, and for precision cells dump/layerwise/local.
 * The arguments of each step live in a small .args file rewritten only when
 * they change, so editing one precision config or tolerance reruns exactly
 * the steps that use it. Every value reaching a recipe passed model.c's
 * alphabet check and is single-quoted as well. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "emit.h"
#include "util/fsutil.h"


/* A growing string. */
typedef struct sb { char *s; size_t n, cap; } sb_t;

static void sb_printf(sb_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sb_t *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->n;
        int k = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? room : 0, fmt, ap);
        va_end(ap);
        if (b->s && (size_t)k < room) { b->n += k; return; }
        b->cap = (b->cap + k + 1) * 2;
        b->s = xrealloc(b->s, b->cap);
        if (!b->n) b->s[0] = 0;
    }
}

static const char *ref_cell(const model_cfg_t *m, char *buf, size_t n)
{
    snprintf(buf, n, "%s__%s", m->variants[m->ref_variant].name, m->precisions[m->ref_precision].name);
    return buf;
}

/* Where a variant's input tensor sets are, and the stamp that says they are complete. */
static void pre_paths(const model_cfg_t *m, const char *dir, int v, char *sets, char *stamp, size_t n)
{
    if (m->inputs) {
        snprintf(sets, n, "%s", m->inputs);
        stamp[0] = 0;
        for (int i = 0; i < m->n_depends; i++) {
            size_t k = strlen(stamp);
            snprintf(stamp + k, n - k, "%s%s", k ? " " : "", m->depends[i]);
        }
    } else {
        snprintf(sets, n, "%s/pre/%s", dir, m->variants[v].name);
        snprintf(stamp, n, "%s/pre/%s.done", dir, m->variants[v].name);
    }
}

static int write_args(const char *dir, const char *name, const char *text, perr_t *e)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return write_if_changed(path, text, e);
}

static int emit_preprocess(const model_cfg_t *m, const char *dir, sb_t *mk, perr_t *e)
{
    if (m->inputs) return 0;
    for (int v = 0; v < m->n_variants; v++) {
        sb_t args = {0};
        sb_printf(&args, "--config '%s'", m->variants[v].config);
        for (int i = 0; i < m->n_pre_set; i++) sb_printf(&args, " --set '%s'", m->pre_set[i]);
        sb_printf(&args, " --dataset '%s' --images '%s'", m->gt, m->images);
        char an[256];
        snprintf(an, sizeof an, "pre/%s.args", m->variants[v].name);
        if (write_args(dir, an, args.s, e)) { free(args.s); return -1; }
        sb_printf(mk, "%s/pre/%s.done: %s/%s %s %s $(PARITY_BIN)/preprocess\n", dir, m->variants[v].name, dir, an,
                  m->variants[v].config, m->gt);
        sb_printf(mk, "\t@echo '  PRE     %s %s'\n", m->name, m->variants[v].name);
        sb_printf(mk, "\t$(Q)rm -f $@ && $(PARITY_BIN)/preprocess %s -o '%s/pre/%s' -j $(JOBS) && touch $@\n\n",
                  args.s, dir, m->variants[v].name);
        free(args.s);
    }
    return 0;
}

static int emit_engines(const model_cfg_t *m, const char *dir, sb_t *mk, perr_t *e)
{
    for (int p = 0; p < m->n_precisions; p++) {
        const char *pn = m->precisions[p].name;
        if (m->precisions[p].backend) continue;   /* run by its backend, from the ONNX file */
        sb_t args = {0};
        sb_printf(&args, "--config '%s'", m->precisions[p].config);
        for (int i = 0; i < m->n_shapes; i++) sb_printf(&args, " --input-shape '%s'", m->shapes[i]);
        char an[256];
        snprintf(an, sizeof an, "engines/%s.args", pn);
        if (write_args(dir, an, args.s, e)) { free(args.s); return -1; }
        sb_printf(mk, "%s/engines/%s.engine: %s %s %s/%s $(PARITY_BIN)/build-engine", dir, pn, m->model,
                  m->precisions[p].config, dir, an);
        for (int i = 0; i < m->n_depends; i++) sb_printf(mk, " %s", m->depends[i]);
        sb_printf(mk, "\n\t@echo '  ENGINE  %s %s'\n", m->name, pn);
        sb_printf(mk, "\t$(Q)$(PARITY_BIN)/build-engine '%s' -o $@ --layers-out '%s/engines/%s.layers.json' %s 2>'%s/engines/%s.log' "
                      "|| { cat '%s/engines/%s.log' >&2; exit 2; }\n\n",
                  m->model, dir, pn, args.s, dir, pn, dir, pn);
        free(args.s);
    }
    return 0;
}

/* The sample a layerwise dump runs on: the configured subfolder, else the first
 * sample folder of the set in sorted order (resolved when the recipe runs, after
 * preprocessing), else the set itself. One sample, never the whole data set: a
 * dump of every layer is about 100 MB per image on RT-DETR. */
static void dump_input(const model_cfg_t *m, const char *sets, char *out, size_t n)
{
    if (m->layerwise_sample) snprintf(out, n, "%s/%s", sets, m->layerwise_sample);
    else snprintf(out, n, "$(call parity_first_sample,%s)", sets);
}

/* Runs compare but keeps its verdict (exit 1) as data, not a make failure. */
static const char compare_tail[] =
    " --json $@.tmp -q; rc=$$?; if [ $$rc -le 1 ] && [ -f $@.tmp ]; then mv $@.tmp $@; else rm -f $@.tmp; exit 2; fi\n\n";

static int emit_cells(const model_cfg_t *m, const char *dir, sb_t *mk, perr_t *e)
{
    char ref[256], sets[1024], stamp[2048], rsets[1024], rstamp[2048], dumpin[1200];
    ref_cell(m, ref, sizeof ref);
    pre_paths(m, dir, m->ref_variant, rsets, rstamp, sizeof rsets);
    sb_t cargs = {0};
    sb_printf(&cargs, "--atol %.10g --rtol %.10g --check-error-stat '%s'", m->atol, m->rtol, m->error_stat);
    for (int i = 0; i < m->n_tols; i++) sb_printf(&cargs, " --per-tensor '%s=%.10g,%.10g'", m->tols[i].name, m->tols[i].atol, m->tols[i].rtol);
    if (write_args(dir, "compare.args", cargs.s, e)) { free(cargs.s); return -1; }
    for (int v = 0; v < m->n_variants; v++) {
        pre_paths(m, dir, v, sets, stamp, sizeof sets);
        for (int p = 0; p < m->n_precisions; p++) {
            char cell[256], cd[1024];
            snprintf(cell, sizeof cell, "%s__%s", m->variants[v].name, m->precisions[p].name);
            snprintf(cd, sizeof cd, "%s/cells/%s", dir, cell);
            const char *pn = m->precisions[p].name;
            int is_ref = v == m->ref_variant && p == m->ref_precision;
            const char *backend = m->precisions[p].backend;
            /* layerwise needs dumps of both sides: parity cells only */
            int precision_cell = v == m->ref_variant && !backend && !m->precisions[m->ref_precision].backend;
            if (backend) {
                sb_printf(mk, "%s/out.done: %s %s %s\n", cd, m->model, backend, stamp);
                sb_printf(mk, "\t@echo '  BACKEND %s %s'\n", m->name, cell);
                sb_printf(mk, "\t$(Q)rm -f $@ && mkdir -p '%s' && '%s' run --model '%s' --input '%s' --output '%s/out' "
                              "--threads $(THREADS) --stats '%s/stats.json' && touch $@\n\n", cd, backend, m->model, sets, cd, cd);
            } else {
                sb_printf(mk, "%s/out.done: %s/engines/%s.engine %s $(PARITY_BIN)/infer\n", cd, dir, pn, stamp);
                sb_printf(mk, "\t@echo '  INFER   %s %s'\n", m->name, cell);
                sb_printf(mk, "\t$(Q)rm -f $@ && mkdir -p '%s' && $(PARITY_BIN)/infer '%s/engines/%s.engine' -i '%s' -o '%s/out' "
                              "--threads $(THREADS) --stats '%s/stats.json' && touch $@\n\n", cd, dir, pn, sets, cd, cd);
            }
            if (!is_ref) {
                sb_printf(mk, "%s/compare.json: %s/out.done %s/cells/%s/out.done %s/compare.args $(PARITY_BIN)/compare\n",
                          cd, cd, dir, ref, dir);
                sb_printf(mk, "\t@echo '  COMPARE %s %s'\n", m->name, cell);
                sb_printf(mk, "\t$(Q)$(PARITY_BIN)/compare '%s/out' '%s/cells/%s/out' %s%s", cd, dir, ref, cargs.s, compare_tail);
            }
            if (m->detection) {
                sb_printf(mk, "%s/map.json: %s/out.done %s/detection.yaml $(PARITY_BIN)/map-eval\n", cd, cd, dir);
                sb_printf(mk, "\t@echo '  MAP     %s %s'\n", m->name, cell);
                sb_printf(mk, "\t$(Q)$(PARITY_BIN)/map-eval --gt '%s' --dt '%s/out' --meta '%s' --decode '%s/detection.yaml' "
                              "--section . --json $@ -q\n\n", m->gt, cd, sets, dir);
            }
            if (precision_cell) {
                dump_input(m, sets, dumpin, sizeof dumpin);
                sb_printf(mk, "%s/dump.done: %s/engines/%s.engine %s $(PARITY_BIN)/infer\n", cd, dir, pn, stamp);
                sb_printf(mk, "\t@echo '  DUMP    %s %s'\n", m->name, cell);
                sb_printf(mk, "\t$(Q)rm -f $@ && $(PARITY_BIN)/infer '%s/engines/%s.engine' -i '%s' -o '%s/dump' --dump all && touch $@\n\n",
                          dir, pn, dumpin, cd);
            }
            if (precision_cell && !is_ref) {
                sb_printf(mk, "%s/layerwise.json: %s/dump.done %s/cells/%s/dump.done %s/compare.args $(PARITY_BIN)/compare\n",
                          cd, cd, dir, ref, dir);
                sb_printf(mk, "\t@echo '  LAYERS  %s %s'\n", m->name, cell);
                sb_printf(mk, "\t$(Q)$(PARITY_BIN)/compare --layerwise --layers '%s/engines/%s.layers.json' '%s/dump' '%s/cells/%s/dump' %s%s",
                          dir, pn, cd, dir, ref, cargs.s, compare_tail);
                sb_printf(mk, "%s/local.done: %s/engines/%s.engine %s/cells/%s/dump.done $(PARITY_BIN)/infer\n", cd, dir, pn, dir, ref);
                sb_printf(mk, "\t@echo '  LOCAL   %s %s'\n", m->name, cell);
                sb_printf(mk, "\t$(Q)rm -f $@ && $(PARITY_BIN)/infer '%s/engines/%s.engine' -i '%s' -o '%s/local' --dump all "
                              "--reference '%s/cells/%s/dump' && touch $@\n\n", dir, pn, dumpin, cd, dir, ref);
                sb_printf(mk, "%s/local.json: %s/local.done %s/cells/%s/dump.done %s/compare.args $(PARITY_BIN)/compare\n",
                          cd, cd, dir, ref, dir);
                sb_printf(mk, "\t@echo '  LOCAL   %s %s (compare)'\n", m->name, cell);
                sb_printf(mk, "\t$(Q)$(PARITY_BIN)/compare --layerwise --local --layers '%s/engines/%s.layers.json' '%s/local' '%s/cells/%s/dump' %s%s",
                          dir, pn, cd, dir, ref, cargs.s, compare_tail);
            }
        }
    }
    free(cargs.s);
    return 0;
}

/* The results a cell's report needs, as make prerequisites. */
static void cell_results(const model_cfg_t *m, const char *dir, int v, int p, sb_t *b)
{
    char cd[1024];
    snprintf(cd, sizeof cd, "%s/cells/%s__%s", dir, m->variants[v].name, m->precisions[p].name);
    int is_ref = v == m->ref_variant && p == m->ref_precision;
    int layerwise = v == m->ref_variant && !is_ref && !m->precisions[p].backend && !m->precisions[m->ref_precision].backend;
    sb_printf(b, " %s/out.done", cd);
    if (!is_ref) sb_printf(b, " %s/compare.json", cd);
    if (m->detection) sb_printf(b, " %s/map.json", cd);
    if (layerwise) sb_printf(b, " %s/layerwise.json %s/local.json", cd, cd);
}

static int emit_selection(const model_cfg_t *m, const char *dir, sb_t *mk)
{
    const char *M = m->name;
    char ref[256];
    ref_cell(m, ref, sizeof ref);
    sb_printf(mk, "%s_VARIANTS := ", M);
    for (int v = 0; v < m->n_variants; v++) sb_printf(mk, "%s ", m->variants[v].name);
    sb_printf(mk, "\n%s_PRECISIONS := ", M);
    for (int p = 0; p < m->n_precisions; p++) sb_printf(mk, "%s ", m->precisions[p].name);
    sb_printf(mk, "\n%s_REF := %s\n", M, ref);
    /* VARIANTS= / PRECISIONS= narrow the matrix; the reference cell always runs */
    sb_printf(mk, "%s_SEL_V := $(if $(VARIANTS),$(filter $(VARIANTS),$(%s_VARIANTS)),$(%s_VARIANTS))\n", M, M, M);
    sb_printf(mk, "%s_SEL_P := $(if $(PRECISIONS),$(filter $(PRECISIONS),$(%s_PRECISIONS)),$(%s_PRECISIONS))\n", M, M, M);
    sb_printf(mk, "$(if $(%s_SEL_V),,$(error %s: VARIANTS='$(VARIANTS)' selects none of: $(%s_VARIANTS)))\n", M, M, M);
    sb_printf(mk, "$(if $(%s_SEL_P),,$(error %s: PRECISIONS='$(PRECISIONS)' selects none of: $(%s_PRECISIONS)))\n", M, M, M);
    sb_printf(mk, "%s_CELLS := $(sort %s $(foreach v,$(%s_SEL_V),$(foreach p,$(%s_SEL_P),$(v)__$(p))))\n", M, ref, M, M);
    /* each cell's result files */
    for (int v = 0; v < m->n_variants; v++)
        for (int p = 0; p < m->n_precisions; p++) {
            sb_t b = {0};
            cell_results(m, dir, v, p, &b);
            sb_printf(mk, "%s_RESULTS_%s__%s :=%s\n", M, m->variants[v].name, m->precisions[p].name, b.s);
            free(b.s);
        }
    sb_printf(mk, "\n%s/selection.txt: FORCE\n", dir);
    sb_printf(mk, "\t@echo '$(%s_CELLS)' | cmp -s - $@ || echo '$(%s_CELLS)' > $@\n\n", M, M);
    sb_printf(mk, "reports/%s/results.json: $(foreach c,$(%s_CELLS),$(%s_RESULTS_$(c))) %s/selection.txt %s/plan.json $(PARITY_BIN)/report\n",
              M, M, M, dir, dir);
    sb_printf(mk, "\t@echo '  REPORT  %s'\n", M);
    sb_printf(mk, "\t$(Q)$(PARITY_BIN)/report --plan '%s/plan.json' --cells \"$(%s_CELLS)\" -o 'reports/%s'\n\n", dir, M, M);
    sb_printf(mk, "validate-%s: reports/%s/results.json\n", M, M);
    /* "not older" rather than "newer": file times are coarse, and the
     * stamp can share the report's timestamp */
    sb_printf(mk, "\t@if [ -f '%s/.validated' ] && ! [ 'reports/%s/results.json' -nt '%s/.validated' ]; then "
                  "echo 'validate: %s: nothing changed since the last run'; fi; touch '%s/.validated'\n",
              dir, M, dir, M, dir);
    sb_printf(mk, "\t@$(PARITY_BIN)/report --verdict 'reports/%s/results.json' || true\n\n", M);
    sb_printf(mk, ".PHONY: validate-%s\n", M);
    return 0;
}

static json_t *plan_json(const model_cfg_t *m, const char *dir)
{
    json_t *root = json_object(), *cells = json_array();
    char ref[256], buf[2048], sets[1024], stamp[2048];
    json_object_set_new(root, "model", json_string(m->name));
    json_object_set_new(root, "config", json_string(m->path));
    json_object_set_new(root, "onnx", json_string(m->model));
    json_object_set_new(root, "dataset", m->gt ? json_pack("{s:s, s:s}", "gt", m->gt, "images", m->images) : json_null());
    json_object_set_new(root, "reference", json_string(ref_cell(m, ref, sizeof ref)));
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
    json_object_set_new(root, "tolerances", tol);
    json_t *th = json_object();
    if (m->max_map_drop >= 0) json_object_set_new(th, "max_map_drop", json_real(m->max_map_drop));
    if (m->min_map >= 0) json_object_set_new(th, "min_map", json_real(m->min_map));
    json_object_set_new(th, "require_compare", json_boolean(m->require_compare));
    json_object_set_new(root, "thresholds", th);
    for (int v = 0; v < m->n_variants; v++) {
        pre_paths(m, dir, v, sets, stamp, sizeof sets);
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
            CELL_FILE("layerwise", "layerwise.json", prec && !is_ref);
            CELL_FILE("local", "local.json", prec && !is_ref);
#undef CELL_FILE
            json_t *checks = json_array();
            if (!is_ref && v == m->ref_variant && m->require_compare) json_array_append_new(checks, json_string("compare"));
            if (m->detection && !is_ref && m->max_map_drop >= 0) json_array_append_new(checks, json_string("map_drop"));
            if (m->detection && is_ref && m->min_map >= 0) json_array_append_new(checks, json_string("min_map"));
            json_array_append_new(checks, json_string("finite"));
            json_object_set_new(c, "checks", checks);
            json_array_append_new(cells, c);
        }
    }
    json_object_set_new(root, "cells", cells);
    return root;
}

int plan_emit(const model_cfg_t *m, const char *dir, perr_t *e)
{
    char path[1024];
    const char *subs[] = {"pre", "engines", "cells", "configs"};
    for (size_t i = 0; i < sizeof subs / sizeof *subs; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, subs[i]);
        if (mkdir_p(path, e)) return -1;
    }
    if (m->detection) {
        json_t *d = cfg_node_to_json(config_get(m->cfg, "detection"));
        char *text = json_dumps(d, JSON_SORT_KEYS | JSON_INDENT(1));
        json_decref(d);
        snprintf(path, sizeof path, "%s/detection.yaml", dir);
        int rc = write_if_changed(path, text, e);
        free(text);
        if (rc) return -1;
    }
    sb_t mk = {0};
    sb_printf(&mk, "# build/%s/plan.mk — generated by `plan` from %s; do not edit.\n", m->name, m->path);
    sb_printf(&mk, "PLAN_MODELS += %s\n", m->name);
    sb_printf(&mk, "parity_first_sample = $(or $(firstword $(sort $(patsubst %%/,%%,$(dir $(wildcard $(1)/*/.))))),$(1))\n");
    if (emit_selection(m, dir, &mk) || emit_preprocess(m, dir, &mk, e) || emit_engines(m, dir, &mk, e) ||
        emit_cells(m, dir, &mk, e)) {
        free(mk.s);
        return -1;
    }
    json_t *pj = plan_json(m, dir);
    char *text = json_dumps(pj, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    json_decref(pj);
    snprintf(path, sizeof path, "%s/plan.json", dir);
    int rc = write_if_changed(path, text, e);
    free(text);
    snprintf(path, sizeof path, "%s/plan.mk", dir);
    if (!rc) rc = atomic_write(path, mk.s, mk.n, e);   /* always: make needs it newer than the config */
    free(mk.s);
    return rc;
}
