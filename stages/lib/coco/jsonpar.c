/* jsonpar.c — element boundaries of big JSON arrays, and jansson parsing of
 * whole-element chunks on worker threads (see jsonpar.h for why this is
 * exactly as strict as one json_loadb over the file). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "coco/jsonpar.h"
#include "coco/coco_int.h"

/* A chunk is cut after the element that takes it past this many bytes: big
 * enough that jansson's per-call cost vanishes, small enough to balance. */
#define CHUNK_BYTES ((size_t)1 << 20)

static int is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

size_t jsonpar_skip_ws(const char *buf, size_t len, size_t p)
{
    while (p < len && is_ws(buf[p])) p++;
    return p;
}

void jsonpar_where(const char *buf, size_t len, size_t pos, char *out, size_t n)
{
    if (pos > len) pos = len;
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos; i++) {
        if (buf[i] == '\n') { line++; col = 1; }
        else col++;
    }
    snprintf(out, n, "line %zu column %zu", line, col);
}

/* Position of the '"' closing the string whose body starts at p, or
 * SIZE_MAX. memchr finds each quote; it closes the string when an even
 * number of backslashes precedes it (each backslash escapes the next
 * byte, so an odd run escapes the quote). Long RLE strings make this the
 * scan's main cost. */
static size_t string_end(const char *b, size_t len, size_t p)
{
    while (p < len) {
        const char *q = memchr(b + p, '"', len - p);
        if (!q) return SIZE_MAX;
        size_t e = (size_t)(q - b), k = e;
        while (k > p && b[k - 1] == '\\') k--;
        if (((e - k) & 1) == 0) return e;
        p = e + 1;
    }
    return SIZE_MAX;
}

/* Position just past the value starting at buf[p] (a non-space byte), or
 * SIZE_MAX when the text ends inside it. Strings are skipped with their
 * escapes, so brackets and commas inside them do not count; a scalar ends at
 * the first separator. jansson checks the value itself later. */
static size_t skip_value(const char *b, size_t len, size_t p)
{
    int64_t depth = 0;
    while (p < len) {
        char c = b[p];
        if (c == '"') {
            p = string_end(b, len, p + 1);
            if (p == SIZE_MAX) return SIZE_MAX;
            p++;
            if (depth == 0) return p;
            continue;
        }
        if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (depth == 0) return p;        /* a scalar's end */
            if (--depth == 0) return p + 1;
        } else if (depth == 0 && (c == ',' || c == ':' || is_ws(c))) {
            return p;
        }
        p++;
    }
    return depth == 0 ? len : SIZE_MAX;
}

static int bad_at(const char *buf, size_t len, size_t pos, const char *what, const char *msg,
                  perr_t *e)
{
    char where[64];
    jsonpar_where(buf, len, pos, where, sizeof where);
    return BAD(e, "%s: %s: %s", what, where, msg);
}

static int scan_array(const char *buf, size_t len, size_t begin, const char *what,
                      jsonpar_array_t *a, size_t *after, perr_t *e)
{
    memset(a, 0, sizeof *a);
    a->buf = buf;
    a->len = len;
    a->what = what;
    if (begin >= len || buf[begin] != '[')
        return bad_at(buf, len, begin, what, "expected a JSON array '['", e);
    int64_t cap = 16;
    a->cbeg = xmalloc(cap * sizeof *a->cbeg);
    a->cend = xmalloc(cap * sizeof *a->cend);
    a->cfirst = xmalloc(cap * sizeof *a->cfirst);
    size_t p = jsonpar_skip_ws(buf, len, begin + 1);
    if (p < len && buf[p] == ']') {
        *after = p + 1;
        return 0;
    }
    size_t chunk_start = p;
    int64_t chunk_first = 0;
    for (;;) {
        if (p >= len) return bad_at(buf, len, p, what, "unexpected end of file in array", e);
        size_t q = skip_value(buf, len, p);
        if (q == SIZE_MAX) return bad_at(buf, len, p, what, "value not terminated before end of file", e);
        if (q == p) return bad_at(buf, len, p, what, "expected a value", e);
        a->n++;
        size_t end_elem = q;
        q = jsonpar_skip_ws(buf, len, q);
        int last = q < len && buf[q] == ']';
        if (!last && (q >= len || buf[q] != ','))
            return bad_at(buf, len, q, what, "expected ',' or ']' after array element", e);
        if (last || end_elem - chunk_start >= CHUNK_BYTES) {
            if (a->nchunks == cap) {
                cap *= 2;
                a->cbeg = xrealloc(a->cbeg, cap * sizeof *a->cbeg);
                a->cend = xrealloc(a->cend, cap * sizeof *a->cend);
                a->cfirst = xrealloc(a->cfirst, cap * sizeof *a->cfirst);
            }
            a->cbeg[a->nchunks] = chunk_start;
            a->cend[a->nchunks] = end_elem;
            a->cfirst[a->nchunks] = chunk_first;
            a->nchunks++;
            chunk_first = a->n;
            if (!last) chunk_start = jsonpar_skip_ws(buf, len, q + 1);
        }
        if (last) {
            *after = q + 1;
            return 0;
        }
        p = jsonpar_skip_ws(buf, len, q + 1);
        if (p < len && buf[p] == ']') return bad_at(buf, len, p, what, "trailing comma in array", e);
    }
}

