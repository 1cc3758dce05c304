/* labels.h — the ground-truth files of classification and the class lists
 * of every task (docs/metrics-classification.md "Files"):
 *   - a labels file maps a sample to its class index: a JSON object
 *     {"NAME": INDEX, ...} or CSV lines "NAME,INDEX" (an optional first line
 *     whose second field is not a number is a header; blank lines and lines
 *     starting with # are skipped). NAME is the sample's id (its folder in a
 *     dataset run) or its file name, whose extension is then dropped.
 *   - a classes file lists the class names in index order: a JSON array of
 *     strings, or text with one name per line. Its length must equal the
 *     model's number of classes.
 * Both readers run in linear time (plus a sort) and name the file, the line
 * and the problem on bad input. */
#ifndef PARITY_METRICS_LABELS_H
#define PARITY_METRICS_LABELS_H

#include <stdint.h>
#include "util/err.h"

typedef struct label_entry {
    char *key;           /* the name with its extension dropped */
    int64_t cls;
} label_entry_t;

typedef struct labels {
    label_entry_t *v;
    int64_t n;
} labels_t;

int labels_load(const char *path, labels_t *l, perr_t *e);
int labels_parse(const char *text, size_t len, const char *path, labels_t *l, perr_t *e);
/* The class of a sample id, or -1 when the file does not name it. */
int64_t labels_find(const labels_t *l, const char *sample);
void labels_free(labels_t *l);

typedef struct classes {
    char **names;
    int64_t n;
} classes_t;

int classes_load(const char *path, classes_t *c, perr_t *e);
int classes_parse(const char *text, size_t len, const char *path, classes_t *c, perr_t *e);
void classes_free(classes_t *c);

#endif
