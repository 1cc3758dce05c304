/* coco_jsonrec.c — the record reader (coco/jsonrec.c) against jansson and
 * strtod: whenever jrec_object takes an object, jansson must accept the
 * same text and hold, for each wanted key, what jrec reported (absent, a
 * number of the same type and bits, an array of those numbers, a boolean,
 * or something else), and what jrec_int/jrec_bbox/jrec_flag take fields.c
 * takes with the same value; jrec_number must give strtod's/strtoll's exact bits
 * on 300,000 random decimals of every length and exponent. Also counts
 * that the reader does take the common shapes (else nothing is checked). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "coco/fields.h"
#include "coco/jsonrec.h"
#include "tap.h"
#include "xorshift.h"

typedef struct buf { char s[4096]; size_t n; } buf_t;

static void puts_(buf_t *b, const char *s)
{
    size_t k = strlen(s);
    if (b->n + k + 1 > sizeof b->s) return;
    memcpy(b->s + b->n, s, k + 1);
    b->n += k;
}

/* A random decimal: sign, 0..25 integer digits, optional fraction and
 * exponent; sometimes malformed. */
static void gen_number(buf_t *b)
{
    char t[96];
    int k = 0;
    if (rnd(3) == 0) t[k++] = '-';
    int ni = (int)rnd(rnd(4) ? 4 : 26);
    if (ni == 0 || rnd(5) == 0) t[k++] = '0';
    for (int i = 0; i < ni; i++) t[k++] = (char)('0' + (i == 0 ? 1 + rnd(9) : rnd(10)));
    if (rnd(2)) {
        t[k++] = '.';
        int nf = (int)rnd(rnd(4) ? 6 : 30);
        for (int i = 0; i < nf; i++) t[k++] = (char)('0' + rnd(10));
    }
    if (rnd(4) == 0) {
        t[k++] = "eE"[rnd(2)];
        if (rnd(2)) t[k++] = "+-"[rnd(2)];
        int ne = (int)rnd(4);
        for (int i = 0; i < ne; i++) t[k++] = (char)('0' + rnd(10));
    }
    t[k] = 0;
    puts_(b, t);
}

static const char *const others[] = {
    "\"x\"", "\"a\\\\b\"", "\"\\u0041\"", "null", "true", "false", "truex", "{}", "[]",
    "{\"a\": [1, {\"b\": null}]}", "[[1, 2], [3]]", "\"caf\xc3\xa9\"", "\"\\/\\b\"", "[1, \"x\"]",
    "1e400", "01", "-", ".5", "[1 2]", "[1,]", "9223372036854775808",
};
static const char *const keys_out[] = {
    "\"image_id\"", "\"bbox\"", "\"score\"", "\"a\"", "\"im\\u0061ge_id\"", "\"\"", "\"bbox2\"",
};
static const char *const ws[] = { "", "", " ", "\n ", "\t", "\f" };

static void gen_value(buf_t *b)
{
    uint32_t k = rnd(4);
    if (k == 0) gen_number(b);
    else if (k == 1) {
        puts_(b, "[");
        int n = (int)rnd(6);
        for (int i = 0; i < n; i++) {
            if (i) puts_(b, rnd(60) ? ", " : ",,");
            if (rnd(8)) gen_number(b);
            else puts_(b, others[rnd(sizeof others / sizeof *others)]);
        }
        puts_(b, rnd(60) ? "]" : "");
    } else {
        puts_(b, others[rnd(sizeof others / sizeof *others)]);
    }
}

static void gen_object(buf_t *b)
{
    puts_(b, ws[rnd(6)]);
    puts_(b, rnd(80) ? "{" : "[");
    int n = (int)rnd(6);
    for (int i = 0; i < n; i++) {
        if (i) puts_(b, rnd(80) ? "," : "");
        puts_(b, ws[rnd(6)]);
        puts_(b, keys_out[rnd(sizeof keys_out / sizeof *keys_out)]);
        puts_(b, rnd(80) ? ": " : " ");
        gen_value(b);
    }
    puts_(b, rnd(80) ? "}" : "");
    puts_(b, ws[rnd(6)]);
}

static int same_num(const jrec_num_t *x, const json_t *j)
{
    if (x->is_int) return json_is_integer(j) && json_integer_value(j) == x->i;
    double d = json_real_value(j);
    return json_is_real(j) && memcmp(&d, &x->d, sizeof d) == 0;
}

static int same_field(const jrec_field_t *f, const json_t *j)
{
    switch (f->kind) {
    case JREC_ABSENT: return j == NULL;
    case JREC_NUMBER: return j && same_num(&f->v[0], j);
    case JREC_TRUE: return json_is_true(j);
    case JREC_FALSE: return json_is_false(j);
    case JREC_ARRAY:
        if (!json_is_array(j) || (int64_t)json_array_size(j) != f->count) return 0;
        for (int64_t i = 0; i < f->count && i < JREC_MAX_ARR; i++)
            if (!same_num(&f->v[i], json_array_get(j, i))) return 0;
        return 1;
    case JREC_OTHER:
        return j && !json_is_number(j) && !json_is_boolean(j) &&
               !(json_is_array(j) && json_array_size(j) == 0);
    }
    return 0;
}

static const char *const want[] = { "image_id", "bbox", "score" };

/* What jrec_int / jrec_bbox / jrec_flag accept, fields.c's jf_int / jf_bbox
 * / jf_flag accept with the same value (the streamed loaders rely on it). */
