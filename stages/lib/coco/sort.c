/* sort.c — the stable sorts the evaluation needs (numpy's mergesort order)
 * and a small parallel-for. Sorting is deterministic by construction, and
 * parallel work writes disjoint results, so output never depends on the
 * thread count. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "coco/coco_int.h"

/* a before b: higher key, or equal keys in their current order (callers
 * only compare a run element with a later run's element) */
static void insertion_desc(const double *key, int64_t *idx, int64_t n)
{
    for (int64_t i = 1; i < n; i++) {
        int64_t v = idx[i];
        double k = key[v];
        int64_t j = i;
        while (j > 0 && key[idx[j - 1]] < k) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = v;
    }
}

void coco_sort_desc(const double *key, int64_t *idx, int64_t n, int64_t *tmp)
{
    enum { RUN = 16 };
    for (int64_t s = 0; s < n; s += RUN)
        insertion_desc(key, idx + s, n - s < RUN ? n - s : RUN);
    int64_t *src = idx, *dst = tmp;
    for (int64_t width = RUN; width < n; width *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * width) {
            int64_t mid = lo + width < n ? lo + width : n;
            int64_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            int64_t i = lo, j = mid, k = lo;
            /* take from the right run only when strictly greater: stable */
            while (i < mid && j < hi) dst[k++] = key[src[j]] > key[src[i]] ? src[j++] : src[i++];
            while (i < mid) dst[k++] = src[i++];
            while (j < hi) dst[k++] = src[j++];
        }
        int64_t *t = src; src = dst; dst = t;
    }
    if (src != idx) memcpy(idx, src, n * sizeof *idx);
}

void coco_radix_sort(uint64_t *key, int64_t *val, int64_t n, uint64_t *tk, int64_t *tv)
{
    enum { BITS = 11, NB = 1 << BITS };
    uint64_t maxk = 0;
    for (int64_t i = 0; i < n; i++) if (key[i] > maxk) maxk = key[i];
    uint64_t *sk = key, *dk = tk;
    int64_t *sv = val, *dv = tv;
    int64_t *count = xmalloc(NB * sizeof *count);
    for (int shift = 0; shift < 64 && (maxk >> shift) != 0; shift += BITS) {
        memset(count, 0, NB * sizeof *count);
        for (int64_t i = 0; i < n; i++) count[(sk[i] >> shift) & (NB - 1)]++;
        int64_t sum = 0;
        for (int b = 0; b < NB; b++) {
            int64_t c = count[b];
            count[b] = sum;
            sum += c;
        }
        for (int64_t i = 0; i < n; i++) {
            int64_t p = count[(sk[i] >> shift) & (NB - 1)]++;
            dk[p] = sk[i];
            dv[p] = sv[i];
        }
        uint64_t *t = sk; sk = dk; dk = t;
        int64_t *u = sv; sv = dv; dv = u;
    }
    free(count);
    if (sk != key) {
        memcpy(key, sk, n * sizeof *key);
        memcpy(val, sv, n * sizeof *val);
    }
}

typedef struct pfor {
    int64_t n;
    atomic_llong next;
    void (*fn)(int64_t, void *, void *);
    void *ctx;
    void *(*mk)(void *);
    void (*rm)(void *);
} pfor_t;

static void *pfor_worker(void *arg)
{
    pfor_t *p = arg;
    void *scratch = p->mk ? p->mk(p->ctx) : NULL;
    for (;;) {
        long long i = atomic_fetch_add(&p->next, 1);
        if (i >= p->n) break;
        p->fn(i, p->ctx, scratch);
    }
    if (p->rm) p->rm(scratch);
    return NULL;
}

void coco_parallel_for(int64_t n, int nthreads, void (*fn)(int64_t i, void *ctx, void *scratch),
                       void *ctx, void *(*mk)(void *ctx), void (*rm)(void *scratch))
{
    pfor_t p = { .n = n, .fn = fn, .ctx = ctx, .mk = mk, .rm = rm };
    atomic_init(&p.next, 0);
    if (nthreads > n) nthreads = (int)n;
    if (nthreads > 64) nthreads = 64;
    pthread_t th[64];
    int started = 0;
    for (int i = 1; i < nthreads; i++) {
        if (pthread_create(&th[started], NULL, pfor_worker, &p) != 0) break;
        started++;
    }
    pfor_worker(&p);
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
}
