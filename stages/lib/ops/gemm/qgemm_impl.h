/* qgemm_impl.h — what qgemm.c's driver needs from each instruction set's
 * kernel (qgemm_avx512.c, qgemm_avx2.c, qgemm_generic.c), and the packed
 * layouts they read; and DynamicQuantizeLinear's two passes, which feed
 * it.
 *
 * The driver turns every operand pair into uint8 x int8 (vpdpbusd's
 * operand types) by flipping the top bit: an int8 A becomes A + 128, a
 * uint8 B becomes B - 128, and the offsets join the zero points in the
 * correction the driver applies to the kernel's raw sums (qgemm.c).
 *
 * A packed: rows of kp bytes (k rounded up to QG_KU, zero past k), uint8.
 * B packed: panels of QG_NR columns; panel P holds, for each group q of
 * QG_KU steps of k, QG_NR x QG_KU bytes: column j's steps 4q .. 4q+3 at
 * bytes [4j, 4j + 4) -- one 32-bit lane per column, as vpdpbusd reads it.
 * Zero past k and past the last column. */
#ifndef PARITY_QGEMM_IMPL_H
#define PARITY_QGEMM_IMPL_H

#include <stdint.h>

#define QG_KU 4
#define QG_NR 64
#define QG_MR_MAX 8

typedef struct qgemm_arch {
    const char *name;
    int mr;   /* rows per tile, at most QG_MR_MAX */
    /* Raw sums of rows [0, mr) of packed A (rows lda bytes apart) against
     * one panel, over kq groups of QG_KU steps, into C's columns [0, nr). */
    void (*tile)(int64_t kq, const uint8_t *a, int64_t lda, int mr, const int8_t *panel, int32_t *c, int64_t ldc,
                 int nr);
    /* DynamicQuantizeLinear's passes (qgemm.h: q_range, q_to_u8). */
    void (*range)(const float *x, int64_t n, float *lo, float *hi);
    void (*to_u8)(const float *x, int64_t n, float scale, float zp, uint8_t *y);
} qgemm_arch_t;

extern const qgemm_arch_t qgemm_arch_generic;
/* The portable passes, for the vector ones' tails. */
void q_range_generic(const float *x, int64_t n, float *lo, float *hi);
void q_to_u8_generic(const float *x, int64_t n, float scale, float zp, uint8_t *y);
#if defined(__x86_64__) && defined(__GNUC__)
extern const qgemm_arch_t qgemm_arch_avx2, qgemm_arch_avx512;
/* 1 where the CPU has AVX-512 VNNI (and BW) for qgemm_arch_avx512. */
int qgemm_cpu_vnni(void);
#endif

#endif
