/* convert.c — ONNX Cast semantics between every supported element type
 * (tensor_convert; tensor_cast in tensor.c allocates and calls it).
 *
 * Rules, as numpy's astype and ONNX Runtime do them where they are defined:
 *  - integer -> integer wraps (two's complement);
 *  - float -> integer truncates toward zero; out of range saturates, NaN -> 0;
 *  - to float/double: correctly rounded (C conversions, round to nearest even);
 *  - to float16/bfloat16: rounded once, to nearest even, from the exact value:
 *    a double or a wide integer is first rounded to float32 *to odd*, which
 *    leaves enough bits that the final rounding equals a direct one (no
 *    double-rounding error); NaN stays a quiet NaN, overflow becomes inf;
 *  - to bool: value != 0 (NaN is true); from bool: 0 or 1.
 */
#include <string.h>
#include "tensor/tensor.h"
#include "tensor/half.h"
#include "tensor/dispatch.h"
#include "tensor/convert.h"

/* double -> float rounded to odd: an inexact result gets an odd last bit. */
static inline float f32_odd(double d)
{
    float f = (float)d;
    if (d != d || (double)f == d || isinf(f)) return f;
    uint32_t u = f32_bits(f);
    if (u & 1u) return f;
    /* even and inexact: step one ulp toward d (magnitude up if |d| > |f|) */
    if (fabs(d) > fabs((double)f)) u++;
    else u--;
    return bits_f32(u);
}

/* 64-bit integers -> double rounded to odd (beyond 2^53 (double) rounds). */
static inline double f64_odd_u64(uint64_t v)
{
    const double two64 = 18446744073709551616.0;
    double d = (double)v;                               /* nearest even */
    if (v < ((uint64_t)1 << 53)) return d;
    if (d < two64 && (uint64_t)d == v) return d;
    uint64_t u;
    memcpy(&u, &d, 8);
    if (u & 1u) return d;
    /* even and inexact: the other neighbour of v (odd) lies toward v */
    u = (d >= two64 || (uint64_t)d > v) ? u - 1 : u + 1;
    memcpy(&d, &u, 8);
    return d;
}

static inline double f64_odd_i64(int64_t v)
{
    uint64_t m = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    double d = f64_odd_u64(m);
    return v < 0 ? -d : d;
}

/* Any numeric T -> float32 rounded to odd (exact for float T). */
#define F32_ODD(T, v)                                                           \
    (IS_FLOAT_T(T) ? f32_odd((double)(v))                                       \
     : IS_SIGNED_T(T) ? f32_odd(f64_odd_i64((int64_t)(v)))                      \
                      : f32_odd(f64_odd_u64((uint64_t)(v))))

/* Numeric TS -> numeric TD. */
#define CONV(TS, TD, v)                                                         \
    (IS_FLOAT_T(TD) ? (TD)(v) : IS_FLOAT_T(TS) ? SAT_TO_INT(TD, (double)(v)) : (TD)(v))

static void convert_numeric(const void *src, dtype_t st, void *dst, dtype_t dt, int64_t n)
{
    if (dt == DT_FLOAT16 || dt == DT_BFLOAT16) {
        uint16_t *d = dst;
        const int bf = dt == DT_BFLOAT16;
        DISPATCH_NUMERIC(st, {
            const T *s = src;
            for (int64_t i = 0; i < n; i++) {
                float f = F32_ODD(T, s[i]);
                d[i] = bf ? f32_to_bf16(f) : f32_to_f16(f);
            }
        }, (void)0)
        return;
    }
    DISPATCH_NUMERIC(st, typedef T TS;
        DISPATCH_NUMERIC(dt, {
            const TS *s = src;
            T *d = dst;
            for (int64_t i = 0; i < n; i++) d[i] = CONV(TS, T, s[i]);
        }, (void)0), (void)0)
}

static int is_half(dtype_t t) { return t == DT_FLOAT16 || t == DT_BFLOAT16; }

static void half_to_f32(const uint16_t *s, dtype_t st, float *d, int64_t n)
{
    for (int64_t i = 0; i < n; i++) d[i] = st == DT_BFLOAT16 ? bf16_to_f32(s[i]) : f16_to_f32(s[i]);
}

