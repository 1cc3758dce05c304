/* fgemm_impl.h — what fgemm.c's driver (tiling, packing of A, the thread
 * pool) needs from each instruction set's kernels (fgemm_avx512.c,
 * fgemm_avx2.c, fgemm_generic.c). Every set computes each element of C in
 * the same blocked order -- k cut into blocks of FG_KB steps from k = 0,
 * each block one FMA chain from zero, the blocks' sums added in order
 * (((b0 + b1) + b2) + ...) -- then + row bias, + column bias, then the
 * activation (fgemm_finish_one), so the bits never depend on the set. A
 * residual is added to the stored tile after the biases and before the
 * activation (fgemm_tile_post), the same on every set.
 *
 * The tile is the set's mr rows (at most FG_MR) x FG_NR columns of C. B
 * (or the convolution's column matrix) comes packed: FG_KC steps of FG_NR
 * floats, 64-byte aligned, zero past the strip's nr columns. A is read in
 * place, rows lda apart. */
#ifndef PARITY_FGEMM_IMPL_H
#define PARITY_FGEMM_IMPL_H

#include <stdint.h>
#include "ops/gemm/fgemm.h"

#define FG_MR 8
#define FG_NR 32
#define FG_KC 2304
/* Steps of k per accumulation block (FG_KC is a multiple of it). One FMA
 * chain over all of k rounds each partial sum as it grows: k = 12544
 * made parity's FP32 6x less accurate than cuBLAS (issue 38). Blocks of
 * 256 summed in order bound every term's roundings by FG_KB + k / FG_KB
 * (305 at k = 12544, against 12544), and measured level with cuBLAS's
 * error at k = 2304 and 12544 (docs/precision.md). */
#define FG_KB 256
_Static_assert(FG_KC % FG_KB == 0, "a panel holds whole accumulation blocks");

typedef struct fgemm_arch {
    /* Rows of C per tile (at most FG_MR): the driver hands tile() blocks of
     * mr rows. */
    int mr;
    /* One accumulation block: kc <= FG_KB steps into the tile's rows
     * [0, mr) and columns [0, nr), summed from zero; the block's sum is
     * stored to C if first, else added to the blocks' sum C holds (C +
     * block); finished only when last.
     * bias: the tile's first row's bias (or NULL); cbias: its first column's. */
    void (*tile)(int64_t kc, const float *a, int64_t lda, int mr, const float *bp, int nr, float *c, int64_t ldc,
                 int first, int last, const float *bias, const float *cbias, const fgemm_epi_t *e);
    /* B's rows [0, kc), columns [0, nr) into the panel, zero past nr. */
    void (*pack_b)(const float *b, int64_t ldb, int64_t kc, int nr, float *dst);
    /* The column matrix's rows [p0, p0 + kc) of one strip (see fgemm.c's
     * pack comment): lane l of row p = ch * taps + t is
     * x[ch * plane + base[l] + tapoff[t]] where bit l of mk[t] is set, else 0. */
    void (*pack_taps)(const float *x, int64_t plane, int taps, const int64_t *tapoff, const uint32_t *mk,
                      const int32_t *base, int contiguous, int64_t p0, int64_t kc, float *dst);
    void (*gather_even)(float *dst, const float *src, int64_t n);
    /* fconv_px's tile (see fconv_px.c): 8 output pixels by 32 output
     * channels over all k steps, in FG_KB blocks as tile(): step p broadcasts px[i][koff[p]] of each
     * pixel i against the 32 weights wp[32 p .. 32 p + 31]; then the bias
     * (bias[c] of channel c, or NULL) and the activation, and the store of
     * channels c < noc, pixels i < npix at y[c * ldy + i]. NULL where the
     * set has none (that set runs the packed path: the same sums). */
    void (*tile_px)(int64_t k, const float *const *px, const int32_t *koff, const float *wp, float *y, int64_t ldy,
                    int npix, int noc, const float *bias, const fgemm_epi_t *e);
    /* 1 where the tiles apply Sigmoid and SiLU themselves (in registers);
     * 0: they store the tile with its bias and fgemm_tile_post follows. */
    int tile_sigmoid;
    /* fconv_px's packed weights of one whole block of 32 output channels
     * (see pack_block in fconv_px.c), or NULL (the plain loop packs). */
    void (*pack_px)(const float *w, int64_t k, float *dst);
    /* The largest k (input channels x taps) where tile_px beats the packed
     * path (measured), or 0: any. */
    int64_t px_max_k;
    /* fgemm_tile_post's residual in vector registers: rows [0, mr) x [0, nr)
     * of a finished tile c += res (both rows ldc apart), then e's
     * activation, every one of them, with the formulas of the standalone
     * kernels; or NULL (fgemm_tile_post's loops in C: the same bits). */
    void (*residual)(float *c, int64_t ldc, int mr, int nr, const float *res, const fgemm_epi_t *e);
    /* fconv_px's tile for at most 16 output channels: tile_px's contract
     * with 16 pixels (px[0..15]) and 16 weights a step (wp[16 p .. 16 p +
     * 15]), noc <= 16; or NULL (tile_px runs those too: the same sums). */
    void (*tile_px16)(int64_t k, const float *const *px, const int32_t *koff, const float *wp, float *y, int64_t ldy,
                      int npix, int noc, const float *bias, const fgemm_epi_t *e);
    /* 1 where tile() applies e->round == DT_FLOAT16 itself when last,
     * after the rest of the epilogue (VCVTPS2PH to nearest even and back:
     * half.h's bits); 0: the driver never hands it one (fgemm_tile_post
     * rounds). */
    int tile_round_f16;
    /* fconv_px's row kernel (see fconv_px.c): output row r of a 3x3
     * convolution, stride sd (1 or 2), pad 1 on every side, of cin planes
     * of h x w (k = 9 cin <= FG_KB: one accumulation block), for 16 output
     * channels whose weights are wp[wstep p + c] (wstep 16: tile_px16's
     * packing; 32: half of a tile_px block); each element one FMA chain
     * over p from zero, padding zeros included, then the bias (bias[c], or
     * NULL) and the activation as the tiles'; channels c < noc, pixels
     * [0, ow) stored at y[c * ldy + o]. NULL where the set has none (the
     * tiles or the packed path then: the same sums). */
    void (*row_px)(const float *x, int64_t cin, int64_t h, int64_t w, int sd, int64_t r, int64_t ow, const float *wp,
                   int wstep, float *y, int64_t ldy, int noc, const float *bias, const fgemm_epi_t *e);
} fgemm_arch_t;

