/* npy.c — reading and writing NumPy .npy arrays. The header is a Python dict
 * literal; we parse exactly the three keys numpy writes and refuse anything
 * else (big-endian, Fortran order, object arrays) with a clear message. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "io/npy.h"
#include "util/fsutil.h"

static const struct { const char *descr; dtype_t t; } npy_types[] = {
    {"<f4", DT_FLOAT}, {"<f8", DT_DOUBLE}, {"<f2", DT_FLOAT16}, {"|u1", DT_UINT8},
    {"|i1", DT_INT8}, {"<u2", DT_UINT16}, {"<i2", DT_INT16}, {"<i4", DT_INT32},
    {"<i8", DT_INT64}, {"<u4", DT_UINT32}, {"<u8", DT_UINT64}, {"|b1", DT_BOOL},
    {"<V2", DT_BFLOAT16}, /* numpy has no bfloat16: raw 2-byte void, as ml_dtypes saves it */
    {"|u1", DT_UINT8}, {"<u1", DT_UINT8}, {"<i1", DT_INT8}, {"<b1", DT_BOOL},
};

static const char *descr_of(dtype_t t)
{
    for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++)
        if (npy_types[i].t == t) return npy_types[i].descr;
    return NULL;
}

/* Finds 'key': in the header and returns a pointer just after the colon. */
static const char *find_key(const char *h, const char *key)
{
    char pat[32];
    snprintf(pat, sizeof pat, "'%s'", key);
    const char *p = strstr(h, pat);
    if (!p) return NULL;
    p += strlen(pat);
    while (*p == ' ') p++;
    if (*p != ':') return NULL;
    p++;
    while (*p == ' ') p++;
    return p;
}

static int parse_header(const char *h, const char *what, dtype_t *dt, int *ndim, int64_t *dims, perr_t *e)
{
    const char *p = find_key(h, "descr");
    if (!p || (*p != '\'' && *p != '"'))
        return BAD(e, "%s: .npy header has no 'descr'", what);
    char descr[16] = {0};
    const char *q = strchr(p + 1, *p);
    if (!q || q - p - 1 >= (long)sizeof descr)
        return BAD(e, "%s: .npy header has a malformed 'descr'", what);
    memcpy(descr, p + 1, q - p - 1);
    *dt = DT_UNDEFINED;
    for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++)
        if (!strcmp(npy_types[i].descr, descr)) *dt = npy_types[i].t;
    if (*dt == DT_UNDEFINED)
        return BAD(e, "%s: .npy element type '%s' is not supported (little-endian numeric only)", what, descr);
    p = find_key(h, "fortran_order");
    if (!p) return BAD(e, "%s: .npy header has no 'fortran_order'", what);
    if (!strncmp(p, "True", 4)) return BAD(e, "%s: Fortran-order .npy arrays are not supported", what);
    if (strncmp(p, "False", 5)) return BAD(e, "%s: .npy header has a malformed 'fortran_order'", what);
    p = find_key(h, "shape");
    if (!p || *p != '(') return BAD(e, "%s: .npy header has no 'shape' tuple", what);
    p++;
    *ndim = 0;
    for (;;) {
        while (*p == ' ' || *p == ',') p++;
        if (*p == ')') break;
        if (*p < '0' || *p > '9') return BAD(e, "%s: .npy header has a malformed 'shape'", what);
        if (*ndim == TENSOR_MAX_DIMS) return BAD(e, "%s: .npy rank beyond %d", what, TENSOR_MAX_DIMS);
        char *end;
        long long v = strtoll(p, &end, 10);
        if (v < 0 || end == p) return BAD(e, "%s: .npy header has a malformed 'shape'", what);
        dims[(*ndim)++] = v;
        p = end;
    }
    return 0;
}

