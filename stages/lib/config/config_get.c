/* config_get.c — typed access to a config tree (strings, integers, floats,
 * booleans, number lists, HxW sizes, enumerations) and the unknown-key check.
 * Every error names the value's file:line:column, the dotted key, what was
 * expected and what was found, so a user can fix the YAML without guessing. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config/config.h"
#include "config/config_scalar.h"

/* ---- plain-scalar forms (YAML 1.2 core schema) ---- */

int cfg_scalar_is_null(const cfg_node_t *nd)
{
    if (nd->kind != CFG_SCALAR || nd->quoted)
        return 0;
    const char *t = nd->text;
    return !*t || !strcmp(t, "~") || !strcmp(t, "null") || !strcmp(t, "Null") ||
           !strcmp(t, "NULL");
}

int cfg_scalar_bool(const char *t, int *out)
{
    if (!strcmp(t, "true") || !strcmp(t, "True") || !strcmp(t, "TRUE")) {
        *out = 1;
        return 0;
    }
    if (!strcmp(t, "false") || !strcmp(t, "False") || !strcmp(t, "FALSE")) {
        *out = 0;
        return 0;
    }
    return -1;
}

int cfg_scalar_int(const char *t, int64_t *out)
{
    const char *s = t;
    int base = 10;
    if (*s == '-' || *s == '+')
        s++;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && s == t) {
        base = 16;
        s += 2;
        if (!*s || strspn(s, "0123456789abcdefABCDEF") != strlen(s))
            return -1;
    } else if (!*s || strspn(s, "0123456789") != strlen(s)) {
        return -1;
    }
    errno = 0;
    long long v = strtoll(base == 16 ? t + 2 : t, NULL, base);
    if (errno == ERANGE)
        return -1;
    *out = v;
    return 0;
}

/* [-+]? ( \.[0-9]+ | [0-9]+ ( \.[0-9]* )? ) ( [eE] [-+]? [0-9]+ )? */
static int is_decimal_float(const char *s)
{
    if (*s == '-' || *s == '+')
        s++;
    size_t intd = strspn(s, "0123456789");
    s += intd;
    size_t frac = 0;
    if (*s == '.') {
        s++;
        frac = strspn(s, "0123456789");
        s += frac;
    }
    if (intd == 0 && frac == 0)
        return 0;
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '-' || *s == '+')
            s++;
        size_t ed = strspn(s, "0123456789");
        if (ed == 0)
            return 0;
        s += ed;
    }
    return *s == 0;
}

int cfg_scalar_double(const char *t, double *out)
{
    const char *s = t + (*t == '-' || *t == '+');
    if (!strcmp(s, ".inf") || !strcmp(s, ".Inf") || !strcmp(s, ".INF")) {
        *out = *t == '-' ? -INFINITY : INFINITY;
        return 0;
    }
    if (s == t && (!strcmp(s, ".nan") || !strcmp(s, ".NaN") || !strcmp(s, ".NAN"))) {
        *out = NAN;
        return 0;
    }
    if (!is_decimal_float(t))
        return -1;
    *out = strtod(t, NULL);   /* the C locale: stages never call setlocale */
    return 0;
}

/* ---- errors ---- */

static int type_error(const cfg_node_t *nd, const char *key, const char *expected, perr_t *e)
{
    char w[512];
    cfg_node_where(nd, w, sizeof w);
    if (nd->kind == CFG_MAP)
        return BAD(e, "%s: %s: %s, got a mapping", w, key, expected);
    if (nd->kind == CFG_SEQ)
        return BAD(e, "%s: %s: %s, got a sequence", w, key, expected);
    if (nd->quoted)
        return BAD(e, "%s: %s: %s, got the quoted string '%s'", w, key, expected, nd->text);
    return BAD(e, "%s: %s: %s, got '%s'", w, key, expected, nd->text);
}

