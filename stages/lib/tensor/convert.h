/* convert.h — element conversions without undefined behaviour, shared by
 * tensor_convert (ONNX Cast semantics, convert.c) and kernels that turn a
 * computed double into an integer type (ops/elementwise/elementwise_impl.h).
 *
 * Float -> integer truncates toward zero like numpy's astype; out-of-range
 * values saturate and NaN becomes 0 (the spec leaves them undefined; C would
 * make them undefined behaviour). */
#ifndef PARITY_CONVERT_H
#define PARITY_CONVERT_H

#include <math.h>
#include <stdint.h>

/* Compile-time properties of an arithmetic type T (by _Generic, which unlike
 * (T)-1 < 0 draws no "comparison is always false" warnings). */
#define IS_FLOAT_T(T) _Generic((T)0, float: 1, double: 1, default: 0)
#define IS_SIGNED_T(T) \
    _Generic((T)0, int8_t: 1, int16_t: 1, int32_t: 1, int64_t: 1, float: 1, double: 1, default: 0)

static inline int64_t sat_signed_(double d, int bits)
{
    double lim = ldexp(1.0, bits - 1);                  /* 2^(bits-1) */
    if (d != d) return 0;
    if (d >= lim) return bits == 64 ? INT64_MAX : ((int64_t)1 << (bits - 1)) - 1;
    if (d <= -lim) return bits == 64 ? INT64_MIN : -((int64_t)1 << (bits - 1));
    return (int64_t)d;
}

static inline uint64_t sat_unsigned_(double d, int bits)
{
    double lim = ldexp(1.0, bits);                      /* 2^bits */
    if (d != d || d <= 0) return 0;
    if (d >= lim) return bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
    return (uint64_t)d;
}

/* double -> integer type T, truncating and saturating. */
#define SAT_TO_INT(T, d)                                                        \
    (IS_SIGNED_T(T) ? (T)sat_signed_((d), (int)sizeof(T) * 8)                   \
                    : (T)sat_unsigned_((d), (int)sizeof(T) * 8))

#endif