/* bfloat16 <-> float32, the conversions of every BF16-stored layer: plain
 * bit moves the compiler vectorises, the same bits as bf16_to_f32 and
 * f32_to_bf16 one at a time (a NaN keeps its sign and top payload bits,
 * quiet bit set, as the general path's float -> double -> float leaves it). */
#if defined(__clang__)
#define OPT_VEC
#else
#define OPT_VEC __attribute__((optimize("O3")))
#endif
OPT_VEC static void bf16_widen(const uint16_t *s, float *d, int64_t n)
{
    uint32_t *u = (uint32_t *)d;
    for (int64_t i = 0; i < n; i++) u[i] = (uint32_t)s[i] << 16;
}

OPT_VEC static void bf16_narrow(const float *s, uint16_t *d, int64_t n)
{
    const uint32_t *u = (const uint32_t *)s;
    for (int64_t i = 0; i < n; i++) {
        uint32_t x = u[i];
        uint32_t nan = (x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu);
        uint32_t r = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
        d[i] = (uint16_t)(nan ? (x >> 16) | 0x40u : r);
    }
}

int tensor_convert(const tensor_t *src, tensor_t *dst, perr_t *e)
{
    const dtype_t st = src->dtype, dt = dst->dtype;
    const int64_t n = tensor_numel(src);
    if (!dtype_size(st) || !dtype_size(dt))
        return BAD(e, "cast from %s to %s is not supported", dtype_name(st), dtype_name(dt));
    if (tensor_numel(dst) != n)
        return INTERNAL(e, "cast: %lld elements into %lld", (long long)n, (long long)tensor_numel(dst));
    if (st == dt) {
        memcpy(dst->data, src->data, tensor_nbytes(src));
        return 0;
    }
    if (st == DT_BFLOAT16 && dt == DT_FLOAT) {
        bf16_widen(src->data, dst->data, n);
        return 0;
    }
    if (st == DT_FLOAT16 && dt == DT_FLOAT) {
        f16_widen(src->data, dst->data, n);
        return 0;
    }
    if (st == DT_FLOAT && dt == DT_FLOAT16) {
        f16_narrow(src->data, dst->data, n);
        return 0;
    }
    if (st == DT_FLOAT && dt == DT_BFLOAT16) {
        bf16_narrow(src->data, dst->data, n);
        return 0;
    }
    if (dt == DT_BOOL) {
        uint8_t *d = dst->data;
        if (is_half(st)) {
            const uint16_t *s = src->data;
            for (int64_t i = 0; i < n; i++) d[i] = (s[i] & 0x7fffu) != 0;   /* +-0 false, NaN true */
        } else if (st == DT_BOOL) {
            /* unreachable (same type) */
        } else {
            DISPATCH_NUMERIC(st, { const T *s = src->data; for (int64_t i = 0; i < n; i++) d[i] = s[i] != 0; }, (void)0)
        }
        return 0;
    }
    if (st == DT_BOOL) {
        /* normalise to 0/1 in chunks, then convert as uint8 */
        uint8_t tmp[256];
        const uint8_t *s = src->data;
        size_t es = dtype_size(dt);
        for (int64_t i = 0; i < n; i += 256) {
            int64_t k = n - i < 256 ? n - i : 256;
            for (int64_t j = 0; j < k; j++) tmp[j] = s[i + j] != 0;
            convert_numeric(tmp, DT_UINT8, (char *)dst->data + i * es, dt, k);
        }
        return 0;
    }
    if (is_half(st)) {
        /* half values are exact in float32: widen in chunks, then convert */
        float tmp[256];
        const uint16_t *s = src->data;
        size_t es = dtype_size(dt);
        for (int64_t i = 0; i < n; i += 256) {
            int64_t k = n - i < 256 ? n - i : 256;
            half_to_f32(s + i, st, tmp, k);
            convert_numeric(tmp, DT_FLOAT, (char *)dst->data + i * es, dt, k);
        }
        return 0;
    }
    convert_numeric(src->data, st, dst->data, dt, n);
    return 0;
}
