/* tensor.c — element types, allocation, shapes, and ONNX Cast semantics. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tensor/tensor.h"
#include "tensor/half.h"
#include "tensor/dispatch.h"

static const struct { dtype_t t; size_t size; const char *name; } dtypes[] = {
    {DT_FLOAT, 4, "float32"}, {DT_UINT8, 1, "uint8"}, {DT_INT8, 1, "int8"},
    {DT_UINT16, 2, "uint16"}, {DT_INT16, 2, "int16"}, {DT_INT32, 4, "int32"},
    {DT_INT64, 8, "int64"}, {DT_STRING, 0, "string"}, {DT_BOOL, 1, "bool"},
    {DT_FLOAT16, 2, "float16"}, {DT_DOUBLE, 8, "float64"}, {DT_UINT32, 4, "uint32"},
    {DT_UINT64, 8, "uint64"}, {DT_BFLOAT16, 2, "bfloat16"}, {DT_SEQUENCE, 0, "sequence"},
};
#define N_DTYPES (sizeof dtypes / sizeof dtypes[0])

size_t dtype_size(dtype_t t)
{
    for (size_t i = 0; i < N_DTYPES; i++)
        if (dtypes[i].t == t) return dtypes[i].size;
    return 0;
}

const char *dtype_name(dtype_t t)
{
    for (size_t i = 0; i < N_DTYPES; i++)
        if (dtypes[i].t == t) return dtypes[i].name;
    return "undefined";
}

dtype_t dtype_from_name(const char *s)
{
    for (size_t i = 0; i < N_DTYPES; i++)
        if (!strcmp(dtypes[i].name, s)) return dtypes[i].t;
    if (!strcmp(s, "float")) return DT_FLOAT;
    if (!strcmp(s, "double")) return DT_DOUBLE;
    if (!strcmp(s, "half")) return DT_FLOAT16;
    return DT_UNDEFINED;
}

int dtype_is_float(dtype_t t)
{
    return t == DT_FLOAT || t == DT_DOUBLE || t == DT_FLOAT16 || t == DT_BFLOAT16;
}

int dtype_is_signed_int(dtype_t t)
{
    return t == DT_INT8 || t == DT_INT16 || t == DT_INT32 || t == DT_INT64;
}

int dtype_is_unsigned_int(dtype_t t)
{
    return t == DT_UINT8 || t == DT_UINT16 || t == DT_UINT32 || t == DT_UINT64;
}

int64_t tensor_numel(const tensor_t *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->dims[i];
    return n;
}

size_t tensor_nbytes(const tensor_t *t)
{
    return (size_t)tensor_numel(t) * dtype_size(t->dtype);
}

int tensor_check_shape(dtype_t dt, int ndim, const int64_t *dims, perr_t *e)
{
    if (ndim < 0 || ndim > TENSOR_MAX_DIMS)
        return BAD(e, "rank %d is beyond the supported %d", ndim, TENSOR_MAX_DIMS);
    size_t es = dtype_size(dt);
    if (!es) return BAD(e, "element type %s (%d) is not supported", dtype_name(dt), (int)dt);
    int64_t bytes = (int64_t)es;
    for (int i = 0; i < ndim; i++) {
        if (dims[i] < 0) return BAD(e, "negative dimension %lld", (long long)dims[i]);
        if (dims[i] == 0) { bytes = 0; continue; }
        if (bytes && dims[i] > TENSOR_MAX_BYTES / bytes) {
            char b[160];
            return BAD(e, "tensor of shape %s is absurdly large", shape_str(ndim, dims, b, sizeof b));
        }
        if (bytes) bytes *= dims[i];
    }
    return 0;
}

tensor_seq_t *tensor_seq(const tensor_t *t)
{
    return t && t->dtype == DT_SEQUENCE ? t->data : NULL;
}

static void seq_free(tensor_seq_t *s)
{
    for (int i = 0; i < s->n; i++) tensor_free_data(&s->items[i]);
    free(s->items);
    free(s);
}

int tensor_seq_insert(tensor_seq_t *s, const tensor_t *x, int64_t pos, perr_t *e)
{
    if (x->dtype == DT_SEQUENCE) return BAD(e, "a sequence cannot hold a sequence");
    if (s->elem && x->dtype != s->elem)
        return BAD(e, "sequence of %s cannot take a %s tensor", dtype_name(s->elem), dtype_name(x->dtype));
    if (pos < 0) pos += s->n;
    if (pos < 0 || pos > s->n) return BAD(e, "sequence position out of range [%d, %d]", -s->n, s->n);
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 4;
        s->items = xrealloc(s->items, s->cap * sizeof *s->items);
    }
    memmove(&s->items[pos + 1], &s->items[pos], (s->n - pos) * sizeof *s->items);
    tensor_t *c = tensor_clone(x);
    s->items[pos] = *c;
    free(c);
    s->n++;
    s->elem = x->dtype;
    return 0;
}

int tensor_alloc(tensor_t *t, dtype_t dt, int ndim, const int64_t *dims, perr_t *e)
{
    if (dt == DT_SEQUENCE) {   /* an empty sequence; its kernel fills it */
        tensor_free_data(t);
        memset(t, 0, sizeof *t);
        t->dtype = DT_SEQUENCE;
        t->data = xcalloc(1, sizeof(tensor_seq_t));
        t->owns = 1;
        return 0;
    }
    if (tensor_check_shape(dt, ndim, dims, e)) return -1;
    tensor_free_data(t);
    t->dtype = dt;
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++) t->dims[i] = dims[i];
    t->data = xcalloc(1, tensor_nbytes(t) + 16);
    t->owns = 1;
    return 0;
}

