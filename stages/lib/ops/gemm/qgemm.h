/* qgemm.h — parity's integer GEMM for MatMulInteger, ConvInteger and their
 * requantizing forms (qlinear.c): C = (A - za) x (B - zb), A m x k and B
 * k x n of 8-bit values (each uint8 or int8), zero points per tensor or per
 * row of A / column of B, int32 results.
 *
 * Exact, so the same bytes on every CPU, instruction set and thread count:
 * every operation is an integer multiply or add carried out modulo 2^32
 * (uint32 arithmetic in C, vpdpbusd / vpmaddwd + vpaddd in the vector
 * kernels, none saturating), and addition modulo 2^32 is associative and
 * commutative, so any order of summation gives the exact sum reduced
 * modulo 2^32. That is the ONNX definition: MatMulInteger and ConvInteger
 * accumulate in int32, and "the accumulation may overflow if and only if in
 * 32 bits" -- nothing bounds k, so sums past 2^31 (k > 33,025 at the
 * largest |255 x 255| products) wrap, exactly as ONNX Runtime's MLAS int32
 * accumulators wrap (it also sums uncorrected products and subtracts
 * zero-point terms, in int32). Each single product |(a - za)(b - zb)| <=
 * 255 x 255 never overflows, nor does vpmaddwd's pair of them. */
#ifndef PARITY_QGEMM_H
#define PARITY_QGEMM_H

#include <stdint.h>

/* One operand: 8-bit values row-major, rows ld bytes apart; sgn 1 for
 * int8, 0 for uint8; zero points zp[nzp]: nzp 0 (none), 1 (per tensor), or
 * one per row of A / per column of B. */
typedef struct qgemm_mat {
    const void *p;
    int64_t ld;
    int sgn;
    const int32_t *zp;
    int64_t nzp;
} qgemm_mat_t;

/* C[i * ldc + j] = sum over p < k of (A[i][p] - za) * (B[p][j] - zb), mod
 * 2^32. Runs on parity's thread pool. cache: NULL, or a node's slot kept
 * across calls with the same B values (op_ctx_t's cache): B is packed into
 * it on the first call and read from it after (B's zero points are not
 * kept: they may change between calls). */
void qgemm(int64_t m, int64_t n, int64_t k, const qgemm_mat_t *a, const qgemm_mat_t *b, int32_t *c, int64_t ldc,
           void **cache);
/* The same in the calling thread only (for callers that are themselves
 * tasks of the pool), B packed per call. */
void qgemm_serial(int64_t m, int64_t n, int64_t k, const qgemm_mat_t *a, const qgemm_mat_t *b, int32_t *c,
                  int64_t ldc);
/* DynamicQuantizeLinear's passes (quant.c), vectorised with the kernels:
 * the range of x[0, n) widened from *lo, *hi (each compare as
 * `x < lo ? x : lo`, so NaN is skipped), and y = saturate(rint(x / scale) +
 * zp) to uint8 with NaN to 0 (onnxruntime's formula). Exact operations
 * only (min, max, one correctly rounded division, rint of it, an add of
 * integers, a clamp), so every instruction set gives the same bytes. */
void q_range(const float *x, int64_t n, float *lo, float *hi);
void q_to_u8(const float *x, int64_t n, float scale, float zp, uint8_t *y);

/* The instruction set qgemm's kernels use now: "avx512-vnni", "avx2" or
 * "generic" (AVX-512 without VNNI runs the AVX2 kernels). */
const char *qgemm_kernel_name(void);

#endif
