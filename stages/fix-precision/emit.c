/* emit.c — what fix-precision hands back: the precision configs (ours and
 * the baselines'), the trtexec flags for TensorRT <= 10, the strongly typed
 * ONNX, and the report (JSON and Markdown) putting the three answers side
 * by side: FP32 layers, their FLOP share, the metric on both sample sets. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "search.h"
#include "util/fsutil.h"
#include "util/jsonfile.h"

static json_t *num(double v) { return isfinite(v) ? json_real(v) : json_null(); }

static json_t *score_json(const fp_ctx_t *c, const fp_score_t *s)
{
    json_t *j = json_pack("{s:b}", "pass", s->pass);
    if (c->crit.use_map) { json_object_set_new(j, "map", num(s->map)); json_object_set_new(j, "map_drop_points", num(s->map_drop)); }
    json_object_set_new(j, "worst_snr_db", num(s->worst_snr));
    json_object_set_new(j, "worst_cosine", num(s->worst_cos));
    if (c->crit.use_tol) json_object_set_new(j, "compare_failed", json_integer(s->tol_failed));
    return j;
}

static double share(const fp_ctx_t *c, const fp_result_t *r) { return c->total_flops ? r->flops / c->total_flops : 0; }

static json_t *answer_json(const fp_ctx_t *c, const fp_result_t *r, int names)
{
    json_t *j = json_pack("{s:i,s:o,s:o,s:o}", "fp32_layers", r->n_layers, "fp32_flop_share", num(share(c, r)),
                          "search", score_json(c, &r->search), "holdout", r->has_hold ? score_json(c, &r->hold) : json_null());
    if (r->note[0]) json_object_set_new(j, "note", json_string(r->note));
    if (names) {
        json_t *a = json_array();
        for (int i = 0; i < r->n_layers; i++) json_array_append_new(a, json_string(r->names[i]));
        json_object_set_new(j, "layers", a);
    }
    return j;
}

static json_t *criterion_json(const fp_criterion_t *k)
{
    json_t *j = json_object();
    if (k->use_drop) json_object_set_new(j, "max_map_drop_points", json_real(k->max_map_drop));
    if (k->margin > 0) json_object_set_new(j, "search_margin", json_real(k->margin));
    if (k->min_map >= 0) json_object_set_new(j, "min_map", json_real(k->min_map));
    if (k->use_tol) json_object_set_new(j, "compare", json_pack("{s:f,s:f,s:s}", "atol", k->tol.tol.atol, "rtol",
                                                                k->tol.tol.rtol, "check_error_stat", cmp_stat_name(k->tol.tol.stat)));
    if (k->use_snr) json_object_set_new(j, "min_snr_db", json_real(k->min_snr_db));
    if (k->use_cos) json_object_set_new(j, "min_cosine", json_real(k->min_cosine));
    return j;
}

static int kept(const fp_result_t *r, const char *name)
{
    for (int i = 0; i < r->n_layers; i++) if (!strcmp(r->names[i], name)) return 1;
    return 0;
}

static json_t *chosen_json(const fp_ctx_t *c, const fp_result_t *r)
{
    json_t *a = json_array();
    for (int i = 0; i < r->n_units; i++) {
        const fp_unit_t *u = &c->units[r->units[i]];
        json_t *names = json_array();
        for (int k = 0; k < u->n; k++)
            if (kept(r, c->layers[u->nodes[k]].name)) json_array_append_new(names, json_string(c->layers[u->nodes[k]].name));
        json_array_append_new(a, json_pack("{s:s,s:o,s:s,s:o,s:b,s:o,s:s,s:o}", "unit", u->name, "layers", names,
                                           "reason", r->reason[r->units[i]] ? r->reason[r->units[i]] : "",
                                           "measured_gain", num(r->gain[r->units[i]]), "overflow", u->overflow,
                                           "own_error_snr_db", num(u->local_snr), "why", u->why,
                                           "flop_share", num(c->total_flops ? u->flops / c->total_flops : 0)));
    }
    return a;
}

/* One shell word: single quotes, each ' as '\''. */
static void put_shell(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'') fputs("'\\''", f);
        else fputc(*s, f);
    }
    fputc('\'', f);
}

