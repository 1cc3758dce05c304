/* pool.h — a small persistent thread pool for kernels. Work is split into
 * tasks whose boundaries never depend on the thread count, so results are
 * bit-identical for any --threads (each task computes the same elements in
 * the same order whichever thread runs it). One exception, for balance:
 * fgemm's tiles (ops/gemm/fgemm.c) are cut finer past four threads, which
 * no element's arithmetic depends on. */
#ifndef PARITY_POOL_H
#define PARITY_POOL_H

#include <stdint.h>

/* Sets the number of threads (1 = run everything on the caller). */
void pool_set_threads(int threads);
int pool_threads(void);
/* Runs fn(ctx, i) for i in [0, n) across the pool; returns when all are done.
 * Nested calls from inside a task run serially. */
void pool_for(int64_t n, void (*fn)(void *ctx, int64_t i), void *ctx);

#endif
