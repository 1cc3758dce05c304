/* labels.c — readers of the labels file (sample -> class index) and the
 * classes file (class names in index order); formats in labels.h. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "metrics/labels.h"
#include "util/fsutil.h"

#define LABELS_MAX_CLASS 100000000   /* a class index beyond this is a typo */

/* "name.png" -> "name": the last extension goes, a leading dot stays. */
static char *key_of(const char *name, size_t n)
{
    const char *dot = NULL;
    for (size_t i = 1; i < n; i++)
        if (name[i] == '.') dot = name + i;
        else if (name[i] == '/') dot = NULL;
    return xstrndup(name, dot ? (size_t)(dot - name) : n);
}

static int cmp_entry(const void *a, const void *b)
{
    return strcmp(((const label_entry_t *)a)->key, ((const label_entry_t *)b)->key);
}

static void add_entry(labels_t *l, int64_t *cap, char *key, int64_t cls)
{
    if (l->n == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        l->v = xrealloc(l->v, (size_t)*cap * sizeof *l->v);
    }
    l->v[l->n].key = key;
    l->v[l->n++].cls = cls;
}

/* A class index: a decimal integer in [0, LABELS_MAX_CLASS]. */
static int parse_index(const char *s, size_t n, int64_t *out)
{
    if (n == 0 || n > 9) return -1;
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i])) return -1;
        v = v * 10 + (s[i] - '0');
    }
    if (v > LABELS_MAX_CLASS) return -1;
    *out = v;
    return 0;
}

static int parse_json_labels(const char *text, size_t len, const char *path, labels_t *l, int64_t *cap, perr_t *e)
{
    json_error_t je;
    json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!j) return BAD(e, "%s:%d:%d: %s", path, je.line, je.column, je.text);
    if (!json_is_object(j)) { json_decref(j); return BAD(e, "%s: expected a JSON object {\"NAME\": class index}", path); }
    const char *k;
    json_t *v;
    json_object_foreach(j, k, v) {
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > LABELS_MAX_CLASS) {
            BAD(e, "%s: \"%.200s\": expected a class index (an integer >= 0)", path, k);   /* k dies with j */
            json_decref(j);
            return -1;
        }
        if (!*k) { json_decref(j); return BAD(e, "%s: an empty sample name", path); }
        add_entry(l, cap, key_of(k, strlen(k)), json_integer_value(v));
    }
    json_decref(j);
    return 0;
}

static int parse_csv_labels(const char *text, size_t len, const char *path, labels_t *l, int64_t *cap, perr_t *e)
{
    size_t pos = 0;
    int64_t line = 0, data_lines = 0;
    while (pos < len) {
        size_t end = pos;
        while (end < len && text[end] != '\n') end++;
        size_t stop = end > pos && text[end - 1] == '\r' ? end - 1 : end;
        line++;
        const char *s = text + pos;
        size_t n = stop - pos;
        pos = end + 1;
        if (n == 0 || s[0] == '#') continue;
        const char *comma = memchr(s, ',', n);
        if (!comma) return BAD(e, "%s:%lld: expected NAME,INDEX", path, (long long)line);
        size_t kn = (size_t)(comma - s), vn = n - kn - 1;
        const char *vs = comma + 1;
        while (vn && (*vs == ' ' || *vs == '\t')) { vs++; vn--; }
        while (vn && (vs[vn - 1] == ' ' || vs[vn - 1] == '\t')) vn--;
        int64_t cls;
        if (parse_index(vs, vn, &cls)) {
            if (data_lines == 0 && line == 1) continue;   /* a header */
            return BAD(e, "%s:%lld: '%.*s' is not a class index (an integer >= 0)", path, (long long)line,
                       (int)(vn > 40 ? 40 : vn), vs);
        }
        if (kn == 0 || memchr(s, 0, kn)) return BAD(e, "%s:%lld: an empty or invalid sample name", path, (long long)line);
        add_entry(l, cap, key_of(s, kn), cls);
        data_lines++;
    }
    return 0;
}

