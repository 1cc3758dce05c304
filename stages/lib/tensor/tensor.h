/* tensor.h — the one runtime tensor type: ONNX element types, int64 dims,
 * C-order contiguous data. Protobuf structs never stand in for tensors at run
 * time; loaders convert into this. */
#ifndef PARITY_TENSOR_H
#define PARITY_TENSOR_H

#include <stdint.h>
#include <stddef.h>
#include "util/err.h"

#define TENSOR_MAX_DIMS 8
/* Refuse any tensor beyond this many bytes (absurd declared sizes). */
#define TENSOR_MAX_BYTES ((int64_t)1 << 36)

/* Values are ONNX TensorProto.DataType codes. */
typedef enum dtype {
    DT_UNDEFINED = 0, DT_FLOAT = 1, DT_UINT8 = 2, DT_INT8 = 3, DT_UINT16 = 4,
    DT_INT16 = 5, DT_INT32 = 6, DT_INT64 = 7, DT_STRING = 8, DT_BOOL = 9,
    DT_FLOAT16 = 10, DT_DOUBLE = 11, DT_UINT32 = 12, DT_UINT64 = 13,
    DT_BFLOAT16 = 16,
    /* not an ONNX element type: a tensor_t whose data is a tensor_seq_t (the
     * sequence values of SequenceConstruct, Loop-carried lists, ...) */
    DT_SEQUENCE = 1000
} dtype_t;

size_t dtype_size(dtype_t t);            /* 0 for unsupported types */
const char *dtype_name(dtype_t t);       /* "float32", "int64", ... */
dtype_t dtype_from_name(const char *s);  /* DT_UNDEFINED if unknown */
int dtype_is_float(dtype_t t);           /* float16/bfloat16/float/double */
int dtype_is_signed_int(dtype_t t);
int dtype_is_unsigned_int(dtype_t t);    /* uint*, bool excluded */

typedef struct tensor {
    dtype_t dtype;
    int ndim;
    int64_t dims[TENSOR_MAX_DIMS];
    void *data;
    int owns;            /* data is freed with the tensor */
    size_t cap;          /* bytes available at data when it is a preset buffer
                            the tensor does not own (the executor's arena) */
} tensor_t;

/* A sequence value (DT_SEQUENCE): tensors of one element type, owned. */
typedef struct tensor_seq {
    dtype_t elem;        /* DT_UNDEFINED until the first element or SequenceEmpty */
    int n, cap;
    tensor_t *items;
} tensor_seq_t;
/* The sequence of a DT_SEQUENCE tensor (NULL for any other). */
tensor_seq_t *tensor_seq(const tensor_t *t);
/* Appends a deep copy of x at position pos (-n..n, n = append). */
int tensor_seq_insert(tensor_seq_t *s, const tensor_t *x, int64_t pos, perr_t *e);

/* axis.c: out = x[..., start:start+len, ...] along axis (the axis dropped
 * when keep_axis is 0 and len is 1); out = the tensors joined along axis
 * (stacked along a new axis when new_axis). Any element type. */
int tensor_slice_axis(const tensor_t *x, int axis, int64_t start, int64_t len, int keep_axis, tensor_t *out,
                      perr_t *e);
int tensor_concat_axis(const tensor_t *const *xs, int n, int axis, int new_axis, tensor_t *out, perr_t *e);

int64_t tensor_numel(const tensor_t *t);
size_t tensor_nbytes(const tensor_t *t);
/* Checks dims (non-negative, rank limit) and total size; BAD on failure. */
int tensor_check_shape(dtype_t dt, int ndim, const int64_t *dims, perr_t *e);
/* Sets type and shape and allocates zeroed data (frees previous owned data). */
int tensor_alloc(tensor_t *t, dtype_t dt, int ndim, const int64_t *dims, perr_t *e);
tensor_t *tensor_new(dtype_t dt, int ndim, const int64_t *dims, perr_t *e);
void tensor_free_data(tensor_t *t);
void tensor_free(tensor_t *t);                 /* data and the struct */
tensor_t *tensor_clone(const tensor_t *t);     /* deep copy */
int tensor_same_shape(const tensor_t *a, const tensor_t *b);
/* Same type, shape and bytes (never for sequences); -0 and +0, NaN payloads differ. */
int tensor_identical(const tensor_t *a, const tensor_t *b);
/* "1x3x320x320" (scalars: "scalar"); buf of at least 160 bytes. */
char *shape_str(int ndim, const int64_t *dims, char *buf, size_t n);
/* Parses "1x3x320x320" into dims; returns rank or -1. */
int shape_parse(const char *s, int64_t *dims);

/* Element access as double / int64 regardless of type (for shape arithmetic,
 * comparisons and tests, not for hot loops). */
double tensor_get_f64(const tensor_t *t, int64_t i);
int64_t tensor_get_i64(const tensor_t *t, int64_t i);
void tensor_set_f64(tensor_t *t, int64_t i, double v);
/* Converts to a new tensor of another type with ONNX Cast semantics. */
int tensor_cast(const tensor_t *src, dtype_t to, tensor_t *dst, perr_t *e);
/* Converts src's elements into dst's existing data (dst's dtype, same element
 * count) with ONNX Cast semantics (convert.c). */
int tensor_convert(const tensor_t *src, tensor_t *dst, perr_t *e);

#endif
