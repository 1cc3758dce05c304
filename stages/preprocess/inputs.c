/* inputs.c — which images to process and their sample ids.
 *
 * Images come from the command line, from a list file (one path per line,
 * blank lines and #comments skipped, paths as written, relative to the current
 * folder), or from a COCO ground-truth file ("images": id, file_name, width,
 * height) with the images under --images DIR (default: the JSON's folder),
 * or from a folder alone (--images DIR without --dataset: every PNG in it,
 * in byte order of the file names, whatever the locale; models without COCO
 * ground truth). With a dataset, listed files are matched to it by base name; the sample id
 * is then the COCO image id, otherwise the file stem. Ids must be unique. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "prep.h"
#include "util/fsutil.h"

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static char *stem(const char *path)
{
    const char *b = base_name(path);
    const char *dot = strrchr(b, '.');
    return xstrndup(b, dot && dot != b ? (size_t)(dot - b) : strlen(b));
}

static void add_sample(prep_inputs_t *in, const char *file)
{
    in->s = xrealloc(in->s, (size_t)(in->n + 1) * sizeof *in->s);
    in->s[in->n++] = (prep_sample_t){ .file = xstrdup(file), .image_id = -1 };
}

/* A list is text: a NUL or another control character means it is not one
 * (an image or random bytes given as --list); each listed file must exist,
 * said at its line. */
static int read_list(const char *list, prep_inputs_t *in, perr_t *e)
{
    char *text;
    size_t len;
    if (read_file(list, &text, &len, e) < 0)
        return -1;
    int rc = 0, lineno = 0;
    int64_t before = in->n;
    if (memchr(text, 0, len))
        rc = BAD(e, "%s: not a list of image paths (it holds NUL bytes)", list);
    for (char *line = text, *next; !rc && line; line = next) {
        lineno++;
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        size_t n = strlen(line);
        while (n && (line[n - 1] == '\r' || line[n - 1] == ' ' || line[n - 1] == '\t'))
            line[--n] = 0;
        while (*line == ' ' || *line == '\t')
            line++;
        if (!*line || *line == '#')
            continue;
        for (const char *c = line; *c && !rc; c++)
            if ((unsigned char)*c < 0x20 || *c == 0x7f)
                rc = BAD(e, "%s:%d: not a list of image paths (control character 0x%02x)", list, lineno,
                         (unsigned char)*c);
        if (!rc && !file_exists(line))
            rc = BAD(e, "%s:%d: %s: no such file", list, lineno, line);
        if (!rc)
            add_sample(in, line);
    }
    free(text);
    if (!rc && in->n == before)
        rc = BAD(e, "%s: no image paths in the list", list);
    return rc;
}

typedef struct coco_img {
    const char *name;
    int64_t id, w, h;
} coco_img_t;

static int cmp_img(const void *a, const void *b)
{
    return strcmp(((const coco_img_t *)a)->name, ((const coco_img_t *)b)->name);
}

static int read_images(const char *dataset, json_t *root, coco_img_t **out, int64_t *n,
                       perr_t *e)
{
    json_t *imgs = json_object_get(root, "images");
    if (!json_is_array(imgs))
        return BAD(e, "%s: no \"images\" array (not a COCO ground-truth file)", dataset);
    *n = (int64_t)json_array_size(imgs);
    coco_img_t *v = xcalloc((size_t)*n + 1, sizeof *v);
    for (int64_t i = 0; i < *n; i++) {
        json_t *im = json_array_get(imgs, (size_t)i);
        json_t *id = json_object_get(im, "id"), *fn = json_object_get(im, "file_name");
        if (!json_is_integer(id) || !json_is_string(fn)) {
            free(v);
            return BAD(e, "%s: images[%lld]: needs an integer \"id\" and a \"file_name\"",
                       dataset, (long long)i);
        }
        v[i].name = json_string_value(fn);
        v[i].id = json_integer_value(id);
        json_t *w = json_object_get(im, "width"), *h = json_object_get(im, "height");
        v[i].w = json_is_integer(w) ? json_integer_value(w) : 0;
        v[i].h = json_is_integer(h) ? json_integer_value(h) : 0;
    }
    *out = v;
    return 0;
}

/* Gives samples their COCO ids: every dataset image (no files given), or
 * the listed files matched by base name. */
