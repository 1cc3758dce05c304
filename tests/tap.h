/* tap.h — minimal TAP producer for C tests (prove reads the output). */
#ifndef PARITY_TAP_H
#define PARITY_TAP_H

#include <stdio.h>
#include <math.h>

static int tap_n, tap_failed;

#define ok(cond, ...) do {                                              \
        int ok_c_ = !!(cond);                                           \
        printf("%s %d - ", ok_c_ ? "ok" : "not ok", ++tap_n);           \
        printf(__VA_ARGS__);                                            \
        printf("\n");                                                   \
        if (!ok_c_) {                                                   \
            tap_failed++;                                               \
            printf("#   failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
        }                                                               \
    } while (0)

#define diag(...) do { printf("# "); printf(__VA_ARGS__); printf("\n"); } while (0)

static inline int done_testing(void)
{
    printf("1..%d\n", tap_n);
    return tap_failed ? 1 : 0;
}

#endif
