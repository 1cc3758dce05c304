/* eval.c — one evaluation of the search: build the model in-process with a
 * set of layers pinned to FP32 (the same precision config build-engine
 * reads, so what is measured is what the emitted YAML gives), run it on a
 * range of samples and score the outputs against the FP32 reference by the
 * acceptance criterion (mAP drop, compare's rules, SNR and cosine floors). */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "engine/build.h"
#include "engine/exec.h"
#include "fixp.h"
#include "util/fsutil.h"

double fp_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* --max-seconds is a budget on the whole run, not the search alone: an
 * evaluation starts only when it is expected to end inside it (the longest
 * seconds per sample seen so far, times its samples), and the search stops
 * while there is still time to verify its answer on the held-out samples. */
static int time_for(const fp_ctx_t *c, int samples)
{
    return c->max_seconds <= 0 || fp_now() - c->t_start + c->sample_s * samples <= c->max_seconds;
}

int fp_budget_left(const fp_ctx_t *c)
{
    if (c->evals >= c->max_evals) return 0;
    return time_for(c, c->n_search + (c->n_samples - c->n_search));
}

/* fnmatch() metacharacters escaped, so a rule matches exactly one name. */
char *fp_glob_escape(const char *name)
{
    char *o = xmalloc(2 * strlen(name) + 1), *p = o;
    for (const char *s = name; *s; s++) {
        if (strchr("*?[]\\", *s)) *p++ = '\\';
        *p++ = *s;
    }
    *p = 0;
    return o;
}

/* YAML single-quoted scalar: only ' needs doubling; no escape processing. */
static void put_quoted(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'') fputc('\'', f);
        fputc(*s, f);
    }
    fputc('\'', f);
}

int fp_write_config(const fp_ctx_t *c, char **fp32, const char **why, int n, const char *path, perr_t *e)
{
    atomic_file_t af;
    if (atomic_open(&af, path, e)) return -1;
    fprintf(af.f, "description: %s with %d layer(s) kept in fp32 (fix-precision)\n", c->low, n);
    fprintf(af.f, "precision: %s\nconstraints: obey\n", c->low);
    if (n) fprintf(af.f, "layers:\n");
    for (int i = 0; i < n; i++) {
        char *g = fp_glob_escape(fp32[i]);
        if (why && why[i]) fprintf(af.f, "  # %s\n", why[i]);
        fprintf(af.f, "  - match: ");
        put_quoted(af.f, g);
        fprintf(af.f, "\n    precision: fp32\n");
        free(g);
    }
    return atomic_commit(&af, e);
}

graph_t *fp_build(const fp_ctx_t *c, const char *precision, const char *config, int no_fusion, perr_t *e)
{
    build_opts_t o = {.input_shapes = c->shapes, .n_input_shapes = c->n_shapes, .precision = precision,
                      .precision_config = config, .no_fusion = no_fusion};
    engine_meta_t m;
    return engine_build(c->model, &o, &m, e);
}

/* ---- samples ---- */

static void add_sample(fp_ctx_t *c, const char *id)
{
    c->s = xrealloc(c->s, (c->n_samples + 1) * sizeof *c->s);
    fp_sample_t *s = &c->s[c->n_samples++];
    memset(s, 0, sizeof *s);
    s->id = xstrdup(id);
}

int fp_load_samples(fp_ctx_t *c, const char *dir, int n_search, int n_hold, perr_t *e)
{
    char **names;
    int n = list_dir(dir, &names, e), subs = 0;
    if (n < 0) return -1;
    for (int i = 0; i < n; i++) {
        char *p = path_join(dir, names[i]);
        if (is_dir(p) && subs < n_search + n_hold) {
            add_sample(c, names[i]);
            subs++;
            if (tensorset_read(p, &c->s[c->n_samples - 1].in, e)) { free(p); free_list(names, n); return -1; }
        }
        free(p);
    }
    free_list(names, n);
    if (!subs) {   /* one tensor set: a single sample, nothing to hold out */
        add_sample(c, "");
        if (tensorset_read(dir, &c->s[0].in, e)) return -1;
    }
    c->n_search = c->n_samples == 1 ? 1 : c->n_samples > n_search ? n_search : c->n_samples - 1;
    return 0;
}

/* A session on g for the samples of one build. */
static exec_session_t *session_open(const fp_ctx_t *c, const graph_t *g, perr_t *e)
{
    const exec_config_t xc = {.threads = c->threads};
    return exec_session_open(g, &xc, e);
}

static int run_one(exec_session_t *xs, const fp_sample_t *s, tensor_set_t *out, perr_t *e)
{
    memset(out, 0, sizeof *out);
    if (exec_session_run(xs, &s->in, NULL, out, e)) return perr_prefix(e, "sample '%s': ", s->id);
    return 0;
}

/* ---- mAP over a range of samples ---- */

