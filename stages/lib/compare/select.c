/* select.c — multi-rank quickselect (three-way partition, so runs of equal
 * keys, as in error arrays full of exact zeros, cost one pass) and the radix
 * select digit step. Pivots come from a fixed-seed generator: the result and
 * the work done are the same on every run. */
#include <stdlib.h>
#include "compare/select.h"

static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static void swap_u64(uint64_t *k, int64_t i, int64_t j)
{
    uint64_t t = k[i];
    k[i] = k[j];
    k[j] = t;
}

/* Median of three random elements of [lo, hi). */
static uint64_t pick_pivot(const uint64_t *k, int64_t lo, int64_t hi, uint64_t *seed)
{
    uint64_t span = (uint64_t)(hi - lo);
    uint64_t a = k[lo + (int64_t)(next_rand(seed) % span)];
    uint64_t b = k[lo + (int64_t)(next_rand(seed) % span)];
    uint64_t c = k[lo + (int64_t)(next_rand(seed) % span)];
    if (a > b) { uint64_t t = a; a = b; b = t; }
    if (b > c) b = c;
    return a > b ? a : b;
}

/* Resolves ranks[0..m) (all inside [lo, hi)) by partitioning. */
static void select_range(uint64_t *k, int64_t lo, int64_t hi, const int64_t *ranks, int m,
                         uint64_t *out, uint64_t *seed, int depth)
{
    while (m > 0) {
        if (hi - lo <= 16 || depth > 64) {
            /* tiny range, or a pathological run of pivots: finish by sorting */
            qsort(k + lo, (size_t)(hi - lo), sizeof *k, cmp_u64);
            for (int i = 0; i < m; i++) out[i] = k[ranks[i]];
            return;
        }
        uint64_t p = pick_pivot(k, lo, hi, seed);
        /* [lo, lt) < p, [lt, i) == p, (gt, hi) > p */
        int64_t lt = lo, i = lo, gt = hi - 1;
        while (i <= gt) {
            if (k[i] < p) swap_u64(k, lt++, i++);
            else if (k[i] > p) swap_u64(k, i, gt--);
            else i++;
        }
        int a = 0;
        while (a < m && ranks[a] < lt) a++;
        int b = a;
        while (b < m && ranks[b] <= gt) out[b++] = p;
        depth++;
        /* recurse on the left ranks, loop on the right ones */
        if (a > 0) select_range(k, lo, lt, ranks, a, out, seed, depth);
        ranks += b;
        out += b;
        m -= b;
        lo = gt + 1;
    }
}

void select_ranks(uint64_t *keys, int64_t n, const int64_t *ranks, int m, uint64_t *out)
{
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    if (n <= 0 || m <= 0) return;
    select_range(keys, 0, n, ranks, m, out, &seed, 0);
}

void radix_step(const uint32_t *hist, int m, int64_t *rem, uint32_t *digit)
{
    int64_t cum = 0;
    int t = 0;
    for (uint32_t d = 0; d < SEL_DIGITS && t < m; d++) {
        int64_t c = hist[d];
        while (t < m && rem[t] < cum + c) {
            digit[t] = d;
            rem[t] -= cum;
            t++;
        }
        cum += c;
    }
    /* ranks beyond the count cannot happen when the counts are consistent;
     * pin them to the last digit rather than leave them unset */
    for (; t < m; t++) {
        digit[t] = SEL_DIGITS - 1;
        rem[t] = 0;
    }
}
