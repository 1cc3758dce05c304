/* qgemm_avx512.c — qgemm's kernel for AVX-512 VNNI (see qgemm_impl.h): a
 * tile of up to 6 rows x 64 columns in 24 zmm accumulators; each group of
 * 4 steps of k broadcasts one 32-bit lane of packed A per row (4 uint8)
 * against the panel's 4 zmm of int8 and adds with vpdpbusd, which sums the
 * four exact uint8 x int8 products into each int32 lane without
 * saturation (wrapping, as the portable kernel's uint32 sums); and
 * DynamicQuantizeLinear's passes on 16 floats at a time. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include "ops/gemm/qgemm_impl.h"

#define KT __attribute__((target("avx512f,avx512bw,avx512vnni")))
#define MR 6

int qgemm_cpu_vnni(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vnni");
}

/* acc += the four products of each 32-bit lane (vpdpbusd), in inline
 * assembly: GCC 12's intrinsic copied every accumulator to a new register
 * and to the stack at every step (its operand is not tied to the result). */
#define DPBUSD(acc, av, b) __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(av), "v"(b))

/* The tile in named accumulators c<row><vector> (an array of them stayed
 * on the stack, stored and reloaded every step); rows is a constant at
 * every call site (always_inline), so the rows past it vanish. */
#define ROW_DECL(r) __m512i c##r##0 = _mm512_setzero_si512(), c##r##1 = c##r##0, c##r##2 = c##r##0, c##r##3 = c##r##0
#define ROW_STEP(r)                                                   \
    if (r < rows) {                                                   \
        int32_t lane;                                                 \
        __builtin_memcpy(&lane, a + r * lda + q * QG_KU, sizeof lane); \
        __m512i av = _mm512_set1_epi32(lane);                         \
        DPBUSD(c##r##0, av, b0);               \
        DPBUSD(c##r##1, av, b1);               \
        DPBUSD(c##r##2, av, b2);               \
        DPBUSD(c##r##3, av, b3);               \
    }
#define ROW_STORE(r)                                              \
    if (r < rows) {                                               \
        _mm512_mask_storeu_epi32(c + r * ldc, m0, c##r##0);       \
        _mm512_mask_storeu_epi32(c + r * ldc + 16, m1, c##r##1);  \
        _mm512_mask_storeu_epi32(c + r * ldc + 32, m2, c##r##2);  \
        _mm512_mask_storeu_epi32(c + r * ldc + 48, m3, c##r##3);  \
    }

/* Columns [16 v, 16 v + 16) that are below nr. */
static inline __mmask16 cols_mask(int nr, int v)
{
    int lo = nr - 16 * v;
    return lo >= 16 ? (__mmask16)0xffff : lo <= 0 ? 0 : (__mmask16)((1u << lo) - 1);
}

KT static inline __attribute__((always_inline)) void tile_rows(int rows, int64_t kq, const uint8_t *a, int64_t lda,
                                                               const int8_t *panel, int32_t *c, int64_t ldc, int nr)
{
    ROW_DECL(0);
    ROW_DECL(1);
    ROW_DECL(2);
    ROW_DECL(3);
    ROW_DECL(4);
    ROW_DECL(5);
    const int8_t *bp = panel;
    for (int64_t q = 0; q < kq; q++, bp += QG_NR * QG_KU) {
        __m512i b0 = _mm512_load_si512(bp), b1 = _mm512_load_si512(bp + 64);
        __m512i b2 = _mm512_load_si512(bp + 128), b3 = _mm512_load_si512(bp + 192);
        ROW_STEP(0) ROW_STEP(1) ROW_STEP(2) ROW_STEP(3) ROW_STEP(4) ROW_STEP(5)
    }
    __mmask16 m0 = cols_mask(nr, 0), m1 = cols_mask(nr, 1), m2 = cols_mask(nr, 2), m3 = cols_mask(nr, 3);
    ROW_STORE(0) ROW_STORE(1) ROW_STORE(2) ROW_STORE(3) ROW_STORE(4) ROW_STORE(5)
}

KT static void tile_avx512(int64_t kq, const uint8_t *a, int64_t lda, int mr, const int8_t *panel, int32_t *c,
                           int64_t ldc, int nr)
{
    switch (mr) {
    case 6: tile_rows(6, kq, a, lda, panel, c, ldc, nr); break;
    case 5: tile_rows(5, kq, a, lda, panel, c, ldc, nr); break;
    case 4: tile_rows(4, kq, a, lda, panel, c, ldc, nr); break;
    case 3: tile_rows(3, kq, a, lda, panel, c, ldc, nr); break;
    case 2: tile_rows(2, kq, a, lda, panel, c, ldc, nr); break;
    default: tile_rows(1, kq, a, lda, panel, c, ldc, nr); break;
    }
}

/* The generic pass's compares lane by lane (vminps/vmaxps return the
 * second operand unless the first is below / above it: NaN skipped); the
 * tail's lanes load as 0, inside the range already. */
KT static void range_avx512(const float *x, int64_t n, float *lo, float *hi)
{
    __m512 l = _mm512_set1_ps(*lo), h = _mm512_set1_ps(*hi);
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 mk = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 v = _mm512_maskz_loadu_ps(mk, x + i);
        l = _mm512_min_ps(v, l);
        h = _mm512_max_ps(v, h);
    }
    float ls[16], hs[16];
    _mm512_storeu_ps(ls, l);
    _mm512_storeu_ps(hs, h);
    q_range_generic(ls, 16, lo, hi);
    q_range_generic(hs, 16, lo, hi);
}

KT static void to_u8_avx512(const float *x, int64_t n, float scale, float zp, uint8_t *y)
{
    __m512 s = _mm512_set1_ps(scale), z = _mm512_set1_ps(zp), zero = _mm512_setzero_ps(), top = _mm512_set1_ps(255.0f);
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 mk = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 v = _mm512_div_ps(_mm512_maskz_loadu_ps(mk, x + i), s);
        v = _mm512_add_ps(_mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), z);
        v = _mm512_min_ps(_mm512_max_ps(v, zero), top);   /* max first: NaN to 0 */
        _mm512_mask_cvtepi32_storeu_epi8(y + i, mk, _mm512_cvttps_epi32(v));
    }
}

const qgemm_arch_t qgemm_arch_avx512 = {"avx512-vnni", MR, tile_avx512, range_avx512, to_u8_avx512};
#endif