static void put_layers(FILE *f, const fp_result_t *r)
{
    size_t l = 1;
    for (int i = 0; i < r->n_layers; i++) l += strlen(r->names[i]) + 7;
    char *spec = xmalloc(l), *p = spec;
    for (int i = 0; i < r->n_layers; i++) p += sprintf(p, "%s%s:fp32", i ? "," : "", r->names[i]);
    put_shell(f, spec);
    free(spec);
}

/* TensorRT switches TF32 for the whole network (BuilderFlag::kTF32, on by
 * default; trtexec --noTF32): a layer's FP32 precision does not keep it off
 * TF32, so keeping some layers exact means no TF32 anywhere. */
static void tf32_note(FILE *f, const fp_result_t *r)
{
    fprintf(f, "# TF32: TensorRT uses it for FP32 layers by default and has no per-layer switch (the builder\n"
               "# flag kTF32 covers the whole network). %s\n",
            r->n_layers ? "The answer keeps layers exact, so the line turns TF32 off everywhere (--noTF32):\n"
                          "# accurate, without TF32's speed; parity's precision.yaml is the only per-layer form."
                        : "The answer keeps no layer exact: the default build is the answer.");
}

static int write_trtexec(const fp_ctx_t *c, const fp_result_t *r, const char *path, perr_t *e)
{
    atomic_file_t af;
    if (atomic_open(&af, path, e)) return -1;
    int tf32 = !strcmp(c->low, "tf32");
    if (tf32) tf32_note(af.f, r);
    else
        fprintf(af.f, "# TensorRT <= 10 (weakly typed; --layerPrecisions is deprecated in 10.12 and gone in 11:\n"
                      "# there, build model.onnx with --stronglyTyped instead). Layer names are the ONNX node names.\n");
    fprintf(af.f, "trtexec --onnx=");
    put_shell(af.f, c->model);
    if (tf32 && r->n_layers) fprintf(af.f, " --noTF32");
    if (!tf32) fprintf(af.f, " --%s", c->low);
    for (int i = 0; i < c->n_shapes; i++) {
        char buf[300];
        snprintf(buf, sizeof buf, "%s", c->shapes[i]);
        char *eq = strchr(buf, '=');
        if (eq) *eq = ':';
        fprintf(af.f, " --shapes=");
        put_shell(af.f, buf);
    }
    if (r->n_layers && !tf32) {
        fprintf(af.f, " --precisionConstraints=obey --layerPrecisions=");
        put_layers(af.f, r);
    }
    fputc('\n', af.f);
    return atomic_commit(&af, e);
}

static void md_row(FILE *f, const fp_ctx_t *c, const char *what, const fp_result_t *r)
{
    fprintf(f, "| %s | %d | %.2f%% |", what, r->n_layers, 100 * share(c, r));
    const fp_score_t *s[2] = {&r->search, &r->hold};
    for (int k = 0; k < 2; k++) {
        if (k == 1 && !r->has_hold) { fprintf(f, " (no held-out samples) |"); continue; }
        if (c->crit.use_map) fprintf(f, " AP %.4f (drop %.2f)", s[k]->map, s[k]->map_drop);
        else fprintf(f, " SNR %.1f dB", s[k]->worst_snr);
        if (c->crit.use_tol) fprintf(f, ", %d compare fail(s)", s[k]->tol_failed);
        fprintf(f, " %s |", s[k]->pass ? "PASS" : "fail");
    }
    fputc('\n', f);
}

