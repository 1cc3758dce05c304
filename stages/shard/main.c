/* shard — splits a validation's samples into N deterministic shards and
 * merges the shards' outputs back into one folder (docs/scale-out.md).
 *
 *   shard select --count N --index I --dataset GT.json --images DIR -o LIST
 *   shard select --count N --index I --dir SETS -o SHARDDIR
 *   shard merge -o OUT [--stats STATS.json] SHARD_OUT...
 *
 * A sample belongs to shard FNV-1a-32(sample id) mod N: the sample id is the
 * COCO image id (decimal) with a dataset, the sample folder's name for ready
 * tensor sets. The split depends on the id alone, never on the order of the
 * files or the other samples, so adding a sample moves no other one.
 *
 * select writes, for a dataset, the list of image files preprocess --list
 * takes (paths as preprocess builds them itself: DIR/file_name); for ready
 * sets, a folder of links to the shard's sample folders. merge hard-links
 * (or copies) every shard's sample folders into OUT, staged and swapped in
 * whole, and joins their stats (samples sorted by name) and index.json. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <jansson.h>
#include "util/args.h"
#include "util/err.h"
#include "util/fsutil.h"
#include "util/jsonfile.h"

static const char usage[] =
    "usage: shard select --count N --index I (--dataset GT.json --images DIR | --dir SETS) -o OUT\n"
    "       shard merge -o OUT [--stats STATS.json] SHARD_OUT...\n"
    "  --count N     number of shards (1..4096)\n"
    "  --index I     this shard (0..N-1)\n"
    "  --dataset F   COCO ground truth: writes OUT, the shard's image files, one a line\n"
    "  --images DIR  folder of the dataset's images [the JSON's folder]\n"
    "  --dir SETS    folder of ready tensor sets: OUT becomes a folder of links to the shard's\n"
    "  --stats F     merge: also join the SHARD_OUT/../stats.json files into F\n"
    "A sample goes to shard FNV-1a-32(sample id) mod N.\n"
    "Exit: 0 done, 2 bad usage or bad input (the file is named), 3 internal error.\n";

static uint32_t hash_id(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++) { h ^= (unsigned char)*s; h *= 16777619u; }
    return h;
}

static int in_shard(const char *id, long count, long index)
{
    return (long)(hash_id(id) % (uint32_t)count) == index;
}

/* A file_name names a file below the images folder: not empty, not
 * absolute, no ".." part (a dataset must not make preprocess read
 * ../../../etc/passwd). */
static int inside_folder(const char *f)
{
    if (!*f || *f == '/') return 0;
    for (const char *p = f; *p; p = strchr(p, '/') ? strchr(p, '/') + 1 : p + strlen(p))
        if (!strncmp(p, "..", 2) && (p[2] == '/' || !p[2])) return 0;
    return 1;
}

/* The dataset's images of this shard, as preprocess --list reads them. */
static int select_dataset(const char *gt, const char *images, long count, long index, const char *out, perr_t *e)
{
    json_error_t je;
    json_t *root = json_load_file(gt, 0, &je);
    if (!root) return BAD(e, "%s:%d:%d: %s", gt, je.line, je.column, je.text);
    json_t *imgs = json_object_get(root, "images");
    if (!json_is_array(imgs)) { json_decref(root); return BAD(e, "%s: no \"images\" array (not a COCO ground-truth file)", gt); }
    char *dir = images ? xstrdup(images) : NULL;
    if (!dir) { const char *sl = strrchr(gt, '/'); dir = sl ? xstrndup(gt, (size_t)(sl - gt)) : xstrdup("."); }
    size_t cap = 4096, len = 0, i;
    char *text = xmalloc(cap);
    json_t *im;
    int rc = 0, n = 0;
    json_array_foreach(imgs, i, im) {
        json_t *id = json_object_get(im, "id"), *fn = json_object_get(im, "file_name");
        if (!json_is_integer(id) || !json_is_string(fn)) { rc = BAD(e, "%s: images[%zu]: needs an integer \"id\" and a \"file_name\"", gt, i); break; }
        char ids[32];
        snprintf(ids, sizeof ids, "%lld", (long long)json_integer_value(id));
        if (!in_shard(ids, count, index)) continue;
        const char *f = json_string_value(fn);
        if (strchr(f, '\n')) { rc = BAD(e, "%s: images[%zu]: a file_name holds a newline", gt, i); break; }
        if (!inside_folder(f)) { rc = BAD(e, "%s: images[%zu]: file_name '%s' leaves the images folder", gt, i, f); break; }
        size_t need = strlen(dir) + strlen(f) + 3;
        while (len + need >= cap) text = xrealloc(text, cap *= 2);
        len += (size_t)snprintf(text + len, cap - len, "%s/%s\n", dir, f);
        n++;
    }
    if (!rc && !n) rc = BAD(e, "%s: shard %ld of %ld holds no image (fewer shards, please)", gt, index, count);
    if (!rc) rc = atomic_write(out, text, len, e);
    free(text); free(dir); json_decref(root);
    return rc;
}

