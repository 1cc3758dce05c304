/* source.c — opening the sides of a comparison (source.h): telling the
 * formats apart, listing samples and tensors, loading one tensor. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "compare/source.h"
#include "io/npy.h"
#include "io/tensorproto.h"
#include "io/trtexec.h"
#include "util/fsutil.h"

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

static char *stem_of(const char *file, const char *ext)
{
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    return xstrndup(base, strlen(base) - strlen(ext));
}

/* ---- telling JSON files apart by their first bytes ------------------------ */

enum { JSON_OTHER, JSON_POLY, JSON_TRT };

static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && isspace((unsigned char)*p)) p++;
    return p;
}

/* Skips one JSON string literal; NULL when p is not at one. */
static const char *skip_str(const char *p, const char *end)
{
    if (p >= end || *p != '"') return NULL;
    for (p++; p < end && *p != '"'; p++)
        if (*p == '\\') p++;
    return p < end ? p + 1 : NULL;
}

static int starts_key(const char *p, const char *end, const char *key)
{
    size_t n = strlen(key);
    return (size_t)(end - p) >= n && !memcmp(p, key, n);
}

static int sniff_json(const char *path)
{
    char head[4096];
    FILE *f = fopen(path, "rb");
    if (!f) return JSON_OTHER;
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    if (trtexec_sniff_json(head, n)) return JSON_TRT;
    const char *end = head + n, *p = skip_ws(head, end);
    if (p < end && *p == '{') {                   /* RunResults: {"lst": ... */
        p = skip_ws(p + 1, end);
        return starts_key(p, end, "\"lst\"") ? JSON_POLY : JSON_OTHER;
    }
    if (p >= end || *p != '[') return JSON_OTHER; /* inputs: [{"name": {"array": ... */
    p = skip_ws(p + 1, end);
    if (p >= end || *p != '{') return JSON_OTHER;
    p = skip_str(skip_ws(p + 1, end), end);
    if (!p) return JSON_OTHER;
    p = skip_ws(p, end);
    if (p >= end || *p != ':') return JSON_OTHER;
    p = skip_ws(p + 1, end);
    if (p >= end || *p != '{') return JSON_OTHER;
    p = skip_ws(p + 1, end);
    return starts_key(p, end, "\"array\"") || starts_key(p, end, "\"values\"") ||
           starts_key(p, end, "\"polygraphy_class\"") || starts_key(p, end, "\"__polygraphy") ? JSON_POLY : JSON_OTHER;
}

/* ---- sides ---------------------------------------------------------------- */

static void add_sample(cmp_side_t *s, const char *id, src_kind_t kind, const char *path, int iter)
{
    s->s = xrealloc(s->s, (size_t)(s->n + 1) * sizeof *s->s);
    cmp_sample_ref_t *r = &s->s[s->n++];
    r->id = xstrdup(id);
    r->kind = kind;
    r->path = xstrdup(path);
    r->iter = iter;
}

static int is_tensor_file(const char *f)
{
    int io, nd;
    int64_t d[TENSOR_MAX_DIMS];
    dtype_t dt;
    char *name = NULL;
    int raw = ends_with(f, ".raw") && trtexec_raw_name(f, &name, &io, &nd, d, &dt) == 0;
    free(name);
    return ends_with(f, ".npy") || ends_with(f, ".pb") || raw;
}

/* A folder: a tensor set when it holds tensor files, else a tree whose
 * samples are its sub-folders and its .npz / Polygraphy / trtexec files. */
