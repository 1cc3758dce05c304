/* jsonrec.c — flat JSON records read straight into numbers (see jsonrec.h
 * for the subset taken and why failing over to jansson keeps every verdict
 * and message). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "coco/jsonrec.h"

enum { REC_MAX_DEPTH = 32, REC_MAX_NUMBER = 64, REC_MAX_SIG = 19 };

/* 10^0..10^22: every one is a double exactly. */
static const double pow10_exact[23] = {
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

void jrec_init(jrec_t *r, const char *text, size_t n)
{
    r->s = text;
    r->n = n;
    r->p = 0;
}

static void skip_ws(jrec_t *r)
{
    while (r->p < r->n) {
        char c = r->s[r->p];
        if (c != ' ' && c != '\n' && c != '\r' && c != '\t') break;
        r->p++;
    }
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* The token through strtoll / strtod, as jansson converts it; for what the
 * quick conversion below cannot do exactly. */
static int number_slow(const char *s, size_t len, int is_int, jrec_num_t *out)
{
    char t[REC_MAX_NUMBER];
    if (len >= sizeof t) return -1;
    memcpy(t, s, len);
    t[len] = 0;
    errno = 0;
    if (is_int) {
        long long v = strtoll(t, NULL, 10);
        if (errno == ERANGE) return -1;        /* jansson: "too big integer" */
        out->i = v;
        out->d = (double)v;
        return 0;
    }
    double d = strtod(t, NULL);
    if (!isfinite(d)) return -1;               /* jansson: "real number overflow" */
    out->d = d;
    out->i = 0;
    return 0;
}

/* JSON's number grammar. A real whose significant digits fit 2^53 and whose
 * decimal exponent is within +-22 is m * 10^e or m / 10^-e: both operands
 * are exact doubles, so the one IEEE rounding gives the correctly rounded
 * value, which is strtod's (Clinger's fast path). */
int jrec_number(const char *s, size_t n, size_t *pp, jrec_num_t *out)
{
    size_t b = *pp, p = b;
    int neg = 0, is_int = 1, nsig = 0, exact = 1;
    uint64_t m = 0;
    int64_t e10 = 0;
    if (p < n && s[p] == '-') { neg = 1; p++; }
    if (p < n && s[p] == '0') {
        p++;
        if (p < n && is_digit(s[p])) return -1;        /* a leading zero */
    } else if (p < n && is_digit(s[p])) {
        for (; p < n && is_digit(s[p]); p++) {
            if (nsig < REC_MAX_SIG) { m = m * 10 + (uint64_t)(s[p] - '0'); nsig += m != 0; }
            else exact = 0;
        }
    } else {
        return -1;
    }
    if (p < n && s[p] == '.') {
        is_int = 0;
        p++;
        if (p >= n || !is_digit(s[p])) return -1;
        for (; p < n && is_digit(s[p]); p++) {
            if (nsig < REC_MAX_SIG) { m = m * 10 + (uint64_t)(s[p] - '0'); nsig += m != 0; e10--; }
            else exact = 0;
        }
    }
    if (p < n && (s[p] == 'e' || s[p] == 'E')) {
        is_int = 0;
        p++;
        int eneg = 0;
        if (p < n && (s[p] == '+' || s[p] == '-')) eneg = s[p++] == '-';
        if (p >= n || !is_digit(s[p])) return -1;
        int64_t x = 0;
        for (; p < n && is_digit(s[p]); p++)
            if (x < 100000) x = x * 10 + (s[p] - '0');
        e10 += eneg ? -x : x;
    }
    *pp = p;
    out->is_int = is_int;
    if (is_int) {
        if (!exact || nsig > 18) return number_slow(s + b, p - b, 1, out);
        out->i = neg ? -(int64_t)m : (int64_t)m;
        out->d = (double)out->i;
        return 0;
    }
    if (!exact || m > (UINT64_C(1) << 53) || e10 < -22 || e10 > 22)
        return number_slow(s + b, p - b, 0, out);
    double d = (double)m;
    d = e10 < 0 ? d / pow10_exact[-e10] : d * pow10_exact[e10];
    out->d = neg ? -d : d;
    out->i = 0;
    return 0;
}

/* A string's body after its '"': printable ASCII with the one-letter
 * escapes jansson decodes the same way (\u escapes are left to jansson).
 * Sets *plain when there was no escape. */
static int skip_string(jrec_t *r, int *plain)
{
    *plain = 1;
    while (r->p < r->n) {
        unsigned char c = (unsigned char)r->s[r->p++];
        if (c == '"') return 0;
        if (c < 0x20 || c > 0x7e) return -1;
        if (c == '\\') {
            *plain = 0;
            if (r->p >= r->n) return -1;
            char x = r->s[r->p++];
            if (!strchr("\"\\/bfnrt", x) || x == 0) return -1;
        }
    }
    return -1;
}

int jrec_literal(const char *s, size_t n, size_t *p)
{
    static const char *const w[3] = { "true", "false", "null" };
    for (int i = 0; i < 3; i++) {
        size_t k = strlen(w[i]);
        if (n - *p < k || memcmp(s + *p, w[i], k)) continue;
        size_t q = *p + k;
        if (q < n && ((s[q] >= 'a' && s[q] <= 'z') || (s[q] >= 'A' && s[q] <= 'Z'))) return 0;
        *p = q;
        return i + 1;
    }
    return 0;
}

static int skip_value(jrec_t *r, int depth);

/* The members or elements after '{' / '[' up to the closing byte. */
static int skip_container(jrec_t *r, int depth, char close)
{
    r->p++;
    skip_ws(r);
    if (r->p < r->n && r->s[r->p] == close) { r->p++; return 0; }
    for (;;) {
        if (close == '}') {
            int plain;
            if (r->p >= r->n || r->s[r->p] != '"') return -1;
            r->p++;
            if (skip_string(r, &plain)) return -1;
            skip_ws(r);
            if (r->p >= r->n || r->s[r->p] != ':') return -1;
            r->p++;
            skip_ws(r);
        }
        if (skip_value(r, depth + 1)) return -1;
        skip_ws(r);
        if (r->p >= r->n) return -1;
        char c = r->s[r->p++];
        if (c == close) return 0;
        if (c != ',') return -1;
        skip_ws(r);
    }
}

/* Checks and skips one value (jansson's grammar, within the subset). */
static int skip_value(jrec_t *r, int depth)
{
    if (depth > REC_MAX_DEPTH || r->p >= r->n) return -1;
    char c = r->s[r->p];
    if (c == '{') return skip_container(r, depth, '}');
    if (c == '[') return skip_container(r, depth, ']');
    if (c == '"') {
        int plain;
        r->p++;
        return skip_string(r, &plain);
    }
    if (c == '-' || is_digit(c)) {
        jrec_num_t x;
        return jrec_number(r->s, r->n, &r->p, &x);
    }
    return jrec_literal(r->s, r->n, &r->p) ? 0 : -1;
}

/* An array member: its numbers, or JREC_OTHER when it holds anything else. */
static int read_array(jrec_t *r, jrec_field_t *f)
{
    f->kind = JREC_ARRAY;
    f->count = 0;
    r->p++;
    skip_ws(r);
    if (r->p < r->n && r->s[r->p] == ']') { r->p++; return 0; }
    for (;;) {
        if (r->p >= r->n) return -1;
        char c = r->s[r->p];
        if (c == '-' || is_digit(c)) {
            jrec_num_t x;
            if (jrec_number(r->s, r->n, &r->p, &x)) return -1;
            if (f->count < JREC_MAX_ARR) f->v[f->count] = x;
        } else {
            if (skip_value(r, 1)) return -1;
            f->kind = JREC_OTHER;
        }
        f->count++;
        skip_ws(r);
        if (r->p >= r->n) return -1;
        c = r->s[r->p++];
        if (c == ']') return 0;
        if (c != ',') return -1;
        skip_ws(r);
    }
}

static int read_field(jrec_t *r, jrec_field_t *f)
{
    char c = r->s[r->p];
    f->count = 0;
    if (c == '[') return read_array(r, f);
    if (c == '-' || is_digit(c)) {
        f->kind = JREC_NUMBER;
        return jrec_number(r->s, r->n, &r->p, &f->v[0]);
    }
    size_t p0 = r->p;
    int w = jrec_literal(r->s, r->n, &r->p);
    if (w == 1 || w == 2) {
        f->kind = w == 1 ? JREC_TRUE : JREC_FALSE;
        return 0;
    }
    r->p = p0;
    f->kind = JREC_OTHER;
    return skip_value(r, 1);
}

/* Index of the wanted key spelled s[0..len), or -1. */
static int key_index(const char *s, size_t len, const char *const *keys, int nkeys)
{
    for (int k = 0; k < nkeys; k++)
        if (keys[k][0] == (len ? s[0] : 0) && strncmp(keys[k], s, len) == 0 && keys[k][len] == 0)
            return k;
    return -1;
}

int jrec_object(jrec_t *r, const char *const *keys, int nkeys, jrec_field_t *f)
{
    for (int k = 0; k < nkeys; k++) f[k].kind = JREC_ABSENT;
    skip_ws(r);
    if (r->p >= r->n || r->s[r->p] != '{') return -1;
    r->p++;
    skip_ws(r);
    if (r->p < r->n && r->s[r->p] == '}') {
        r->p++;
        skip_ws(r);
        return 0;
    }
    for (;;) {
        if (r->p >= r->n || r->s[r->p] != '"') return -1;
        size_t kb = ++r->p;
        int plain;
        /* an escaped key could spell a wanted one: jansson decides */
        if (skip_string(r, &plain) || !plain) return -1;
        int k = key_index(r->s + kb, r->p - 1 - kb, keys, nkeys);
        skip_ws(r);
        if (r->p >= r->n || r->s[r->p] != ':') return -1;
        r->p++;
        skip_ws(r);
        if (r->p >= r->n) return -1;
        if (k >= 0 ? read_field(r, &f[k]) : skip_value(r, 1)) return -1;
        skip_ws(r);
        if (r->p >= r->n) return -1;
        char c = r->s[r->p++];
        if (c == '}') break;
        if (c != ',') return -1;
        skip_ws(r);
    }
    skip_ws(r);
    return 0;
}

int jrec_comma(jrec_t *r)
{
    if (r->p >= r->n || r->s[r->p] != ',') return -1;
    r->p++;
    skip_ws(r);
    return 0;
}

int jrec_end(jrec_t *r)
{
    skip_ws(r);
    return r->p == r->n ? 0 : -1;
}

int jrec_int(const jrec_field_t *f, int64_t *out)
{
    if (f->kind != JREC_NUMBER) return -1;
    if (f->v[0].is_int) {
        *out = f->v[0].i;
        return 0;
    }
    double d = f->v[0].d;
    if (d != floor(d) || !(fabs(d) < 9007199254740992.0)) return -1;
    *out = (int64_t)d;
    return 0;
}

int jrec_bbox(const jrec_field_t *f, double out[4])
{
    if (f->kind != JREC_ARRAY || f->count != 4) return -1;
    for (int k = 0; k < 4; k++) out[k] = f->v[k].d;
    return out[2] < 0 || out[3] < 0 ? -1 : 0;
}

int jrec_flag(const jrec_field_t *f, int *out)
{
    int64_t i;
    if (f->kind == JREC_TRUE || f->kind == JREC_FALSE) {
        *out = f->kind == JREC_TRUE;
        return 0;
    }
    if (jrec_int(f, &i) || (i != 0 && i != 1)) return -1;
    *out = (int)i;
    return 0;
}
