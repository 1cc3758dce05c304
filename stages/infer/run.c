/* run.c — infer over tensor sets or folders of samples, with latency
 * statistics. Each sample's output folder is staged and swapped in whole;
 * a folder of samples appears only when all of them are done.
 *
 * Several sets (-i/-o given more than once) run in one process, one
 * session per engine, sample by sample: the first set's sample, then each
 * later set's sample of the same name. Where such a sample differs from
 * the first set's only in some of the graph's inputs, or its set runs
 * another engine (--engine) that computes some layers as the first set's
 * does, the first run keeps the values the rest of the graph hands to the
 * layers that differ, and the later run runs only those layers
 * (engine/share.c, engine/match.c): the validation matrix's letterbox and
 * letterbox-naive variants make the same images and differ only in the
 * orig_target_sizes RT-DETR reads in its last 6 nodes; its fp16 and mixed
 * engines compute the backbone alike. The outputs are the bytes separate
 * runs write (tests/stage/infer_share.t, infer_xshare.t). */
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

/* One sample of one set: where it is read and written, what it says. */
typedef struct sample {
    char *name;          /* "." for a set that is one tensor set */
    char *in, *out;      /* out: inside the set's staged folder */
    char *where;         /* the output folder as said on stderr, or NULL */
    int shown;           /* the sample the report shows */
    int done;
    int base;            /* the set it shared with, where it did (layers_run in stats) */
    json_t *stats;       /* its latency figures, once run */
} sample_t;

/* A set's samples in the order its folder lists them. */
typedef struct set_state {
    const infer_set_t *set;
    const graph_t *g;    /* its engine's graph, run in session sess */
    exec_session_t *sess;
    int single;
    char *stage;         /* a folder of samples: the staged output folder */
    sample_t *s;
    int n;
    int cursor;          /* the first sample a later lead name can match (names are sorted) */
} set_state_t;

/* What every sample of a job runs with. */
typedef struct infer_ctx {
    exec_session_t **s;    /* per engine */
    graph_t *const *g;     /* per engine */
    const exec_config_t *cfg;
    const infer_job_t *job;
    double *times;      /* job->runs entries: the last sample's run times */
    double *layer_ms;   /* --profile: every timed run's layer times added up */
    exec_share_t **share;  /* per set: the last share planned for it (from its base's engine) */
} infer_ctx_t;

static void add_sample(set_state_t *st, const char *name, char *in, char *out, char *where, int shown)
{
    st->s = xrealloc(st->s, (size_t)(st->n + 1) * sizeof *st->s);
    st->s[st->n++] = (sample_t){.name = xstrdup(name), .in = in, .out = out, .where = where, .shown = shown};
}

/* The set's samples; a folder of samples gets its staged output folder. */
static int open_set(const infer_ctx_t *c, const infer_set_t *set, set_state_t *st, perr_t *e)
{
    const infer_job_t *job = c->job;
    *st = (set_state_t){.set = set, .g = c->g[set->engine], .sess = c->s[set->engine]};
    if (!is_dir(set->in)) return BAD(e, "%s: input is not a folder", set->in);
    if (is_single_set(set->in)) {   /* one tensor set: it is the sample */
        st->single = 1;
        add_sample(st, ".", xstrdup(set->in), xstrdup(set->out), NULL, 1);
        return 0;
    }
    char **names;
    int n = list_dir(set->in, &names, e);
    if (n < 0) return -1;
    /* the samples' outputs appear together or not at all: a bad sample
     * leaves no output folder with the good ones in it */
    st->stage = dir_stage_begin(set->out, e);
    for (int i = 0; i < n && st->stage; i++) {
        char *in = path_join(set->in, names[i]);
        if (!is_dir(in)) { free(in); continue; }
        /* the first sample folder is shown unless --show-sample names one */
        int shown = job->show_sample ? !strcmp(names[i], job->show_sample) : st->n == 0;
        add_sample(st, names[i], in, path_join(st->stage, names[i]), path_join(set->out, names[i]), shown);
    }
    free_list(names, n);
    if (!st->stage) return -1;
    if (st->n == 0) return BAD(e, "%s: no tensor set found (no .npy/.pb files, no sample folders)", set->in);
    return 0;
}

