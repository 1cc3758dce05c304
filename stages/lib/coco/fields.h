/* fields.h — typed access to the fields of one COCO JSON object, with errors
 * that name the file, the array and the element ("gt.json: annotations[12]:
 * 'bbox' is missing"). Shared by the ground-truth and results loaders. */
#ifndef PARITY_COCO_FIELDS_H
#define PARITY_COCO_FIELDS_H

#include <stdint.h>
#include <jansson.h>
#include "util/err.h"

/* Where an object sits: file, array name ("" for a top-level array), index. */
typedef struct jplace {
    const char *file;
    const char *array;
    int64_t index;
} jplace_t;

/* Each returns 0, or -1 with e set. A missing key is an error unless the
 * _opt variant is used (returns 1 present, 0 absent, -1 error). */
int jf_object(const json_t *v, const jplace_t *pl, perr_t *e);
int jf_int(const json_t *obj, const char *key, const jplace_t *pl, int64_t *out, perr_t *e);
int jf_int_opt(const json_t *obj, const char *key, const jplace_t *pl, int64_t *out, perr_t *e);
int jf_number(const json_t *obj, const char *key, const jplace_t *pl, double *out, perr_t *e);
/* x, y, w, h: four finite numbers, w and h not negative. */
int jf_bbox(const json_t *obj, const char *key, const jplace_t *pl, double out[4], perr_t *e);
/* 0/1 or false/true. */
int jf_flag(const json_t *obj, const char *key, const jplace_t *pl, int *out, perr_t *e);
/* Formats the place ("gt.json: annotations[12]") for other messages. */
const char *jf_place(const jplace_t *pl, char *buf, size_t n);

#endif
