/* run.c — processing the samples on several threads.
 *
 * Workers take samples in list order from a shared counter; each sample is
 * independent and written to its own folder, so the bytes do not depend on
 * the thread count. After a failure no new sample is started; since samples
 * are taken in order, every sample before the failing one has been
 * attempted, and the first failure in list order is the one reported.
 * The samples are written into a staging folder per output that becomes
 * OUTDIR only when all of them succeeded (with OUTDIR/index.json, the list
 * of samples); an OUTDIR that already held exactly those bytes is kept as
 * it was, times too, so make reruns nothing that reads it. */
#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "prep.h"
#include "util/fsutil.h"
#include "util/jsonfile.h"

typedef struct pool {
    const prep_cfg_t *const *cfg;
    int n;                  /* variants */
    const prep_inputs_t *in;
    char **stage;           /* one per variant */
    perr_t *errs;           /* one per sample */
    atomic_llong next;
    atomic_int failed;
    atomic_llong done;
    int progress;           /* stderr is a terminal */
    double t0;
} pool_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void show_progress(pool_t *p, long long done)
{
    double el = now_s() - p->t0, rate = el > 0 ? (double)done / el : 0;
    double eta = rate > 0 ? (double)(p->in->n - done) / rate : 0;
    fprintf(stderr, "\rpreprocess: %lld/%lld images, %.1f/s, ETA %.0fs ", done,
            (long long)p->in->n, rate, eta);
}

static void *worker(void *arg)
{
    pool_t *p = arg;
    for (;;) {
        if (atomic_load(&p->failed))
            break;
        long long i = atomic_fetch_add(&p->next, 1);
        if (i >= p->in->n)
            break;
        if (prep_sample(p->cfg, p->n, &p->in->s[i], p->stage, &p->errs[i]) < 0)
            atomic_store(&p->failed, 1);
        long long d = atomic_fetch_add(&p->done, 1) + 1;
        if (p->progress)
            show_progress(p, d);
    }
    return NULL;
}

static int write_index(const prep_cfg_t *cfg, const prep_inputs_t *in, const char *outdir,
                       perr_t *e)
{
    json_t *j = json_object(), *a = json_array();
    for (int64_t i = 0; i < in->n; i++) {
        json_t *s = json_pack("{s:s,s:s}", "sample_id", in->s[i].id, "file", in->s[i].file);
        if (in->s[i].image_id >= 0)
            json_object_set_new(s, "image_id", json_integer(in->s[i].image_id));
        json_array_append_new(a, s);
    }
    json_object_set_new(j, "samples", a);
    json_object_set_new(j, "config", json_deep_copy(cfg->resolved));
    char *path = path_join(outdir, "index.json");
    int rc = write_json(path, j, JSON_INDENT(2), e);
    json_decref(j);
    free(path);
    return rc;
}

int prep_run(const prep_cfg_t *const *cfg, int n, const prep_inputs_t *in,
             const char *const *outdirs, int jobs, perr_t *e)
{
    /* samples go to OUTDIR.tmp.PID, swapped into place when all succeeded:
     * a failed run leaves no folder (nor good samples beside a bad one) */
    char *stage[PREP_MAX_VARIANTS] = { 0 };
    assert(n >= 1 && n <= PREP_MAX_VARIANTS);
    int rc = 0;
    for (int v = 0; v < n && !rc; v++)
        if (!(stage[v] = dir_stage_begin(outdirs[v], e)))
            rc = -1;
    pool_t p = { .cfg = cfg, .n = n, .in = in, .stage = stage, .progress = isatty(2),
                 .t0 = now_s() };
    p.errs = xcalloc((size_t)in->n, sizeof *p.errs);
    atomic_init(&p.next, 0);
    atomic_init(&p.failed, rc < 0);
    atomic_init(&p.done, 0);
    if (jobs > in->n)
        jobs = (int)in->n;
    pthread_t th[64];
    int started = 0;
    for (int i = 1; !rc && i < jobs && i < 64; i++)
        if (pthread_create(&th[started], NULL, worker, &p) == 0)
            started++;
    if (!rc)
        worker(&p);
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    if (p.progress && !rc)
        fputc('\n', stderr);
    for (int64_t i = 0; i < in->n && !rc; i++)
        if (p.errs[i].code) {
            *e = p.errs[i];
            rc = -1;
        }
    free(p.errs);
    for (int v = 0; v < n && !rc; v++)
        rc = write_index(cfg[v], in, stage[v], e);
    for (int v = 0; v < n && !rc; v++) {
        rc = dir_stage_commit_if_changed(stage[v], outdirs[v], e);
        stage[v] = NULL;   /* freed by the commit */
    }
    for (int v = 0; v < n; v++)
        if (stage[v]) {
            remove_tree(stage[v]);
            staging_release(stage[v]);
            free(stage[v]);
        }
    return rc;
}
