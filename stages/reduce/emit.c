/* emit.c — what reduce hands back, into the staging folder: the reduced
 * model, its inputs (the cut tensors' reference values as .npy, raw .bin
 * for trtexec --loadInputs, a Polygraphy input list), the reference value of
 * its output, the cell's precision config, report.json (the measured error,
 * the layers kept, the per-layer profile) and repro.md (the commands). */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "io/polygraphy.h"
#include "reduce.h"
#include "util/fsutil.h"
#include "util/jsonfile.h"

static json_t *num(double v) { return isfinite(v) ? json_real(v) : json_null(); }

static json_t *check_json(const rd_check_t *r)
{
    return json_pack("{s:b,s:I,s:o,s:o,s:o,s:I,s:s}", "fail", r->fail, "extra_nonfinite",
                     (json_int_t)r->extra_nonfinite, "max_abs", num(r->max_abs), "max_rel", num(r->max_rel),
                     "snr_db", num(r->snr_db), "mismatches", (json_int_t)r->mismatches, "rule", r->why);
}

static const char *node_name(const rd_ctx_t *c, int i)
{
    const char *n = c->sg.m->graph->node[i]->name;
    return n ? n : "";
}

static json_t *report_json(const rd_ctx_t *c)
{
    json_t *kept = json_array(), *ins = json_array(), *prof = json_array(), *guilty = json_array();
    for (int i = 0; i < c->sg.n_nodes; i++)
        if (c->keep[i])
            json_array_append_new(kept, json_pack("{s:s,s:s}", "name", node_name(c, i), "op",
                                                  c->sg.m->graph->node[i]->op_type));
    for (int i = 0; i < c->n_cut; i++) json_array_append_new(ins, json_string(c->sg.val[c->cut[i]]));
    for (int i = 0; i < c->n_guilty; i++) json_array_append_new(guilty, json_string(node_name(c, c->guilty[i])));
    for (int i = 0; i < c->n_rows; i++) {
        const rd_row_t *r = &c->rows[i];
        json_array_append_new(prof, json_pack("{s:s,s:s,s:o,s:o}", "layer", node_name(c, r->node), "op",
                                              c->sg.m->graph->node[r->node]->op_type, "own",
                                              r->has_own ? check_json(&r->own) : json_null(), "in_reduced",
                                              r->has_acc ? check_json(&r->acc) : json_null()));
    }
    return json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:o,s:i,s:i,s:b,s:i,s:s,s:o,s:o,s:o,s:o,s:o,s:i}",
                     "model", c->cell->model, "cell", c->cell->name, "precision",
                     c->global ? c->global : "", "precision_config",
                     c->cell->config ? c->cell->config : "", "start", c->start_reason, "target",
                     c->sg.val[c->target], "target_in_whole_model", check_json(&c->target_full), "nodes_before",
                     c->sg.n_nodes, "nodes_window", c->window_nodes, "trimmed", c->trimmed, "nodes_after", c->n_keep, "verdict",
                     c->accumulating ? "accumulating" : "layer", "guilty_layers", guilty, "measured",
                     check_json(&c->measured), "inputs", ins, "kept", kept, "profile", prof, "evaluations", c->evals);
}

/* Shell-quoted text where it needs quoting (single quotes; ' as '\''). */
static void put_sq(FILE *f, const char *s)
{
    if (*s && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:%,=+-") == strlen(s)) {
        fputs(s, f);
        return;
    }
    fputc('\'', f);
    for (; *s; s++) { if (*s == '\'') fputs("'\\''", f); else fputc(*s, f); }
    fputc('\'', f);
}

static const char *trt_flag(const char *p)
{
    if (!p) return "";
    return !strcmp(p, "fp16") ? " --fp16" : !strcmp(p, "bf16") ? " --bf16" : !strcmp(p, "fp32") ? " --noTF32" : "";
}

