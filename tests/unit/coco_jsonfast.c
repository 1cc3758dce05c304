/* coco_jsonfast.c — the quick JSON lexer (coco/jsonfast.c) against jansson:
 * on hand-picked edge cases and 200,000 random texts (valid and mutated),
 * whenever jsonpar_fast builds a value, jansson must accept the same text
 * and build an equal value (types included); where jsonpar_fast gives up,
 * jansson alone decides, so nothing else is required there. Also counts
 * that the quick path does take the common shapes (else the test would
 * check nothing). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "coco/jsonpar.h"
#include "tap.h"
#include "xorshift.h"

typedef struct buf { char *s; size_t n, cap; } buf_t;

static void put(buf_t *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        b->cap = 2 * (b->n + n + 1);
        b->s = realloc(b->s, b->cap);
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
}

static void puts_(buf_t *b, const char *s)
{
    put(b, s, strlen(s));
}

static const char *const numbers[] = {
    "0", "-0", "1", "-17", "3.25", "-0.0", "1e5", "1E+2", "2.5e-3", "123456789012345678",
    "9223372036854775807", "-9223372036854775808", "9223372036854775808", "1e400", "-1e400",
    "1e-400", "01", "1.", ".5", "-", "+1", "0x10", "1e", "4.9406564584124654e-324",
    "0.1000000000000000055511151231257827", "-12.75e+1",
};
static const char *const strings[] = {
    "\"\"", "\"abc\"", "\"0<T1\"", "\"a\\\\b\"", "\"q\\\"q\"", "\"\\/\\b\\f\\n\\r\\t\"",
    "\"\\u0041\"", "\"\\u0000\"", "\"\\x\"", "\"tab\there\"", "\"caf\xc3\xa9\"", "\"\xff\"",
    "\"unterminated", "\"\\\"", "\"~}|{\"",
};
static const char *const words[] = { "true", "false", "null", "truex", "nul", "True", "true1" };
static const char *const ws[] = { "", " ", "\n", "\t", "\r\n ", "\f" };

static void gen(buf_t *b, int depth)
{
    puts_(b, ws[rnd(6) < 4 ? 0 : rnd(6)]);
    uint32_t k = depth > 4 ? rnd(3) : rnd(5);
    if (k == 0) puts_(b, numbers[rnd(sizeof numbers / sizeof *numbers)]);
    else if (k == 1) puts_(b, strings[rnd(sizeof strings / sizeof *strings)]);
    else if (k == 2) puts_(b, words[rnd(sizeof words / sizeof *words)]);
    else if (k == 3) {
        puts_(b, "[");
        int n = (int)rnd(4);
        for (int i = 0; i < n; i++) {
            if (i) puts_(b, rnd(50) ? "," : ",,");
            gen(b, depth + 1);
        }
        puts_(b, rnd(60) ? "]" : "");
    } else {
        puts_(b, "{");
        int n = (int)rnd(4);
        for (int i = 0; i < n; i++) {
            if (i) puts_(b, ",");
            static const char *const keys[] = { "\"a\"", "\"image_id\"", "\"a\"", "\"k\\\\\"", "\"\"", "a" };
            puts_(b, keys[rnd(6)]);
            puts_(b, rnd(40) ? ":" : "");
            gen(b, depth + 1);
        }
        puts_(b, rnd(60) ? "}" : "");
    }
    puts_(b, ws[rnd(6) < 4 ? 0 : rnd(6)]);
}

/* 0 agreed (fast gave up or built jansson's value), 1 disagreed; *took: fast built a value. */
static int check(const char *s, size_t n, int *took)
{
    json_t *f = jsonpar_fast(s, n);
    *took = f != NULL;
    if (!f) return 0;
    json_error_t je;
    json_t *j = json_loadb(s, n, 0, &je);
    int bad = !j || !json_equal(f, j);
    if (bad) diag("disagree on: %.*s (jansson: %s)", (int)(n > 200 ? 200 : n), s, j ? "other value" : je.text);
    json_decref(f);
    json_decref(j);
    return bad;
}

int main(void)
{
    static const char *const fixed[] = {
        "[]", "[1, 2.5, \"x\", true, false, null, {}, []]", "[01]", "[1.]", "[-]", "[1e400]",
        "[9223372036854775808]", "[-9223372036854775809]", "[\"a\\u0041\"]", "[\"\\x\"]",
        "[true1]", "[truex]", "[{\"a\": 1, \"a\": 2}]", "[1 2]", "[,]", "[1,]", "[\"\\\"\"]",
        "[\"tab\tin\"]", "[\"caf\xc3\xa9\"]", " [ {\"segmentation\": {\"size\": [6, 8], \"counts\": \"0<T1\\\\\"}} ] ",
        "[1] x", "[1]]", "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
        " {\"images\": [{\"id\": 1, \"file_name\": \"a.jpg\"}], \"annotations\": []} ", "{\"a\": 1",
        "{\"a\": 1} {",
    };
    int bad = 0, took = 0, t;
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) {
        bad += check(fixed[i], strlen(fixed[i]), &t);
        took += t;
    }
    ok(bad == 0, "edge cases: the quick lexer builds jansson's value or gives up (%d built)", took);
    ok(took == 6, "the quick lexer takes exactly the 6 plain ones (empty, mixed values, repeated keys, escapes, an RLE object, a top-level object)");
    buf_t b = {0};
    int n = 200000, nt = 0;
    bad = 0;
    for (int i = 0; i < n; i++) {
        b.n = 0;
        puts_(&b, "[");
        gen(&b, 0);
        puts_(&b, "]");
        if (rnd(10) == 0 && b.n > 2) b.s[rnd((uint32_t)b.n)] = (char)rnd(128);   /* a stray byte */
        bad += check(b.s, b.n, &t);
        nt += t;
    }
    ok(bad == 0, "%d random texts: no disagreement with jansson", n);
    ok(nt > n / 10, "the quick lexer built %d of them", nt);
    free(b.s);
    return done_testing();
}