static int meta_image_id(const fp_ctx_t *c, const char *id, int64_t *out, perr_t *e)
{
    char *d = path_join(c->meta_dir, id), *p = path_join(d, "meta.json");
    json_error_t je;
    json_t *j = json_load_file(p, 0, &je);
    int rc = 0;
    json_t *v = j ? json_object_get(j, "image_id") : NULL;
    if (!j) rc = BAD(e, "%s: %s", p, je.text);
    else if (!json_is_integer(v)) rc = BAD(e, "%s: no integer 'image_id' (preprocess with --dataset)", p);
    else *out = json_integer_value(v);
    json_decref(j);
    free(d); free(p);
    return rc;
}

/* The ground truth restricted to the images of samples [lo, hi): pycocotools
 * evaluates every image of the file, so the rest would count as missed. */
static void gt_subset(const coco_gt_t *gt, const int64_t *ids, int n, coco_gt_t *sub)
{
    *sub = *gt;
    sub->img_ids = xmalloc((n + 1) * sizeof *sub->img_ids);
    sub->img_files = xmalloc((n + 1) * sizeof *sub->img_files);
    sub->anns = xmalloc((gt->nann + 1) * sizeof *sub->anns);
    sub->nimg = sub->nann = 0;
    for (int64_t i = 0; i < gt->nimg; i++)
        for (int k = 0; k < n; k++)
            if (gt->img_ids[i] == ids[k]) {
                sub->img_files[sub->nimg] = gt->img_files[i];
                sub->img_ids[sub->nimg++] = ids[k];
                break;
            }
    for (int64_t a = 0; a < gt->nann; a++)
        if (coco_gt_img_index(sub, gt->anns[a].image_id) >= 0) sub->anns[sub->nann++] = gt->anns[a];
}

/* outs[k] are the outputs of sample lo + k. */
static int map_of(fp_ctx_t *c, tensor_set_t *outs, int lo, int hi, double *ap, perr_t *e)
{
    char *dir = path_join(c->work, "decode");
    remove_tree(dir);
    int rc = mkdir_p(dir, e);
    int64_t *ids = xmalloc((hi - lo + 1) * sizeof *ids);
    for (int i = lo; i < hi && !rc; i++) {
        char *sd = path_join(dir, c->s[i].id);
        rc = meta_image_id(c, c->s[i].id, &ids[i - lo], e) || tensorset_write(sd, &outs[i - lo], e);
        free(sd);
    }
    coco_gt_t sub;
    coco_dets_t d = {0};
    coco_eval_t ev = {0};
    if (!rc) {
        gt_subset(&c->gt, ids, hi - lo, &sub);
        c->dec.meta_dir = (char *)c->meta_dir;
        rc = coco_decode_dir(dir, &sub, &c->dec, &d, e);
        c->dec.meta_dir = NULL;
        /* no detection at all: AP 0 (pycocotools would crash) */
        if (!rc && d.n == 0) *ap = 0;
        else if (!rc && !(rc = coco_evaluate(&sub, &d, 1, &ev, e))) *ap = ev.stats[0] < 0 ? 0 : ev.stats[0];
        free(sub.img_ids); free(sub.img_files); free(sub.anns);
    }
    coco_dets_free(&d);
    coco_eval_free(&ev);
    free(ids);
    remove_tree(dir);
    free(dir);
    return rc;
}

/* ---- scoring ---- */

static int64_t nonfinite(const cmp_values_t *v) { return v->nan + v->posinf + v->neginf; }

static int score_outputs(fp_ctx_t *c, tensor_set_t *outs, int lo, int hi, fp_score_t *sc, perr_t *e)
{
    cmp_work_t *w = cmp_work_new();
    int64_t bad = 0, total = 0;
    for (int i = lo; i < hi; i++) {
        const tensor_set_t *ref = &c->s[i].ref;
        for (int k = 0; k < ref->n; k++) {
            tensor_t *a = tensorset_get(&outs[i - lo], ref->names[k]);
            if (!a || !tensor_same_shape(a, ref->ts[k]))
                { cmp_work_free(w); return INTERNAL(e, "output '%s' missing or reshaped", ref->names[k]); }
            if (!cmp_config_judged(&c->crit.tol, ref->names[k])) continue;   /* outputs: / compare.ignore */
            cmp_tol_t tol = cmp_config_tol(&c->crit.tol, ref->names[k]);
            cmp_stats_t st;
            if (cmp_pair(a, ref->ts[k], &tol, w, &st, e)) { cmp_work_free(w); return -1; }
            if (c->crit.use_tol && !cmp_passed(&st, &tol)) sc->tol_failed++;
            if (!dtype_is_float(ref->ts[k]->dtype)) continue;
            int64_t extra = nonfinite(&st.a) - nonfinite(&st.b);
            double snr = extra > 0 ? -INFINITY : st.snr_db, cosv = extra > 0 ? -1 : st.cosine;
            if (extra > 0) bad += extra;
            total += st.n;
            if (snr < sc->worst_snr) sc->worst_snr = snr;
            if (cosv < sc->worst_cos) sc->worst_cos = cosv;
        }
    }
    cmp_work_free(w);
    /* non-finite values dominate; fewer of them is still progress */
    sc->err = isfinite(sc->worst_snr) ? -sc->worst_snr : 1000.0 + 1000.0 * (double)bad / (total ? total : 1);
    return 0;
}

