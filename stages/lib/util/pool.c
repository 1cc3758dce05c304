/* pool.c — the persistent worker threads behind pool_for(). A job hands
 * out task indices through an atomic counter. Between jobs a worker first
 * spins for a short while on the job generation, then sleeps on a
 * condition variable; the caller waits for the job's end the same way.
 *
 * Why spin: an inference is hundreds of jobs of 10 us to a few ms each
 * with short serial stretches between them. Waking a sleeping thread costs
 * a futex call on each side and tens of microseconds of scheduler latency
 * (more in a VM), which at two threads took a third of what the second
 * thread gained. A spinning worker picks up the next job at once; after
 * SPIN_NS with no job it sleeps, so an idle pool costs nothing. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>
#include "util/pool.h"
#include "util/err.h"

#define POOL_MAX 64
/* How long a thread spins for the next job, or for the job's end, before
 * it sleeps. */
#define SPIN_NS 100000

static struct {
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    pthread_t tid[POOL_MAX];
    int nthreads, started, ready;      /* ready: workers that have read the generation */
    atomic_int spin;                   /* every thread has a CPU of its own: spin before sleeping */
    int sleepers;                      /* workers in cond_wait (under mu) */
    atomic_ullong generation;          /* a new job: fields below are set before it moves */
    void (*fn)(void *, int64_t);
    void *ctx;
    int parts;                         /* ranges the job's tasks are cut into */
    struct {
        _Alignas(64) atomic_llong next;   /* own cache line: taken from by every thread */
        int64_t end;
    } range[POOL_MAX];
    atomic_int busy;                   /* workers not yet finished with the job */
} P = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, .nthreads = 1};

static _Thread_local int in_task;

/* Thread `self` (0 the caller, workers 1..) takes the tasks of its own
 * range first, in order, then what is left of the others'. Why ranges:
 * consecutive layers then give a thread the same part of the tensors
 * (the same rows, the same spatial strips), which its own L2 still holds
 * from the layer before; handing out indices from one counter scattered
 * them over both cores' caches. Stealing keeps a slow thread from holding
 * the job up. Which thread runs a task never changes its result. */
static void run_tasks(int self)
{
    in_task = 1;
    for (int k = 0; k < P.parts; k++) {
        int r = (self + k) % P.parts;
        for (;;) {
            int64_t i = atomic_fetch_add(&P.range[r].next, 1);
            if (i >= P.range[r].end) break;
            P.fn(P.ctx, i);
        }
    }
    in_task = 0;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Spins until done(arg) or SPIN_NS have passed; returns done(arg). Not
 * at all when there are more threads than CPUs: a spinning thread would
 * then take the CPU of one with work (4 threads on 2 CPUs ran RT-DETR
 * three times slower than 2). */
static int spin_until(int (*done)(const void *), const void *arg)
{
    if (!atomic_load_explicit(&P.spin, memory_order_relaxed)) return done(arg);
    int64_t start = 0;
    for (unsigned i = 0;; i++) {
        if (done(arg)) return 1;
        cpu_relax();
        if ((i & 63) == 63) {
            /* the scheduler may have put the thread waited for on this
             * CPU (wakeups place a woken thread beside its waker): spinning
             * would keep it off the CPU for all of SPIN_NS, on every job
             * (a 0.2 ms model took 1.1 ms at two threads in such a
             * process); yielding lets it run, and costs a system call
             * that returns at once where the CPU is ours alone */
            sched_yield();
            int64_t t = now_ns();
            if (!start) start = t;
            else if (t - start > SPIN_NS) return done(arg);
        }
    }
}

static int generation_moved(const void *seen)
{
    return atomic_load_explicit(&P.generation, memory_order_acquire) != *(const uint64_t *)seen;
}

static int job_finished(const void *unused)
{
    (void)unused;
    return atomic_load_explicit(&P.busy, memory_order_acquire) == 0;
}

static void *worker(void *arg)
{
    int self = (int)(intptr_t)arg;
    /* the generation before the first job this worker takes part in:
     * pool_set_threads waits for this, so no job can start in between */
    pthread_mutex_lock(&P.mu);
    uint64_t seen = atomic_load(&P.generation);
    P.ready++;
    pthread_cond_broadcast(&P.done);
    pthread_mutex_unlock(&P.mu);
    for (;;) {
        if (!spin_until(generation_moved, &seen)) {
            pthread_mutex_lock(&P.mu);
            P.sleepers++;
            while (!generation_moved(&seen)) pthread_cond_wait(&P.wake, &P.mu);
            P.sleepers--;
            pthread_mutex_unlock(&P.mu);
        }
        seen = atomic_load_explicit(&P.generation, memory_order_acquire);
        run_tasks(self);
        if (atomic_fetch_sub_explicit(&P.busy, 1, memory_order_acq_rel) == 1) {
            pthread_mutex_lock(&P.mu);   /* the caller may be asleep on done */
            pthread_cond_signal(&P.done);
            pthread_mutex_unlock(&P.mu);
        }
    }
    return NULL;
}

/* CPUs this process may run on (its affinity mask, as taskset sets it). */
static int cpus_available(void)
{
#ifdef CPU_COUNT
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
#endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

void pool_set_threads(int threads)
{
    if (threads < 1) threads = 1;
    if (threads > POOL_MAX) threads = POOL_MAX;
    pthread_mutex_lock(&P.mu);
    while (P.started < threads - 1) {
        if (pthread_create(&P.tid[P.started], NULL, worker, (void *)(intptr_t)(P.started + 1)) != 0) break;
        pthread_detach(P.tid[P.started]);
        P.started++;
    }
    while (P.ready < P.started) pthread_cond_wait(&P.done, &P.mu);
    P.nthreads = P.started + 1 < threads ? P.started + 1 : threads;
    atomic_store(&P.spin, P.started + 1 <= cpus_available());
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
    /* every worker of the last job has finished (busy reached 0), so the
     * fields are free to set */
    P.fn = fn;
    P.ctx = ctx;
    /* every started worker wakes and takes part (more than nthreads-1 only
     * after the count was lowered: harmless) */
    P.parts = P.started + 1;
    for (int r = 0; r < P.parts; r++) {
        atomic_store(&P.range[r].next, n * r / P.parts);
        P.range[r].end = n * (r + 1) / P.parts;
    }
    atomic_store(&P.busy, P.started);
    pthread_mutex_lock(&P.mu);
    atomic_fetch_add_explicit(&P.generation, 1, memory_order_release);
    if (P.sleepers) pthread_cond_broadcast(&P.wake);
    pthread_mutex_unlock(&P.mu);
    run_tasks(0);
    if (!spin_until(job_finished, NULL)) {
        pthread_mutex_lock(&P.mu);
        while (!job_finished(NULL)) pthread_cond_wait(&P.done, &P.mu);
        pthread_mutex_unlock(&P.mu);
    }
}
