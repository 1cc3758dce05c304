/* coco_jsonscan.c — jsonpar_scan's segmented scan of big arrays
 * (coco/jsonpar.c): on arrays of several MiB it must find exactly jansson's
 * element count, cut chunks that tile the elements at true element
 * boundaries, and cut them the same at every thread count; text that fools
 * its guesses (strings holding "}, {", a string longer than a segment,
 * nested arrays of objects) must still scan right (through the serial
 * fallback), and a malformed array must still be refused with a position. */
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "coco/jsonpar.h"
#include "tap.h"

typedef struct buf { char *s; size_t n, cap; } buf_t;

static void put(buf_t *b, const char *s)
{
    size_t k = strlen(s);
    if (b->n + k + 1 > b->cap) {
        b->cap = 2 * (b->n + k + 1);
        b->s = realloc(b->s, b->cap);
    }
    memcpy(b->s + b->n, s, k + 1);
    b->n += k;
}

/* n result-like objects; every "trap"th one holds strings or nested arrays
 * that look like element boundaries; the "realign" one makes a scan from
 * the wrong guess end exactly at its element's end (only the check that
 * segments chain up can tell). */
static const char *const traps[] = {
    ", \"s\": \"}, {\\\"x\\\": [}, {\", \"n\": [{}, {\"a\": [1]}]",
    ", \"s\": \"x}, {\\\"k\\\": \\\"\", \"z\": 0",
};

static void make_array(buf_t *b, int n, int trap, int kind)
{
    b->n = 0;
    put(b, "[");
    char t[256];
    for (int i = 0; i < n; i++) {
        snprintf(t, sizeof t, "%s{\"image_id\": %d, \"bbox\": [%d.5, 2, 3, 4], \"score\": 0.%d",
                 i ? ",\n " : "", i, i % 1000, i % 97);
        put(b, t);
        if (trap && i % trap == 0) put(b, traps[kind]);
        put(b, "}");
    }
    put(b, "]");
}

static size_t jansson_count(const buf_t *b)
{
    json_error_t je;
    json_t *j = json_loadb(b->s, b->n, 0, &je);
    size_t n = json_is_array(j) ? json_array_size(j) : (size_t)-1;
    json_decref(j);
    return n;
}

/* Chunks tile the elements: each starts at '{' after the previous one's
 * end and a ',', counts add up. */
static int tiles(const jsonpar_array_t *a)
{
    for (int64_t c = 0; c < a->nchunks; c++) {
        if (a->buf[a->cbeg[c]] != '{' || a->buf[a->cend[c] - 1] != '}') return 0;
        if (c && (a->cfirst[c] <= a->cfirst[c - 1] || a->cbeg[c] <= a->cend[c - 1])) return 0;
        if (c && !memchr(a->buf + a->cend[c - 1], ',', a->cbeg[c] - a->cend[c - 1])) return 0;
    }
    return a->nchunks > 0 && a->cfirst[0] == 0;
}

static int same_chunks(const jsonpar_array_t *x, const jsonpar_array_t *y)
{
    if (x->n != y->n || x->nchunks != y->nchunks) return 0;
    for (int64_t c = 0; c < x->nchunks; c++)
        if (x->cbeg[c] != y->cbeg[c] || x->cend[c] != y->cend[c] || x->cfirst[c] != y->cfirst[c])
            return 0;
    return 1;
}

static void check(buf_t *b, const char *what)
{
    jsonpar_array_t a1, a4;
    size_t after1 = 0, after4 = 0;
    perr_t e = {0};
    int r1 = jsonpar_scan(b->s, b->n, 0, "t.json", 1, &a1, &after1, &e);
    int r4 = jsonpar_scan(b->s, b->n, 0, "t.json", 4, &a4, &after4, &e);
    ok(r1 == 0 && r4 == 0, "%s: scanned", what);
    ok(r1 == 0 && (size_t)a1.n == jansson_count(b) && after1 == b->n,
       "%s: %lld elements, as jansson counts, and the end found", what, (long long)a1.n);
    ok(r1 == 0 && r4 == 0 && same_chunks(&a1, &a4) && after1 == after4,
       "%s: the same %lld chunks at 1 and 4 threads", what, (long long)a1.nchunks);
    ok(r1 == 0 && tiles(&a1), "%s: chunks tile the elements at element boundaries", what);
    if (!r1) jsonpar_free(&a1);
    if (!r4) jsonpar_free(&a4);
}

int main(void)
{
    buf_t b = {0};
    make_array(&b, 80000, 0, 0);
    diag("plain array: %zu bytes", b.n);
    check(&b, "plain results");
    jsonpar_array_t a;
    size_t after;
    perr_t e = {0};
    jsonpar_scan(b.s, b.n, 0, "t.json", 2, &a, &after, &e);
    /* the serial scan cuts after each MiB (5 chunks here), segments are
     * whole MiBs from the first element (4): this shows which path ran */
    ok(a.nchunks == (int64_t)((b.n - 2) >> 20), "plain results: one chunk per 1 MiB segment (%lld)",
       (long long)a.nchunks);
    jsonpar_free(&a);

    make_array(&b, 80000, 3, 0);
    check(&b, "strings and nested arrays that look like boundaries");
    make_array(&b, 60000, 1, 1);
    check(&b, "strings a wrong guess realigns in");

    /* one string longer than a segment, full of "}, {" and open brackets */
    b.n = 0;
    put(&b, "[{\"a\": 1}, {\"s\": \"");
    for (int i = 0; i < 400000; i++) put(&b, "}, {[[");
    put(&b, "\"}, {\"b\": 2}]");
    check(&b, "a string longer than a segment");

    /* a malformed element deep in a big array: refused, with a place */
    make_array(&b, 80000, 0, 0);
    char *r = strstr(b.s + b.n / 2, "},");
    r[1] = ';';                                  /* no separator: the scan must refuse */
    int rc = jsonpar_scan(b.s, b.n, 0, "t.json", 4, &a, &after, &e);
    ok(rc != 0 && e.code == EXIT_BADINPUT && strstr(e.msg, "t.json: line ") &&
       strstr(e.msg, "expected ',' or ']'"),
       "a missing ',' deep in a big array: refused at its place (%s)", rc ? e.msg : "accepted");
    free(b.s);
    return done_testing();
}
