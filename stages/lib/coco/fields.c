/* fields.c — checked field access for COCO JSON objects (see fields.h). */
#include <math.h>
#include <stdio.h>
#include "coco/fields.h"

const char *jf_place(const jplace_t *pl, char *buf, size_t n)
{
    if (pl->array && pl->array[0])
        snprintf(buf, n, "%s: %s[%lld]", pl->file, pl->array, (long long)pl->index);
    else
        snprintf(buf, n, "%s: [%lld]", pl->file, (long long)pl->index);
    return buf;
}

static int bad_field(const jplace_t *pl, const char *key, const char *msg, perr_t *e)
{
    char pb[512];
    return BAD(e, "%s: '%s' %s", jf_place(pl, pb, sizeof pb), key, msg);
}

int jf_object(const json_t *v, const jplace_t *pl, perr_t *e)
{
    if (json_is_object(v)) return 0;
    char pb[512];
    return BAD(e, "%s: expected an object", jf_place(pl, pb, sizeof pb));
}

/* Integers, and reals with an exact integer value (Python compares 3.0 == 3). */
static int to_int(const json_t *v, int64_t *out)
{
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
        return 0;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (d == floor(d) && fabs(d) < 9007199254740992.0) {
            *out = (int64_t)d;
            return 0;
        }
    }
    return -1;
}

int jf_int_opt(const json_t *obj, const char *key, const jplace_t *pl, int64_t *out, perr_t *e)
{
    const json_t *v = json_object_get(obj, key);
    if (!v) return 0;
    if (to_int(v, out)) return bad_field(pl, key, "must be an integer", e);
    return 1;
}

int jf_int(const json_t *obj, const char *key, const jplace_t *pl, int64_t *out, perr_t *e)
{
    int r = jf_int_opt(obj, key, pl, out, e);
    if (r == 0) return bad_field(pl, key, "is missing", e);
    return r < 0 ? -1 : 0;
}

int jf_number(const json_t *obj, const char *key, const jplace_t *pl, double *out, perr_t *e)
{
    const json_t *v = json_object_get(obj, key);
    if (!v) return bad_field(pl, key, "is missing", e);
    if (!json_is_number(v)) return bad_field(pl, key, "must be a number", e);
    *out = json_number_value(v);
    /* jansson rejects NaN/Infinity and overflowing reals; huge integers
     * convert to finite doubles, so this is a guard only */
    if (!isfinite(*out)) return bad_field(pl, key, "is not finite", e);
    return 0;
}

int jf_bbox(const json_t *obj, const char *key, const jplace_t *pl, double out[4], perr_t *e)
{
    const json_t *v = json_object_get(obj, key);
    if (!v) return bad_field(pl, key, "is missing", e);
    if (!json_is_array(v) || json_array_size(v) != 4)
        return bad_field(pl, key, "must be [x, y, width, height]", e);
    for (int i = 0; i < 4; i++) {
        const json_t *x = json_array_get(v, i);
        if (!json_is_number(x)) return bad_field(pl, key, "must hold 4 numbers", e);
        out[i] = json_number_value(x);
        if (!isfinite(out[i])) return bad_field(pl, key, "holds a value that is not finite", e);
    }
    if (out[2] < 0 || out[3] < 0) {
        char pb[512];
        return BAD(e, "%s: '%s' has a negative %s (%.17g)", jf_place(pl, pb, sizeof pb), key,
                   out[2] < 0 ? "width" : "height", out[2] < 0 ? out[2] : out[3]);
    }
    return 0;
}

int jf_flag(const json_t *obj, const char *key, const jplace_t *pl, int *out, perr_t *e)
{
    const json_t *v = json_object_get(obj, key);
    if (!v) return bad_field(pl, key, "is missing", e);
    if (json_is_boolean(v)) {
        *out = json_is_true(v);
        return 0;
    }
    int64_t i;
    if (to_int(v, &i) || (i != 0 && i != 1)) return bad_field(pl, key, "must be 0 or 1", e);
    *out = (int)i;
    return 0;
}