/* ---- the scan of a big array of objects, on several threads ----
 *
 * The text is cut every SEG_BYTES; from each cut the first '{' preceded by
 * '}' ',' (whitespace allowed) is guessed to start an element, and each
 * segment is scanned from its guess up to the next one. A guess can be
 * wrong (the bytes could sit inside a string or a nested array), but the
 * first segment starts at the true first element, and a segment whose scan
 * lands exactly on the next guess proves that guess an element start: so
 * when every segment lands on the next one, the cuts are true element
 * boundaries and the counts are exact. Anything else (a scan error, a
 * mismatch, no guess at all) falls back to the serial scan, whose verdict
 * and messages stand. The cuts depend on the text only, so the chunks, and
 * the error a bad file reports, are the same at every thread count. */

#define SEG_BYTES CHUNK_BYTES

typedef struct seg {
    size_t start, stop;      /* scan elements starting in [start, stop) */
    size_t end;              /* just past the last element */
    size_t next;             /* where the scan stopped: an element start, or the ']' */
    int64_t n;
    int closed, bad;
} seg_t;

typedef struct seg_job {
    const char *buf;
    size_t len;
    seg_t *s;
} seg_job_t;

/* The first '{' in [p, lim) that follows '}' ',' with only whitespace
 * between, or SIZE_MAX. Each candidate looks back over its own whitespace
 * only, so this is linear. */
static size_t guess_start(const char *b, size_t p, size_t lim)
{
    while (p < lim) {
        const char *q = memchr(b + p, '{', lim - p);
        if (!q) return SIZE_MAX;
        size_t k = (size_t)(q - b);
        size_t j = k;
        while (j > 0 && is_ws(b[j - 1])) j--;
        if (j > 0 && b[j - 1] == ',') {
            j--;
            while (j > 0 && is_ws(b[j - 1])) j--;
            if (j > 0 && b[j - 1] == '}') return k;
        }
        p = k + 1;
    }
    return SIZE_MAX;
}

static void scan_segment(int64_t i, void *ctx, void *scratch)
{
    (void)scratch;
    seg_job_t *job = ctx;
    const char *b = job->buf;
    seg_t *s = &job->s[i];
    /* a wrong guess could scan far (inside a long string, say): giving up
     * one segment past the stop keeps the work linear */
    size_t len = job->len - s->stop > SEG_BYTES ? s->stop + SEG_BYTES : job->len;
    size_t p = s->start;
    for (;;) {
        size_t q = skip_value(b, len, p);
        if (q == SIZE_MAX || q == p) { s->bad = 1; return; }
        s->n++;
        s->end = q;
        q = jsonpar_skip_ws(b, len, q);
        if (q < len && b[q] == ']') {
            s->closed = 1;
            s->next = q;
            return;
        }
        if (q >= len || b[q] != ',') { s->bad = 1; return; }
        p = jsonpar_skip_ws(b, len, q + 1);
        if (p >= len || b[p] == ']') { s->bad = 1; return; }     /* a trailing comma */
        if (p >= s->stop) {
            s->next = p;
            return;
        }
    }
}