static int apply_dataset(const char *dataset, const char *images_dir, prep_inputs_t *in,
                         perr_t *e)
{
    json_error_t je;
    json_t *root = json_load_file(dataset, 0, &je);
    if (!root)
        return BAD(e, "%s:%d:%d: %s", dataset, je.line, je.column, je.text);
    coco_img_t *imgs = NULL;
    int64_t n = 0;
    int rc = read_images(dataset, root, &imgs, &n, e);
    if (!rc && in->n == 0) {
        char *dir = images_dir ? xstrdup(images_dir) : NULL;
        if (!dir) {
            const char *slash = strrchr(dataset, '/');
            dir = slash ? xstrndup(dataset, (size_t)(slash - dataset)) : xstrdup(".");
        }
        for (int64_t i = 0; i < n; i++) {
            char *path = path_join(dir, imgs[i].name);
            add_sample(in, path);
            free(path);
            in->s[i].image_id = imgs[i].id;
            in->s[i].coco_w = imgs[i].w;
            in->s[i].coco_h = imgs[i].h;
        }
        free(dir);
    } else if (!rc) {
        qsort(imgs, (size_t)n, sizeof *imgs, cmp_img);
        for (int64_t i = 0; i < in->n && !rc; i++) {
            coco_img_t key = { .name = base_name(in->s[i].file) };
            coco_img_t *hit = n ? bsearch(&key, imgs, (size_t)n, sizeof *imgs, cmp_img) : NULL;
            if (!hit) {
                rc = BAD(e, "%s: no image with file_name '%s' in %s", in->s[i].file, key.name,
                         dataset);
                break;
            }
            in->s[i].image_id = hit->id;
            in->s[i].coco_w = hit->w;
            in->s[i].coco_h = hit->h;
        }
    }
    free(imgs);
    json_decref(root);
    return rc;
}

static int has_ext(const char *name, const char *ext)
{
    size_t n = strlen(name), k = strlen(ext);
    return n > k && !strcasecmp(name + n - k, ext);
}

/* Every PNG of a folder, sorted (list_dir sorts by strcmp). An image this
 * stage cannot read (JPEG, ...) is refused by name rather than skipped: a
 * run on part of the folder would look like a run on all of it. Other files
 * (notes, label files, hidden ones) are not images and are left alone. */
static int read_folder(const char *dir, prep_inputs_t *in, perr_t *e)
{
    static const char *const other[] = {".jpg", ".jpeg", ".bmp", ".gif", ".webp", ".tif", ".tiff", NULL};
    char **names;
    int n = list_dir(dir, &names, e), rc = 0;
    if (n < 0) return -1;
    int64_t before = in->n;
    for (int i = 0; i < n && !rc; i++) {
        char *p = path_join(dir, names[i]);
        if (names[i][0] != '.' && !is_dir(p)) {
            if (has_ext(names[i], ".png")) add_sample(in, p);
            for (int k = 0; other[k] && !has_ext(names[i], ".png"); k++)
                if (has_ext(names[i], other[k]))
                    rc = BAD(e, "%s: only PNG images are read (convert it, or move it out of %s)", p, dir);
        }
        free(p);
    }
    free_list(names, n);
    if (!rc && in->n == before) rc = BAD(e, "%s: no PNG images in the folder", dir);
    return rc;
}

static int cmp_sample_id(const void *a, const void *b)
{
    const prep_sample_t *x = *(prep_sample_t *const *)a, *y = *(prep_sample_t *const *)b;
    return strcmp(x->id, y->id);
}

static int check_unique(const prep_inputs_t *in, perr_t *e)
{
    prep_sample_t **v = xmalloc((size_t)(in->n + 1) * sizeof *v);
    for (int64_t i = 0; i < in->n; i++)
        v[i] = &in->s[i];
    qsort(v, (size_t)in->n, sizeof *v, cmp_sample_id);
    int rc = 0;
    for (int64_t i = 1; i < in->n && !rc; i++)
        if (!strcmp(v[i - 1]->id, v[i]->id))
            rc = BAD(e, "%s and %s both give sample id '%s' (file stems must be unique)",
                     v[i - 1]->file, v[i]->file, v[i]->id);
    free(v);
    return rc;
}

int prep_inputs_build(char **files, int64_t nfiles, const char *list, const char *dataset,
                      const char *images_dir, prep_inputs_t *in, perr_t *e)
{
    memset(in, 0, sizeof *in);
    for (int64_t i = 0; i < nfiles; i++)
        add_sample(in, files[i]);
    if (list && read_list(list, in, e) < 0)
        return -1;
    if (dataset && apply_dataset(dataset, images_dir, in, e) < 0)
        return -1;
    if (!dataset && !list && !nfiles && images_dir && read_folder(images_dir, in, e) < 0)
        return -1;
    if (in->n == 0)
        return BAD(e, "no images to process (give IMAGE.png files, --list or --dataset)");
    for (int64_t i = 0; i < in->n; i++) {
        if (in->s[i].image_id >= 0) {
            char buf[32];
            snprintf(buf, sizeof buf, "%lld", (long long)in->s[i].image_id);
            in->s[i].id = xstrdup(buf);
        } else {
            in->s[i].id = stem(in->s[i].file);
        }
    }
    return check_unique(in, e);
}

void prep_inputs_free(prep_inputs_t *in)
{
    for (int64_t i = 0; i < in->n; i++) {
        free(in->s[i].file);
        free(in->s[i].id);
    }
    free(in->s);
    memset(in, 0, sizeof *in);
}
