/* err.c — error values and the allocation wrappers every module uses. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "util/err.h"

int perr_set(perr_t *e, int code, const char *fmt, ...)
{
    if (!e || e->code)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    e->code = code;
    return -1;
}

int perr_prefix(perr_t *e, const char *fmt, ...)
{
    char pre[512], old[sizeof e->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    memcpy(old, e->msg, sizeof old);
    snprintf(e->msg, sizeof e->msg, "%s%s", pre, old);
    return -1;
}

/* Messages quote file names and values from the input: control characters
 * (a newline in a file name or a config value) are written as escapes, so an
 * error is always exactly one line. */
static void put_line(const char *prog, const char *msg, const char *tail)
{
    fprintf(stderr, "%s: ", prog);
    for (const unsigned char *s = (const unsigned char *)msg; *s; s++) {
        if (*s == '\n') fputs("\\n", stderr);
        else if (*s == '\t') fputs("\\t", stderr);
        else if (*s < 0x20 || *s == 0x7f) fprintf(stderr, "\\x%02x", *s);
        else fputc(*s, stderr);
    }
    fprintf(stderr, "%s\n", tail);
}

void perr_die(const char *prog, const perr_t *e)
{
    put_line(prog, e->msg[0] ? e->msg : "unknown error", "");
    exit(e->code ? e->code : EXIT_INTERNAL);
}

void die_usage(const char *prog, const char *fmt, ...)
{
    char msg[1024], tail[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(tail, sizeof tail, " (see %s --help)", prog);
    put_line(prog, msg, tail);
    exit(EXIT_BADINPUT);
}

long long opt_int(const char *prog, const char *opt, const char *s, long long lo, long long hi)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        die_usage(prog, "%s: expected an integer in [%lld, %lld], got '%s'", opt, lo, hi, s);
    return v;
}

static void die_oom(size_t n)
{
    fprintf(stderr, "parity: out of memory allocating %zu bytes\n", n);
    exit(EXIT_INTERNAL);
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) die_oom(n);
    return p;
}

/* Large blocks (the arena of activations, kernel scratch) on 2 MiB pages where the
 * kernel allows them (THP in madvise mode, the common default): the
 * convolutions read many planes a plane apart, each a 4 KiB page of its
 * own, and the TLB misses cost ~2% of the 640 RT-DETR's time. Advice
 * only: without THP the block is an ordinary one. Freed with free(). */
void *xmalloc_huge(size_t n)
{
    const size_t huge = (size_t)2 << 20, align = n < huge ? 64 : huge;
    size_t bytes = (n + align - 1) / align * align;   /* aligned_alloc wants a multiple */
    void *p = aligned_alloc(align, bytes ? bytes : align);
    if (!p) die_oom(n);
#ifdef MADV_HUGEPAGE
    if (align == huge) madvise(p, bytes, MADV_HUGEPAGE);
#endif
    return p;
}

void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) die_oom(n * size);
    return p;
}

void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p) die_oom(n);
    return p;
}

char *xstrdup(const char *s)
{
    return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
    char *p = xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}
