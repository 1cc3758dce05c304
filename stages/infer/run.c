/* run.c — infer over one tensor set or a folder of samples, with latency
 * statistics. Each sample's output folder is staged and swapped in whole. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "run.h"
#include "util/isa.h"
#include "io/tensorset.h"
#include "util/fsutil.h"
#include "util/jsonfile.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A folder is one tensor set unless it holds sample subfolders and no
 * tensor files (an empty folder is the empty set: models without inputs). */
static int is_single_set(const char *dir)
{
    char **names;
    perr_t e = {0};
    int n = list_dir(dir, &names, &e), found = 0, subdirs = 0;
    for (int i = 0; i < n; i++) {
        size_t l = strlen(names[i]);
        if ((l > 4 && !strcmp(names[i] + l - 4, ".npy")) || (l > 3 && !strcmp(names[i] + l - 3, ".pb"))) found = 1;
        char *p = path_join(dir, names[i]);
        subdirs += is_dir(p);
        free(p);
    }
    found = found || subdirs == 0;
    if (n >= 0) free_list(names, n);
    return found;
}

/* What every sample of a job runs with. */
typedef struct infer_ctx {
    exec_session_t *s;
    const graph_t *g;
    const exec_config_t *cfg;
    const infer_job_t *job;
    double *times;      /* job->runs entries: the last sample's run times */
    double *layer_ms;   /* --profile: every timed run's layer times added up */
} infer_ctx_t;

/* Runs one sample: warmup untimed runs (outside the per-layer profile too),
 * then timed ones into c->times. */
static int run_sample(const infer_ctx_t *c, const char *in, const char *out, const char *ref,
                      const dump_limit_t *lim, perr_t *e)
{
    tensor_set_t inputs, refset = {0};
    if (tensorset_read(in, &inputs, e)) return -1;
    if (ref && tensorset_read(ref, &refset, e)) { tensorset_free(&inputs); return -1; }
    if (ref && refset.n == 0) {   /* every layer would silently run on its own inputs */
        tensorset_free(&inputs);
        return BAD(e, "%s: the reference dump holds no tensors", ref);
    }
    const exec_run_opts_t warm = {.reference = ref ? &refset : NULL},
                          timed = {.reference = warm.reference, .layer_ms = c->layer_ms};
    int rc = 0;
    tensor_set_t outputs = {0};
    for (int r = 0; r < c->job->warmup && !rc; r++) {
        rc = exec_session_run(c->s, &inputs, &warm, &outputs, e);
        tensorset_free(&outputs);
    }
    for (int r = 0; r < c->job->runs && !rc; r++) {
        tensorset_free(&outputs);
        double t0 = now_ms();
        rc = exec_session_run(c->s, &inputs, &timed, &outputs, e);
        c->times[r] = now_ms() - t0;
    }
    if (rc) perr_prefix(e, "%s: ", in);
    char *tmp = rc ? NULL : dir_stage_begin(out, e);
    if (!rc && !tmp) rc = -1;
    if (!rc && c->cfg->dump) dump_select(c->g, &outputs, lim, out);
    else if (!rc) outputs_select(c->g, &outputs, lim);
    if (!rc && tensorset_write(tmp, &outputs, e)) rc = -1;
    if (!rc) rc = dir_stage_commit(tmp, out, e);
    else if (tmp) { remove_tree(tmp); free(tmp); }
    tensorset_free(&outputs);
    tensorset_free(&inputs);
    tensorset_free(&refset);
    return rc;
}

static json_t *latency_json(double *t, int n)
{
    qsort(t, n, sizeof *t, cmp_double);
    json_t *o = json_object();
    json_object_set_new(o, "min_ms", json_real(t[0]));
    json_object_set_new(o, "median_ms", json_real(n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2])));
    json_object_set_new(o, "max_ms", json_real(t[n - 1]));
    json_object_set_new(o, "runs", json_integer(n));
    return o;
}

/* Per-layer times as trtexec's --exportProfile lays them out:
 * [{"count": runs}, {"name", "op", "timeMs", "averageMs", "percentage"}, ...]. */