int labels_parse(const char *text, size_t len, const char *path, labels_t *l, perr_t *e)
{
    int64_t cap = 0;
    size_t i = 0;
    memset(l, 0, sizeof *l);
    while (i < len && isspace((unsigned char)text[i])) i++;
    int rc = i < len && text[i] == '{' ? parse_json_labels(text, len, path, l, &cap, e)
                                       : parse_csv_labels(text, len, path, l, &cap, e);
    if (!rc && l->n == 0) rc = BAD(e, "%s: no labels", path);
    if (!rc) {
        qsort(l->v, (size_t)l->n, sizeof *l->v, cmp_entry);
        for (int64_t k = 1; k < l->n; k++)
            if (!strcmp(l->v[k].key, l->v[k - 1].key)) {
                rc = BAD(e, "%s: sample '%.200s' is named twice", path, l->v[k].key);
                break;
            }
    }
    if (rc) labels_free(l);
    return rc;
}

/* Reads a whole file and hands it to a parser (labels or classes). */
static int load_text(const char *path, int (*parse)(const char *, size_t, const char *, void *, perr_t *), void *out,
                     perr_t *e)
{
    char *text;
    size_t n;
    if (read_file(path, &text, &n, e)) return -1;
    int rc = parse(text, n, path, out, e);
    free(text);
    return rc;
}

static int parse_labels_any(const char *t, size_t n, const char *path, void *out, perr_t *e)
{
    return labels_parse(t, n, path, out, e);
}

int labels_load(const char *path, labels_t *l, perr_t *e)
{
    return load_text(path, parse_labels_any, l, e);
}

int64_t labels_find(const labels_t *l, const char *sample)
{
    label_entry_t k = {.key = (char *)sample};
    const label_entry_t *f = bsearch(&k, l->v, (size_t)l->n, sizeof *l->v, cmp_entry);
    return f ? f->cls : -1;
}

void labels_free(labels_t *l)
{
    for (int64_t i = 0; i < l->n; i++) free(l->v[i].key);
    free(l->v);
    memset(l, 0, sizeof *l);
}

static void add_name(classes_t *c, int64_t *cap, char *name)
{
    if (c->n == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        c->names = xrealloc(c->names, (size_t)*cap * sizeof *c->names);
    }
    c->names[c->n++] = name;
}

int classes_parse(const char *text, size_t len, const char *path, classes_t *c, perr_t *e)
{
    int64_t cap = 0;
    size_t i = 0;
    memset(c, 0, sizeof *c);
    while (i < len && isspace((unsigned char)text[i])) i++;
    int rc = 0;
    if (i < len && text[i] == '[') {
        json_error_t je;
        json_t *j = json_loadb(text, len, 0, &je);
        if (!j) return BAD(e, "%s:%d:%d: %s", path, je.line, je.column, je.text);
        size_t k;
        json_t *v;
        json_array_foreach(j, k, v) {
            if (!json_is_string(v)) { rc = BAD(e, "%s: entry %zu: expected a class name (a string)", path, k); break; }
            add_name(c, &cap, xstrdup(json_string_value(v)));
        }
        json_decref(j);
    } else {
        /* one name per line; a final newline ends the last line, it adds none */
        size_t pos = 0;
        int64_t line = 0;
        while (pos < len && !rc) {
            size_t end = pos;
            while (end < len && text[end] != '\n') end++;
            size_t stop = end > pos && text[end - 1] == '\r' ? end - 1 : end;
            line++;
            if (stop == pos) rc = BAD(e, "%s:%lld: an empty class name", path, (long long)line);
            else if (memchr(text + pos, 0, stop - pos)) rc = BAD(e, "%s:%lld: a NUL byte in a class name", path, (long long)line);
            else add_name(c, &cap, xstrndup(text + pos, stop - pos));
            pos = end + 1;
        }
    }
    if (!rc && c->n == 0) rc = BAD(e, "%s: no class names", path);
    if (rc) classes_free(c);
    return rc;
}

static int parse_classes_any(const char *t, size_t n, const char *path, void *out, perr_t *e)
{
    return classes_parse(t, n, path, out, e);
}

int classes_load(const char *path, classes_t *c, perr_t *e)
{
    return load_text(path, parse_classes_any, c, e);
}

void classes_free(classes_t *c)
{
    for (int64_t i = 0; i < c->n; i++) free(c->names[i]);
    free(c->names);
    memset(c, 0, sizeof *c);
}
