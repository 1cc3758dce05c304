/* jsonfast.c — a quick path for the common shape of COCO JSON chunks.
 *
 * jansson lexes one character at a time through its stream layer, which is
 * most of the time a segm results file takes (its bulk is long RLE
 * strings). jsonpar_fast builds the same jansson values for the plain
 * subset of JSON that exporters write: strings of printable ASCII (one-letter
 * escapes decoded), numbers, literals, arrays and objects. Anything else (a
 * \u escape, a byte outside 0x20..0x7e in a string, an integer jansson would call too
 * big, a real that overflows, deep nesting, any syntax error) makes it give
 * up, and the caller parses the chunk with jansson, whose verdict and
 * message then stand. Where it succeeds, the values are those jansson would
 * build: integers through strtoll, reals through strtod, the last of
 * repeated keys kept.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "coco/jsonpar.h"
#include "coco/jsonrec.h"
#include "util/fsutil.h"

enum { FAST_MAX_DEPTH = 32, FAST_MAX_NUMBER = 64 };

typedef struct fp {
    const char *s;
    size_t n, p;
    char *buf;               /* decoded strings holding escapes */
    size_t cap;
} fp_t;

static void ws(fp_t *f)
{
    while (f->p < f->n) {
        char c = f->s[f->p];
        if (c != ' ' && c != '\n' && c != '\r' && c != '\t') break;
        f->p++;
    }
}

/* A string's body from after its '"': printable ASCII, with the one-letter
 * escapes (\" \\ \/ \b \f \n \r \t; RLE strings hold many backslashes)
 * decoded into f->buf; \u escapes and other bytes give up. *out points
 * into the text when nothing was escaped. */
