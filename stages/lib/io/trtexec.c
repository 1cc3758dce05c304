/* trtexec.c — reading trtexec's --exportOutput JSON and raw binding files
 * (trtexec.h). The JSON is written by hand in trtexec with ostream number
 * formatting and unescaped names, so it is parsed by a small tolerant
 * reader of exactly that shape rather than by a strict JSON parser. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "io/trtexec.h"
#include "util/fsutil.h"

/* ---- --exportOutput JSON ------------------------------------------------ */

typedef struct scan {
    const char *p, *end, *path;
    perr_t *e;
} scan_t;

static void skip_ws(scan_t *s)
{
    while (s->p < s->end && isspace((unsigned char)*s->p)) s->p++;
}

static int line_of(const scan_t *s, const char *start)
{
    int line = 1;
    for (const char *q = start; q < s->p; q++) line += *q == '\n';
    return line;
}

static int expect(scan_t *s, char c, const char *start)
{
    skip_ws(s);
    if (s->p >= s->end || *s->p != c)
        return BAD(s->e, "%s:%d: expected '%c' in trtexec output JSON", s->path, line_of(s, start), c);
    s->p++;
    return 0;
}

/* A string; trtexec does not escape, but accept the usual escapes. */
static char *read_string(scan_t *s, const char *start)
{
    if (expect(s, '"', start)) return NULL;
    size_t cap = 64, n = 0;
    char *out = xmalloc(cap);
    while (s->p < s->end && *s->p != '"') {
        char c = *s->p++;
        if (c == '\\' && s->p < s->end) {
            c = *s->p++;
            c = c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c;
        }
        if (n + 2 > cap) out = xrealloc(out, cap *= 2);
        out[n++] = c;
    }
    if (s->p >= s->end) {
        free(out);
        BAD(s->e, "%s:%d: unterminated string", s->path, line_of(s, start));
        return NULL;
    }
    s->p++;
    out[n] = 0;
    return out;
}

/* The values array: numbers as ostream prints them (nan, -nan, inf too). */
static int read_values(scan_t *s, const char *start, float **vals, int64_t *nv)
{
    if (expect(s, '[', start)) return -1;
    int64_t cap = 1024, n = 0;
    float *v = xmalloc(cap * sizeof *v);
    skip_ws(s);
    if (s->p < s->end && *s->p == ']') { s->p++; *vals = v; *nv = 0; return 0; }
    for (;;) {
        skip_ws(s);
        char buf[64];
        size_t k = 0;
        while (s->p < s->end && k + 1 < sizeof buf && !isspace((unsigned char)*s->p) && *s->p != ',' && *s->p != ']')
            buf[k++] = *s->p++;
        buf[k] = 0;
        char *endp;
        double d = strtod(buf, &endp);
        if (k == 0 || *endp) {
            free(v);
            return BAD(s->e, "%s:%d: '%s' is not a number", s->path, line_of(s, start), buf);
        }
        if (n == cap) v = xrealloc(v, (size_t)(cap *= 2) * sizeof *v);
        v[n++] = (float)d;
        skip_ws(s);
        if (s->p < s->end && *s->p == ',') { s->p++; continue; }
        if (s->p < s->end && *s->p == ']') { s->p++; break; }
        free(v);
        return BAD(s->e, "%s:%d: expected ',' or ']' in values", s->path, line_of(s, start));
    }
    *vals = v;
    *nv = n;
    return 0;
}