extern const fgemm_arch_t fgemm_arch_generic;
#if defined(__x86_64__) && defined(__GNUC__)
extern const fgemm_arch_t fgemm_arch_avx2, fgemm_arch_avx512;
/* fconv_px's packing of a whole block of 32 output channels' weights in
 * AVX registers (fgemm_avx2.c), for both x86 sets. */
void fgemm_pack_px_avx(const float *w, int64_t k, float *dst);
#endif

/* The kernels of the instruction set in use (util/isa.h). */
const fgemm_arch_t *fgemm_arch(void);
/* The epilogue the tiles leave, on rows [0, mr) x [0, nr) of a finished
 * tile of C (rows ldc apart): with a residual (res: the tile's first
 * element's, rows ldc apart) the tiles ran fgemm_epi_tile(e) -- no
 * activation -- and this adds res, then applies e's activation; without
 * one, Sigmoid or SiLU where the set's tiles leave them; then, with or
 * without, e's storage rounding (fgemm_epi_t.round), if any. Called once
 * per finished element: fconv_px.c's blocks go through it too. */
fgemm_epi_t fgemm_epi_tile(const fgemm_epi_t *e);
void fgemm_tile_post(float *c, int64_t ldc, int mr, int nr, const float *res, const fgemm_epi_t *e);

/* Packed panels kept across calls in a node's cache slot (a constant
 * operand's: a MatMul's B, a convolution's weights): the rows (n or m) and
 * k they are for, then the floats at a 64-byte boundary. */
typedef struct fgemm_packed {
    int64_t rows, k;
    _Alignas(64) float p[];
} fgemm_packed_t;
/* A new one with room for floats, or NULL where it cannot be had (the
 * caller then packs per call); free() releases it. */
fgemm_packed_t *fgemm_packed_new(int64_t rows, int64_t k, int64_t floats);

/* The epilogue of one element (row bias, column bias, activation), the
 * reference every set's vector form follows. */
float fgemm_finish_one(float x, float bias, float col_bias, const fgemm_epi_t *e);

#endif
