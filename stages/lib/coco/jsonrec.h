/* jsonrec.h — a streaming reader for flat JSON records (the objects of a
 * COCO results or annotations array) straight into numbers, no DOM.
 *
 * jsonpar_fast still builds jansson values, and most of a 500k-detection
 * file's time went to building and reading them (objects, hash lookups,
 * strtod). jsonrec reads one object at a time and keeps only the members a
 * caller names: numbers, and arrays of up to JREC_MAX_ARR numbers. Other
 * members are checked and skipped. It accepts a strict subset of what
 * jansson accepts and yields the values jansson would (integers as strtoll
 * keeps them, reals correctly rounded as strtod gives them, the last of
 * repeated keys): anything outside that subset (an escape in a key, a byte
 * outside printable ASCII, a \u escape, a number jansson refuses, deep
 * nesting, any syntax error) makes it report failure, and the caller then
 * parses the same text the old way, whose verdict and message stand.
 * Linear in the text: every byte is looked at a bounded number of times.
 */
#ifndef PARITY_COCO_JSONREC_H
#define PARITY_COCO_JSONREC_H

#include <stddef.h>
#include <stdint.h>

enum { JREC_MAX_ARR = 4, JREC_MAX_KEYS = 8 };

typedef enum jrec_kind {
    JREC_ABSENT = 0,
    JREC_NUMBER,             /* v[0] */
    JREC_ARRAY,              /* count numbers, the first JREC_MAX_ARR in v */
    JREC_TRUE,
    JREC_FALSE,
    JREC_OTHER,              /* anything else (string, null, object, mixed array) */
} jrec_kind_t;

/* A JSON number as jansson keeps it: an integer (no '.', no exponent) as
 * int64 with d = (double)i, a real as the correctly rounded double. */
typedef struct jrec_num {
    double d;
    int64_t i;
    int is_int;
} jrec_num_t;

typedef struct jrec_field {
    jrec_kind_t kind;
    int64_t count;           /* JREC_ARRAY: its length */
    jrec_num_t v[JREC_MAX_ARR];
} jrec_field_t;

typedef struct jrec {
    const char *s;
    size_t n, p;
} jrec_t;

void jrec_init(jrec_t *r, const char *text, size_t n);
/* Reads the object at the current position (after whitespace) and the
 * whitespace after it; f[k] describes member keys[k] (nkeys at most
 * JREC_MAX_KEYS). 0, or -1 when the text is outside the subset. */
int jrec_object(jrec_t *r, const char *const *keys, int nkeys, jrec_field_t *f);
/* Reads a ',' and the whitespace after it; 0 or -1. */
int jrec_comma(jrec_t *r);
/* 0 when only whitespace is left. */
int jrec_end(jrec_t *r);
/* Reads one JSON number starting at s[*p] (p advanced past it); 0, or -1
 * when it is not a number jansson would accept. */
int jrec_number(const char *s, size_t n, size_t *p, jrec_num_t *out);
/* true / false / null at s[*p]: 1, 2 or 3 with *p moved past it, 0 when
 * none (also when a letter follows: jansson lexes a word of letters). */
int jrec_literal(const char *s, size_t n, size_t *p);

/* fields.c's rules on a read member (jf_int, jf_bbox, jf_flag), for the
 * values they accept; -1 for everything else, which the caller leaves to
 * fields.c to word. */
int jrec_int(const jrec_field_t *f, int64_t *out);        /* an integer, or a real with an integer value */
int jrec_bbox(const jrec_field_t *f, double out[4]);      /* 4 numbers, width and height not negative */
int jrec_flag(const jrec_field_t *f, int *out);           /* false/true or 0/1 */

#endif
