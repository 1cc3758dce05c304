/* transpose_avx2.c — the inside of transpose.c's tiled path for 4-byte
 * elements at AVX2: 8 x 8 blocks transposed in registers (unpack, shuffle,
 * lane permute) instead of one strided load per element. It moves bits,
 * computes nothing, so every instruction set gives the same bytes. */
#include "ops/transpose_impl.h"
#include "util/isa.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define AT __attribute__((target("avx2")))

/* dst[a * dld + b] = src[a + b * sld] for a, b < 8. */
AT static inline void block8(float *dst, int64_t dld, const float *src, int64_t sld)
{
    __m256 r0 = _mm256_loadu_ps(src), r1 = _mm256_loadu_ps(src + sld), r2 = _mm256_loadu_ps(src + 2 * sld);
    __m256 r3 = _mm256_loadu_ps(src + 3 * sld), r4 = _mm256_loadu_ps(src + 4 * sld);
    __m256 r5 = _mm256_loadu_ps(src + 5 * sld), r6 = _mm256_loadu_ps(src + 6 * sld);
    __m256 r7 = _mm256_loadu_ps(src + 7 * sld);
    __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    _mm256_storeu_ps(dst, _mm256_permute2f128_ps(u0, u4, 0x20));
    _mm256_storeu_ps(dst + dld, _mm256_permute2f128_ps(u1, u5, 0x20));
    _mm256_storeu_ps(dst + 2 * dld, _mm256_permute2f128_ps(u2, u6, 0x20));
    _mm256_storeu_ps(dst + 3 * dld, _mm256_permute2f128_ps(u3, u7, 0x20));
    _mm256_storeu_ps(dst + 4 * dld, _mm256_permute2f128_ps(u0, u4, 0x31));
    _mm256_storeu_ps(dst + 5 * dld, _mm256_permute2f128_ps(u1, u5, 0x31));
    _mm256_storeu_ps(dst + 6 * dld, _mm256_permute2f128_ps(u2, u6, 0x31));
    _mm256_storeu_ps(dst + 7 * dld, _mm256_permute2f128_ps(u3, u7, 0x31));
}

AT static void blocks_avx2(float *dst, int64_t dld, const float *src, int64_t sld, int64_t na, int64_t nb)
{
    for (int64_t a = 0; a + 8 <= na; a += 8)
        for (int64_t b = 0; b + 8 <= nb; b += 8) block8(dst + a * dld + b, dld, src + a + b * sld, sld);
}
#endif

int64_t transpose_blocks_f32(float *dst, int64_t dld, const float *src, int64_t sld, int64_t na, int64_t nb)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (isa_active() >= ISA_AVX2 && na >= 8 && nb >= 8) {
        blocks_avx2(dst, dld, src, sld, na, nb);
        return 8;
    }
#endif
    (void)dst; (void)dld; (void)src; (void)sld; (void)na; (void)nb;
    return 0;
}
