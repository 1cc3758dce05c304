/* common.c — what every task's evaluation shares: the sample folders of a
 * dataset run, reading a sample's output tensor as float32, the shape checks
 * and the metric entries of the results JSON. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "taskeval.h"
#include <stdio.h>
#include "image/image.h"
#include "io/npy.h"
#include "io/tensorset.h"
#include "util/fsutil.h"

int te_samples(const char *dir, char ***names, int *n, perr_t *e)
{
    char **all;
    int m = list_dir(dir, &all, e);
    if (m < 0) return -1;
    int k = 0;
    for (int i = 0; i < m; i++) {
        char *p = path_join(dir, all[i]);
        if (all[i][0] != '.' && is_dir(p)) all[k++] = all[i];
        else free(all[i]);
        free(p);
    }
    if (k == 0) {
        free(all);
        return BAD(e, "%s: no sample folders (a dataset run is DIR/<sample-id>/<tensor>.npy)", dir);
    }
    *names = all;
    *n = k;
    return 0;
}

/* The sample's only .npy file when no output is named. */
static char *only_tensor(const char *sdir, perr_t *e)
{
    char **files;
    int m = list_dir(sdir, &files, e), found = -1, count = 0;
    if (m < 0) return NULL;
    for (int i = 0; i < m; i++) {
        size_t l = strlen(files[i]);
        if (l > 4 && !strcmp(files[i] + l - 4, ".npy")) { found = i; count++; }
    }
    char *r = count == 1 ? path_join(sdir, files[found]) : NULL;
    if (count != 1) BAD(e, "%s: %d output tensors: name the one to evaluate (--output)", sdir, count);
    free_list(files, m);
    return r;
}

int te_read_output(const te_opts_t *o, const char *dir, const char *sample, tensor_t *t, dtype_t *orig, perr_t *e)
{
    char *sdir = path_join(dir, sample), *path;
    if (o->output) {
        char *f = tensor_file_name(o->output);
        path = path_join(sdir, f);
        free(f);
    } else {
        path = only_tensor(sdir, e);
    }
    free(sdir);
    if (!path) return -1;
    if (!file_exists(path)) {
        int rc = BAD(e, "%s: no such output tensor (%s)", path, o->output);
        free(path);
        return rc;
    }
    tensor_t raw = {0};
    int rc = npy_read(path, &raw, e);
    if (!rc && !(dtype_is_float(raw.dtype) || dtype_is_signed_int(raw.dtype) || dtype_is_unsigned_int(raw.dtype)))
        rc = BAD(e, "%s: a %s tensor, expected numbers", path, dtype_name(raw.dtype));
    if (!rc && tensor_numel(&raw) == 0) rc = BAD(e, "%s: an empty tensor", path);
    if (!rc) {
        rc = tensor_cast(&raw, DT_FLOAT, t, e);
        if (rc) perr_prefix(e, "%s: ", path);
    }
    if (orig) *orig = raw.dtype;
    tensor_free_data(&raw);
    free(path);
    return rc;
}

int te_read_png(const char *dir, const char *sample, const char *what, image_t *im, char **path, perr_t *e)
{
    size_t l = strlen(dir) + strlen(sample) + 8;
    *path = xmalloc(l);
    snprintf(*path, l, "%s/%s.png", dir, sample);
    if (!file_exists(*path)) return BAD(e, "%s: no such file (the %s of sample '%s')", *path, what, sample);
    png_opts_t po = {.palette_index = 1};
    png_info_s_t info;
    if (png_load(*path, &po, im, &info, e)) return -1;
    if (info.bit_depth == 16) {
        image_free(im);
        return BAD(e, "%s: a 16-bit PNG: the %s must have 8 bits per sample", *path, what);
    }
    return 0;
}

static int plane_dims(const tensor_t *t, const char *what, int64_t *c, int64_t *h, int64_t *w, perr_t *e)
{
    char buf[128];
    shape_str(t->ndim, t->dims, buf, sizeof buf);
    if (t->ndim < 2) return BAD(e, "%s: shape %s: expected [1, C, H, W], [C, H, W] or [H, W]", what, buf);
    *h = t->dims[t->ndim - 2];
    *w = t->dims[t->ndim - 1];
    *c = t->ndim >= 3 ? t->dims[t->ndim - 3] : 1;
    for (int i = 0; i < t->ndim - 3; i++)
        if (t->dims[i] != 1) return BAD(e, "%s: shape %s: a batch of one is expected", what, buf);
    return 0;
}

json_t *te_metric(double v, const char *unit, int higher)
{
    return json_pack("{s:o, s:s, s:s}", "value", isfinite(v) ? json_real(v) : json_null(), "unit", unit, "better",
                     higher ? "higher" : "lower");
}

int te_read_planes(const te_opts_t *o, const char *sample, tensor_t *t, dtype_t *orig, int64_t *c, int64_t *h, int64_t *w,
                   perr_t *e)
{
    char what[1024];
    snprintf(what, sizeof what, "%s/%s", o->dt, sample);
    if (te_read_output(o, o->dt, sample, t, orig, e) || plane_dims(t, what, c, h, w, e)) {
        tensor_free_data(t);
        return -1;
    }
    return 0;
}
