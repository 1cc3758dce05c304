/* polygraphy.c — reading and writing Polygraphy's JSON (polygraphy.h).
 *
 * The shapes read, from polygraphy/json/serde.py and comparator/struct.py:
 *   RunResults  {"lst": [[runner, [IterationResult, ...]], ...], "polygraphy_class": "RunResults"}
 *   IterationResult {"outputs": {name: LazyArray|ndarray}, "runtime": x, "runner_name": s, ...}
 *   LazyArray   {"values": ndarray, "polygraphy_class": "LazyArray"}   (older: "LazyNumpyArray")
 *   ndarray     {"array": base64(np.save bytes), "polygraphy_class": "ndarray"}
 *   inputs      [{name: ndarray, ...}, ...]                              (--save-inputs)
 * Older files mark classes with "__polygraphy_encoded_<class>" keys; the
 * structure is the same, so it is recognised by shape, not by marker. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "io/polygraphy.h"
#include "io/npy.h"
#include "io/npz.h"
#include "util/jsonfile.h"

/* ---- base64 ------------------------------------------------------------ */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int b64val(unsigned char c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

int64_t base64_decode(const char *s, size_t n, uint8_t *out)
{
    if (n % 4) return -1;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 4) {
        int v[4], pad = 0;
        for (int k = 0; k < 4; k++) {
            unsigned char c = (unsigned char)s[i + k];
            if (c == '=' && i + 4 == n && k >= 2) { v[k] = 0; pad++; continue; }
            if (pad) return -1;                 /* data after padding */
            v[k] = b64val(c);
            if (v[k] < 0) return -1;
        }
        uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        out[o++] = (uint8_t)(w >> 16);
        if (pad < 2) out[o++] = (uint8_t)(w >> 8);
        if (pad < 1) out[o++] = (uint8_t)w;
    }
    return (int64_t)o;
}

size_t base64_encode(const uint8_t *in, size_t n, char *out)
{
    size_t o = 0, i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t w = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[o++] = b64[w >> 18];
        out[o++] = b64[(w >> 12) & 63];
        out[o++] = b64[(w >> 6) & 63];
        out[o++] = b64[w & 63];
    }
    if (i < n) {
        uint32_t w = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0);
        out[o++] = b64[w >> 18];
        out[o++] = b64[(w >> 12) & 63];
        out[o++] = i + 1 < n ? b64[(w >> 6) & 63] : '=';
        out[o++] = '=';
    }
    return o;
}

/* ---- decoding one array ------------------------------------------------ */

/* Legacy files stored the bytes as a latin-1 string: each code point is one
 * byte. Returns the length, or -1 when a code point is above 255. */
static int64_t latin1_bytes(const char *s, size_t n, uint8_t *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x80) { out[o++] = c; i++; }
        else if ((c & 0xe0) == 0xc0 && i + 1 < n && c <= 0xc3) {
            out[o++] = (uint8_t)(((c & 0x1f) << 6) | ((unsigned char)s[i + 1] & 0x3f));
            i += 2;
        } else return -1;
    }
    return (int64_t)o;
}

/* The bytes of an "array" string: base64, or else legacy latin-1 text. Each
 * decoder writes into a buffer sized by its own bound on the text it reads
 * (base64: 3 bytes per 4 characters; latin-1: at most one byte per
 * character), never by the other's. NULL when the text is neither. */
static uint8_t *array_bytes(const char *s, size_t n, size_t *len)
{
    uint8_t *buf = xmalloc(n / 4 * 3 + 1);
    int64_t m = base64_decode(s, n, buf);
    if (m < 0) {
        free(buf);
        buf = xmalloc(n + 1);
        m = latin1_bytes(s, n, buf);
    }
    if (m < 0) {
        free(buf);
        return NULL;
    }
    *len = (size_t)m;
    return buf;
}

/* The bytes are an .npy image, or an .npz image whose first member is the
 * array (Polygraphy before 0.30). */
static int decode_bytes(const uint8_t *b, size_t n, const char *what, tensor_t *t, perr_t *e)
{
    if (n >= 6 && !memcmp(b, "\x93NUMPY", 6)) return npy_parse(b, n, what, t, e);
    if (npz_sniff(b, n)) {
        npz_t z;
        if (npz_open_mem(b, n, what, &z, e)) return -1;
        int rc = z.n ? npz_load(&z, 0, t, e) : BAD(e, "%s: embedded .npz holds no array", what);
        npz_close(&z);
        return rc;
    }
    return BAD(e, "%s: encoded array is neither an .npy nor an .npz image", what);
}