/* The ready tensor sets of this shard, as a folder of absolute links. */
static int select_dir(const char *sets, long count, long index, const char *out, perr_t *e)
{
    char **names, real[PATH_MAX];
    int n = list_dir(sets, &names, e), rc = 0, found = 0;
    if (n < 0) return -1;
    if (!realpath(sets, real)) { free_list(names, n); return BAD(e, "%s: %s", sets, strerror(errno)); }
    char *tmp = dir_stage_begin(out, e);
    for (int i = 0; tmp && !rc && i < n; i++) {
        char *src = path_join(real, names[i]);
        if (is_dir(src) && in_shard(names[i], count, index)) {
            char *dst = path_join(tmp, names[i]);
            if (symlink(src, dst)) rc = write_error(e, dst, errno);
            found++;
            free(dst);
        }
        free(src);
    }
    if (!tmp) rc = -1;
    else if (!rc && !found) rc = BAD(e, "%s: shard %ld of %ld holds no sample folder (fewer shards, please)", sets, index, count);
    if (tmp && !rc) rc = dir_stage_commit(tmp, out, e);
    else if (tmp) { remove_tree(tmp); free(tmp); }
    free_list(names, n);
    return rc;
}

/* A hard link where the file system allows one, else a copy. A failed copy
 * names the copy's own failure (a full disk: ENOSPC), not the link's EXDEV. */
static int copy_file(const char *src, const char *dst, perr_t *e)
{
    if (!link(src, dst)) return 0;
    if (errno != EXDEV && errno != EPERM && errno != EMLINK && errno != ENOTSUP) return write_error(e, dst, errno);
    char *data; size_t n;
    if (read_file(src, &data, &n, e)) return -1;
    int fd = open(dst, O_WRONLY | O_CREAT | O_EXCL, 0644), err = fd < 0 ? errno : 0;
    for (size_t done = 0; !err && done < n;) {
        ssize_t w = write(fd, data + done, n - done);
        if (w > 0) done += (size_t)w;
        else err = w < 0 ? errno : ENOSPC;   /* write(2) gives 0 only when nothing more fits */
    }
    if (fd >= 0 && close(fd) && !err) err = errno;
    if (err && fd >= 0) unlink(dst);
    free(data);
    return err ? write_error(e, dst, err) : 0;
}

/* Links SRC's tree into DST; a name both already hold is an overlap of shards. */
static int merge_tree(const char *src, const char *dst, int top, perr_t *e)
{
    char **names;
    int n = list_dir(src, &names, e), rc = 0;
    if (n < 0) return -1;
    for (int i = 0; !rc && i < n; i++) {
        if (top && !strcmp(names[i], "index.json")) continue;   /* joined by merge_listing */
        char *s = path_join(src, names[i]), *d = path_join(dst, names[i]);
        if (is_dir(s)) rc = (is_dir(d) || !mkdir_p(d, e)) ? merge_tree(s, d, 0, e) : -1;
        else if (file_exists(d)) rc = BAD(e, "%s: also in another shard (shards overlap)", s);
        else rc = copy_file(s, d, e);
        free(s); free(d);
    }
    free_list(names, n);
    return rc;
}

static int cmp_by_key(const void *a, const void *b, const char *key)
{
    const char *x = json_string_value(json_object_get(*(json_t *const *)a, key));
    const char *y = json_string_value(json_object_get(*(json_t *const *)b, key));
    return strcmp(x ? x : "", y ? y : "");
}
static const char *sort_key;
static int cmp_sample(const void *a, const void *b) { return cmp_by_key(a, b, sort_key); }

/* Joins the "samples" arrays of the shards' listings (infer's stats.json,
 * preprocess's index.json), sorted by KEY; the other keys come from the
 * first shard. Shards without the file give none (index.json only when
 * every shard has one). */
