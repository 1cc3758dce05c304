/* xorshift.h — a small deterministic random source for C tests that
 * generate inputs (the same sequence on every machine). */
#ifndef PARITY_TESTS_XORSHIFT_H
#define PARITY_TESTS_XORSHIFT_H

#include <stdint.h>

static uint64_t xs_state = 0x9e3779b97f4a7c15u;

/* A number in [0, n). */
static inline uint32_t rnd(uint32_t n)
{
    xs_state ^= xs_state << 13;
    xs_state ^= xs_state >> 7;
    xs_state ^= xs_state << 17;
    return (uint32_t)(xs_state % n);
}

#endif
