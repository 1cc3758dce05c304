/* reduce_walk_impl.h — what reduce_walk.c's float32 runs (a Reduce
 * over the last axes of a float tensor: LayerNorm's ReduceMean) take from
 * each instruction set: the generic set in reduce_walk.c, AVX2 in
 * reduce_walk_avx2.c. Both add each run's terms into four partial sums by
 * index mod 4, folded as (s0 + s1) + (s2 + s3), so the bits are the same. */
#ifndef PARITY_REDUCE_WALK_IMPL_H
#define PARITY_REDUCE_WALK_IMPL_H

#include <stdint.h>
#include "util/isa.h"

/* Per-term transforms of the double and uint64 walks. */
typedef enum { TR_ID, TR_ABS, TR_SQ, TR_EXP, TR_MUL, TR_MAX } red_tr_t;

typedef struct reduce_walk_arch {
    /* acc[o] += the SUM4 of run o's L terms F(v) (F: TR_ID, TR_ABS or
     * TR_SQ; any other tr is taken as TR_ID) for o < n, run o starting at
     * xs + o L. */
    void (*sum4_f32)(const float *xs, int64_t L, red_tr_t tr, double *acc, int64_t n);
} reduce_walk_arch_t;

extern const reduce_walk_arch_t reduce_walk_arch_generic;
#if ISA_X86
extern const reduce_walk_arch_t reduce_walk_arch_avx2;
#endif

#endif