static int merge_listing(char **outs, int n, const char *rel, const char *key, const char *path, int indent, perr_t *e)
{
    json_t *root = NULL, *all = json_array();
    int rc = 0;
    sort_key = key;
    for (int i = 0; !rc && i < n; i++) {
        char *sp = path_join(outs[i], rel);
        json_error_t je;
        json_t *s = json_load_file(sp, 0, &je);
        if (!s && indent == 2 && !file_exists(sp)) { free(sp); json_decref(all); json_decref(root); return 0; }
        if (!s || !json_is_array(json_object_get(s, "samples"))) rc = BAD(e, "%s: %s", sp, s ? "no \"samples\" array" : je.text);
        else json_array_extend(all, json_object_get(s, "samples"));
        if (!rc && !root) root = json_deep_copy(s);
        json_decref(s);
        free(sp);
    }
    size_t k = json_array_size(all);
    json_t **v = xcalloc(k + 1, sizeof *v);
    for (size_t i = 0; i < k; i++) v[i] = json_array_get(all, i);
    qsort(v, k, sizeof *v, cmp_sample);
    json_t *sorted = json_array();
    for (size_t i = 0; i < k; i++) json_array_append(sorted, v[i]);
    free(v);
    if (!rc) {
        json_object_set_new(root, "samples", sorted);
        sorted = NULL;
        /* as preprocess (indent 2) or infer (indent 1) writes it */
        rc = write_json(path, root, indent == 2 ? JSON_INDENT(2) : JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6), e);
    }
    json_decref(sorted); json_decref(all); json_decref(root);
    return rc;
}

static int merge(char **outs, int n, const char *out, const char *stats, perr_t *e)
{
    char *tmp = dir_stage_begin(out, e);
    if (!tmp) return -1;
    int rc = 0;
    for (int i = 0; !rc && i < n; i++) {
        if (!is_dir(outs[i])) rc = BAD(e, "%s: no such shard output (the shard has not run)", outs[i]);
        else rc = merge_tree(outs[i], tmp, 1, e);
    }
    char *index = path_join(tmp, "index.json");
    if (!rc) rc = merge_listing(outs, n, "index.json", "sample_id", index, 2, e);
    free(index);
    /* the stats first: a corrupt shard's stats.json leaves OUT as it was */
    if (!rc && stats) rc = merge_listing(outs, n, "../stats.json", "sample", stats, 1, e);
    if (!rc) rc = dir_stage_commit(tmp, out, e);
    else { remove_tree(tmp); free(tmp); }
    return rc;
}

int main(int argc, char **argv)
{
    enum { O_COUNT = 256, O_INDEX, O_DATASET, O_IMAGES, O_DIR, O_STATS };
    static const struct option longopts[] = {
        {"count", required_argument, 0, O_COUNT}, {"index", required_argument, 0, O_INDEX},
        {"dataset", required_argument, 0, O_DATASET}, {"images", required_argument, 0, O_IMAGES},
        {"dir", required_argument, 0, O_DIR}, {"stats", required_argument, 0, O_STATS},
        {"output", required_argument, 0, 'o'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0},
    };
    args_expand("shard", &argc, &argv);
    if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) { fputs(usage, stdout); return 0; }
    if (argc < 2) die_usage("shard", "expected select or merge");
    const char *cmd = argv[1], *count_s = NULL, *index_s = NULL, *gt = NULL, *images = NULL, *dir = NULL,
               *stats = NULL, *out = NULL;
    int c;
    optind = 2;
    while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
        switch (c) {
        case O_COUNT: count_s = optarg; break;
        case O_INDEX: index_s = optarg; break;
        case O_DATASET: gt = optarg; break;
        case O_IMAGES: images = optarg; break;
        case O_DIR: dir = optarg; break;
        case O_STATS: stats = optarg; break;
        case 'o': out = optarg; break;
        case 'h': fputs(usage, stdout); return 0;
        default: die_usage("shard", "unknown option");
        }
    }
    if (!out) die_usage("shard", "missing -o OUT");
    perr_t e = {0};
    int rc;
    if (!strcmp(cmd, "select")) {
        if (!count_s || !index_s) die_usage("shard", "select needs --count and --index");
        long count = (long)opt_int("shard", "--count", count_s, 1, 4096);
        long index = (long)opt_int("shard", "--index", index_s, 0, count - 1);
        if (!gt == !dir) die_usage("shard", "select needs one of --dataset or --dir");
        rc = gt ? select_dataset(gt, images, count, index, out, &e) : select_dir(dir, count, index, out, &e);
    } else if (!strcmp(cmd, "merge")) {
        if (optind >= argc) die_usage("shard", "merge needs at least one SHARD_OUT");
        rc = merge(argv + optind, argc - optind, out, stats, &e);
    } else die_usage("shard", "unknown command '%s' (select or merge)", cmd);
    if (rc) perr_die("shard", &e);
    return 0;
}