/* One {"name", "dimensions", "values"} object into the set. */
static int read_binding(scan_t *s, const char *start, tensor_set_t *set)
{
    if (expect(s, '{', start)) return -1;
    char *name = NULL, *dims = NULL;
    float *vals = NULL;
    int64_t nv = -1;
    int rc = 0;
    for (;;) {
        char *key = read_string(s, start);
        if (!key || expect(s, ':', start)) { free(key); rc = -1; break; }
        if (!strcmp(key, "values")) {
            /* a repeated key: the last one counts; read_values sets vals
             * only on success, so nothing keeps pointing at freed values */
            free(vals);
            vals = NULL;
            nv = -1;
            rc = read_values(s, start, &vals, &nv);
        } else {
            char *val = read_string(s, start);
            if (!val) rc = -1;
            else if (!strcmp(key, "name")) { free(name); name = val; }
            else if (!strcmp(key, "dimensions")) { free(dims); dims = val; }
            else free(val);
        }
        free(key);
        if (rc) break;
        skip_ws(s);
        if (s->p < s->end && *s->p == ',') { s->p++; continue; }
        rc = expect(s, '}', start);
        break;
    }
    if (!rc && (!name || !dims || nv < 0))
        rc = BAD(s->e, "%s:%d: binding lacks \"name\", \"dimensions\" or \"values\"", s->path, line_of(s, start));
    tensor_t shape = {.dtype = DT_FLOAT};
    if (!rc && dims[0] && (shape.ndim = shape_parse(dims, shape.dims)) < 0)
        rc = BAD(s->e, "%s: binding '%s': bad dimensions \"%s\"", s->path, name, dims);
    perr_t e2 = {0};
    if (!rc && tensor_check_shape(DT_FLOAT, shape.ndim, shape.dims, &e2))
        rc = BAD(s->e, "%s: binding '%s': %s", s->path, name, e2.msg);
    /* the values are counted before anything is allocated: the declared
     * dimensions are believed only as far as the values back them */
    if (!rc && tensor_numel(&shape) != nv)
        rc = BAD(s->e, "%s: binding '%s': %lld values for dimensions %s", s->path, name, (long long)nv, dims);
    tensor_t *t = rc ? NULL : tensor_new(DT_FLOAT, shape.ndim, shape.dims, s->e);
    if (!t && !rc) rc = -1;
    if (!rc) {
        memcpy(t->data, vals, (size_t)nv * sizeof *vals);
        tensorset_add(set, name, t);
        t = NULL;
    }
    tensor_free(t);
    free(name);
    free(dims);
    free(vals);
    return rc;
}

int trtexec_sniff_json(const char *text, size_t n)
{
    size_t i = 0;
    while (i < n && isspace((unsigned char)text[i])) i++;
    if (i >= n || text[i++] != '[') return 0;
    while (i < n && isspace((unsigned char)text[i])) i++;
    if (i < n && text[i] == ']') return 0;
    if (i >= n || text[i++] != '{') return 0;
    while (i < n && isspace((unsigned char)text[i])) i++;
    return n - i >= 6 && !memcmp(text + i, "\"name\"", 6);
}

int trtexec_read_json(const char *path, tensor_set_t *set, perr_t *e)
{
    memset(set, 0, sizeof *set);
    char *text;
    size_t n;
    if (read_file(path, &text, &n, e)) return -1;
    scan_t s = {text, text + n, path, e};
    int rc = expect(&s, '[', text);
    skip_ws(&s);
    if (!rc && s.p < s.end && *s.p == ']') s.p++;
    else
        while (!rc) {
            rc = read_binding(&s, text, set);
            skip_ws(&s);
            if (rc) break;
            if (s.p < s.end && *s.p == ',') { s.p++; continue; }
            rc = expect(&s, ']', text);
            break;
        }
    free(text);
    if (rc) tensorset_free(set);
    return rc;
}

/* ---- raw binding files -------------------------------------------------- */

static const struct { const char *s; dtype_t t; } raw_types[] = {
    {"fp32", DT_FLOAT}, {"fp16", DT_FLOAT16}, {"bf16", DT_BFLOAT16}, {"int8", DT_INT8},
    {"int32", DT_INT32}, {"bool", DT_BOOL}, {"uint8", DT_UINT8}, {"int64", DT_INT64},
    {"fp8", DT_UNDEFINED}, {"int4", DT_UNDEFINED},
};

