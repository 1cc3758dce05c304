/* fgemm.h — parity's own float32 GEMM for the shapes convolutions and
 * MatMuls give (few rows, long rows of B), with the layer's epilogue (bias
 * per row of C, Relu/Clip/LeakyRelu) applied while the tile is still in
 * registers. C = A[m x k] * B[k x n], both row-major and untransposed.
 *
 * Deterministic: every element of C is summed in a fixed blocked order
 * (k in blocks of FG_KB = 256 steps, each one FMA chain from zero, the
 * blocks' sums added in order: fgemm_impl.h), then + bias (per row, then per column), then + the residual,
 * then the activation, then the storage rounding (FP16/BF16 emulation);
 * the tiles handed to the thread pool
 * depend on the shape only, so the bits never depend on --threads, and
 * the kernels of every instruction set (AVX-512, AVX2+FMA, portable C:
 * fgemm_impl.h, picked by util/isa.h) round alike, so they never depend on
 * the CPU either. */
#ifndef PARITY_FGEMM_H
#define PARITY_FGEMM_H

#include <stdint.h>
#include "graph/act.h"

typedef struct fgemm_epi {
    const float *bias;       /* bias[i] added to row i of C, or NULL */
    int act;                 /* ACT_NONE, ACT_RELU, ACT_CLIP, ACT_LEAKY, ACT_SIGMOID or ACT_SILU (graph/act.h) */
    float a, b;              /* Clip bounds; LeakyRelu's alpha in a */
    const float *col_bias;   /* col_bias[j] added to column j of C (a MatMul's fused bias), or NULL */
    /* A residual in C's layout, res[i * ldc + j] added to element (i, j)
     * after the biases and before the activation (a Conv with its residual
     * Add fused, passes/fuseres.c), or NULL. Never C's own bytes. */
    const float *res;
    /* The layer's storage rounding (op_ctx_t.round_out), last of all, on
     * each finished tile while it is in L1 rather than in a pass over the
     * whole output after the kernel: DT_FLOAT16 or DT_BFLOAT16 (a dtype_t),
     * or 0 (DT_UNDEFINED): none. The same function of each final value as
     * the pass, so the same bits. */
    int round;
} fgemm_epi_t;

/* 1 where the kernels in use round to storage type round (a dtype_t) in
 * their registers after activation act (FP16 at AVX-512 and AVX2+F16C;
 * not after a Sigmoid or SiLU the AVX2 tiles leave to fgemm_tile_post): a
 * caller then hands the rounding to fgemm's epilogue; else it leaves it to
 * node_run's pass, which costs less than fgemm_tile_post's rows of 32
 * floats (measured). */
int fgemm_rounds(int round, int act);

/* 1 when matrix products go to these kernels (the default), 0 with
 * --kernels blas (util/isa.h: kernels_mode). */
int fgemm_available(void);
/* fgemm_set_enabled(0) is --kernels blas (tests check the OpenBLAS paths with it). */
void fgemm_set_enabled(int on);
/* Takes a layer's fused activation into e where the epilogue can run it
 * (Relu, Clip, LeakyRelu, Sigmoid, SiLU); returns 1 then (the
 * kernel sets op_ctx.act_done from it), else 0. */
struct node;
int fgemm_epi_act(fgemm_epi_t *e, const struct node *n);

/* C = A * B (+ epilogue). epi may be NULL. Runs on parity's thread pool,
 * at the instruction set util/isa.h says; the bits are fgemm_ref's. */
void fgemm(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
           int64_t ldc, const fgemm_epi_t *epi);
/* The same with B constant across calls (a MatMul's weights): cache is
 * NULL, or a slot kept across calls with the same B (op_ctx_t's cache),
 * where B is kept packed from the first call that packs all of it. */
void fgemm_kept(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
                int64_t ldc, const fgemm_epi_t *epi, void **cache);

/* A 2-D convolution as an implicit GEMM (no column buffer): for output
 * channel i < m and output position (r, o), r < oh, o < ow,
 *   y[i][r*ow + o] = sum over ch < cin, a < kh, b < kw of
 *                    w[i][(ch*kh + a)*kw + b] * x[ch][r*sh + dh[a]][o*sw + dw[b]]
 * with x zero outside its h x w planes; then the epilogue. The sum runs in
 * the order of the weights, in fgemm's blocked order, as fgemm over the column
 * matrix. Returns -1 (nothing done) for kernels larger than FCONV_MAX_K or
 * input planes too large for 32-bit offsets. */
#define FCONV_MAX_K 8
typedef struct fconv_geom {
    int64_t cin, h, w, oh, ow;
    int kh, kw, sh, sw;
    int64_t dh[FCONV_MAX_K], dw[FCONV_MAX_K];   /* input offset of each kernel row / column */
    float *phase;   /* strided: a buffer of fconv_phase_floats(g) floats for the stride phases, or NULL */
} fconv_geom_t;
/* Floats of the stride-phase buffer a strided convolution may take (its
 * strips then read consecutive elements instead of gathering), or 0 where
 * it cannot (stride 1, or phase rows not ow wide). */
int64_t fconv_phase_floats(const fconv_geom_t *g);
int fconv_rows(int64_t m, const fconv_geom_t *g, const float *w, const float *x, float *y, const fgemm_epi_t *epi);

/* The same convolution (stride 1 or 2) with 8 output pixels' inputs
 * broadcast against 32 output channels' weights (fconv_px.c), where the
 * CPU's kernels have that tile: the same bits as fconv_rows. fconv_px_floats is
 * the scratch it needs (a zero-padded copy of the input and the packed
 * weights), 0 where it does not apply; fconv_px returns -1 then. cache:
 * NULL, or a slot kept across calls with the same weights w (op_ctx_t's
 * cache): the weights are packed into it on the first call only. kept:
 * whether fconv_px will be given such a slot (the tile takes some small
 * planes then, see fconv_px.c). */
int64_t fconv_px_floats(const fconv_geom_t *g, int64_t m, int kept);
int fconv_px(int64_t m, const fconv_geom_t *g, const float *w, const float *x, float *y, const fgemm_epi_t *epi,
             float *scratch, void **cache);

/* dst[i] = src[2i] for i < n (im2col's rows for stride 2). */
void fgemm_gather_even(float *dst, const float *src, int64_t n);

/* The same result element by element in plain C (slow; the oracle). */
void fgemm_ref(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
               int64_t ldc, const fgemm_epi_t *epi);

#endif
