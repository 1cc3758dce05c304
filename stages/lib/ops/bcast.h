/* bcast.h — the one broadcasting walk for elementwise ops (binary ops,
 * variadic Sum/Max/Min/Mean, Where, PRelu, Clip).
 *
 * bcast_plan() maps up to BCAST_MAX_IN inputs onto a contiguous output with
 * numpy multidirectional broadcasting. It drops the output's size-1 axes and
 * merges neighbouring axes that every input walks contiguously, so the common
 * cases collapse to almost nothing: same shape -> one row; scalar operand ->
 * one row with stride 0; [N,C,H,W] + [1,C,1,1] -> rows of H*W. The innermost
 * axis then has stride 0 (broadcast) or 1 (walked) for every input, which the
 * row kernels specialise on so the compiler can vectorise them.
 *
 * Rows are walked with an odometer (no division per row; bcast_seek starts
 * mid-tensor for a chunk of parallel work):
 *
 *     BCAST_FOR_ROWS(&b, it) {
 *         const float *x = xa + it.off[0], *y = ya + it.off[1];
 *         float *o = out + it.row * b.inner;     ... b.inner elements ...
 *     }
 */
#ifndef PARITY_BCAST_H
#define PARITY_BCAST_H

#include <stdint.h>
#include "tensor/tensor.h"

#define BCAST_MAX_IN 3

typedef struct bcast {
    int n;                                       /* inputs */
    int rank;                                    /* collapsed rank, >= 1 */
    int64_t dims[TENSOR_MAX_DIMS];               /* collapsed output dims */
    int64_t st[BCAST_MAX_IN][TENSOR_MAX_DIMS];   /* element strides (0 = broadcast) */
    int64_t inner;                               /* elements per row = dims[rank-1] */
    int64_t rows;                                /* number of rows (0 if the output is empty) */
    int64_t is[BCAST_MAX_IN];                    /* inner stride of each input: 0 or 1 */
} bcast_t;

typedef struct bcast_iter {
    int64_t row;
    int64_t off[BCAST_MAX_IN];                   /* element offset of the row in each input */
    int64_t idx[TENSOR_MAX_DIMS];
} bcast_iter_t;

/* Plans the walk of n input shapes (ndims[i], dims[i]) onto an output of
 * shape (out_ndim, out_dims). Every input must broadcast to the output
 * (unidirectionally); returns -1 if one does not (the caller's shape function
 * should have caught it). */
int bcast_plan(bcast_t *b, int n, const int *ndims, const int64_t *const *dims,
               int out_ndim, const int64_t *out_dims);
/* Same, from tensors. */
int bcast_plan_tensors(bcast_t *b, int n, const tensor_t *const *in, const tensor_t *out);

static inline bcast_iter_t bcast_begin(const bcast_t *b)
{
    bcast_iter_t it;
    it.row = 0;
    for (int i = 0; i < BCAST_MAX_IN; i++) it.off[i] = 0;
    for (int d = 0; d < TENSOR_MAX_DIMS; d++) it.idx[d] = 0;
    (void)b;
    return it;
}

/* Iterator positioned at row `row` (0 <= row <= rows; rows > 0): one
 * division per axis, for starting a chunk of work mid-tensor. */
static inline bcast_iter_t bcast_seek(const bcast_t *b, int64_t row)
{
    bcast_iter_t it = bcast_begin(b);
    it.row = row;
    for (int d = b->rank - 2; d >= 0; d--) {
        it.idx[d] = row % b->dims[d];
        row /= b->dims[d];
        for (int i = 0; i < b->n; i++) it.off[i] += it.idx[d] * b->st[i][d];
    }
    return it;
}

/* Advances to the next row: increments the odometer over the outer axes. */
static inline void bcast_next(const bcast_t *b, bcast_iter_t *it)
{
    it->row++;
    for (int d = b->rank - 2; d >= 0; d--) {
        for (int i = 0; i < b->n; i++) it->off[i] += b->st[i][d];
        if (++it->idx[d] < b->dims[d]) return;
        for (int i = 0; i < b->n; i++) it->off[i] -= b->st[i][d] * b->dims[d];
        it->idx[d] = 0;
    }
}

#define BCAST_FOR_ROWS(b, it) \
    for (bcast_iter_t it = bcast_begin(b); it.row < (b)->rows; bcast_next((b), &it))

#endif
