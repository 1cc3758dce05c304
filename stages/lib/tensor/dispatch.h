/* dispatch.h — dispatch on element type once: a kernel body is written
 * once as a macro over C type T and expanded per type, so no block of code is
 * copied per type (docs/design.md "The engine"). */
#ifndef PARITY_DISPATCH_H
#define PARITY_DISPATCH_H

#include <stdint.h>
#include <stdbool.h>

/* Expands BODY with T bound to each numeric C type; `default:` runs ELSE. */
#define DISPATCH_CASE(DT, CT, BODY) case DT: { typedef CT T; BODY; } break;

#define DISPATCH_INT(dt, BODY, ELSE)                          \
    switch (dt) {                                             \
        DISPATCH_CASE(DT_INT8, int8_t, BODY)                  \
        DISPATCH_CASE(DT_INT16, int16_t, BODY)                \
        DISPATCH_CASE(DT_INT32, int32_t, BODY)                \
        DISPATCH_CASE(DT_INT64, int64_t, BODY)                \
        DISPATCH_CASE(DT_UINT8, uint8_t, BODY)                \
        DISPATCH_CASE(DT_UINT16, uint16_t, BODY)              \
        DISPATCH_CASE(DT_UINT32, uint32_t, BODY)              \
        DISPATCH_CASE(DT_UINT64, uint64_t, BODY)              \
        default: ELSE;                                        \
    }

/* float32, float64 and all integers (half types are handled by converting
 * to float32 around the kernel, see ops.h). */
#define DISPATCH_NUMERIC(dt, BODY, ELSE)                      \
    switch (dt) {                                             \
        DISPATCH_CASE(DT_FLOAT, float, BODY)                  \
        DISPATCH_CASE(DT_DOUBLE, double, BODY)                \
        DISPATCH_CASE(DT_INT8, int8_t, BODY)                  \
        DISPATCH_CASE(DT_INT16, int16_t, BODY)                \
        DISPATCH_CASE(DT_INT32, int32_t, BODY)                \
        DISPATCH_CASE(DT_INT64, int64_t, BODY)                \
        DISPATCH_CASE(DT_UINT8, uint8_t, BODY)                \
        DISPATCH_CASE(DT_UINT16, uint16_t, BODY)              \
        DISPATCH_CASE(DT_UINT32, uint32_t, BODY)              \
        DISPATCH_CASE(DT_UINT64, uint64_t, BODY)              \
        default: ELSE;                                        \
    }

#define DISPATCH_FLOAT(dt, BODY, ELSE)                        \
    switch (dt) {                                             \
        DISPATCH_CASE(DT_FLOAT, float, BODY)                  \
        DISPATCH_CASE(DT_DOUBLE, double, BODY)                \
        default: ELSE;                                        \
    }

/* Every type by element size: for ops that only move bytes (Transpose,
 * Gather, Concat, ...): T is an unsigned integer of the element's width. */
#define DISPATCH_BYSIZE(size, BODY, ELSE)                     \
    switch (size) {                                           \
        case 1: { typedef uint8_t T; BODY; } break;           \
        case 2: { typedef uint16_t T; BODY; } break;          \
        case 4: { typedef uint32_t T; BODY; } break;          \
        case 8: { typedef uint64_t T; BODY; } break;          \
        default: ELSE;                                        \
    }

#endif
