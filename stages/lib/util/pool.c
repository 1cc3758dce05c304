/* pool.c — the persistent worker threads behind pool_for(). Workers sleep
 * on a condition variable between jobs; a job hands out task indices
 * through an atomic counter. */
#include <pthread.h>
#include <stdatomic.h>
#include "util/pool.h"
#include "util/err.h"

#define POOL_MAX 64

static struct {
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    pthread_t tid[POOL_MAX];
    int nthreads, started;
    uint64_t generation;
    void (*fn)(void *, int64_t);
    void *ctx;
    int64_t n;
    atomic_llong next;
    int busy;
} P = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, .nthreads = 1};

static _Thread_local int in_task;

static void run_tasks(void)
{
    in_task = 1;
    for (;;) {
        int64_t i = atomic_fetch_add(&P.next, 1);
        if (i >= P.n) break;
        P.fn(P.ctx, i);
    }
    in_task = 0;
}

static void *worker(void *arg)
{
    uint64_t seen = 0;
    (void)arg;
    pthread_mutex_lock(&P.mu);
    for (;;) {
        while (P.generation == seen) pthread_cond_wait(&P.wake, &P.mu);
        seen = P.generation;
        pthread_mutex_unlock(&P.mu);
        run_tasks();
        pthread_mutex_lock(&P.mu);
        if (--P.busy == 0) pthread_cond_signal(&P.done);
    }
    return NULL;
}

void pool_set_threads(int threads)
{
    if (threads < 1) threads = 1;
    if (threads > POOL_MAX) threads = POOL_MAX;
    pthread_mutex_lock(&P.mu);
    while (P.started < threads - 1) {
        if (pthread_create(&P.tid[P.started], NULL, worker, NULL) != 0) break;
        pthread_detach(P.tid[P.started]);
        P.started++;
    }
    P.nthreads = P.started + 1 < threads ? P.started + 1 : threads;
    pthread_mutex_unlock(&P.mu);
}

int pool_threads(void)
{
    return P.nthreads;
}

void pool_for(int64_t n, void (*fn)(void *ctx, int64_t i), void *ctx)
{
    if (n <= 0) return;
    if (P.nthreads <= 1 || n == 1 || in_task) {
        for (int64_t i = 0; i < n; i++) fn(ctx, i);
        return;
    }
    pthread_mutex_lock(&P.mu);
    P.fn = fn;
    P.ctx = ctx;
    P.n = n;
    atomic_store(&P.next, 0);
    /* only nthreads-1 workers take part; extra started workers also wake but
     * find no task left more often than not: harmless */
    P.busy = P.started;
    P.generation++;
    pthread_cond_broadcast(&P.wake);
    pthread_mutex_unlock(&P.mu);
    run_tasks();
    pthread_mutex_lock(&P.mu);
    while (P.busy > 0) pthread_cond_wait(&P.done, &P.mu);
    pthread_mutex_unlock(&P.mu);
}