int npy_parse(const void *buf, size_t n, const char *what, tensor_t *t, perr_t *e)
{
    const unsigned char *b = buf;
    memset(t, 0, sizeof *t);
    if (n < 10 || memcmp(b, "\x93NUMPY", 6))
        return BAD(e, "%s: not a .npy file (bad magic)", what);
    int major = b[6];
    size_t hlen, off;
    if (major == 1) {
        hlen = b[8] | (size_t)b[9] << 8;
        off = 10;
    } else if (major == 2 || major == 3) {
        if (n < 12) return BAD(e, "%s: truncated .npy header", what);
        hlen = b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
        off = 12;
    } else {
        return BAD(e, "%s: .npy version %d is not supported", what, major);
    }
    if (hlen > n - off) return BAD(e, "%s: truncated .npy header", what);
    char *h = xstrndup((const char *)b + off, hlen);
    dtype_t dt = DT_UNDEFINED;
    int ndim = 0;
    int64_t dims[TENSOR_MAX_DIMS] = {0};
    int rc = parse_header(h, what, &dt, &ndim, dims, e);
    free(h);
    if (rc) return -1;
    if (tensor_check_shape(dt, ndim, dims, e)) return perr_prefix(e, "%s: ", what);
    tensor_t tmp = {0};
    tmp.dtype = dt; tmp.ndim = ndim;
    memcpy(tmp.dims, dims, sizeof dims);
    size_t bytes = tensor_nbytes(&tmp);
    if (bytes > n - off - hlen)
        return BAD(e, "%s: .npy data is truncated (%zu bytes, shape needs %zu)", what, n - off - hlen, bytes);
    if (tensor_alloc(t, dt, ndim, dims, e)) return -1;
    if (bytes) memcpy(t->data, b + off + hlen, bytes);
    return 0;
}

int npy_read(const char *path, tensor_t *t, perr_t *e)
{
    char *buf;
    size_t n;
    if (read_file(path, &buf, &n, e)) return -1;
    int rc = npy_parse(buf, n, path, t, e);
    free(buf);
    return rc;
}

/* Formats the header (magic, version, dict, padding to 64 bytes); returns
 * its length. hdr must hold 576 bytes. */
static size_t npy_header(const tensor_t *t, uint8_t *hdr)
{
    char dict[512];
    char shape[256] = "";
    size_t k = 0;
    for (int i = 0; i < t->ndim; i++)
        k += snprintf(shape + k, sizeof shape - k, "%lld,%s", (long long)t->dims[i],
                      (i + 1 < t->ndim) ? " " : "");
    if (t->ndim > 1) shape[k - 1] = 0;          /* "(2, 3)" but "(2,)" */
    const char *descr = descr_of(t->dtype);
    int dl = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }",
                      descr ? descr : "|u1", shape);
    size_t total = 10 + dl + 1;
    size_t padded = (total + 63) / 64 * 64;
    size_t hlen = padded - 10;
    memcpy(hdr, "\x93NUMPY\x01\x00", 8);
    hdr[8] = hlen & 0xff;
    hdr[9] = (hlen >> 8) & 0xff;
    memcpy(hdr + 10, dict, dl);
    memset(hdr + 10 + dl, ' ', hlen - dl - 1);
    hdr[padded - 1] = '\n';
    return padded;
}

size_t npy_serialize(const tensor_t *t, uint8_t **out)
{
    uint8_t hdr[576];
    size_t h = npy_header(t, hdr), bytes = tensor_nbytes(t);
    uint8_t *b = xmalloc(h + bytes);
    memcpy(b, hdr, h);
    if (bytes) memcpy(b + h, t->data, bytes);
    *out = b;
    return h + bytes;
}

int npy_write(const char *path, const tensor_t *t, perr_t *e)
{
    if (!descr_of(t->dtype))
        return BAD(e, "%s: element type %s cannot be written as .npy", path, dtype_name(t->dtype));
    uint8_t hdr[576];
    size_t h = npy_header(t, hdr), bytes = tensor_nbytes(t);
    atomic_file_t af;
    if (atomic_open(&af, path, e)) return -1;
    if (fwrite(hdr, 1, h, af.f) != h || (bytes && fwrite(t->data, 1, bytes, af.f) != bytes)) {
        int err = errno;
        atomic_abort(&af);
        return write_error(e, path, err);
    }
    return atomic_commit(&af, e);
}