static int str_body(fp_t *f, const char **out, size_t *len)
{
    size_t p = f->p;
    while (p < f->n) {
        unsigned char c = (unsigned char)f->s[p];
        if (c == '"') {
            *out = f->s + f->p;
            *len = p - f->p;
            f->p = p + 1;
            return 0;
        }
        if (c == '\\') break;
        if (c < 0x20 || c > 0x7e) return -1;
        p++;
    }
    /* escapes: copy what came before, then decode */
    size_t k = p - f->p;
    if (f->cap < k + 16) {
        f->cap = 2 * (k + 16);
        f->buf = xrealloc(f->buf, f->cap);
    }
    memcpy(f->buf, f->s + f->p, k);
    while (p < f->n) {
        unsigned char c = (unsigned char)f->s[p++];
        if (c == '"') {
            *out = f->buf;
            *len = k;
            f->p = p;
            return 0;
        }
        if (c < 0x20 || c > 0x7e) return -1;
        if (c == '\\') {
            if (p >= f->n) return -1;
            char x = f->s[p++];
            switch (x) {
            case '"': case '\\': case '/': c = (unsigned char)x; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'n': c = '\n'; break;
            case 'r': c = '\r'; break;
            case 't': c = '\t'; break;
            default: return -1;             /* \u and invalid escapes: jansson decides */
            }
        }
        if (k + 1 >= f->cap) {
            f->cap *= 2;
            f->buf = xrealloc(f->buf, f->cap);
        }
        f->buf[k++] = (char)c;
    }
    return -1;
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* JSON's number grammar; integers as jansson keeps them (strtoll), reals
 * through strtod. */
static json_t *number(fp_t *f)
{
    size_t b = f->p, p = b;
    int real = 0;
    if (p < f->n && f->s[p] == '-') p++;
    if (p < f->n && f->s[p] == '0') p++;
    else if (p < f->n && is_digit(f->s[p]) ) while (p < f->n && is_digit(f->s[p])) p++;
    else return NULL;
    if (p < f->n && is_digit(f->s[p])) return NULL;          /* a leading zero */
    if (p < f->n && f->s[p] == '.') {
        real = 1;
        p++;
        if (p >= f->n || !is_digit(f->s[p])) return NULL;
        while (p < f->n && is_digit(f->s[p])) p++;
    }
    if (p < f->n && (f->s[p] == 'e' || f->s[p] == 'E')) {
        real = 1;
        p++;
        if (p < f->n && (f->s[p] == '+' || f->s[p] == '-')) p++;
        if (p >= f->n || !is_digit(f->s[p])) return NULL;
        while (p < f->n && is_digit(f->s[p])) p++;
    }
    if (p - b >= FAST_MAX_NUMBER) return NULL;
    char t[FAST_MAX_NUMBER];
    memcpy(t, f->s + b, p - b);
    t[p - b] = 0;
    f->p = p;
    errno = 0;
    if (!real) {
        long long v = strtoll(t, NULL, 10);
        if (errno == ERANGE) return NULL;
        return json_integer(v);
    }
    double d = strtod(t, NULL);
    if (!isfinite(d)) return NULL;
    return json_real(d);
}

static json_t *value(fp_t *f, int depth);

static json_t *array(fp_t *f, int depth)
{
    json_t *a = json_array();
    f->p++;
    ws(f);
    if (f->p < f->n && f->s[f->p] == ']') {
        f->p++;
        return a;
    }
    for (;;) {
        json_t *v = value(f, depth + 1);
        if (!v || json_array_append_new(a, v)) break;
        ws(f);
        if (f->p >= f->n) break;
        char c = f->s[f->p++];
        if (c == ']') return a;
        if (c != ',') break;
        ws(f);
    }
    json_decref(a);
    return NULL;
}

static json_t *object(fp_t *f, int depth)
{
    json_t *o = json_object();
    f->p++;
    ws(f);
    if (f->p < f->n && f->s[f->p] == '}') {
        f->p++;
        return o;
    }
    for (;;) {
        const char *ks;
        size_t kn;
        char key[256];
        if (f->p >= f->n || f->s[f->p] != '"') break;
        f->p++;
        if (str_body(f, &ks, &kn) || kn >= sizeof key) break;
        memcpy(key, ks, kn);                 /* before the value reuses f->buf */
        key[kn] = 0;
        ws(f);
        if (f->p >= f->n || f->s[f->p] != ':') break;
        f->p++;
        ws(f);
        json_t *v = value(f, depth + 1);
        if (!v) break;
        if (json_object_set_new_nocheck(o, key, v)) break;
        ws(f);
        if (f->p >= f->n) break;
        char c = f->s[f->p++];
        if (c == '}') return o;
        if (c != ',') break;
        ws(f);
    }
    json_decref(o);
    return NULL;
}

static json_t *literal(fp_t *f)
{
    switch (jrec_literal(f->s, f->n, &f->p)) {
    case 1: return json_true();
    case 2: return json_false();
    case 3: return json_null();
    }
    return NULL;
}

static json_t *value(fp_t *f, int depth)
{
    if (depth > FAST_MAX_DEPTH || f->p >= f->n) return NULL;
    char c = f->s[f->p];
    if (c == '{') return object(f, depth);
    if (c == '[') return array(f, depth);
    if (c == '"') {
        const char *b;
        size_t n;
        f->p++;
        if (str_body(f, &b, &n)) return NULL;
        return json_stringn_nocheck(b, n);
    }
    if (c == '-' || is_digit(c)) return number(f);
    return literal(f);
}

json_t *jsonpar_fast(const char *text, size_t n)
{
    fp_t f = { text, n, 0, NULL, 0 };
    ws(&f);
    if (f.p >= n || (text[f.p] != '[' && text[f.p] != '{')) return NULL;
    json_t *a = text[f.p] == '[' ? array(&f, 0) : object(&f, 0);
    free(f.buf);
    if (!a) return NULL;
    ws(&f);
    if (f.p != n) {
        json_decref(a);
        return NULL;
    }
    return a;
}
