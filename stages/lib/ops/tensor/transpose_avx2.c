/* transpose_avx2.c — the inside of transpose.c's tiled path for 4-byte
 * elements at AVX2: 8 x 8 blocks transposed in registers (unpack, shuffle,
 * lane permute) instead of one strided load per element. It moves bits,
 * computes nothing, so every instruction set gives the same bytes. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include "ops/tensor/transpose_impl.h"
#include "ops/gemm/transpose8x8.h"
#define AT __attribute__((target("avx2")))

/* dst[a * dld + b] = src[a + b * sld] for a, b < 8. */
AT static inline void block8(float *dst, int64_t dld, const float *src, int64_t sld)
{
    __m256 r[8] = {_mm256_loadu_ps(src), _mm256_loadu_ps(src + sld), _mm256_loadu_ps(src + 2 * sld),
                   _mm256_loadu_ps(src + 3 * sld), _mm256_loadu_ps(src + 4 * sld), _mm256_loadu_ps(src + 5 * sld),
                   _mm256_loadu_ps(src + 6 * sld), _mm256_loadu_ps(src + 7 * sld)};
    transpose8x8_ps(r);
    _mm256_storeu_ps(dst, r[0]);
    _mm256_storeu_ps(dst + dld, r[1]);
    _mm256_storeu_ps(dst + 2 * dld, r[2]);
    _mm256_storeu_ps(dst + 3 * dld, r[3]);
    _mm256_storeu_ps(dst + 4 * dld, r[4]);
    _mm256_storeu_ps(dst + 5 * dld, r[5]);
    _mm256_storeu_ps(dst + 6 * dld, r[6]);
    _mm256_storeu_ps(dst + 7 * dld, r[7]);
}

AT static void blocks_avx2(float *dst, int64_t dld, const float *src, int64_t sld, int64_t na, int64_t nb)
{
    for (int64_t a = 0; a + 8 <= na; a += 8)
        for (int64_t b = 0; b + 8 <= nb; b += 8) block8(dst + a * dld + b, dld, src + a + b * sld, sld);
}
/* Whole 8 x 8 blocks where both sides have one, else nothing. */
static int64_t blocks_f32_avx2(float *dst, int64_t dld, const float *src, int64_t sld, int64_t na, int64_t nb)
{
    if (na < 8 || nb < 8) return 0;
    blocks_avx2(dst, dld, src, sld, na, nb);
    return 8;
}

const transpose_arch_t transpose_arch_avx2 = {blocks_f32_avx2};

#endif
