/* tensorproto.c — decoding every storage form of an ONNX TensorProto:
 * raw_data (little-endian), the typed repeated fields, and external data. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "io/tensorproto.h"
#include "util/fsutil.h"

static const char *tp_name(const Onnx__TensorProto *p)
{
    return p->name && p->name[0] ? p->name : "(unnamed)";
}

/* Resolves an external-data location against the model folder, refusing
 * absolute paths and anything that leaves the folder. */
static int read_external(const Onnx__TensorProto *p, const char *model_dir, size_t want,
                         void *dst, perr_t *e)
{
    const char *loc = NULL;
    long long off = 0, len = -1;
    for (size_t i = 0; i < p->n_external_data; i++) {
        const Onnx__StringStringEntryProto *kv = p->external_data[i];
        if (!kv->key || !kv->value) continue;
        if (!strcmp(kv->key, "location")) loc = kv->value;
        else if (!strcmp(kv->key, "offset")) off = atoll(kv->value);
        else if (!strcmp(kv->key, "length")) len = atoll(kv->value);
    }
    if (!loc) return BAD(e, "initializer '%s': external data without a location", tp_name(p));
    if (!model_dir) return BAD(e, "initializer '%s': external data but no model folder", tp_name(p));
    if (loc[0] == '/' || strstr(loc, "..") || strchr(loc, '\\'))
        return BAD(e, "initializer '%s': external data path '%s' leaves the model's folder", tp_name(p), loc);
    char *path = path_join(model_dir, loc);
    char *real_dir = realpath(model_dir, NULL), *real = realpath(path, NULL);
    int outside = !real_dir || !real || strncmp(real, real_dir, strlen(real_dir)) ||
                  (real[strlen(real_dir)] != '/' && real[strlen(real_dir)] != 0);
    free(real_dir);
    if (!real) {
        BAD(e, "initializer '%s': external data file '%s' cannot be opened: %s", tp_name(p), path, strerror(errno));
        free(path);
        return -1;
    }
    free(real);
    if (outside) {
        free(path);
        return BAD(e, "initializer '%s': external data path '%s' leaves the model's folder", tp_name(p), loc);
    }
    if (len >= 0 && (size_t)len != want) {
        free(path);
        return BAD(e, "initializer '%s': external data length %lld, expected %zu", tp_name(p), len, want);
    }
    if (!dst) {   /* size check only, before anything is allocated */
        struct stat st;
        int rc = 0;
        if (stat(path, &st) != 0 || off < 0 || (unsigned long long)st.st_size < (unsigned long long)off + want)
            rc = BAD(e, "initializer '%s': external data '%s' is shorter than %zu bytes at offset %lld",
                     tp_name(p), loc, want, off);
        free(path);
        return rc;
    }
    FILE *f = fopen(path, "rb");
    int rc = 0;
    if (!f || off < 0 || fseek(f, off, SEEK_SET) != 0 || fread(dst, 1, want, f) != want)
        rc = BAD(e, "initializer '%s': external data '%s' is shorter than %zu bytes at offset %lld",
                 tp_name(p), loc, want, off);
    if (f) fclose(f);
    free(path);
    return rc;
}

