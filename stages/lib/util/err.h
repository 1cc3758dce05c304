/* err.h — one error line, one exit code.
 *
 * Library functions never print or exit: they fill a perr_t and return -1.
 * A stage's main() prints the single line "stage: message" and exits with the
 * code, so every bad input ends the same way (docs/design.md "Conventions of every stage": exit 2 bad input,
 * 3 internal error, 1 a check failed).
 */
#ifndef PARITY_ERR_H
#define PARITY_ERR_H

#include <stdarg.h>
#include <stddef.h>

enum { EXIT_PASS = 0, EXIT_CHECK = 1, EXIT_BADINPUT = 2, EXIT_INTERNAL = 3 };

typedef struct perr {
    int code;          /* EXIT_BADINPUT or EXIT_INTERNAL once set, 0 before */
    char msg[1024];
} perr_t;

/* Sets the error (if not set already: the first, most specific cause wins)
 * and returns -1 so callers can write `return perr_set(e, ...)`. */
int perr_set(perr_t *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prefixes context ("file.onnx: ") to an error already set. */
int perr_prefix(perr_t *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints "prog: msg" to stderr and exits with the code. */
void perr_die(const char *prog, const perr_t *e) __attribute__((noreturn));
void die_usage(const char *prog, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 2, 3)));
/* A command-line option's integer value in [lo, hi]; anything else (not a
 * number, trailing text, out of range) is a usage error naming the option. */
long long opt_int(const char *prog, const char *opt, const char *s, long long lo, long long hi);

#define BAD(e, ...) perr_set((e), EXIT_BADINPUT, __VA_ARGS__)
#define INTERNAL(e, ...) perr_set((e), EXIT_INTERNAL, __VA_ARGS__)

/* Allocation that never returns NULL (out of memory is an internal error). */
void *xmalloc(size_t n);
void *xmalloc_huge(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);

#endif