static void put_md_check(FILE *f, const rd_check_t *r)
{
    fprintf(f, "max |a-b| %.6g, max relative %.6g, SNR %.2f dB: %s", r->max_abs, r->max_rel, r->snr_db, r->why);
}

static int write_repro(const rd_ctx_t *c, const char *path, perr_t *e)
{
    atomic_file_t af;
    if (atomic_open(&af, path, e)) return -1;
    FILE *f = af.f;
    const char *prec = c->global ? c->global : "fp32";
    fprintf(f, "# Reduced reproducer: %s\n\n", c->sg.val[c->target]);
    fprintf(f, "From `%s`%s%s at %s (precision config `precision.yaml`, a copy of `%s`).\n\n", c->cell->model,
            c->cell->name[0] ? ", cell " : "", c->cell->name, prec, c->cell->config ? c->cell->config : "(none)");
    fprintf(f, "- layers: %d of the model's %d (%d after bisection, %s)\n", c->n_keep, c->sg.n_nodes,
            c->window_nodes, c->trimmed ? "before trimming" : "too many to trim");
    fprintf(f, "- started from the %s `%s`\n", c->start_reason, c->sg.val[c->target]);
    if (c->accumulating)
        fprintf(f, "- **verdict: the error accumulates** — no layer of these fails on its own (each within the "
                   "rule when fed the reference's inputs); this is the shortest window that still fails\n");
    else {
        fprintf(f, "- **verdict: a layer fails on its own**:");
        for (int i = 0; i < c->n_guilty; i++) fprintf(f, " `%s` (%s)", node_name(c, c->guilty[i]),
                                                      c->sg.m->graph->node[c->guilty[i]]->op_type);
        fputc('\n', f);
    }
    fprintf(f, "- measured error of `%s` at %s: ", c->sg.val[c->target], prec);
    put_md_check(f, &c->measured);
    fprintf(f, "\n- in the whole model: ");
    put_md_check(f, &c->target_full);
    fprintf(f, "\n\nFiles: `model.onnx` (inputs: the cut tensors, output `%s`), `inputs/` (their reference "
               "values, .npy), `inputs-raw/` (the same bytes, raw, for trtexec), `inputs.json` (Polygraphy), "
               "`reference/` (the FP32 reference output), `report.json` (the per-layer profile).\n\n",
            c->sg.val[c->target]);
    fprintf(f, "## parity (the failing precision; exit 1 is the failure reproduced)\n\n```sh\n"
               "build-engine model.onnx -o reduced.engine --config precision.yaml\n"
               "infer reduced.engine -i inputs -o out\ncompare out reference %s\n```\n\n", c->cell->rule_args);
    fprintf(f, "## ONNX Runtime (the backend contract, docs/backends.md; FP32, should pass)\n\n```sh\n"
               "pipeline/backends/onnxruntime run --model model.onnx --input inputs --output ort-out\n"
               "compare ort-out reference %s\n```\n\n", c->cell->rule_args);
    fprintf(f, "## TensorRT\n\n```sh\ntrtexec --onnx=model.onnx%s", trt_flag(prec));
    for (int i = 0; i < c->n_cut; i++) {
        char *enc = name_encode(c->sg.val[c->cut[i]]), *spec = xmalloc(strlen(enc) + strlen(c->sg.val[c->cut[i]]) + 32);
        /* trtexec splits at ':': a name holding one is quoted for it */
        sprintf(spec, strchr(c->sg.val[c->cut[i]], ':') ? "'%s':inputs-raw/%s.bin" : "%s:inputs-raw/%s.bin",
                c->sg.val[c->cut[i]], enc);
        fputs(i ? "," : " --loadInputs=", f);
        put_sq(f, spec);
        free(enc); free(spec);
    }
    fprintf(f, " --exportOutput=trt-out.json\ncompare trt-out.json reference %s\n"
               "polygraphy run model.onnx --trt%s --onnxrt --load-inputs inputs.json --atol %.6g --rtol %.6g\n```\n",
            c->cell->rule_args, trt_flag(prec), c->cell->rule.tol.atol, c->cell->rule.tol.rtol);
    if (c->cell->config)
        fprintf(f, "\nPer-layer constraints of `precision.yaml` map to trtexec's `--layerPrecisions` "
                   "(fix-precision's trtexec.txt writes them).\n");
    return atomic_commit(&af, e);
}