int tensorproto_to_tensor(const Onnx__TensorProto *p, const char *model_dir, tensor_t *t, perr_t *e)
{
    memset(t, 0, sizeof *t);
    dtype_t dt = (dtype_t)p->data_type;
    if (p->n_dims > TENSOR_MAX_DIMS)
        return BAD(e, "tensor '%s': rank %zu beyond %d", tp_name(p), p->n_dims, TENSOR_MAX_DIMS);
    if (dt == DT_STRING || !dtype_size(dt))
        return BAD(e, "tensor '%s': element type %s (%d) is not supported", tp_name(p), dtype_name(dt), (int)dt);
    if (p->has_data_location && p->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL &&
        p->n_external_data == 0)
        return BAD(e, "tensor '%s': external data without a location", tp_name(p));
    int64_t dims[TENSOR_MAX_DIMS];
    for (size_t i = 0; i < p->n_dims; i++) dims[i] = p->dims[i];
    if (tensor_check_shape(dt, (int)p->n_dims, dims, e))
        return perr_prefix(e, "tensor '%s': ", tp_name(p));
    tensor_t shape = {.dtype = dt, .ndim = (int)p->n_dims};
    memcpy(shape.dims, dims, sizeof dims);
    int64_t n = tensor_numel(&shape);
    size_t bytes = tensor_nbytes(&shape), es = dtype_size(dt);
    /* Check the stored size before allocating: a declared 2^40-element
     * initializer with no data behind it must fail, not allocate. */
    if (!p->n_external_data && p->has_raw_data && p->raw_data.len != bytes)
        return BAD(e, "tensor '%s': raw_data has %zu bytes, shape needs %zu", tp_name(p), p->raw_data.len, bytes);
    size_t have;
    switch (dt) {
    case DT_FLOAT: have = p->n_float_data; break;
    case DT_DOUBLE: have = p->n_double_data; break;
    case DT_INT64: have = p->n_int64_data; break;
    case DT_UINT32: case DT_UINT64: have = p->n_uint64_data; break;
    default: have = p->n_int32_data; break;
    }
    if (!p->n_external_data && !p->has_raw_data && (int64_t)have != n)
        return BAD(e, "tensor '%s': %zu stored values, shape needs %lld", tp_name(p), have, (long long)n);
    if (p->n_external_data && read_external(p, model_dir, bytes, NULL, e))
        return -1;
    if (tensor_alloc(t, dt, (int)p->n_dims, dims, e))
        return perr_prefix(e, "tensor '%s': ", tp_name(p));
    if (p->n_external_data) {
        if (read_external(p, model_dir, bytes, t->data, e)) goto fail;
        return 0;
    }
    if (p->has_raw_data) {
        if (p->raw_data.len != bytes) {
            BAD(e, "tensor '%s': raw_data has %zu bytes, shape needs %zu", tp_name(p), p->raw_data.len, bytes);
            goto fail;
        }
        if (bytes) memcpy(t->data, p->raw_data.data, bytes);
        return 0;
    }
    for (int64_t i = 0; i < n; i++) {
        char *d = (char *)t->data + i * es;
        switch (dt) {
        case DT_FLOAT: memcpy(d, &p->float_data[i], 4); break;
        case DT_DOUBLE: memcpy(d, &p->double_data[i], 8); break;
        case DT_INT64: memcpy(d, &p->int64_data[i], 8); break;
        case DT_UINT64: memcpy(d, &p->uint64_data[i], 8); break;
        case DT_UINT32: { uint32_t v = (uint32_t)p->uint64_data[i]; memcpy(d, &v, 4); } break;
        case DT_INT32: memcpy(d, &p->int32_data[i], 4); break;
        case DT_INT16: { int16_t v = (int16_t)p->int32_data[i]; memcpy(d, &v, 2); } break;
        case DT_INT8: { int8_t v = (int8_t)p->int32_data[i]; memcpy(d, &v, 1); } break;
        case DT_UINT16: case DT_FLOAT16: case DT_BFLOAT16:
            { uint16_t v = (uint16_t)p->int32_data[i]; memcpy(d, &v, 2); } break;
        case DT_UINT8: case DT_BOOL: { uint8_t v = (uint8_t)p->int32_data[i]; memcpy(d, &v, 1); } break;
        default: break;
        }
    }
    return 0;
fail:
    tensor_free_data(t);
    return -1;
}

void tensor_to_tensorproto(const tensor_t *t, const char *name, Onnx__TensorProto *p)
{
    onnx__tensor_proto__init(p);
    p->name = (char *)(name ? name : "");
    p->has_data_type = 1;
    p->data_type = (int32_t)t->dtype;
    p->n_dims = t->ndim;
    p->dims = (int64_t *)t->dims;
    p->has_raw_data = 1;
    p->raw_data.len = tensor_nbytes(t);
    p->raw_data.data = t->data;
}

int pb_read(const char *path, tensor_t *t, char **name, perr_t *e)
{
    char *buf;
    size_t n;
    if (read_file(path, &buf, &n, e)) return -1;
    Onnx__TensorProto *p = onnx__tensor_proto__unpack(NULL, n, (uint8_t *)buf);
    free(buf);
    if (!p) return BAD(e, "%s: not a serialized ONNX TensorProto (truncated or garbage)", path);
    char *dir = xstrdup(path), *slash = strrchr(dir, '/');
    if (slash) *slash = 0; else strcpy(dir, ".");
    int rc = tensorproto_to_tensor(p, dir, t, e);
    free(dir);
    if (rc) {
        perr_prefix(e, "%s: ", path);
    } else if (name) {
        *name = xstrdup(p->name ? p->name : "");
    }
    onnx__tensor_proto__free_unpacked(p, NULL);
    return rc;
}

int pb_write(const char *path, const tensor_t *t, const char *name, perr_t *e)
{
    Onnx__TensorProto p;
    tensor_to_tensorproto(t, name, &p);
    size_t n = onnx__tensor_proto__get_packed_size(&p);
    uint8_t *buf = xmalloc(n);
    onnx__tensor_proto__pack(&p, buf);
    int rc = atomic_write(path, buf, n, e);
    free(buf);
    return rc;
}
