/* tensor_impl.h — private header of the TENSOR operator family (data
 * movement and shapes). tensor.c holds the one table, ops_tensor[]; the
 * shape functions and kernels live in shape.c, transpose.c, concat.c,
 * slice.c, gather.c, scatter.c, pad.c and generate.c, and share the small
 * inline helpers below (index reads, odometers, element copies). */
#ifndef PARITY_OPS_TENSOR_IMPL_H
#define PARITY_OPS_TENSOR_IMPL_H

#include <string.h>
#include "ops/ops.h"

/* ---- helpers shared by the family ---- */

/* Reads element i of an int32 or int64 index tensor (the caller checked the
 * type with tn_check_index_type); the branch is the same for every element. */
static inline int64_t idx_get(const tensor_t *t, int64_t i)
{
    return t->dtype == DT_INT64 ? ((const int64_t *)t->data)[i]
                                : (int64_t)((const int32_t *)t->data)[i];
}

/* Normalises index v against an axis of n elements (negative counts from the
 * end); -1 when out of range, so callers fail instead of reading outside. */
static inline int64_t idx_norm(int64_t v, int64_t n)
{
    if (v < 0) v += n;
    return v >= 0 && v < n ? v : -1;
}

/* Advances a row-major multi-index over dims[0..n-1]; returns 0 after the last. */
static inline int odo_next(int64_t *idx, const int64_t *dims, int n)
{
    for (int d = n - 1; d >= 0; d--) {
        if (++idx[d] < dims[d]) return 1;
        idx[d] = 0;
    }
    return 0;
}

static inline int64_t prod_dims(const int64_t *dims, int from, int to)
{
    int64_t p = 1;
    for (int d = from; d < to; d++) p *= dims[d];
    return p;
}

/* Row-major strides (in elements) of a shape. */
static inline void strides_of(const int64_t *dims, int n, int64_t *st)
{
    int64_t s = 1;
    for (int d = n - 1; d >= 0; d--) { st[d] = s; s *= dims[d]; }
}

/* memcpy that tolerates n == 0 with NULL pointers (empty tensors). */
static inline void copy_bytes(void *dst, const void *src, size_t n)
{
    if (n) memcpy(dst, src, n);
}

/* Checks that an input holds int32 or int64 indices. */
int tn_check_index_type(op_ctx_t *c, const tensor_t *t, const char *what);
/* Element size of a tensor's type, failing for types with no fixed size. */
int tn_elem_size(op_ctx_t *c, const tensor_t *t, size_t *es);
/* Writes value v converted to dtype dt into dst (one element). */
void tn_scalar_bytes(dtype_t dt, double v, void *dst);
/* Fills n elements of size es with the element at v. */
void tn_fill(void *dst, const void *v, size_t es, int64_t n);
/* Checks the input count, data's element type and that input 1 holds
 * int32/int64 indices (Gather*, Scatter*). */
int tn_check_data_indices(op_ctx_t *c, int min_in, int max_in);
/* Copies a whole tensor's bytes (Identity, Reshape, ...). */
int tn_copy_input0(op_ctx_t *c);

/* Permutes a dense tensor: out dims are dims[perm[k]]. Coalesces axes that
 * stay adjacent, then runs a contiguous, tiled-2D or generic loop. */
void tn_permute(void *dst, const void *src, size_t es, int ndim,
                   const int64_t *dims, const int *perm);

/* ---- shape functions and kernels (by file) ---- */

/* shape.c */
int shape_reshape(op_ctx_t *c);
int shape_flatten(op_ctx_t *c);
int shape_squeeze(op_ctx_t *c);
int shape_unsqueeze(op_ctx_t *c);
int shape_identity(op_ctx_t *c);
int shape_dropout(op_ctx_t *c);
int shape_shape(op_ctx_t *c);
int shape_size(op_ctx_t *c);
int run_view_copy(op_ctx_t *c);
int run_dropout(op_ctx_t *c);
int run_shape(op_ctx_t *c);
int run_size(op_ctx_t *c);

/* transpose.c */
int shape_transpose(op_ctx_t *c);
int run_transpose(op_ctx_t *c);
int shape_depthtospace(op_ctx_t *c);
int run_depthtospace(op_ctx_t *c);
int shape_spacetodepth(op_ctx_t *c);
int run_spacetodepth(op_ctx_t *c);

/* concat.c */
int shape_concat(op_ctx_t *c);
int run_concat(op_ctx_t *c);
int shape_split(op_ctx_t *c);
int run_split(op_ctx_t *c);
int shape_expand(op_ctx_t *c);
int run_expand(op_ctx_t *c);
int shape_tile(op_ctx_t *c);
int run_tile(op_ctx_t *c);

/* slice.c */
int shape_slice(op_ctx_t *c);
int run_slice(op_ctx_t *c);
int shape_compress(op_ctx_t *c);
int run_compress(op_ctx_t *c);
int shape_reversesequence(op_ctx_t *c);
int run_reversesequence(op_ctx_t *c);

/* gather.c */
int shape_gather(op_ctx_t *c);
int run_gather(op_ctx_t *c);
int shape_gather_elements(op_ctx_t *c);
int run_gather_elements(op_ctx_t *c);
int shape_gather_nd(op_ctx_t *c);
int run_gather_nd(op_ctx_t *c);

/* scatter.c */
int shape_scatter_elements(op_ctx_t *c);
int run_scatter_elements(op_ctx_t *c);
int shape_scatter_nd(op_ctx_t *c);
int run_scatter_nd(op_ctx_t *c);

/* pad.c */
int shape_pad(op_ctx_t *c);
int run_pad(op_ctx_t *c);

/* generate.c */
int shape_constantofshape(op_ctx_t *c);
int run_constantofshape(op_ctx_t *c);
int shape_range(op_ctx_t *c);
int run_range(op_ctx_t *c);
int shape_onehot(op_ctx_t *c);
int run_onehot(op_ctx_t *c);
int shape_nonzero(op_ctx_t *c);
int run_nonzero(op_ctx_t *c);
int shape_eyelike(op_ctx_t *c);
int run_eyelike(op_ctx_t *c);
int shape_trilu(op_ctx_t *c);
int run_trilu(op_ctx_t *c);

#endif