static void close_set(set_state_t *st, int commit, int *rc, perr_t *e)
{
    if (st->stage && commit && !*rc) *rc = dir_stage_commit(st->stage, st->set->out, e);
    else if (st->stage) { remove_tree(st->stage); free(st->stage); }
    for (int i = 0; i < st->n; i++) {
        free(st->s[i].name);
        free(st->s[i].in);
        free(st->s[i].out);
        free(st->s[i].where);
        json_decref(st->s[i].stats);
    }
    free(st->s);
}

/* Sample i of st's read inputs (and the reference dump's, if any). */
static int read_sample(const infer_ctx_t *c, const set_state_t *st, int i, tensor_set_t *in, tensor_set_t *ref, perr_t *e)
{
    *ref = (tensor_set_t){0};
    if (tensorset_read(st->s[i].in, in, e)) return -1;
    if (!c->job->reference) return 0;
    char *rp = st->single ? xstrdup(c->job->reference) : path_join(c->job->reference, st->s[i].name);
    int rc = tensorset_read(rp, ref, e);
    if (!rc && ref->n == 0) rc = BAD(e, "%s: the reference dump holds no tensors", rp);   /* every layer would run on its own inputs */
    free(rp);
    if (rc) tensorset_free(in);
    return rc;
}

/* Runs sample i of st on its read inputs: warmup untimed runs (outside the
 * per-layer profile too), then timed ones into c->times, the last one
 * keeping into or reusing a share; then writes its outputs. */
static int run_sample(const infer_ctx_t *c, set_state_t *st, int i, const tensor_set_t *inputs,
                      const tensor_set_t *refset, exec_share_t *const *keep, int n_keep, const exec_share_t *reuse,
                      perr_t *e)
{
    sample_t *sm = &st->s[i];
    const tensor_set_t *ref = c->job->reference ? refset : NULL;
    int layers = 0;
    const exec_run_opts_t warm = {.reference = ref, .keep = keep, .n_keep = n_keep, .reuse = reuse},
                          timed = {.reference = ref, .layer_ms = c->layer_ms, .keep = keep, .n_keep = n_keep,
                                   .reuse = reuse, .layers_run = &layers};
    int rc = 0;
    tensor_set_t outputs = {0};
    for (int r = 0; r < c->job->warmup && !rc; r++) {
        rc = exec_session_run(st->sess, inputs, &warm, &outputs, e);
        tensorset_free(&outputs);
    }
    for (int r = 0; r < c->job->runs && !rc; r++) {
        tensorset_free(&outputs);
        double t0 = now_ms();
        rc = exec_session_run(st->sess, inputs, &timed, &outputs, e);
        c->times[r] = now_ms() - t0;
    }
    if (rc) perr_prefix(e, "%s: ", sm->in);
    dump_limit_t lim = c->job->dump;
    char *like = !st->single && lim.like ? path_join(lim.like, sm->name) : NULL;
    if (like) lim.like = like;
    if (sm->where) lim.where = sm->where;
    lim.shown = sm->shown;
    char *tmp = rc ? NULL : dir_stage_begin(sm->out, e);
    if (!rc && !tmp) rc = -1;
    if (!rc && c->cfg->dump) dump_select(st->g, &outputs, &lim, sm->out);
    else if (!rc) outputs_select(st->g, &outputs, &lim);
    if (!rc && tensorset_write(tmp, &outputs, e)) rc = -1;
    if (!rc) rc = dir_stage_commit(tmp, sm->out, e);
    else if (tmp) { remove_tree(tmp); free(tmp); }
    tensorset_free(&outputs);
    free(like);
    if (rc) return rc;
    json_t *s = json_object();
    qsort(c->times, c->job->runs, sizeof *c->times, cmp_double);
    int n = c->job->runs;
    json_object_set_new(s, "min_ms", json_real(c->times[0]));
    json_object_set_new(s, "median_ms", json_real(n % 2 ? c->times[n / 2] : 0.5 * (c->times[n / 2 - 1] + c->times[n / 2])));
    json_object_set_new(s, "max_ms", json_real(c->times[n - 1]));
    json_object_set_new(s, "runs", json_integer(n));
    json_object_set_new(s, "sample", json_string(sm->name));
    if (layers < st->g->n_nodes)   /* a partial rerun: its time is of these layers only */
        json_object_set_new(s, "layers_run", json_integer(layers));
    sm->stats = s;
    sm->done = 1;
    return 0;
}

/* The graph inputs in which b differs from a, marked in vary; 0 where b can
 * reuse a run of a: every tensor named, both holding each graph input. */
