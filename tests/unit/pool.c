/* pool.c — checks the thread pool (util/pool.c): every task of every job
 * runs exactly once and the job is over when pool_for returns, for 1 to 4
 * threads; jobs back to back (workers still spinning), and jobs after the
 * caller has been away longer than the spin (workers asleep, woken by the
 * condition variable); a pool_for inside a task runs serially; the thread
 * count can grow between jobs. Thread counts over the CPUs available
 * take the path that sleeps at once (on a 2-CPU machine, 3 and 4). Also
 * worth running under
 * -fsanitize=thread by hand (see the comment at the end). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tap.h"
#include "util/pool.h"

#define MAX_TASKS 4096

typedef struct job {
    atomic_int hits[MAX_TASKS];
    atomic_int nested;
    int64_t n;
    int nest;
} job_t;

static void count_inner(void *ctx, int64_t i)
{
    job_t *j = ctx;
    (void)i;
    atomic_fetch_add(&j->nested, 1);
}

static void count_task(void *ctx, int64_t i)
{
    job_t *j = ctx;
    atomic_fetch_add(&j->hits[i], 1);
    if (j->nest) pool_for(3, count_inner, j);   /* runs on this thread, serially */
}

/* Runs one job of n tasks; 0 when every task ran exactly once. */
static int run_job(job_t *j, int64_t n, int nest)
{
    memset(j, 0, sizeof *j);
    j->n = n;
    j->nest = nest;
    pool_for(n, count_task, j);
    int bad = 0;
    for (int64_t i = 0; i < n; i++) bad += atomic_load(&j->hits[i]) != 1;
    if (nest) bad += atomic_load(&j->nested) != 3 * n;
    return bad;
}

static void sleep_us(long us)
{
    struct timespec t = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&t, NULL);
}

int main(void)
{
    static job_t j;
    uint64_t seed = 12345;
    for (int threads = 1; threads <= 4; threads++) {
        pool_set_threads(threads);
        ok(pool_threads() == threads, "%d threads set", threads);
        int bad = 0;
        for (int k = 0; k < 3000; k++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            bad += run_job(&j, 1 + (int64_t)(seed >> 33) % MAX_TASKS, 0);
        }
        ok(bad == 0, "%d threads: 3000 jobs back to back, every task once (%d wrong)", threads, bad);
        bad = 0;
        for (int k = 0; k < 20; k++) {
            sleep_us(k % 2 ? 300 : 2000);   /* longer than the spin: workers sleep */
            bad += run_job(&j, 64 + k, 0);
        }
        ok(bad == 0, "%d threads: jobs after the workers went to sleep (%d wrong)", threads, bad);
        ok(run_job(&j, 257, 1) == 0, "%d threads: pool_for inside a task runs serially", threads);
    }
    pool_set_threads(1);
    ok(run_job(&j, 100, 0) == 0, "back to one thread: tasks run on the caller");
    return done_testing();
}

/* By hand, for data races:
 *   cc -std=c11 -D_GNU_SOURCE -fsanitize=thread -g -O1 -Istages/lib -Itests \
 *      tests/unit/pool.c stages/lib/util/pool.c -lpthread -o /tmp/pool_tsan && /tmp/pool_tsan */