/* Fills a from the segments when their scans chain up exactly; -1 else. */
static int join_segments(const seg_t *s, int64_t ns, jsonpar_array_t *a, size_t *after)
{
    for (int64_t i = 0; i < ns; i++) {
        int last = i + 1 == ns;
        if (s[i].bad || s[i].closed != last || (!last && s[i].next != s[i + 1].start)) return -1;
    }
    a->cbeg = xmalloc(ns * sizeof *a->cbeg);
    a->cend = xmalloc(ns * sizeof *a->cend);
    a->cfirst = xmalloc(ns * sizeof *a->cfirst);
    for (int64_t i = 0; i < ns; i++) {
        a->cbeg[i] = s[i].start;
        a->cend[i] = s[i].end;
        a->cfirst[i] = a->n;
        a->n += s[i].n;
    }
    a->nchunks = ns;
    *after = s[ns - 1].next + 1;
    return 0;
}

static int scan_segments(const char *buf, size_t len, size_t begin, int nthreads,
                         jsonpar_array_t *a, size_t *after)
{
    size_t first = jsonpar_skip_ws(buf, len, begin + 1);
    if (first >= len || buf[first] != '{') return -1;
    int64_t nominal = (int64_t)((len - first) / SEG_BYTES);
    seg_t *s = xcalloc(nominal + 1, sizeof *s);
    int64_t ns = 0;
    s[ns++].start = first;
    for (int64_t k = 1; k < nominal; k++) {
        size_t g = guess_start(buf, first + k * SEG_BYTES, first + (k + 1) * SEG_BYTES);
        if (g != SIZE_MAX) s[ns++].start = g;
    }
    for (int64_t i = 0; i < ns; i++) s[i].stop = i + 1 < ns ? s[i + 1].start : len;
    seg_job_t job = { buf, len, s };
    coco_parallel_for(ns, nthreads, scan_segment, &job, NULL, NULL);
    memset(a, 0, sizeof *a);
    int rc = join_segments(s, ns, a, after);
    free(s);
    return rc;
}

int jsonpar_scan(const char *buf, size_t len, size_t begin, const char *what, int nthreads,
                 jsonpar_array_t *a, size_t *after, perr_t *e)
{
    /* big arrays: segments (any thread count, for thread-independent chunks) */
    if (begin < len && buf[begin] == '[' && len - begin >= 4 * SEG_BYTES) {
        if (scan_segments(buf, len, begin, nthreads, a, after) == 0) {
            a->buf = buf;
            a->len = len;
            a->what = what;
            return 0;
        }
        jsonpar_free(a);
    }
    if (scan_array(buf, len, begin, what, a, after, e) == 0) return 0;
    jsonpar_free(a);
    return -1;
}

void jsonpar_free(jsonpar_array_t *a)
{
    free(a->cbeg);
    free(a->cend);
    free(a->cfirst);
    memset(a, 0, sizeof *a);
}

/* jansson reports NaN/Infinity as an invalid token; say what it probably is. */
static const char *nan_hint(const char *text)
{
    if (strstr(text, "'NaN") || strstr(text, "'Infinity") || strstr(text, "'-Infinity") ||
        strstr(text, "'nan") || strstr(text, "'inf"))
        return " (NaN and Infinity are not JSON numbers: a NaN or infinite value was written)";
    return "";
}

json_t *jsonpar_load(const char *text, size_t n, const char *what, const char *orig,
                     size_t orig_len, size_t (*map_pos)(size_t pos, const void *ctx),
                     const void *map_ctx, perr_t *e)
{
    json_error_t je;
    json_t *j = json_loadb(text, n, 0, &je);
    if (j) return j;
    size_t pos = je.position > 0 ? (size_t)je.position : 0;
    /* jansson's position is just past the offending token ("... near
     * 'TOKEN'"): point at its start */
    const char *near = strstr(je.text, "near '");
    size_t tok = 1;
    if (near) {
        const char *q = strrchr(near + 6, '\'');
        if (q && q > near + 6) tok = (size_t)(q - (near + 6));
    }
    pos = pos >= tok ? pos - tok : 0;
    if (map_pos) pos = map_pos(pos, map_ctx);
    char where[64];
    jsonpar_where(orig, orig_len, pos, where, sizeof where);
    BAD(e, "%s: %s: invalid JSON: %s%s", what, where, je.text, nan_hint(je.text));
    return NULL;
}