static int differing_inputs(const graph_t *g, const tensor_set_t *a, const tensor_set_t *b, unsigned char *vary)
{
    if (a->n != b->n) return 0;
    for (int i = 0; i < a->n; i++)
        if (!a->names[i][0] || !b->names[i][0]) return 0;
    int fixed = 0;
    for (int k = 0; k < g->n_inputs; k++) {
        const char *name = g->vals[g->inputs[k]].name;
        const tensor_t *ta = tensorset_get(a, name), *tb = tensorset_get(b, name);
        if (!ta || !tb) return 0;
        if (!tensor_identical(ta, tb)) vary[k] = 1;
        else fixed++;
    }
    return fixed > 0;   /* nothing in common: nothing to reuse */
}

/* Set k's share from runs of its base `from` for the inputs marked in
 * vary: the last one planned for k if it is that. */
static exec_share_t *share_for(infer_ctx_t *c, const set_state_t *from, const set_state_t *st, int k,
                               const unsigned char *vary)
{
    if (exec_share_is(c->share[k], from->g, st->g, vary)) return c->share[k];
    exec_share_free(c->share[k]);
    c->share[k] = exec_share_plan(from->g, st->g, vary);
    return c->share[k];
}

/* The earlier set sample k of set t shares with (its base), vary marking
 * the inputs in which they differ; -1 where none. Within its engine, the
 * lead set's run; for another engine, an earlier set of t's engine whose
 * sample differs only in some inputs (twins on one engine share all but
 * the layers those reach), else the lead set's run (the layers the
 * engines compute alike). */
static int base_of(const set_state_t *sets, const tensor_set_t *in, const int *twin, int k, unsigned char *vary)
{
    const set_state_t *t = &sets[k];
    size_t nv = (size_t)t->g->n_inputs;
    for (int j = 1; j < k && t->g != sets[0].g; j++) {
        memset(vary, 0, nv);
        if (twin[j] >= 0 && sets[j].g == t->g && differing_inputs(t->g, &in[j], &in[k], vary)) return j;
    }
    memset(vary, 0, nv);
    return differing_inputs(t->g, &in[0], &in[k], vary) ? 0 : -1;
}

/* Sample i of set 0 (lead), then the same-named not yet run samples of the
 * later sets, each on what its base's run kept where it can. */
