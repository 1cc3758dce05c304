/* tiny_rtdetr.h — helpers of the unit tests that run whole engines of the
 * tiny RT-DETR fixture (tests/fixtures/rtdetr-tiny; exec_session.c,
 * kept_storage.c): a reproducible input set and a byte-for-byte comparison
 * of two tensor sets. */
#ifndef PARITY_TINY_RTDETR_H
#define PARITY_TINY_RTDETR_H

#include <stdint.h>
#include <string.h>
#include "io/tensorset.h"

/* A fixed image (a linear congruential sequence from seed, in [0, 1)) and
 * its size. */
static inline void tiny_rtdetr_inputs(tensor_set_t *in, uint32_t seed)
{
    perr_t e = {0};
    int64_t d4[] = {1, 3, 160, 160}, d2[] = {1, 2};
    tensor_t *img = tensor_new(DT_FLOAT, 4, d4, &e), *size = tensor_new(DT_INT64, 2, d2, &e);
    float *p = img->data;
    uint32_t x = seed;
    for (int64_t i = 0; i < 3 * 160 * 160; i++) {
        x = x * 1664525u + 1013904223u;
        p[i] = (float)(x >> 8) / (float)(1u << 24);
    }
    ((int64_t *)size->data)[0] = 640;
    ((int64_t *)size->data)[1] = 480;
    memset(in, 0, sizeof *in);
    tensorset_add(in, "images", img);
    tensorset_add(in, "orig_target_sizes", size);
}

/* 1 when b holds a's tensors, byte for byte, and nothing else. */
static inline int tensor_sets_same(const tensor_set_t *a, const tensor_set_t *b)
{
    if (a->n != b->n) return 0;
    for (int i = 0; i < a->n; i++) {
        const tensor_t *x = a->ts[i], *y = tensorset_get(b, a->names[i]);
        if (!y || x->dtype != y->dtype || !tensor_same_shape(x, y) || memcmp(x->data, y->data, tensor_nbytes(x)))
            return 0;
    }
    return 1;
}

#endif
