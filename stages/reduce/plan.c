/* plan.c — a cell of a validation plan (build/NAME/plan.json, written by
 * plan) as reduce needs it: the ONNX, the cell's precision config, the
 * failing sample (the first, the one the dumps hold), the reference cell's
 * dump and the compare rule (tolerances, per-output overrides, layer SNR). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "reduce.h"
#include "util/fsutil.h"

char *rd_first_sample(const char *dir, perr_t *e)
{
    char **names;
    int n = list_dir(dir, &names, e);
    if (n < 0) return NULL;
    char *first = NULL;
    for (int i = 0; i < n && !first; i++) {
        char *p = path_join(dir, names[i]);
        if (is_dir(p)) first = p;
        else free(p);
    }
    free_list(names, n);
    return first ? first : xstrdup(dir);
}

static const char *jstr(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static const json_t *find_named(const json_t *arr, const char *name)
{
    size_t i;
    const json_t *v;
    json_array_foreach(arr, i, v) {
        const char *n = jstr(v, "name");
        if (n && !strcmp(n, name)) return v;
    }
    return NULL;
}

static int read_rule(const char *plan, const json_t *t, cmp_config_t *r, perr_t *e)
{
    cmp_config_init(r);
    const json_t *a = json_object_get(t, "atol"), *rt = json_object_get(t, "rtol");
    if (!json_is_number(a) || !json_is_number(rt) || json_number_value(a) < 0 || json_number_value(rt) < 0)
        return BAD(e, "%s: tolerances.atol/rtol: expected non-negative numbers", plan);
    r->tol.atol = json_number_value(a);
    r->tol.rtol = json_number_value(rt);
    const char *st = jstr(t, "check_error_stat");
    if (st && cmp_stat_parse(st, &r->tol.stat)) return BAD(e, "%s: tolerances.check_error_stat '%s' unknown", plan, st);
    const json_t *snr = json_object_get(t, "layer_snr_db");
    if (json_is_number(snr)) r->layer_snr_db = json_number_value(snr);
    const json_t *outs = json_object_get(t, "outputs"), *o;
    const char *k;
    if (outs && !json_is_object(outs)) return BAD(e, "%s: tolerances.outputs: expected an object", plan);
    json_object_foreach((json_t *)outs, k, o) {
        const json_t *oa = json_object_get(o, "atol"), *orr = json_object_get(o, "rtol");
        if (!json_is_number(oa) || !json_is_number(orr))
            return BAD(e, "%s: tolerances.outputs.%s: expected atol and rtol numbers", plan, k);
        char *spec = xmalloc(strlen(k) + 64);
        sprintf(spec, "%s=%.17g,%.17g", k, json_number_value(oa), json_number_value(orr));
        int rc = cmp_config_add_override(r, spec, e);
        free(spec);
        if (rc) return perr_prefix(e, "%s: ", plan);
    }
    return 0;
}

int rd_cell_from_plan(const char *plan, const char *cell, rd_cell_t *out, perr_t *e)
{
    memset(out, 0, sizeof *out);
    json_error_t je;
    json_t *root = json_load_file(plan, 0, &je);
    if (!root) return BAD(e, "%s:%d:%d: %s", plan, je.line, je.column, je.text);
    int rc = 0;
    const json_t *cells = json_object_get(root, "cells"), *c = NULL, *ref = NULL, *p = NULL;
    const char *onnx = jstr(root, "onnx"), *refname = jstr(root, "reference");
    if (!json_is_array(cells) || !onnx || !refname) { rc = BAD(e, "%s: not a plan (no cells, onnx or reference)", plan); goto done; }
    if (!(c = find_named(cells, cell))) { rc = BAD(e, "%s: no cell '%s'", plan, cell); goto done; }
    if (!(ref = find_named(cells, refname))) { rc = BAD(e, "%s: the reference cell '%s' is not listed", plan, refname); goto done; }
    const char *backend = jstr(c, "backend"), *prec = jstr(c, "precision"), *inputs = jstr(c, "inputs");
    const char *refdir = jstr(ref, "dir"), *var = jstr(c, "variant"), *refvar = jstr(ref, "variant");
    if (!prec || !inputs || !refdir || !var || !refvar) { rc = BAD(e, "%s: cell '%s': precision, inputs, variant or dir missing", plan, cell); goto done; }
    if (backend && strcmp(backend, "parity")) {
        rc = BAD(e, "%s: cell '%s' runs on backend '%s': reduce evaluates parity's emulated precisions only", plan, cell, backend);
        goto done;
    }
    if (!(p = find_named(json_object_get(root, "precisions"), prec)) || !jstr(p, "config")) {
        rc = BAD(e, "%s: precision '%s' of cell '%s' has no config", plan, prec, cell);
        goto done;
    }
    if ((rc = read_rule(plan, json_object_get(root, "tolerances"), &out->rule, e))) goto done;
    out->model = xstrdup(onnx);
    out->config = xstrdup(jstr(p, "config"));
    out->precision = NULL;
    out->name = xstrdup(cell);
    if (!(out->inputs = rd_first_sample(inputs, e))) { rc = -1; goto done; }
    /* the reference dump holds the first sample of the reference's inputs:
     * the same sample only where the cell's variant is the reference's */
    if (!strcmp(var, refvar)) out->dump = path_join(refdir, "dump");
done:
    json_decref(root);
    return rc;
}

void rd_cell_free(rd_cell_t *c)
{
    free(c->model); free(c->inputs); free(c->dump); free(c->config); free(c->precision); free(c->name);
    free(c->rule_args);
    cmp_config_free(&c->rule);
}