static int run_group(infer_ctx_t *c, set_state_t *sets, int n_sets, int lead, int i, perr_t *e)
{
    int *twin = xcalloc((size_t)n_sets, sizeof *twin), *base = xcalloc((size_t)n_sets, sizeof *base);
    int *n_keep = xcalloc((size_t)n_sets, sizeof *n_keep);
    tensor_set_t *in = xcalloc((size_t)n_sets, sizeof *in), *ref = xcalloc((size_t)n_sets, sizeof *ref);
    exec_share_t **sh = xcalloc((size_t)n_sets, sizeof *sh);
    exec_share_t **keep = xcalloc((size_t)n_sets * n_sets, sizeof *keep);   /* row j: the shares set j's run keeps into */
    int rc = read_sample(c, &sets[lead], i, &in[lead], &ref[lead], e);
    for (int k = lead + 1; k < n_sets && !rc && lead == 0; k++) {
        /* list_dir sorts names: one walk over each set finds the twins */
        set_state_t *t = &sets[k];
        while (t->cursor < t->n && strcmp(t->s[t->cursor].name, sets[lead].s[i].name) < 0) t->cursor++;
        twin[k] = t->cursor < t->n && !strcmp(t->s[t->cursor].name, sets[lead].s[i].name) ? t->cursor : -1;
        if (twin[k] < 0) continue;
        rc = read_sample(c, &sets[k], twin[k], &in[k], &ref[k], e);
        /* (several sets never come with --dump or --reference: main.c) */
        unsigned char *vary = xcalloc((size_t)t->g->n_inputs + 1, 1);
        int j = base[k] = rc ? -1 : base_of(sets, in, twin, k, vary);
        if (j >= 0) {
            sh[k] = share_for(c, &sets[j], t, k, vary);
            keep[(size_t)j * n_sets + n_keep[j]++] = sh[k];
            t->s[twin[k]].base = j;
        }
        free(vary);
    }
    /* a base that reruns part is bound what the sets sharing with it need
     * of the rest; the last sets first, so that a chain passes it down */
    for (int k = n_sets - 1; k > lead && !rc && lead == 0; k--)
        if (twin[k] >= 0 && base[k] > 0 && sh[base[k]]) exec_share_also(sh[base[k]], sh[k]);
    for (int k = lead; k < n_sets && !rc && (k == lead || lead == 0); k++)
        if (k == lead || twin[k] >= 0)
            rc = run_sample(c, &sets[k], k == lead ? i : twin[k], &in[k], &ref[k], keep + (size_t)k * n_sets, n_keep[k],
                            sh[k], e);
    for (int k = 0; k < n_sets; k++) {
        tensorset_free(&in[k]);
        tensorset_free(&ref[k]);
    }
    free(in);
    free(ref);
    free(sh);
    free(keep);
    free(n_keep);
    free(base);
    free(twin);
    return rc;
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

/* stats.json of a set: the kernels that ran (the instruction set, the same
 * bits at any; whether matrix products went to OpenBLAS, not the same bits
 * on every CPU), and each sample's latency in the folder's order. */
static int write_stats(const infer_ctx_t *c, const set_state_t *st, perr_t *e)
{
    json_t *root = json_object(), *samples = json_array();
    json_object_set_new(root, "threads", json_integer(c->cfg->threads));
    json_object_set_new(root, "isa", json_string(isa_name(isa_active())));
    json_object_set_new(root, "kernels", json_string(kernels_name(kernels_mode())));
    int b = -1;   /* the set the first sharing sample shared with: the set's */
    for (int i = 0; i < st->n && b < 0; i++)
        if (json_object_get(st->s[i].stats, "layers_run")) b = st->s[i].base;
    if (b >= 0) {   /* its samples' times are of the layers they ran (layers_run of layers) */
        const infer_set_t *with = &c->job->sets[b];
        json_object_set_new(root, "shared_with", json_string(with->in));
        json_object_set_new(root, "shared_output", json_string(with->out));
        json_object_set_new(root, "shared_engine", json_string(c->job->engines[with->engine]));
        json_object_set_new(root, "layers", json_integer(st->g->n_nodes));
    }
    for (int i = 0; i < st->n; i++) {
        if (b >= 0 && st->s[i].base != b && json_object_get(st->s[i].stats, "layers_run"))   /* another set's run */
            json_object_set_new(st->s[i].stats, "shared_output", json_string(c->job->sets[st->s[i].base].out));
        json_array_append(samples, st->s[i].stats);
    }
    json_object_set_new(root, "samples", samples);
    int rc = write_json(st->set->stats, root, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6), e);
    json_decref(root);
    return rc;
}

int infer_all(graph_t *const *g, const exec_config_t *cfg, const infer_job_t *job, perr_t *e)
{
    int n_eng = 0, rc = 0, opened = 0;
    for (int k = 0; k < job->n_sets; k++)
        if (job->sets[k].engine >= n_eng) n_eng = job->sets[k].engine + 1;
    infer_ctx_t c = {.s = xcalloc((size_t)n_eng, sizeof *c.s), .g = g, .cfg = cfg, .job = job};
    for (int i = 0; i < n_eng && !rc; i++)
        if (!(c.s[i] = exec_session_open(g[i], cfg, e))) rc = -1;
    /* --profile comes with one set only (main.c): the first engine's layers */
    c.layer_ms = job->profile ? xcalloc(g[0]->n_nodes + 1, sizeof *c.layer_ms) : NULL;
    c.times = xcalloc(job->runs, sizeof *c.times);
    c.share = xcalloc((size_t)job->n_sets, sizeof *c.share);
    set_state_t *sets = xcalloc((size_t)job->n_sets, sizeof *sets);
    for (; opened < job->n_sets && !rc; opened++) rc = open_set(&c, &job->sets[opened], &sets[opened], e);
    for (int k = 0; k < job->n_sets && !rc; k++)
        for (int i = 0; i < sets[k].n && !rc; i++)
            if (!sets[k].s[i].done) rc = run_group(&c, sets, job->n_sets, k, i, e);
    for (int i = 0; i < n_eng; i++) exec_session_close(c.s[i]);
    for (int k = 0; k < job->n_sets; k++) exec_share_free(c.share[k]);
    if (!rc && job->profile) rc = write_profile(g[0], c.layer_ms, sets[0].n * job->runs, job->profile, e);
    for (int k = 0; k < job->n_sets && !rc; k++)
        if (job->sets[k].stats) rc = write_stats(&c, &sets[k], e);
    for (int k = 0; k < opened; k++) close_set(&sets[k], 1, &rc, e);
    free(sets);
    free(c.share);
    free(c.s);
    free(c.layer_ms);
    free(c.times);
    return rc;
}
