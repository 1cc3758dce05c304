/* select.h — exact order statistics without sorting: quickselect for small
 * arrays of keys, and the digit step of a radix select for large ones.
 *
 * Keys are the bit patterns of non-negative floats (uint32 for float,
 * uint64 for double), which order exactly as the values do. */
#ifndef PARITY_COMPARE_SELECT_H
#define PARITY_COMPARE_SELECT_H

#include <stdint.h>

#define SEL_MAX_RANKS 10
#define SEL_DIGITS 65536        /* 16-bit radix digits */

/* Values at the given ranks (ascending, repeats allowed, each < n) of
 * keys[0..n); keys are reordered. */
void select_ranks(uint64_t *keys, int64_t n, const int64_t *ranks, int m, uint64_t *out);

/* One radix step: hist holds the counts of the 65536 digit values among the
 * elements sharing a prefix; for each of the m ascending ranks rem[i] (rank
 * within those elements) sets digit[i] and turns rem[i] into the rank within
 * the elements that also share that digit. */
void radix_step(const uint32_t *hist, int m, int64_t *rem, uint32_t *digit);

#endif