/* Finds key; null values count as absent. An intermediate that is a
 * non-null scalar or a sequence without that index is an error. */
static int find(const config_t *c, const char *key, const cfg_node_t **out, perr_t *e)
{
    const cfg_node_t *nd = c->root;
    const char *k = key;
    char part[256];
    while (*k) {
        if (cfg_scalar_is_null(nd))
            return 0;
        if (nd->kind == CFG_SCALAR) {
            /* the node reached so far is named by key up to the dot before k */
            char prefix[256];
            snprintf(prefix, sizeof prefix, "%.*s", (int)(k - key - 1), key);
            return type_error(nd, prefix, "expected a mapping", e);
        }
        const char *dot = strchr(k, '.');
        size_t len = dot ? (size_t)(dot - k) : strlen(k);
        if (len == 0 || len >= sizeof part)
            return INTERNAL(e, "config: bad key '%s'", key);
        memcpy(part, k, len);
        part[len] = 0;
        k += len + (dot ? 1 : 0);
        if (nd->kind == CFG_MAP) {
            nd = cfg_map_get(nd, part);
        } else {
            char *end;
            long long i = strtoll(part, &end, 10);
            nd = (*end || i < 0 || i >= nd->n) ? NULL : nd->items[i];
        }
        if (!nd)
            return 0;
    }
    if (cfg_scalar_is_null(nd))
        return 0;
    *out = nd;
    return 1;
}

int config_require(const config_t *c, const char *key, perr_t *e)
{
    const cfg_node_t *nd;
    int r = find(c, key, &nd, e);
    if (r < 0)
        return -1;
    if (r == 0)
        return BAD(e, "%s: %s: required key missing", c->root->src, key);
    return 0;
}

/* ---- node conversions ---- */

int cfg_node_str(const cfg_node_t *nd, const char *key, const char **out, perr_t *e)
{
    if (nd->kind != CFG_SCALAR || cfg_scalar_is_null(nd))
        return type_error(nd, key, "expected a string", e);
    *out = nd->text;
    return 0;
}

int cfg_node_int(const cfg_node_t *nd, const char *key, int64_t *out, perr_t *e)
{
    if (nd->kind != CFG_SCALAR || nd->quoted || cfg_scalar_int(nd->text, out) < 0)
        return type_error(nd, key, "expected an integer", e);
    return 0;
}

int cfg_node_double(const cfg_node_t *nd, const char *key, double *out, perr_t *e)
{
    if (nd->kind != CFG_SCALAR || nd->quoted || cfg_scalar_double(nd->text, out) < 0)
        return type_error(nd, key, "expected a number", e);
    return 0;
}

/* ---- getters by key ---- */

#define GET_OR_RETURN(c, key, nd, e)            \
    const cfg_node_t *nd;                       \
    do {                                        \
        int r_ = find((c), (key), &nd, (e));    \
        if (r_ <= 0)                            \
            return r_;                          \
    } while (0)

int config_str(const config_t *c, const char *key, const char **out, perr_t *e)
{
    GET_OR_RETURN(c, key, nd, e);
    return cfg_node_str(nd, key, out, e) < 0 ? -1 : 1;
}

int config_int(const config_t *c, const char *key, int64_t *out, perr_t *e)
{
    GET_OR_RETURN(c, key, nd, e);
    return cfg_node_int(nd, key, out, e) < 0 ? -1 : 1;
}

int config_double(const config_t *c, const char *key, double *out, perr_t *e)
{
    GET_OR_RETURN(c, key, nd, e);
    return cfg_node_double(nd, key, out, e) < 0 ? -1 : 1;
}

int config_bool(const config_t *c, const char *key, int *out, perr_t *e)
{
    GET_OR_RETURN(c, key, nd, e);
    if (nd->kind != CFG_SCALAR || nd->quoted || cfg_scalar_bool(nd->text, out) < 0)
        return type_error(nd, key, "expected true or false", e);
    return 1;
}

