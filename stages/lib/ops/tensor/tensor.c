/* tensor.c — the TENSOR operator family: ops that move bytes or compute
 * shapes (Reshape, Transpose, Concat, Slice, Gather, Scatter, Pad, ...).
 * This file holds the family's one table and the helpers its files share;
 * the kernels live in shape.c, transpose.c, concat.c, slice.c, gather.c,
 * scatter.c, pad.c and generate.c (declared in tensor_impl.h).
 *
 * Almost every row sets any_type: these kernels copy elements by size
 * (DISPATCH_BYSIZE), so float16/bfloat16 pass through unchanged instead of
 * being widened to float32 by the executor. */
#include "ops/tensor/tensor_impl.h"

int tn_check_index_type(op_ctx_t *c, const tensor_t *t, const char *what)
{
    if (t->dtype != DT_INT64 && t->dtype != DT_INT32)
        return op_fail(c, "%s must be int32 or int64, got %s", what, dtype_name(t->dtype));
    return 0;
}

int tn_elem_size(op_ctx_t *c, const tensor_t *t, size_t *es)
{
    *es = dtype_size(t->dtype);
    if (*es != 1 && *es != 2 && *es != 4 && *es != 8)
        return op_fail(c, "element type %s is not supported", dtype_name(t->dtype));
    return 0;
}

void tn_scalar_bytes(dtype_t dt, double v, void *dst)
{
    tensor_t t = {.dtype = dt, .ndim = 0, .data = dst};
    tensor_set_f64(&t, 0, v);
}

void tn_fill(void *dst, const void *v, size_t es, int64_t n)
{
    DISPATCH_BYSIZE(es, {
        T x;
        memcpy(&x, v, sizeof x);
        T *d = dst;
        for (int64_t i = 0; i < n; i++) d[i] = x;
    }, (void)0);
}

int tn_check_data_indices(op_ctx_t *c, int min_in, int max_in)
{
    size_t es;
    if (op_check_inputs(c, min_in, max_in) || tn_elem_size(c, c->in[0], &es)) return -1;
    return tn_check_index_type(c, c->in[1], "indices");
}

int tn_copy_input0(op_ctx_t *c)
{
    const tensor_t *x = c->in[0];
    tensor_t *y = c->out[0];
    if (tensor_numel(y) != tensor_numel(x) || y->dtype != x->dtype)
        return op_fail(c, "output does not match the input's size");
    if (y->data != x->data) copy_bytes(y->data, x->data, tensor_nbytes(x));
    return 0;
}

#define ROW(op, since, until, shape, run) {"", op, since, until, shape, run, .any_type = 1}
#define VIEW(op, since, until, shape, run) {"", op, since, until, shape, run, .any_type = 1, .view = 1}

const op_def_t ops_tensor[] = {
    ROW("Compress", 9, 0, shape_compress, run_compress),
    ROW("Concat", 1, 0, shape_concat, run_concat),
    ROW("ConstantOfShape", 9, 0, shape_constantofshape, run_constantofshape),
    ROW("DepthToSpace", 1, 0, shape_depthtospace, run_depthtospace),
    ROW("Dropout", 7, 0, shape_dropout, run_dropout),
    ROW("Expand", 8, 0, shape_expand, run_expand),
    ROW("EyeLike", 9, 0, shape_eyelike, run_eyelike),
    VIEW("Flatten", 1, 0, shape_flatten, run_view_copy),
    ROW("Gather", 1, 0, shape_gather, run_gather),
    ROW("GatherElements", 11, 0, shape_gather_elements, run_gather_elements),
    ROW("GatherND", 11, 0, shape_gather_nd, run_gather_nd),
    VIEW("Identity", 1, 0, shape_identity, run_view_copy),
    ROW("NonZero", 9, 0, shape_nonzero, run_nonzero),
    ROW("OneHot", 9, 0, shape_onehot, run_onehot),
    ROW("Pad", 2, 0, shape_pad, run_pad),
    /* Range is arithmetic on numeric types only (no half types in the spec) */
    {"", "Range", 11, 0, shape_range, run_range, .any_type = 0},
    VIEW("Reshape", 5, 0, shape_reshape, run_view_copy),
    ROW("ReverseSequence", 10, 0, shape_reversesequence, run_reversesequence),
    ROW("Scatter", 9, 0, shape_scatter_elements, run_scatter_elements),
    ROW("ScatterElements", 11, 0, shape_scatter_elements, run_scatter_elements),
    ROW("ScatterND", 11, 0, shape_scatter_nd, run_scatter_nd),
    ROW("Shape", 1, 0, shape_shape, run_shape),
    ROW("Size", 1, 0, shape_size, run_size),
    ROW("Slice", 1, 0, shape_slice, run_slice),
    ROW("SpaceToDepth", 1, 0, shape_spacetodepth, run_spacetodepth),
    ROW("Split", 2, 0, shape_split, run_split),
    VIEW("Squeeze", 1, 0, shape_squeeze, run_view_copy),
    ROW("Tile", 6, 0, shape_tile, run_tile),
    ROW("Transpose", 1, 0, shape_transpose, run_transpose),
    ROW("Trilu", 14, 0, shape_trilu, run_trilu),
    VIEW("Unsqueeze", 1, 0, shape_unsqueeze, run_view_copy),
};
const int ops_tensor_count = sizeof ops_tensor / sizeof ops_tensor[0];