static int write_inputs(const rd_ctx_t *c, const char *dir, perr_t *e)
{
    tensor_set_t in = {.n = c->n_cut, .names = xcalloc(c->n_cut + 1, sizeof(char *)),
                       .ts = xcalloc(c->n_cut + 1, sizeof(tensor_t *))};
    for (int i = 0; i < c->n_cut; i++) { in.names[i] = c->sg.val[c->cut[i]]; in.ts[i] = c->refv[c->cut[i]]; }
    char *p = path_join(dir, "inputs"), *raw = path_join(dir, "inputs-raw"), *pj = path_join(dir, "inputs.json");
    int rc = tensorset_write(p, &in, e) || mkdir_p(raw, e);
    for (int i = 0; i < c->n_cut && !rc; i++) {
        char *enc = name_encode(in.names[i]), *fn = xmalloc(strlen(enc) + 8);
        sprintf(fn, "%s.bin", enc);
        char *fp = path_join(raw, fn);
        rc = atomic_write(fp, in.ts[i]->data, tensor_nbytes(in.ts[i]), e);
        free(enc); free(fn); free(fp);
    }
    poly_writer_t w;
    if (!rc && !(rc = poly_writer_open(&w, pj, POLY_INPUTS, NULL, e))) {
        poly_writer_begin(&w);
        for (int i = 0; i < c->n_cut && !rc; i++) rc = poly_writer_add(&w, in.names[i], in.ts[i], e);
        poly_writer_end(&w);
        if (rc) poly_writer_abort(&w);
        else rc = poly_writer_close(&w, e);
    }
    free(p); free(raw); free(pj); free(in.names); free(in.ts);
    return rc ? -1 : 0;
}

int rd_emit(rd_ctx_t *c, const char *dir, perr_t *e)
{
    const tensor_t **in_t = xcalloc(c->n_cut + 1, sizeof *in_t);
    for (int i = 0; i < c->n_cut; i++) in_t[i] = c->refv[c->cut[i]];
    const tensor_t *out_t = c->refv[c->target];
    uint8_t *buf;
    size_t len;
    char *p = path_join(dir, "model.onnx");
    int rc = sg_pack(&c->sg, c->keep, c->cut, in_t, c->n_cut, &c->target, &out_t, 1, "reduced", &buf, &len, e);
    if (!rc) { rc = atomic_write(p, buf, len, e); free(buf); }
    free(p); free(in_t);
    if (rc || write_inputs(c, dir, e)) return -1;
    tensor_set_t ref = {.n = 1, .names = (char *[]){c->sg.val[c->target]}, .ts = (tensor_t *[]){c->refv[c->target]}};
    p = path_join(dir, "reference");
    rc = tensorset_write(p, &ref, e);
    free(p);
    if (rc) return -1;
    p = path_join(dir, "precision.yaml");
    if (c->cell->config) {
        char *txt;
        size_t n;
        rc = read_file(c->cell->config, &txt, &n, e);
        if (!rc) { rc = atomic_write(p, txt, n, e); free(txt); }
    } else {
        char txt[64];
        snprintf(txt, sizeof txt, "precision: %s\n", c->cell->precision ? c->cell->precision : "fp32");
        rc = atomic_write(p, txt, strlen(txt), e);
    }
    free(p);
    if (rc) return -1;
    json_t *j = report_json(c);
    p = path_join(dir, "report.json");
    rc = write_json(p, j, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17), e);
    json_decref(j);
    free(p);
    if (rc) return -1;
    p = path_join(dir, "repro.md");
    rc = write_repro(c, p, e);
    free(p);
    return rc;
}