static int write_md(const fp_ctx_t *c, const char *cfg, fp_result_t *ours, fp_result_t *ac, fp_result_t *bi,
                    fp_result_t *low, const fp_typed_t *ty, const char *path, perr_t *e)
{
    atomic_file_t af;
    if (atomic_open(&af, path, e)) return -1;
    FILE *f = af.f;
    fprintf(f, "## Precision repair: %s at %s\n\n", cfg, c->low);
    if (c->verdict && !strcmp(c->verdict, "no_useful_split"))
        fprintf(f, "**No useful reduced-precision split: %.1f%% of compute stays FP32** (useful below %.0f%%): the "
                   "criterion holds only with most of the model in FP32. Deploy FP32, or relax the criterion.\n\n",
                100.0 * ours->flops / (c->total_flops ? c->total_flops : 1), 100.0 * FP_USEFUL_MAX_FP32);
    if (c->time_hit)
        fprintf(f, "The time budget (--max-seconds %g) ended the search; %d evaluation(s) left out.\n\n", c->max_seconds,
                c->skipped_evals);
    fprintf(f, "%d float layers (%d units), %.4g GFLOP per sample; %d search and %d held-out samples; %d evaluations, %.1f s.\n",
            c->n_layers, c->n_units, c->total_flops / 1e9, c->n_search, c->n_samples - c->n_search, c->evals, fp_now() - c->t_start);
    if (c->crit.use_map) fprintf(f, "Reference AP (FP32): %.4f on the search samples, %.4f held out.\n", c->ref_map_search,
                                 c->ref_map_hold);
    if (c->crit.use_drop) fprintf(f, "Criterion: at most %.2f AP points lost.\n", c->crit.max_map_drop);
    if (c->crit.min_map >= 0) fprintf(f, "Criterion: AP at least %.4f.\n", c->crit.min_map);
    if (c->crit.margin > 0) fprintf(f, "The search's own evaluations demanded a margin of %g (AP points or dB) beyond it.\n",
                                    c->crit.margin);
    if (c->crit.use_snr) fprintf(f, "Criterion: SNR >= %.1f dB on every float output.\n", c->crit.min_snr_db);
    if (c->crit.use_cos) fprintf(f, "Criterion: cosine >= %.6f on every float output.\n", c->crit.min_cosine);
    if (c->crit.use_tol) fprintf(f, "Criterion: compare's rule (atol %.3g, rtol %.3g, %s) on every output.\n",
                                 c->crit.tol.tol.atol, c->crit.tol.tol.rtol, cmp_stat_name(c->crit.tol.tol.stat));
    fprintf(f, "\n| answer | FP32 layers | FP32 FLOP share | search samples | held-out samples |\n|---|---:|---:|---|---|\n");
    md_row(f, c, "everything reduced", low);
    md_row(f, c, "**fix-precision**", ours);
    md_row(f, c, "AutoCast rules (data_max 512, init_max 65504)", ac);
    char what[260];
    snprintf(what, sizeof what, "bisection (polygraphy debug precision): %s", bi->note);
    md_row(f, c, what, bi);
    if (ours->note[0]) fprintf(f, "\nfix-precision: %s.\n", ours->note);
    fprintf(f, "\n### Layers kept in FP32\n\n");
    if (!ours->n_units) fprintf(f, "None: the model meets the criterion entirely at %s.\n", c->low);
    for (int i = 0; i < ours->n_units; i++) {
        const fp_unit_t *u = &c->units[ours->units[i]];
        int nk = 0;
        for (int k = 0; k < u->n; k++) nk += kept(ours, c->layers[u->nodes[k]].name);
        fprintf(f, "- `%s` (%d of its %d layer%s kept", u->name, nk, u->n, u->n > 1 ? "s" : "");
        for (int k = 0; k < u->n && u->n > 1; k++)
            if (kept(ours, c->layers[u->nodes[k]].name)) fprintf(f, "%s`%s`", k ? ", " : ": ", c->layers[u->nodes[k]].name);
        fprintf(f, "): %s", ours->reason[ours->units[i]]);
        if (u->why[0]) fprintf(f, "; %s", u->why);
        fprintf(f, "; own error %.1f dB SNR\n", u->local_snr);
    }
    fprintf(f, "\nOutputs: `precision.yaml` (build-engine --config), `trtexec.txt` (%s), ",
            strcmp(c->low, "tf32") ? "TensorRT <= 10" : "TensorRT: TF32 is a whole-network switch there");
    if (ty->written) {
        fprintf(f, "`model.onnx` (strongly typed mixed precision, %d Casts", ty->casts);
        if (ty->opset_to != ty->opset_from)
            fprintf(f, "; opset %d -> %d: the first with %s signatures for its reduced ops", ty->opset_from, ty->opset_to,
                    c->low);
        if (ty->wrapped)
            fprintf(f, "; %d node(s) (%s) have no %s signature up to opset 22 and compute in FP32 between Casts, "
                       "as the emulation does", ty->wrapped, ty->wrapped_ops, c->low);
        fprintf(f, ").\n");
    } else {
        fprintf(f, "no `model.onnx`: %s.\n", ty->why);
    }
    return atomic_commit(&af, e);
}

