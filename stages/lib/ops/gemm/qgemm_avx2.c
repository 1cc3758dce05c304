/* qgemm_avx2.c — qgemm's kernel for AVX2 (see qgemm_impl.h), also used at
 * AVX-512 on CPUs without VNNI: operands widened to 16 bits (A's uint8
 * zero-extended, the panel's int8 sign-extended) and multiplied with
 * vpmaddwd, whose two products per lane (each at most 255 x 128) and their
 * sum are exact in int32; vpaddd then wraps as the portable kernel's uint32
 * sums do. Never vpmaddubsw, which saturates its pair sums to int16.
 *
 * A tile is 2 rows x 16 columns at a time (8 ymm accumulators): each lane
 * pair holds one column's sums of steps 4q, 4q+1 and 4q+2, 4q+3; the pair
 * is added at the end. And DynamicQuantizeLinear's passes, 8 floats at a
 * time. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include "ops/gemm/qgemm_impl.h"

#define KT __attribute__((target("avx2")))
#define MR 2

/* Row r's 4 steps of group q, widened to 4 words and broadcast to all four
 * 64-bit lanes. */
KT static inline __m256i a_words(const uint8_t *a, int64_t q)
{
    int32_t lane;
    __builtin_memcpy(&lane, a + q * QG_KU, sizeof lane);
    return _mm256_broadcastq_epi64(_mm_cvtepu8_epi16(_mm_cvtsi32_si128(lane)));
}

/* Columns [0, 8) of lanes pairs (c0 k01, c0 k23, c1 k01, ...) in x (cols 0-3) and y (cols 4-7). */
KT static inline __m256i pair_sums(__m256i x, __m256i y)
{
    return _mm256_permute4x64_epi64(_mm256_hadd_epi32(x, y), 0xD8);
}

/* Named accumulators c<row><group> (an array of them stayed in memory,
 * loaded and stored every step); rows is a constant at each call site. */
#define ROW_STEP(r)                                                  \
    if (r < rows) {                                                  \
        __m256i av = a_words(a + r * lda, q);                        \
        c##r##0 = _mm256_add_epi32(c##r##0, _mm256_madd_epi16(av, b0)); \
        c##r##1 = _mm256_add_epi32(c##r##1, _mm256_madd_epi16(av, b1)); \
        c##r##2 = _mm256_add_epi32(c##r##2, _mm256_madd_epi16(av, b2)); \
        c##r##3 = _mm256_add_epi32(c##r##3, _mm256_madd_epi16(av, b3)); \
    }
#define ROW_STORE(r)                                                              \
    if (r < rows) {                                                               \
        int32_t out[16];                                                          \
        _mm256_storeu_si256((__m256i *)out, pair_sums(c##r##0, c##r##1));         \
        _mm256_storeu_si256((__m256i *)(out + 8), pair_sums(c##r##2, c##r##3));   \
        for (int j = 0; j < nr && j < 16; j++) c[r * ldc + j] = out[j];           \
    }
#define B_WORDS(g) _mm256_cvtepi8_epi16(_mm_load_si128((const __m128i *)(bp + 16 * (g))))

KT static inline __attribute__((always_inline)) void tile_cols16(int rows, int64_t kq, const uint8_t *a, int64_t lda,
                                                                 const int8_t *bp, int32_t *c, int64_t ldc, int nr)
{
    __m256i c00 = _mm256_setzero_si256(), c01 = c00, c02 = c00, c03 = c00;
    __m256i c10 = c00, c11 = c00, c12 = c00, c13 = c00;
    for (int64_t q = 0; q < kq; q++, bp += QG_NR * QG_KU) {
        __m256i b0 = B_WORDS(0), b1 = B_WORDS(1), b2 = B_WORDS(2), b3 = B_WORDS(3);
        ROW_STEP(0) ROW_STEP(1)
    }
    ROW_STORE(0) ROW_STORE(1)
}

KT static void tile_avx2(int64_t kq, const uint8_t *a, int64_t lda, int mr, const int8_t *panel, int32_t *c,
                         int64_t ldc, int nr)
{
    for (int j = 0; j < nr; j += 16) {
        if (mr == 2) tile_cols16(2, kq, a, lda, panel + j * QG_KU, c + j, ldc, nr - j);
        else tile_cols16(1, kq, a, lda, panel + j * QG_KU, c + j, ldc, nr - j);
    }
}

/* As range_avx512 (qgemm_avx512.c), 8 floats at a time, the tail in C. */
KT static void range_avx2(const float *x, int64_t n, float *lo, float *hi)
{
    __m256 l = _mm256_set1_ps(*lo), h = _mm256_set1_ps(*hi);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        l = _mm256_min_ps(v, l);
        h = _mm256_max_ps(v, h);
    }
    float ls[8], hs[8];
    _mm256_storeu_ps(ls, l);
    _mm256_storeu_ps(hs, h);
    q_range_generic(ls, 8, lo, hi);
    q_range_generic(hs, 8, lo, hi);
    q_range_generic(x + i, n - i, lo, hi);
}

KT static void to_u8_avx2(const float *x, int64_t n, float scale, float zp, uint8_t *y)
{
    __m256 s = _mm256_set1_ps(scale), z = _mm256_set1_ps(zp), zero = _mm256_setzero_ps(), top = _mm256_set1_ps(255.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_div_ps(_mm256_loadu_ps(x + i), s);
        v = _mm256_add_ps(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), z);
        v = _mm256_min_ps(_mm256_max_ps(v, zero), top);   /* max first: NaN to 0 */
        __m256i w = _mm256_cvttps_epi32(v);
        __m128i h = _mm_packus_epi32(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
        _mm_storel_epi64((__m128i *)(y + i), _mm_packus_epi16(h, h));
    }
    q_to_u8_generic(x + i, n - i, scale, zp, y + i);
}

const qgemm_arch_t qgemm_arch_avx2 = {"avx2", MR, tile_avx2, range_avx2, to_u8_avx2};
#endif