static int all_digits(const char *s, size_t n)
{
    if (!n) return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9') return 0;
    return 1;
}

int trtexec_raw_name(const char *file, char **name, int *is_input, int *ndim, int64_t *dims, dtype_t *dt)
{
    size_t len = strlen(file);
    if (len < 5 || strcmp(file + len - 4, ".raw")) return -1;
    const char *end = file + len - 4;                 /* exclusive end of the last token */
    const char *dot = end;
    while (dot > file && dot[-1] != '.') dot--;
    if (dot == file) return -1;
    size_t tl = (size_t)(end - dot);
    int found = 0;
    for (size_t i = 0; i < sizeof raw_types / sizeof raw_types[0]; i++)
        if (strlen(raw_types[i].s) == tl && !memcmp(dot, raw_types[i].s, tl)) { *dt = raw_types[i].t; found = 1; }
    if (!found) return -1;
    /* dims, right to left, up to the input/output token */
    int64_t rev[TENSOR_MAX_DIMS + 1];
    int nd = 0, empty = 0;
    end = dot - 1;
    for (;;) {
        dot = end;
        while (dot > file && dot[-1] != '.') dot--;
        if (dot == file) return -1;
        tl = (size_t)(end - dot);
        if ((tl == 5 && !memcmp(dot, "input", 5)) || (tl == 6 && !memcmp(dot, "output", 6))) {
            *is_input = tl == 5;
            break;
        }
        if (tl == 0 && nd == 0 && !empty) {
            empty = 1;        /* the empty dims of a scalar: "name.output..fp32.raw" */
        } else if (!empty && all_digits(dot, tl) && tl < 12 && nd < TENSOR_MAX_DIMS) {
            rev[nd++] = strtoll(dot, NULL, 10);
        } else {
            return -1;
        }
        end = dot - 1;
    }
    *ndim = nd;
    for (int i = 0; i < nd; i++) dims[i] = rev[nd - 1 - i];
    *name = xstrndup(file, (size_t)(dot - 1 - file));
    return 0;
}

int trtexec_read_raw(const char *path, tensor_t *t, char **name, perr_t *e)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    int is_input, nd;
    int64_t dims[TENSOR_MAX_DIMS];
    dtype_t dt;
    *name = NULL;
    if (trtexec_raw_name(base, name, &is_input, &nd, dims, &dt))
        return BAD(e, "%s: not a trtexec raw binding file name (NAME.output.D0.D1....TYPE.raw)", path);
    if (dt == DT_UNDEFINED) {
        free(*name); *name = NULL;
        return BAD(e, "%s: element type fp8/int4 is not supported", path);
    }
    memset(t, 0, sizeof *t);
    if (tensor_check_shape(dt, nd, dims, e)) { free(*name); *name = NULL; return perr_prefix(e, "%s: ", path); }
    tensor_t shape = {.dtype = dt, .ndim = nd};
    memcpy(shape.dims, dims, sizeof dims);
    size_t want = tensor_nbytes(&shape);
    FILE *f = fopen(path, "rb");
    struct stat st;
    int rc = 0;
    /* the file's size is checked before allocating what the name declares */
    if (!f || fstat(fileno(f), &st) != 0) rc = BAD(e, "%s: cannot open: %s", path, strerror(errno));
    else if ((uint64_t)st.st_size != want)
        rc = BAD(e, "%s: %lld bytes, the name's shape and type need %zu", path, (long long)st.st_size, want);
    else if (tensor_alloc(t, dt, nd, dims, e)) rc = perr_prefix(e, "%s: ", path);
    else if (want && fread(t->data, 1, want, f) != want)
        rc = BAD(e, "%s: read error", path);
    if (f) fclose(f);
    if (rc) {
        tensor_free_data(t);
        free(*name);
        *name = NULL;
    }
    return rc;
}

char *trtexec_safe_name(const char *name)
{
    char *s = xstrdup(name);
    for (char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("._-,", *p)) *p = '_';
    return s;
}