static double ref_map(const fp_ctx_t *c, int lo) { return lo == 0 ? c->ref_map_search : c->ref_map_hold; }

int fp_evaluate(fp_ctx_t *c, char **fp32, int n, int lo, int hi, int counted, fp_score_t *sc, perr_t *e)
{
    if (!time_for(c, hi - lo)) {   /* past the budget: not run, and not a pass */
        memset(sc, 0, sizeof *sc);
        sc->skipped = 1;
        sc->err = sc->map_drop = INFINITY;
        sc->worst_snr = -INFINITY;
        c->skipped_evals++;
        return 0;
    }
    double t0 = fp_now();
    char *cfg = path_join(c->work, "eval.yaml");
    int rc = fp_write_config(c, fp32, NULL, n, cfg, e);
    graph_t *g = rc ? NULL : fp_build(c, NULL, cfg, 0, e);
    free(cfg);
    if (!g) return -1;
    tensor_set_t *outs = xcalloc(hi - lo + 1, sizeof *outs);
    exec_session_t *xs = session_open(c, g, e);
    if (!xs) rc = -1;
    for (int i = lo; i < hi && !rc; i++) rc = run_one(xs, &c->s[i], &outs[i - lo], e);
    exec_session_close(xs);
    graph_free(g);
    memset(sc, 0, sizeof *sc);
    sc->worst_snr = INFINITY;
    sc->worst_cos = 1;
    if (!rc) rc = score_outputs(c, outs, lo, hi, sc, e);
    if (!rc && c->crit.use_map) {
        rc = map_of(c, outs, lo, hi, &sc->map, e);
        sc->map_drop = 100.0 * (ref_map(c, lo) - sc->map);
        sc->err = sc->map_drop;
    }
    for (int i = lo; i < hi; i++) tensorset_free(&outs[i - lo]);
    free(outs);
    if (rc) return -1;
    double m = counted ? c->crit.margin : 0;
    sc->pass = (!c->crit.use_drop || sc->map_drop <= c->crit.max_map_drop - m + 1e-9) &&
               (c->crit.min_map < 0 || 100.0 * sc->map >= 100.0 * c->crit.min_map + m - 1e-9) &&
               (!c->crit.use_tol || sc->tol_failed == 0) &&
               (!c->crit.use_snr || sc->worst_snr >= c->crit.min_snr_db + m) &&
               (!c->crit.use_cos || sc->worst_cos >= c->crit.min_cosine);
    if (counted) c->evals++;
    if (hi > lo) c->sample_s = fmax(c->sample_s, (fp_now() - t0) / (hi - lo));
    return 0;
}

/* The FP32 reference outputs of every sample, and its mAP on both splits. */
int fp_reference(fp_ctx_t *c, perr_t *e)
{
    double t0 = fp_now();
    graph_t *g = fp_build(c, "fp32", NULL, 0, e);
    if (!g) return -1;
    exec_session_t *xs = session_open(c, g, e);
    int rc = xs ? 0 : -1;
    for (int i = 0; i < c->n_samples && !rc; i++) rc = run_one(xs, &c->s[i], &c->s[i].ref, e);
    /* the budget's first estimate of an evaluation's seconds per sample (a
     * reduced precision's emulation costs more than FP32: twice, until measured) */
    if (c->n_samples) c->sample_s = 2 * (fp_now() - t0) / c->n_samples;
    exec_session_close(xs);
    graph_free(g);
    if (!rc && c->crit.use_map) {
        tensor_set_t *outs = xcalloc(c->n_samples, sizeof *outs);
        for (int i = 0; i < c->n_samples; i++) outs[i] = c->s[i].ref;   /* borrowed */
        rc = map_of(c, outs, 0, c->n_search, &c->ref_map_search, e);
        if (!rc && c->n_samples > c->n_search)
            rc = map_of(c, outs + c->n_search, c->n_search, c->n_samples, &c->ref_map_hold, e);
        free(outs);
    }
    return rc;
}

void fp_ctx_free(fp_ctx_t *c)
{
    for (int i = 0; i < c->n_samples; i++) {
        free(c->s[i].id);
        tensorset_free(&c->s[i].in);
        tensorset_free(&c->s[i].ref);
    }
    free(c->s);
    for (int i = 0; i < c->n_layers; i++) { free(c->layers[i].name); free(c->layers[i].op); }
    free(c->layers);
    for (int i = 0; i < c->n_units; i++) { free(c->units[i].nodes); free(c->units[i].name); }
    free(c->units);
    cmp_config_free(&c->crit.tol);
    if (c->has_gt) { coco_gt_free(&c->gt); coco_decode_opts_free(&c->dec); }
    free((char *)c->meta_dir);
}