int poly_decode_array(const json_t *node, const char *what, tensor_t *t, perr_t *e)
{
    /* LazyArray (and LazyNumpyArray) wrap the ndarray under "values" */
    for (int depth = 0; json_is_object(node) && depth < 4; depth++) {
        const json_t *v = json_object_get(node, "values");
        if (!v || json_object_get(node, "array")) break;
        node = v;
    }
    const json_t *arr = json_is_object(node) ? json_object_get(node, "array") : NULL;
    if (!json_is_string(arr)) return BAD(e, "%s: not an encoded array (no \"array\" string)", what);
    const char *s = json_string_value(arr);
    size_t len;
    uint8_t *buf = array_bytes(s, json_string_length(arr), &len);
    if (!buf) return BAD(e, "%s: \"array\" is neither base64 nor latin-1 text", what);
    int rc = decode_bytes(buf, len, what, t, e);
    free(buf);
    return rc;
}

/* ---- the document -------------------------------------------------------- */

static const json_t *runresults_list(const json_t *root)
{
    const json_t *lst = json_is_object(root) ? json_object_get(root, "lst") : NULL;
    return json_is_array(lst) ? lst : NULL;
}

int poly_is_doc(const json_t *root)
{
    if (runresults_list(root)) return 1;
    if (!json_is_array(root) || json_array_size(root) == 0) return 0;
    const json_t *first = json_array_get(root, 0);
    if (!json_is_object(first)) return 0;
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)first, k, v) {
        const json_t *a = json_is_object(v) ? json_object_get(v, "array") : NULL;
        if (!a) {
            const json_t *vals = json_is_object(v) ? json_object_get(v, "values") : NULL;
            a = json_is_object(vals) ? json_object_get(vals, "array") : NULL;
        }
        return json_is_string(a);
    }
    return 1;   /* an empty first iteration */
}

/* Collects the named arrays of one iteration (an object name -> array). */
static int read_iteration(const poly_doc_t *d, const json_t *obj, int idx, poly_iter_t *it, perr_t *e)
{
    if (!json_is_object(obj)) return BAD(e, "%s: iteration %d is not an object", d->path, idx);
    size_t n = json_object_size(obj);
    it->names = xcalloc(n + 1, sizeof *it->names);
    it->arrays = xcalloc(n + 1, sizeof *it->arrays);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj, k, v) {
        if (!json_is_object(v)) return BAD(e, "%s: iteration %d: '%s' is not an encoded array", d->path, idx, k);
        it->names[it->n] = k;
        it->arrays[it->n++] = v;
    }
    return 0;
}