int fp_emit(fp_ctx_t *c, const char *dir, const char *cfg, fp_result_t *ours, fp_result_t *ac, fp_result_t *bi,
            fp_result_t *low, perr_t *e)
{
    char *p = NULL;
    const char **why = xcalloc(ours->n_layers + 1, sizeof *why);
    for (int i = 0, prev = -1; i < ours->n_layers; i++) {
        int u = c->layers[fp_layer_index(c, ours->names[i])].unit;
        why[i] = u != prev ? c->units[u].name : NULL;
        prev = u;
    }
    int rc = 0;
    fp_typed_t ty = {0};
#define OUT(name) (free(p), p = path_join(dir, name))
    rc = fp_write_config(c, ours->names, why, ours->n_layers, OUT("precision.yaml"), e) ||
         fp_write_config(c, ac->names, NULL, ac->n_layers, OUT("autocast.yaml"), e) ||
         fp_write_config(c, bi->names, NULL, bi->n_layers, OUT("bisect.yaml"), e) ||
         write_trtexec(c, ours, OUT("trtexec.txt"), e);
    char *cfgp = path_join(dir, "precision.yaml");
    if (!rc && strcmp(c->low, "tf32")) rc = fp_write_typed_onnx(c, ours->names, ours->n_layers, cfgp, OUT("model.onnx"), &ty, e);
    else if (!rc)
        snprintf(ty.why, sizeof ty.why, "TF32 is not an ONNX type but a way of computing FP32 layers: the FP32 model "
                 "%s is unchanged and is the model to deploy; precision.yaml (parity) and trtexec.txt say where TF32 "
                 "is allowed", c->model);
    if (!rc && !ty.written) fprintf(stderr, "fix-precision: no model.onnx: %s\n", ty.why);
    free(cfgp);
    if (!rc) rc = write_md(c, cfg, ours, ac, bi, low, &ty, OUT("report.md"), e);
    if (!rc) {
        json_t *j = json_pack("{s:s,s:s,s:s,s:o,s:{s:i,s:i},s:i,s:f,s:i,s:i,s:f}", "config", cfg, "model", c->model,
                              "precision", c->low, "criterion", criterion_json(&c->crit), "samples", "search", c->n_search,
                              "holdout", c->n_samples - c->n_search, "evaluations", c->evals, "seconds", fp_now() - c->t_start,
                              "float_layers", c->n_layers, "units", c->n_units, "flops_per_sample", c->total_flops);
        if (c->crit.use_map)
            json_object_set_new(j, "reference_map", json_pack("{s:f,s:f}", "search", c->ref_map_search, "holdout", c->ref_map_hold));
        json_object_set_new(j, "answers", json_pack("{s:o,s:o,s:o,s:o}", "reduced", answer_json(c, low, 0),
                                                    "fix_precision", answer_json(c, ours, 1), "autocast", answer_json(c, ac, 1),
                                                    "bisect", answer_json(c, bi, 1)));
        json_object_set_new(j, "chosen", chosen_json(c, ours));
        json_object_set_new(j, "verdict", json_string(c->verdict ? c->verdict : "not_met"));
        json_object_set_new(j, "fp32_compute_share", json_real(ours->flops / (c->total_flops ? c->total_flops : 1)));
        json_object_set_new(j, "useful_split_max_fp32_share", json_real(FP_USEFUL_MAX_FP32));
        json_object_set_new(j, "max_seconds", c->max_seconds > 0 ? json_real(c->max_seconds) : json_null());
        json_object_set_new(j, "evaluations_left_out_by_time", json_integer(c->skipped_evals));
        json_object_set_new(j, "time_budget_hit", json_boolean(c->time_hit));
        json_object_set_new(j, "typed_onnx_casts", ty.written ? json_integer(ty.casts) : json_null());
        json_t *t = json_pack("{s:b,s:i,s:i,s:i,s:i}", "written", ty.written, "opset_from", ty.opset_from, "opset",
                              ty.opset_to, "casts", ty.casts, "fp32_between_casts", ty.wrapped);
        json_object_set_new(t, "fp32_between_casts_ops", json_string(ty.wrapped_ops));
        if (!ty.written) json_object_set_new(t, "why", json_string(ty.why));
        json_object_set_new(j, "typed_onnx", t);
        rc = write_json(OUT("report.json"), j, JSON_INDENT(1) | JSON_REAL_PRECISION(17), e);
        json_decref(j);
    }
#undef OUT
    free(p);
    free(why);
    return rc;
}