int jsonpar_find_member(const char *buf, size_t len, size_t begin, const char *key,
                        size_t *vbeg, size_t *vend, const char *what, perr_t *e)
{
    if (begin >= len || buf[begin] != '{')
        return bad_at(buf, len, begin, what, "expected a JSON object '{'", e);
    size_t klen = strlen(key);
    int found = 0;
    size_t p = jsonpar_skip_ws(buf, len, begin + 1);
    if (p < len && buf[p] == '}') return 0;
    for (;;) {
        if (p >= len || buf[p] != '"') return bad_at(buf, len, p, what, "expected a member name", e);
        size_t q = skip_value(buf, len, p);
        if (q == SIZE_MAX) return bad_at(buf, len, p, what, "string not terminated", e);
        int match = q - p == klen + 2 && !memcmp(buf + p + 1, key, klen);
        q = jsonpar_skip_ws(buf, len, q);
        if (q >= len || buf[q] != ':') return bad_at(buf, len, q, what, "expected ':'", e);
        size_t v = jsonpar_skip_ws(buf, len, q + 1);
        size_t w = skip_value(buf, len, v);
        if (w == SIZE_MAX || w == v) return bad_at(buf, len, v, what, "expected a value", e);
        if (match) {
            *vbeg = v;
            *vend = w;
            found = 1;
        }
        q = jsonpar_skip_ws(buf, len, w);
        if (q < len && buf[q] == '}') return found;
        if (q >= len || buf[q] != ',') return bad_at(buf, len, q, what, "expected ',' or '}'", e);
        p = jsonpar_skip_ws(buf, len, q + 1);
    }
}

/* ---- an arena for jansson while a chunk is alive ----
 *
 * A chunk's DOM is built, read once and dropped; glibc malloc/free of its
 * millions of small nodes cost about as much as jansson's lexing. While a
 * worker holds a chunk, jansson allocates from the worker's arena (bump
 * allocation, free is a no-op) and the arena is reset after the chunk. At
 * all other times, and on threads without an active arena, the functions
 * below are plain malloc/free, so other jansson users are unaffected. */

typedef struct arena {
    char **blocks;
    size_t *sizes;
    int nblocks, cur;
    size_t used;
    int active;
} arena_t;

static _Thread_local arena_t tl_arena;

/* Blocks grow from 64 KiB to 8 MiB: a small file (a handful of images, a
 * fuzzer's input) must not pay for mapping and releasing 8 MiB per parse,
 * and a big one reaches full-size blocks after seven. */
enum { ARENA_FIRST = 64 << 10, ARENA_BLOCK = 8 << 20 };

static void *arena_malloc(size_t n)
{
    arena_t *a = &tl_arena;
    if (!a->active) return malloc(n);
    n = (n + 15) & ~(size_t)15;
    while (a->cur < a->nblocks && a->used + n > a->sizes[a->cur]) {
        a->cur++;
        a->used = 0;
    }
    if (a->cur == a->nblocks) {
        size_t step = a->nblocks < 7 ? (size_t)ARENA_FIRST << a->nblocks : ARENA_BLOCK;
        size_t sz = n > step ? n : step;
        char *b = malloc(sz);
        if (!b) return NULL;
        a->blocks = realloc(a->blocks, (a->nblocks + 1) * sizeof *a->blocks);
        a->sizes = realloc(a->sizes, (a->nblocks + 1) * sizeof *a->sizes);
        if (!a->blocks || !a->sizes) abort();
        a->blocks[a->nblocks] = b;
        a->sizes[a->nblocks++] = sz;
        a->used = 0;
    }
    void *p = a->blocks[a->cur] + a->used;
    a->used += n;
    return p;
}

static void arena_free(void *p)
{
    if (!tl_arena.active) free(p);
}

static void arena_begin(void)
{
    tl_arena.cur = 0;
    tl_arena.used = 0;
    tl_arena.active = 1;
}

static void arena_end(void)
{
    tl_arena.active = 0;
}

static void arena_release(void)
{
    for (int i = 0; i < tl_arena.nblocks; i++) free(tl_arena.blocks[i]);
    free(tl_arena.blocks);
    free(tl_arena.sizes);
    memset(&tl_arena, 0, sizeof tl_arena);
}

static void install_arena(void)
{
    static atomic_int done;
    if (atomic_exchange(&done, 1)) return;
    json_set_alloc_funcs(arena_malloc, arena_free);
}

/* ---- parallel parsing ---- */

typedef struct par_job {
    const jsonpar_array_t *a;
    jsonpar_chunk_fn direct;
    jsonpar_elem_fn fn;
    void *ctx;
    atomic_llong next;       /* next chunk to take */
    atomic_llong failed;     /* lowest failed chunk, nchunks if none */
    perr_t *errs;            /* per chunk */
} par_job_t;

typedef struct chunk_map { size_t base; } chunk_map_t;