tensor_t *tensor_new(dtype_t dt, int ndim, const int64_t *dims, perr_t *e)
{
    tensor_t *t = xcalloc(1, sizeof *t);
    if (tensor_alloc(t, dt, ndim, dims, e)) {
        free(t);
        return NULL;
    }
    return t;
}

void tensor_free_data(tensor_t *t)
{
    if (t->owns && t->dtype == DT_SEQUENCE && t->data) seq_free(t->data);
    else if (t->owns) free(t->data);
    t->data = NULL;
    t->owns = 0;
}

void tensor_free(tensor_t *t)
{
    if (!t) return;
    tensor_free_data(t);
    free(t);
}

tensor_t *tensor_clone(const tensor_t *t)
{
    tensor_t *c = xcalloc(1, sizeof *c);
    *c = *t;
    if (t->dtype == DT_SEQUENCE) {
        const tensor_seq_t *s = t->data;
        tensor_seq_t *d = xcalloc(1, sizeof *d);
        d->elem = s->elem;
        for (int i = 0; i < s->n; i++) tensor_seq_insert(d, &s->items[i], d->n, NULL);
        c->data = d;
        c->owns = 1;
        return c;
    }
    size_t n = tensor_nbytes(t);
    c->data = xmalloc(n + 16);
    if (n) memcpy(c->data, t->data, n);
    c->owns = 1;
    return c;
}

int tensor_same_shape(const tensor_t *a, const tensor_t *b)
{
    if (a->ndim != b->ndim) return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->dims[i] != b->dims[i]) return 0;
    return 1;
}

int tensor_identical(const tensor_t *a, const tensor_t *b)
{
    if (a->dtype != b->dtype || !tensor_same_shape(a, b) || a->dtype == DT_SEQUENCE) return 0;
    size_t n = tensor_nbytes(a);
    return n == 0 || !memcmp(a->data, b->data, n);
}

char *shape_str(int ndim, const int64_t *dims, char *buf, size_t n)
{
    if (ndim == 0) {
        snprintf(buf, n, "scalar");
        return buf;
    }
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; i < ndim && k < n; i++)
        k += snprintf(buf + k, n - k, i ? "x%lld" : "%lld", (long long)dims[i]);
    return buf;
}