static int open_dir(const char *path, cmp_side_t *s, perr_t *e)
{
    char **files;
    int n = list_dir(path, &files, e);
    if (n < 0) return -1;
    int tensors = 0;
    for (int i = 0; i < n; i++) tensors += is_tensor_file(files[i]);
    if (n == 0) {   /* nothing to compare is an input error, not a failed check */
        free_list(files, n);
        return BAD(e, "%s: empty folder: nothing to compare", path);
    }
    if (tensors) {
        s->format = "tensor set";
        add_sample(s, "", SRC_SETDIR, path, 0);
        free_list(files, n);
        return 0;
    }
    s->tree = 1;
    s->format = "folder of samples";
    for (int i = 0; i < n; i++) {
        char *full = path_join(path, files[i]);
        if (is_dir(full)) {
            add_sample(s, files[i], SRC_SETDIR, full, 0);
        } else if (ends_with(files[i], ".npz")) {
            char *id = stem_of(files[i], ".npz");
            add_sample(s, id, SRC_NPZ, full, 0);
            free(id);
        } else if (ends_with(files[i], ".json")) {
            int kind = sniff_json(full);
            char *id = stem_of(files[i], ".json");
            if (kind != JSON_OTHER) add_sample(s, id, kind == JSON_TRT ? SRC_TRTJSON : SRC_POLY, full, 0);
            free(id);
        }
        free(full);
    }
    free_list(files, n);
    if (s->n == 0) return BAD(e, "%s: no tensor set in this folder (no tensor files, sample folders, .npz or tensor JSON)", path);
    return 0;
}

/* One Polygraphy file: one iteration is a single set, several are samples
 * matched by position. */
static int open_poly(const char *path, const char *runner, cmp_side_t *s, perr_t *e)
{
    s->doc = xcalloc(1, sizeof *s->doc);
    if (poly_open(path, NULL, runner, s->doc, e)) {
        free(s->doc);
        s->doc = NULL;
        return -1;
    }
    s->format = s->doc->is_inputs ? "Polygraphy inputs" : "Polygraphy RunResults";
    if (s->doc->niters == 0) return BAD(e, "%s: holds no iterations", path);
    s->positional = s->doc->niters > 1;
    for (int i = 0; i < s->doc->niters; i++) {
        char id[32] = "";
        if (s->positional) snprintf(id, sizeof id, "%d", i);
        add_sample(s, id, SRC_POLY, path, i);
    }
    return 0;
}

static int open_file(const char *path, const char *runner, cmp_side_t *s, perr_t *e)
{
    if (ends_with(path, ".json")) {
        int kind = sniff_json(path);
        if (kind == JSON_TRT && !runner) {
            s->format = "trtexec --exportOutput";
            add_sample(s, "", SRC_TRTJSON, path, 0);
            return 0;
        }
        return open_poly(path, runner, s, e);
    }
    if (runner) return BAD(e, "%s: no such file", s->path);
    if (ends_with(path, ".npz")) { s->format = "npz"; add_sample(s, "", SRC_NPZ, path, 0); return 0; }
    if (ends_with(path, ".npy")) { s->format = "npy"; add_sample(s, "", SRC_NPY, path, 0); return 0; }
    if (ends_with(path, ".pb")) { s->format = "ONNX TensorProto"; add_sample(s, "", SRC_PB, path, 0); return 0; }
    if (ends_with(path, ".raw")) { s->format = "trtexec raw binding"; add_sample(s, "", SRC_RAW, path, 0); return 0; }
    return BAD(e, "%s: not a tensor set (a folder, .npz, .npy, .pb, .raw, or Polygraphy/trtexec .json)", path);
}

int side_open(const char *path, cmp_side_t *s, perr_t *e)
{
    memset(s, 0, sizeof *s);
    s->path = xstrdup(path);
    int rc;
    if (is_dir(path)) {
        rc = open_dir(path, s, e);
    } else if (file_exists(path)) {
        rc = open_file(path, NULL, s, e);
    } else {
        /* FILE.json:RUNNER picks one runner of a RunResults file */
        const char *colon = strrchr(path, ':');
        char *file = colon ? xstrndup(path, (size_t)(colon - path)) : NULL;
        if (file && ends_with(file, ".json") && file_exists(file)) {
            s->runner = xstrdup(colon + 1);
            rc = open_file(file, s->runner, s, e);
        } else {
            rc = BAD(e, "%s: no such file or folder", path);
        }
        free(file);
    }
    if (rc) side_free(s);
    return rc;
}