static int same_rules(const jrec_field_t *f, const json_t *j)
{
    jplace_t pl = { "t.json", "", 0 };
    perr_t e = {0};
    int64_t a, b;
    double x[4], y[4];
    int p, q;
    if (jrec_int(&f[0], &a) == 0 && (jf_int(j, "image_id", &pl, &b, &e) || a != b)) return 0;
    if (jrec_bbox(&f[1], x) == 0 &&
        (jf_bbox(j, "bbox", &pl, y, &e) || memcmp(x, y, sizeof x) != 0))
        return 0;
    if (jrec_flag(&f[2], &p) == 0 && (jf_flag(j, "score", &pl, &q, &e) || p != q)) return 0;
    return 1;
}

/* 0 agreed (jrec refused, or jansson holds the same), 1 not; *took: jrec took it. */
static int check_object(const char *s, size_t n, int *took)
{
    jrec_t r;
    jrec_field_t f[3];
    jrec_init(&r, s, n);
    *took = jrec_object(&r, want, 3, f) == 0 && jrec_end(&r) == 0;
    if (!*took) return 0;
    json_error_t je;
    json_t *j = json_loadb(s, n, 0, &je);
    int bad = !json_is_object(j);
    for (int k = 0; !bad && k < 3; k++) bad = !same_field(&f[k], json_object_get(j, want[k]));
    if (!bad) bad = !same_rules(f, j);
    if (bad) diag("disagree on: %.*s (jansson: %s)", (int)(n > 300 ? 300 : n), s, j ? "other value" : je.text);
    json_decref(j);
    return bad;
}

/* jrec_number against jansson (its verdict, type and value); 0 agreed. */
static int check_number(const char *s, size_t n, int *took)
{
    jrec_num_t x;
    size_t p = 0;
    *took = jrec_number(s, n, &p, &x) == 0 && p == n;
    if (!*took) return 0;
    char t[128];
    snprintf(t, sizeof t, "[%.*s]", (int)n, s);
    json_error_t je;
    json_t *j = json_loads(t, 0, &je);
    int bad = !j || !same_num(&x, json_array_get(j, 0));
    if (!x.is_int) {
        double d = strtod(s, NULL);
        bad |= memcmp(&d, &x.d, sizeof d) != 0;
    }
    if (bad) diag("number disagrees: %.*s (jansson: %s)", (int)n, s, j ? "other value" : je.text);
    json_decref(j);
    return bad;
}

int main(void)
{
    xs_state = 0x2545f4914f6cdd1du;   /* a stream of its own */
    static const char *const fixed[] = {
        "0", "-0", "-0.0", "0.0675", "0.9012", "1e22", "1e23", "9007199254740993.0",
        "9007199254740992", "123456789012345678", "1234567890123456789", "9223372036854775807",
        "-9223372036854775808", "9223372036854775808", "1e400", "1e-400", "4.9406564584124654e-324",
        "0.1000000000000000055511151231257827", "2.2250738585072011e-308", "1.7976931348623157e308",
        "100000000000000000000000.5", "0.000000000000000000000000001", "12.5e-3", "01", "1.", "-",
    };
    int bad = 0, took = 0, t;
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) {
        bad += check_number(fixed[i], strlen(fixed[i]), &t);
        took += t;
    }
    ok(bad == 0, "edge-case numbers: strtod's bits and jansson's type, or refused (%d taken)", took);
    ok(took == 21, "the reader takes the 21 valid ones and refuses 2^63, 1e400, 01, 1. and -");
    buf_t b;
    int n = 300000, nt = 0;
    bad = 0;
    for (int i = 0; i < n; i++) {
        b.n = 0;
        gen_number(&b);
        bad += check_number(b.s, b.n, &t);
        nt += t;
    }
    ok(bad == 0, "%d random decimals: the same bits as jansson/strtod", n);
    ok(nt > n / 2, "the reader took %d of them", nt);

    static const char *const objects[] = {
        "{\"image_id\": 3, \"bbox\": [1.5, 2, 3e1, 0.25], \"score\": 0.9}",
        "{\"image_id\": 3, \"image_id\": 4.0}", "{}", " {\"a\": {\"b\": [\"x\", null]}} ",
        "{\"bbox\": [1, 2, 3, 4, 5, 6]}", "{\"bbox\": [1, \"x\"]}", "{\"score\": true}",
        "{\"im\\u0061ge_id\": 1}", "{\"image_id\": 1,}", "{\"image_id\" 1}", "{\"image_id\": 1} x",
        "[1]", "{\"a\": \"\\u0041\"}",
    };
    bad = took = 0;
    for (size_t i = 0; i < sizeof objects / sizeof *objects; i++) {
        bad += check_object(objects[i], strlen(objects[i]), &t);
        took += t;
    }
    ok(bad == 0, "edge-case objects: jansson holds what the reader reported (%d taken)", took);
    ok(took == 7, "the reader takes the 7 plain ones and refuses escaped keys, \\u, syntax errors");
    n = 200000;
    nt = 0;
    bad = 0;
    for (int i = 0; i < n; i++) {
        b.n = 0;
        gen_object(&b);
        if (rnd(10) == 0 && b.n > 2) b.s[rnd((uint32_t)b.n)] = (char)rnd(128);   /* a stray byte */
        bad += check_object(b.s, b.n, &t);
        nt += t;
    }
    ok(bad == 0, "%d random objects: no disagreement with jansson", n);
    ok(nt > n / 20, "the reader took %d of them", nt);
    return done_testing();
}