static int read_runresults(poly_doc_t *d, const json_t *lst, const char *runner, perr_t *e)
{
    size_t nr = json_array_size(lst);
    d->runners = xcalloc(nr + 1, sizeof *d->runners);
    for (size_t i = 0; i < nr; i++) {
        const json_t *pair = json_array_get(lst, i);
        const json_t *name = json_array_get(pair, 0);
        if (!json_is_array(pair) || json_array_size(pair) != 2 || !json_is_string(name) ||
            !json_is_array(json_array_get(pair, 1)))
            return BAD(e, "%s: lst[%zu] is not a [runner, [iterations]] pair", d->path, i);
        d->runners[d->nrunners++] = json_string_value(name);
    }
    d->runner = -1;
    if (runner) {
        for (int i = 0; i < d->nrunners; i++)
            if (!strcmp(d->runners[i], runner)) d->runner = i;
        if (d->runner < 0) return BAD(e, "%s: no runner '%s' in these results", d->path, runner);
    } else if (d->nrunners == 1) {
        d->runner = 0;
    } else {
        char list[512] = "";
        for (int i = 0; i < d->nrunners && strlen(list) < 400; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", d->runners[i]);
        return BAD(e, "%s: holds %d runners (%s); name one as FILE.json:RUNNER", d->path, d->nrunners, list);
    }
    const json_t *iters = json_array_get(json_array_get(lst, (size_t)d->runner), 1);
    d->niters = (int)json_array_size(iters);
    d->it = xcalloc((size_t)d->niters + 1, sizeof *d->it);
    for (int i = 0; i < d->niters; i++) {
        const json_t *ir = json_array_get(iters, (size_t)i);
        const json_t *outs = json_is_object(ir) ? json_object_get(ir, "outputs") : NULL;
        if (!outs) return BAD(e, "%s: runner '%s' iteration %d has no \"outputs\"", d->path, d->runners[d->runner], i);
        if (read_iteration(d, outs, i, &d->it[i], e)) return -1;
    }
    return 0;
}

int poly_open(const char *path, json_t *root, const char *runner, poly_doc_t *d, perr_t *e)
{
    memset(d, 0, sizeof *d);
    d->path = xstrdup(path);
    if (!root) {
        json_error_t je;
        root = json_load_file(path, 0, &je);
        if (!root) {
            BAD(e, "%s:%d:%d: %s", path, je.line, je.column, je.text);
            poly_close(d);
            return -1;
        }
    }
    d->root = root;
    int rc;
    const json_t *lst = runresults_list(root);
    if (lst) {
        rc = read_runresults(d, lst, runner, e);
    } else if (json_is_array(root)) {
        d->is_inputs = 1;
        rc = runner ? BAD(e, "%s: an input list has no runners (drop ':%s')", path, runner) : 0;
        d->niters = (int)json_array_size(root);
        d->it = xcalloc((size_t)d->niters + 1, sizeof *d->it);
        for (int i = 0; i < d->niters && !rc; i++)
            rc = read_iteration(d, json_array_get(root, (size_t)i), i, &d->it[i], e);
    } else {
        rc = BAD(e, "%s: not Polygraphy RunResults (no \"lst\") nor an input list", path);
    }
    if (rc) poly_close(d);
    return rc;
}

int poly_load(const poly_doc_t *d, int iter, int k, tensor_t *t, perr_t *e)
{
    const poly_iter_t *it = &d->it[iter];
    size_t n = strlen(d->path) + strlen(it->names[k]) + 32;
    char *what = xmalloc(n);
    snprintf(what, n, "%s: iteration %d: '%s'", d->path, iter, it->names[k]);
    int rc = poly_decode_array(it->arrays[k], what, t, e);
    free(what);
    return rc;
}

void poly_close(poly_doc_t *d)
{
    for (int i = 0; i < d->niters && d->it; i++) {
        free(d->it[i].names);
        free(d->it[i].arrays);
    }
    free(d->it);
    free(d->runners);
    json_decref(d->root);
    free(d->path);
    memset(d, 0, sizeof *d);
}

/* ---- writing -------------------------------------------------------------- */

/* A JSON string literal, escaped by jansson. */
static void put_string(FILE *f, const char *s)
{
    json_t *j = json_string(s);
    char *txt = json_text(j, JSON_ENCODE_ANY);
    fputs(txt ? txt : "\"\"", f);
    free(txt);
    json_decref(j);
}

int poly_writer_open(poly_writer_t *w, const char *path, poly_kind_t kind, const char *runner, perr_t *e)
{
    memset(w, 0, sizeof *w);
    w->kind = kind;
    w->runner = xstrdup(runner ? runner : "parity");
    if (atomic_open(&w->af, path, e)) { free(w->runner); return -1; }
    if (kind == POLY_OUTPUTS) {
        fputs("{\n    \"lst\": [\n        [\n            ", w->af.f);
        put_string(w->af.f, w->runner);
        fputs(",\n            [", w->af.f);
    } else {
        fputs("[", w->af.f);
    }
    return 0;
}

void poly_writer_begin(poly_writer_t *w)
{
    FILE *f = w->af.f;
    fputs(w->iters++ ? "," : "", f);
    fputs(w->kind == POLY_OUTPUTS ? "\n                {\n                    \"outputs\": {" : "\n    {", f);
    w->tensors = 0;
}

int poly_writer_add(poly_writer_t *w, const char *name, const tensor_t *t, perr_t *e)
{
    FILE *f = w->af.f;
    uint8_t *npy;
    size_t n = npy_serialize(t, &npy);
    char *txt = xmalloc((n + 2) / 3 * 4 + 1);
    size_t tn = base64_encode(npy, n, txt);
    free(npy);
    const char *ind = w->kind == POLY_OUTPUTS ? "                        " : "        ";
    fprintf(f, "%s\n%s", w->tensors++ ? "," : "", ind);
    put_string(f, name);
    if (w->kind == POLY_OUTPUTS) fputs(": {\n        \"values\": {\"array\": \"", f);
    else fputs(": {\"array\": \"", f);
    /* the indentation above is cosmetic; keep the big string on one line */
    fwrite(txt, 1, tn, f);
    free(txt);
    if (w->kind == POLY_OUTPUTS)
        fputs("\", \"polygraphy_class\": \"ndarray\"},\n        \"polygraphy_class\": \"LazyArray\"}", f);
    else
        fputs("\", \"polygraphy_class\": \"ndarray\"}", f);
    if (ferror(f)) return write_error(e, w->af.path, errno);
    return 0;
}

void poly_writer_end(poly_writer_t *w)
{
    FILE *f = w->af.f;
    if (w->kind == POLY_OUTPUTS) {
        fputs("\n                    },\n                    \"runtime\": null,\n                    \"runner_name\": ", f);
        put_string(f, w->runner);
        fputs(",\n                    \"polygraphy_class\": \"IterationResult\"\n                }", f);
    } else {
        fputs("\n    }", f);
    }
}

int poly_writer_close(poly_writer_t *w, perr_t *e)
{
    if (w->kind == POLY_OUTPUTS)
        fputs("\n            ]\n        ]\n    ],\n    \"polygraphy_class\": \"RunResults\"\n}\n", w->af.f);
    else
        fputs("\n]\n", w->af.f);
    free(w->runner);
    w->runner = NULL;
    return atomic_commit(&w->af, e);
}

void poly_writer_abort(poly_writer_t *w)
{
    atomic_abort(&w->af);
    free(w->runner);
    w->runner = NULL;
}