int config_doubles(const config_t *c, const char *key, double *out, int max, int *n,
                   perr_t *e)
{
    GET_OR_RETURN(c, key, nd, e);
    if (nd->kind == CFG_SCALAR) {
        if (max < 1)
            return type_error(nd, key, "expected an empty list", e);
        if (cfg_node_double(nd, key, out, e) < 0)
            return -1;
        *n = 1;
        return 1;
    }
    if (nd->kind != CFG_SEQ)
        return type_error(nd, key, "expected a list of numbers", e);
    if (nd->n > max) {
        char w[512], what[64];
        snprintf(what, sizeof what, "expected at most %d numbers", max);
        return BAD(e, "%s: %s: %s, got %lld", cfg_node_where(nd, w, sizeof w), key, what,
                   (long long)nd->n);
    }
    for (int64_t i = 0; i < nd->n; i++) {
        const cfg_node_t *it = nd->items[i];
        if (it->kind != CFG_SCALAR || it->quoted || cfg_scalar_double(it->text, &out[i]) < 0)
            return type_error(it, key, "expected a list of numbers", e);
    }
    *n = (int)nd->n;
    return 1;
}

#define CFG_MAX_EXTENT 1000000

static int parse_hxw(const char *t, int64_t *h, int64_t *w)
{
    const char *x = strpbrk(t, "xX");
    if (!x)
        return -1;
    char hs[32];
    size_t len = (size_t)(x - t);
    if (len == 0 || len >= sizeof hs)
        return -1;
    memcpy(hs, t, len);
    hs[len] = 0;
    if (strspn(hs, "0123456789") != len || strspn(x + 1, "0123456789") != strlen(x + 1))
        return -1;
    if (cfg_scalar_int(hs, h) < 0 || cfg_scalar_int(x + 1, w) < 0)
        return -1;
    return 0;
}

int config_size(const config_t *c, const char *key, int64_t *h, int64_t *w, perr_t *e)
{
    GET_OR_RETURN(c, key, nd, e);
    int64_t hh = 0, ww = 0;
    int okay;
    if (nd->kind == CFG_SCALAR)
        okay = parse_hxw(nd->text, &hh, &ww) == 0;
    else
        okay = nd->kind == CFG_SEQ && nd->n == 2 && !nd->items[0]->quoted &&
               !nd->items[1]->quoted && nd->items[0]->kind == CFG_SCALAR &&
               nd->items[1]->kind == CFG_SCALAR &&
               cfg_scalar_int(nd->items[0]->text, &hh) == 0 &&
               cfg_scalar_int(nd->items[1]->text, &ww) == 0;
    if (!okay)
        return type_error(nd, key, "expected HxW", e);
    if (hh < 1 || ww < 1 || hh > CFG_MAX_EXTENT || ww > CFG_MAX_EXTENT)
        return type_error(nd, key, "expected HxW with sides from 1 to 1000000", e);
    *h = hh;
    *w = ww;
    return 1;
}

int cfg_node_enum(const cfg_node_t *nd, const char *key, const char *const *choices, int *out, perr_t *e)
{
    if (nd->kind == CFG_SCALAR)
        for (int i = 0; choices[i]; i++)
            if (!strcmp(nd->text, choices[i])) {
                *out = i;
                return 1;
            }
    char expected[512] = "expected one of ";
    for (int i = 0; choices[i]; i++) {
        size_t len = strlen(expected);
        snprintf(expected + len, sizeof expected - len, "%s%s", i ? ", " : "", choices[i]);
    }
    return type_error(nd, key, expected, e);
}

int config_enum(const config_t *c, const char *key, const char *const *choices, int *out,
                perr_t *e)
{
    GET_OR_RETURN(c, key, nd, e);
    return cfg_node_enum(nd, key, choices, out, e);
}

/* ---- unknown keys ---- */

static int part_count(const char *s)
{
    int n = 1;
    for (; *s; s++)
        n += *s == '.';
    return n;
}

