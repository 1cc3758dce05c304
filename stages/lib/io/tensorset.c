/* tensorset.c — tensor-set folders: one .npy (or .pb) file per tensor. */
#include <stdlib.h>
#include <string.h>
#include "io/tensorset.h"
#include "io/npy.h"
#include "io/npz.h"
#include "io/polygraphy.h"
#include "io/tensorproto.h"
#include "util/fsutil.h"

void tensorset_add(tensor_set_t *s, const char *name, tensor_t *t)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 8;
        s->names = xrealloc(s->names, s->cap * sizeof *s->names);
        s->ts = xrealloc(s->ts, s->cap * sizeof *s->ts);
    }
    s->names[s->n] = xstrdup(name);
    s->ts[s->n++] = t;
}

tensor_t *tensorset_get(const tensor_set_t *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->names[i], name)) return s->ts[i];
    return NULL;
}

void tensorset_free(tensor_set_t *s)
{
    for (int i = 0; i < s->n; i++) {
        free(s->names[i]);
        tensor_free(s->ts[i]);
    }
    free(s->names);
    free(s->ts);
    memset(s, 0, sizeof *s);
}

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

/* ONNX test data names files input_0.pb, input_1.pb ... input_10.pb: order
 * them numerically so positional binding follows the model's input order. */
static int numeric_suffix(const char *f)
{
    const char *u = strrchr(f, '_');
    return u ? atoi(u + 1) : 0;
}

static int cmp_pb(const void *a, const void *b)
{
    const char *x = *(char *const *)a, *y = *(char *const *)b;
    return numeric_suffix(x) - numeric_suffix(y);
}

/* A single .npz, or a Polygraphy JSON file of one iteration, as a set. */
static int read_file_set(const char *path, tensor_set_t *s, perr_t *e)
{
    int rc = 0;
    if (ends_with(path, ".npz")) {
        npz_t z;
        if (npz_open(path, &z, e)) return -1;
        for (int i = 0; i < z.n && !rc; i++) {
            tensor_t *t = xcalloc(1, sizeof *t);
            if ((rc = npz_load(&z, i, t, e))) free(t);
            else tensorset_add(s, z.m[i].name, t);
        }
        npz_close(&z);
    } else {
        poly_doc_t d;
        if (poly_open(path, NULL, NULL, &d, e)) return -1;
        if (d.niters != 1) rc = BAD(e, "%s: holds %d iterations, a tensor set is one", path, d.niters);
        for (int i = 0; !rc && i < d.it[0].n; i++) {
            tensor_t *t = xcalloc(1, sizeof *t);
            if ((rc = poly_load(&d, 0, i, t, e))) free(t);
            else tensorset_add(s, d.it[0].names[i], t);
        }
        poly_close(&d);
    }
    if (rc) tensorset_free(s);
    return rc;
}

int tensorset_read(const char *path, tensor_set_t *s, perr_t *e)
{
    memset(s, 0, sizeof *s);
    if (!is_dir(path) && (ends_with(path, ".npz") || ends_with(path, ".json")) && file_exists(path))
        return read_file_set(path, s, e);
    if (!is_dir(path)) return BAD(e, "%s: not a tensor-set folder", path);
    char **files;
    int n = list_dir(path, &files, e);
    if (n < 0) return -1;
    char **pbs = xmalloc((n + 1) * sizeof *pbs);
    int npb = 0, rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        char *full = path_join(path, files[i]);
        if (ends_with(files[i], ".npy")) {
            char *stem = xstrndup(files[i], strlen(files[i]) - 4);
            char *name = name_decode(stem);
            tensor_t *t = xcalloc(1, sizeof *t);
            if (!name) {
                rc = BAD(e, "%s: file name is not a valid encoded tensor name", full);
            } else if (npy_read(full, t, e)) {
                rc = -1;
            } else {
                tensorset_add(s, name, t);
                t = NULL;
            }
            free(t);
            free(name);
            free(stem);
        } else if (ends_with(files[i], ".pb")) {
            pbs[npb++] = files[i];
        }
        free(full);
    }
    qsort(pbs, npb, sizeof *pbs, cmp_pb);
    for (int i = 0; i < npb && !rc; i++) {
        char *full = path_join(path, pbs[i]);
        tensor_t *t = xcalloc(1, sizeof *t);
        char *name = NULL;
        if (pb_read(full, t, &name, e)) {
            rc = -1;
            free(t);
        } else {
            tensorset_add(s, name, t);
        }
        free(name);
        free(full);
    }
    free(pbs);
    free_list(files, n);
    if (rc) tensorset_free(s);
    return rc;
}

char *tensor_file_name(const char *name)
{
    char *enc = name_encode(name);
    size_t n = strlen(enc) + 5;
    char *file = xmalloc(n);
    snprintf(file, n, "%s.npy", enc);
    free(enc);
    return file;
}

int tensorset_write(const char *dir, const tensor_set_t *s, perr_t *e)
{
    if (mkdir_p(dir, e)) return -1;
    for (int i = 0; i < s->n; i++) {
        char *file = tensor_file_name(s->names[i]);
        char *full = path_join(dir, file);
        int rc = npy_write(full, s->ts[i], e);
        free(full); free(file);
        if (rc) return -1;
    }
    return 0;
}