void side_free(cmp_side_t *s)
{
    for (int i = 0; i < s->n; i++) {
        free(s->s[i].id);
        free(s->s[i].path);
    }
    free(s->s);
    if (s->doc) {
        poly_close(s->doc);
        free(s->doc);
    }
    free(s->runner);
    free(s->path);
    memset(s, 0, sizeof *s);
}

/* ---- samples ---------------------------------------------------------------- */

static void add_entry(cmp_set_t *set, char *name, ent_kind_t kind, const char *path, int index)
{
    set->ent = xrealloc(set->ent, (size_t)(set->n + 1) * sizeof *set->ent);
    cmp_entry_t *en = &set->ent[set->n++];
    en->name = name;
    en->kind = kind;
    en->path = path ? xstrdup(path) : NULL;
    en->index = index;
}

/* A .pb file names its tensor inside: read it for the name (a nameless one
 * is named by its file stem). */
static int pb_name(const char *full, const char *file, char **name, perr_t *e)
{
    tensor_t t = {0};
    if (pb_read(full, &t, name, e)) return -1;
    tensor_free_data(&t);
    if (!**name) {
        free(*name);
        *name = stem_of(file, ".pb");
    }
    return 0;
}

static int list_setdir(const char *dir, cmp_set_t *set, perr_t *e)
{
    char **files;
    int n = list_dir(dir, &files, e);
    if (n < 0) return -1;
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        char *full = path_join(dir, files[i]), *name = NULL;
        int io, nd;
        int64_t d[TENSOR_MAX_DIMS];
        dtype_t dt;
        if (ends_with(files[i], ".npy")) {
            char *stem = stem_of(files[i], ".npy");
            name = name_decode(stem);
            free(stem);
            if (!name) rc = BAD(e, "%s: file name is not a valid encoded tensor name", full);
            else add_entry(set, name, ENT_NPY, full, 0);
        } else if (ends_with(files[i], ".pb")) {
            if (!(rc = pb_name(full, files[i], &name, e))) add_entry(set, name, ENT_PB, full, 0);
        } else if (ends_with(files[i], ".raw") && !trtexec_raw_name(files[i], &name, &io, &nd, d, &dt)) {
            add_entry(set, name, ENT_RAW, full, 0);
        }
        free(full);
    }
    free_list(files, n);
    return rc;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(((const cmp_entry_t *)a)->name, ((const cmp_entry_t *)b)->name);
}