/* Do pattern's first nseg parts match the key path seg[0..nseg)? A key is
 * one part whatever it holds: a tensor name such as "input.1" under
 * "input_shapes.*" is one key, matched by the '*', never three parts. */
static int prefix_match(const char *pat, const char *const *seg, int nseg)
{
    for (int i = 0; i < nseg; i++) {
        size_t pl = strcspn(pat, ".");
        if (!(pl == 1 && pat[0] == '*') && (pl != strlen(seg[i]) || strncmp(pat, seg[i], pl) != 0))
            return 0;
        pat += pl;
        if (i + 1 < nseg && !*pat)
            return 0;
        if (*pat)
            pat++;
    }
    return 1;
}

static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 200 || lb > 200)
        return (size_t)-1;
    size_t row[201];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

static int unknown_key(const cfg_node_t *nd, const char *path, const char *const *pats,
                       perr_t *e)
{
    const char *best = NULL;
    size_t bestd = (size_t)-1;
    for (int i = 0; pats[i]; i++) {
        if (strchr(pats[i], '*'))
            continue;
        size_t d = edit_distance(path, pats[i]);
        if (d < bestd) {
            bestd = d;
            best = pats[i];
        }
    }
    char w[512];
    cfg_node_where(nd, w, sizeof w);
    size_t limit = strlen(path) / 3 > 2 ? strlen(path) / 3 : 2;
    if (best && bestd <= limit)
        return BAD(e, "%s: unknown key '%s' (did you mean '%s'?)", w, path, best);
    return BAD(e, "%s: unknown key '%s'", w, path);
}

/* Keys nested deeper than any pattern reaches are never walked (a key
 * that no pattern goes into is either whole or unknown). */
#define KEY_DEPTH 32

/* The key path seg[0..depth) joined with dots, for messages. */
static void join_path(char *out, size_t cap, const char *const *seg, int depth)
{
    size_t at = 0;
    out[0] = 0;
    for (int i = 0; i < depth && at < cap; i++)
        at += (size_t)snprintf(out + at, cap - at, "%s%s", i ? "." : "", seg[i]);
}

static int check_node(const cfg_node_t *nd, const char **seg, int depth, const char *const *pats, perr_t *e)
{
    if (depth >= KEY_DEPTH)
        return 0;
    for (int64_t i = 0; i < nd->n; i++) {
        char idx[32];
        snprintf(idx, sizeof idx, "%lld", (long long)i);
        seg[depth] = nd->kind == CFG_MAP ? nd->keys[i] : idx;
        int whole = 0, inner = 0;
        for (int p = 0; pats[p]; p++) {
            if (!prefix_match(pats[p], seg, depth + 1))
                continue;
            if (part_count(pats[p]) == depth + 1)
                whole = 1;
            else
                inner = 1;
        }
        const cfg_node_t *ch = nd->items[i];
        if (!whole && !inner) {
            cfg_node_t at = *ch;     /* point at the key itself when it has a place */
            if (nd->kind == CFG_MAP && nd->key_pos[2 * i] > 0) {
                at.line = nd->key_pos[2 * i];
                at.col = nd->key_pos[2 * i + 1];
            }
            char path[1024];
            join_path(path, sizeof path, seg, depth + 1);
            return unknown_key(&at, path, pats, e);
        }
        /* below a key that some pattern ends at and another goes past
         * ("compare.outputs.*" and "compare.outputs.*.atol"), a mapping
         * holds only what the deeper ones name */
        if (inner && (ch->kind == CFG_MAP || ch->kind == CFG_SEQ) && check_node(ch, seg, depth + 1, pats, e) < 0)
            return -1;
    }
    return 0;
}

int config_check_keys(const config_t *c, const char *const *patterns, perr_t *e)
{
    const char *seg[KEY_DEPTH];
    return check_node(c->root, seg, 0, patterns, e);
}