static int write_profile(const graph_t *g, const double *ms, int runs, const char *path, perr_t *e)
{
    double total = 0;
    for (int i = 0; i < g->n_nodes; i++) total += ms[i];
    json_t *arr = json_array(), *head = json_object();
    json_object_set_new(head, "count", json_integer(runs));
    json_array_append_new(arr, head);
    for (int i = 0; i < g->n_nodes; i++) {
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(g->nodes[i].name));
        json_object_set_new(o, "op", json_string(g->nodes[i].op_type));
        json_object_set_new(o, "timeMs", json_real(ms[i]));
        json_object_set_new(o, "averageMs", json_real(ms[i] / runs));
        json_object_set_new(o, "percentage", json_real(total > 0 ? 100 * ms[i] / total : 0));
        json_array_append_new(arr, o);
    }
    int rc = write_json(path, arr, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6), e);
    json_decref(arr);
    return rc;
}

int infer_all(const graph_t *g, const exec_config_t *cfg, const infer_job_t *job, perr_t *e)
{
    int total_runs = 0;
    infer_ctx_t c = {.s = exec_session_open(g, cfg, e), .g = g, .cfg = cfg, .job = job};
    if (!c.s) return -1;
    c.layer_ms = job->profile ? xcalloc(g->n_nodes + 1, sizeof *c.layer_ms) : NULL;
    c.times = xcalloc(job->runs, sizeof *c.times);
    json_t *samples = json_array();
    int rc = 0;
    if (!is_dir(job->in)) {
        rc = BAD(e, "%s: input is not a folder", job->in);
    } else if (is_single_set(job->in)) {
        dump_limit_t lim = job->dump;
        lim.shown = 1;   /* one tensor set: it is the sample */
        rc = run_sample(&c, job->in, job->out, job->reference, &lim, e);
        if (!rc) {
            json_t *s = latency_json(c.times, job->runs);
            json_object_set_new(s, "sample", json_string("."));
            json_array_append_new(samples, s);
        }
    } else {
        char **names;
        int n = list_dir(job->in, &names, e);
        if (n < 0) rc = -1;
        /* the samples' outputs appear together or not at all: a bad sample
         * leaves no output folder with the good ones in it */
        char *stage = rc ? NULL : dir_stage_begin(job->out, e);
        if (!rc && !stage) rc = -1;
        int seen = 0;   /* sample folders so far: the first is shown unless --show-sample names one */
        for (int i = 0; i < n && !rc; i++) {
            char *in = path_join(job->in, names[i]);
            if (is_dir(in)) {
                char *out = path_join(stage, names[i]);
                char *ref = job->reference ? path_join(job->reference, names[i]) : NULL;
                /* a folder of samples: each one like the reference's sample of the same name */
                dump_limit_t lim = job->dump;
                char *like = lim.like ? path_join(lim.like, names[i]) : NULL;
                if (like) lim.like = like;
                char *where = path_join(job->out, names[i]);
                lim.where = where;
                lim.shown = job->show_sample ? !strcmp(names[i], job->show_sample) : !seen++;
                rc = run_sample(&c, in, out, ref, &lim, e);
                free(like);
                free(where);
                if (!rc) {
                    json_t *s = latency_json(c.times, job->runs);
                    json_object_set_new(s, "sample", json_string(names[i]));
                    json_array_append_new(samples, s);
                }
                free(out);
                free(ref);
            }
            free(in);
        }
        if (n >= 0) free_list(names, n);
        if (!rc && json_array_size(samples) == 0) rc = BAD(e, "%s: no tensor set found (no .npy/.pb files, no sample folders)", job->in);
        if (!rc) rc = dir_stage_commit(stage, job->out, e);
        else if (stage) { remove_tree(stage); free(stage); }
    }
    total_runs = (int)json_array_size(samples) * job->runs;
    exec_session_close(c.s);
    if (!rc && job->profile) rc = write_profile(g, c.layer_ms, total_runs, job->profile, e);
    free(c.layer_ms);
    if (!rc && job->stats) {
        json_t *root = json_object();
        json_object_set_new(root, "threads", json_integer(cfg->threads));
        /* the kernels that ran: the instruction set (the same bits at any)
         * and whether matrix products went to OpenBLAS (not the same bits on
         * every CPU) */
        json_object_set_new(root, "isa", json_string(isa_name(isa_active())));
        json_object_set_new(root, "kernels", json_string(kernels_name(kernels_mode())));
        json_object_set_new(root, "samples", samples);
        samples = NULL;
        rc = write_json(job->stats, root, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6), e);
        json_decref(root);
    }
    json_decref(samples);
    free(c.times);
    return rc;
}