int set_open(const cmp_side_t *s, int sample, cmp_set_t *set, perr_t *e)
{
    memset(set, 0, sizeof *set);
    set->side = s;
    const cmp_sample_ref_t *r = &s->s[sample];
    int rc = 0;
    switch (r->kind) {
    case SRC_SETDIR:
        rc = list_setdir(r->path, set, e);
        break;
    case SRC_NPZ:
        if (!(rc = npz_open(r->path, &set->z, e))) {
            set->has_z = 1;
            for (int i = 0; i < set->z.n; i++) add_entry(set, xstrdup(set->z.m[i].name), ENT_NPZ, NULL, i);
        }
        break;
    case SRC_POLY:
        if (s->doc) {
            set->doc = s->doc;
        } else {
            set->doc = xcalloc(1, sizeof *set->doc);
            set->own_doc = 1;
            if ((rc = poly_open(r->path, NULL, NULL, set->doc, e))) break;
            if (set->doc->niters != 1)
                rc = BAD(e, "%s: a sample file must hold one iteration, not %d", r->path, set->doc->niters);
        }
        set->iter = r->iter;
        for (int i = 0; !rc && i < set->doc->it[r->iter].n; i++)
            add_entry(set, xstrdup(set->doc->it[r->iter].names[i]), ENT_POLY, NULL, i);
        break;
    case SRC_TRTJSON:
        if (!(rc = trtexec_read_json(r->path, &set->mem, e)))
            for (int i = 0; i < set->mem.n; i++) add_entry(set, xstrdup(set->mem.names[i]), ENT_MEM, NULL, i);
        break;
    case SRC_NPY: {
        char *stem = stem_of(r->path, ".npy"), *name = name_decode(stem);
        free(stem);
        add_entry(set, name ? name : xstrdup("tensor"), ENT_NPY, r->path, 0);
        break;
    }
    case SRC_PB: {
        char *name = NULL;
        if (!(rc = pb_name(r->path, r->path, &name, e))) add_entry(set, name, ENT_PB, r->path, 0);
        break;
    }
    case SRC_RAW: {
        char *name = NULL;
        int io, nd;
        int64_t d[TENSOR_MAX_DIMS];
        dtype_t dt;
        const char *base = strrchr(r->path, '/');
        if (trtexec_raw_name(base ? base + 1 : r->path, &name, &io, &nd, d, &dt))
            rc = BAD(e, "%s: not a trtexec raw binding file name (NAME.output.D0.D1....TYPE.raw)", r->path);
        else add_entry(set, name, ENT_RAW, r->path, 0);
        break;
    }
    }
    if (!rc) {
        /* names sorted for lookups; a name held twice is ambiguous */
        if (set->n > 1) qsort(set->ent, (size_t)set->n, sizeof *set->ent, cmp_names);
        for (int i = 1; i < set->n && !rc; i++)
            if (!strcmp(set->ent[i].name, set->ent[i - 1].name))
                rc = BAD(e, "%s%s%s: tensor '%s' appears twice", s->path, r->id[0] ? " sample " : "", r->id, set->ent[i].name);
    }
    if (rc) set_close(set);
    return rc;
}

int set_find(const cmp_set_t *set, const char *name)
{
    int lo = 0, hi = set->n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2, c = strcmp(set->ent[mid].name, name);
        if (!c) return mid;
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

/* A .npy file mapped rather than read: the page cache is copied once, into
 * the tensor (read_file would grow a buffer and copy twice). */
static int load_npy(const char *path, tensor_t *t, perr_t *e)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0) close(fd);
        return BAD(e, "%s: cannot open: %s", path, strerror(errno));
    }
    if (st.st_size < 4096) {   /* small files: not worth a mapping */
        close(fd);
        return npy_read(path, t, e);
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) return npy_read(path, t, e);
    int rc = npy_parse(m, (size_t)st.st_size, path, t, e);
    munmap(m, (size_t)st.st_size);
    return rc;
}

int set_load(const cmp_set_t *set, int k, tensor_t *t, perr_t *e)
{
    const cmp_entry_t *en = &set->ent[k];
    memset(t, 0, sizeof *t);
    char *name = NULL;
    int rc = 0;
    switch (en->kind) {
    case ENT_NPY: rc = load_npy(en->path, t, e); break;
    case ENT_PB: rc = pb_read(en->path, t, &name, e); break;
    case ENT_RAW: rc = trtexec_read_raw(en->path, t, &name, e); break;
    case ENT_NPZ: rc = npz_load(&set->z, en->index, t, e); break;
    case ENT_POLY: rc = poly_load(set->doc, set->iter, en->index, t, e); break;
    case ENT_MEM:
        *t = *set->mem.ts[en->index];
        t->owns = 0;          /* a view of the set's tensor */
        break;
    }
    free(name);
    return rc;
}

void set_close(cmp_set_t *set)
{
    for (int i = 0; i < set->n; i++) {
        free(set->ent[i].name);
        free(set->ent[i].path);
    }
    free(set->ent);
    if (set->has_z) npz_close(&set->z);
    if (set->own_doc) {
        poly_close(set->doc);
        free(set->doc);
    }
    tensorset_free(&set->mem);
    memset(set, 0, sizeof *set);
}