int shape_parse(const char *s, int64_t *dims)
{
    if (!strcmp(s, "scalar")) return 0;
    int n = 0;
    const char *p = s;
    while (*p) {
        char *end;
        if (*p < '0' || *p > '9') return -1;
        long long v = strtoll(p, &end, 10);
        if (end == p || v < 0 || n == TENSOR_MAX_DIMS) return -1;
        dims[n++] = v;
        p = end;
        if (*p == 'x' || *p == ',') {
            p++;
            if (!*p) return -1;
        } else if (*p) {
            return -1;
        }
    }
    return n ? n : -1;
}

double tensor_get_f64(const tensor_t *t, int64_t i)
{
    switch (t->dtype) {
    case DT_FLOAT16: return f16_to_f32(((const uint16_t *)t->data)[i]);
    case DT_BFLOAT16: return bf16_to_f32(((const uint16_t *)t->data)[i]);
    case DT_BOOL: return ((const uint8_t *)t->data)[i] != 0;
    default: break;
    }
    DISPATCH_NUMERIC(t->dtype, return (double)((const T *)t->data)[i], return 0)
    return 0;
}

int64_t tensor_get_i64(const tensor_t *t, int64_t i)
{
    if (dtype_is_float(t->dtype)) {
        double d = tensor_get_f64(t, i);
        if (!(d == d)) return 0;
        if (d >= 9.2233720368547758e18) return INT64_MAX;
        if (d <= -9.2233720368547758e18) return INT64_MIN;
        return (int64_t)d;
    }
    if (t->dtype == DT_BOOL) return ((const uint8_t *)t->data)[i] != 0;
    DISPATCH_INT(t->dtype, return (int64_t)((const T *)t->data)[i], return 0)
    return 0;
}

/* Converts a double to integer type T the way ONNX runtimes do for in-range
 * values (truncation); out-of-range and NaN are undefined in the spec, here
 * they saturate so the C conversion is never undefined behaviour. */
#define SAT_CAST(T, lo, hi, d) ((d) != (d) ? (T)0 : (d) <= (double)(lo) ? (T)(lo) : (d) >= (double)(hi) ? (T)(hi) : (T)(d))

static void set_from_f64(tensor_t *t, int64_t i, double v)
{
    void *p = t->data;
    switch (t->dtype) {
    case DT_FLOAT: ((float *)p)[i] = (float)v; break;
    case DT_DOUBLE: ((double *)p)[i] = v; break;
    case DT_FLOAT16: ((uint16_t *)p)[i] = f32_to_f16((float)v); break;
    case DT_BFLOAT16: ((uint16_t *)p)[i] = f32_to_bf16((float)v); break;
    case DT_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    case DT_INT8: ((int8_t *)p)[i] = SAT_CAST(int8_t, INT8_MIN, INT8_MAX, v); break;
    case DT_INT16: ((int16_t *)p)[i] = SAT_CAST(int16_t, INT16_MIN, INT16_MAX, v); break;
    case DT_INT32: ((int32_t *)p)[i] = SAT_CAST(int32_t, INT32_MIN, INT32_MAX, v); break;
    case DT_INT64: ((int64_t *)p)[i] = SAT_CAST(int64_t, INT64_MIN, 9.2233720368547748e18, v); break;
    case DT_UINT8: ((uint8_t *)p)[i] = SAT_CAST(uint8_t, 0, UINT8_MAX, v); break;
    case DT_UINT16: ((uint16_t *)p)[i] = SAT_CAST(uint16_t, 0, UINT16_MAX, v); break;
    case DT_UINT32: ((uint32_t *)p)[i] = SAT_CAST(uint32_t, 0, UINT32_MAX, v); break;
    case DT_UINT64: ((uint64_t *)p)[i] = SAT_CAST(uint64_t, 0, 18446744073709549568.0, v); break;
    default: break;
    }
}

void tensor_set_f64(tensor_t *t, int64_t i, double v)
{
    set_from_f64(t, i, v);
}

int tensor_cast(const tensor_t *src, dtype_t to, tensor_t *dst, perr_t *e)
{
    if (tensor_alloc(dst, to, src->ndim, src->dims, e)) return -1;
    return tensor_convert(src, dst, e);
}