/* The chunk text is "[" + original[cbeg, cend) + "]": position 0 is the
 * added bracket. */
static size_t map_chunk_pos(size_t pos, const void *ctx)
{
    const chunk_map_t *m = ctx;
    return m->base + (pos > 0 ? pos - 1 : 0);
}

static int parse_chunk(par_job_t *job, int64_t c, char **tmp, size_t *tmpcap, perr_t *e)
{
    const jsonpar_array_t *a = job->a;
    size_t n = a->cend[c] - a->cbeg[c];
    int64_t first = a->cfirst[c];
    int64_t count = (c + 1 < a->nchunks ? a->cfirst[c + 1] : a->n) - first;
    /* the caller's own reader for the common shape; a DOM for the rest */
    if (job->direct && job->direct(a->buf + a->cbeg[c], n, first, count, job->ctx) == 0) return 0;
    if (n + 2 > *tmpcap) {
        *tmpcap = n + 2;
        *tmp = xrealloc(*tmp, *tmpcap);
    }
    (*tmp)[0] = '[';
    memcpy(*tmp + 1, a->buf + a->cbeg[c], n);
    (*tmp)[n + 1] = ']';
    chunk_map_t m = { a->cbeg[c] };
    arena_begin();
    /* the quick lexer for plain chunks; jansson for the rest and for errors */
    json_t *arr = jsonpar_fast(*tmp, n + 2);
    if (!arr) arr = jsonpar_load(*tmp, n + 2, a->what, a->buf, a->len, map_chunk_pos, &m, e);
    if (!arr) {
        arena_end();
        return -1;
    }
    int rc = 0;
    if (!json_is_array(arr) || (int64_t)json_array_size(arr) != count) {
        rc = INTERNAL(e, "%s: array chunk %lld parsed to an unexpected element count", a->what,
                      (long long)c);
    }
    for (int64_t i = 0; !rc && i < count; i++)
        rc = job->fn(json_array_get(arr, i), first + i, job->ctx, e);
    json_decref(arr);
    arena_end();
    return rc;
}

static void *par_worker(void *arg)
{
    par_job_t *job = arg;
    char *tmp = NULL;
    size_t tmpcap = 0;
    for (;;) {
        long long c = atomic_fetch_add(&job->next, 1);
        if (c >= job->a->nchunks || c > atomic_load(&job->failed)) break;
        if (parse_chunk(job, c, &tmp, &tmpcap, &job->errs[c])) {
            long long cur = atomic_load(&job->failed);
            while (c < cur && !atomic_compare_exchange_weak(&job->failed, &cur, c)) {}
        }
    }
    free(tmp);
    arena_release();
    return NULL;
}

int jsonpar_parse_direct(const jsonpar_array_t *a, int nthreads, jsonpar_chunk_fn direct,
                         jsonpar_elem_fn fn, void *ctx, perr_t *e)
{
    if (a->nchunks == 0) return 0;
    par_job_t job;
    job.a = a;
    job.direct = direct;
    job.fn = fn;
    job.ctx = ctx;
    atomic_init(&job.next, 0);
    atomic_init(&job.failed, a->nchunks);
    job.errs = xcalloc(a->nchunks, sizeof *job.errs);
    if (nthreads > a->nchunks) nthreads = (int)a->nchunks;
    if (nthreads < 1) nthreads = 1;
    /* jansson's hash seed must be set before threads use it */
    json_object_seed(0);
    install_arena();
    pthread_t th[64];
    if (nthreads > 64) nthreads = 64;
    int started = 0;
    for (int i = 1; i < nthreads; i++) {
        if (pthread_create(&th[started], NULL, par_worker, &job) != 0) break;
        started++;
    }
    par_worker(&job);
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    long long f = atomic_load(&job.failed);
    int rc = 0;
    if (f < a->nchunks) {
        *e = job.errs[f];
        rc = -1;
    }
    free(job.errs);
    return rc;
}

int jsonpar_parse(const jsonpar_array_t *a, int nthreads, jsonpar_elem_fn fn, void *ctx,
                  perr_t *e)
{
    return jsonpar_parse_direct(a, nthreads, NULL, fn, ctx, e);
}

int jsonpar_default_threads(void)
{
    const char *s = getenv("PARITY_THREADS");
    if (s && *s) {
        int n = atoi(s);
        if (n >= 1) return n > 64 ? 64 : n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) n = 1;
    return n > 16 ? 16 : (int)n;
}
