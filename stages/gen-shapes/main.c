/* gen-shapes — writes a split of the synthetic shapes detection dataset
 * (stages/lib/image/shapes.h): PNG images and COCO ground truth.
 *
 *   gen-shapes --split val --count 200 -o DIR
 *   gen-shapes --split train --seed 7 --start 40000 --count 5000 -o DIR
 *
 * DIR/annotations.json (COCO: images, annotations with bbox/area/iscrowd,
 * categories 1..6) and DIR/images/NNNNNNN.png. Image i of a split (0-based,
 * id i+1) depends only on (seed, split, i), so shards made with --start can be
 * merged and val-200 is the first 200 images of val-2000. DIR appears only
 * when complete. */
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "image/shapes.h"
#include "util/fsutil.h"

static const char usage[] =
    "usage: gen-shapes --split train|val --count N -o DIR [options]\n"
    "  -s, --split NAME     train or val (independent image streams)\n"
    "  -n, --count N        number of images\n"
    "      --start I        index of the first image (0-based; ids are I+1..) [0]\n"
    "      --seed S         dataset seed [2024]\n"
    "  -o, --output DIR     writes DIR/annotations.json and DIR/images/*.png\n"
    "      --png-level L    zlib level 0..9 [6]\n"
    "  -j, --jobs N         images drawn in parallel [number of CPUs]\n"
    "  -h, --help\n"
    "Exit: 0 done, 2 bad usage or an output that cannot be written.\n";

typedef struct job {
    const char *imgdir;
    uint64_t seed, salt;
    long long start, count;
    int level;
    long long next;             /* shared counter, under lock */
    pthread_mutex_t lock;
    shapes_scene_t *scenes;     /* annotations kept, pixels freed */
    perr_t err;
    int failed;
} job_t;

static void *worker(void *arg)
{
    job_t *jb = arg;
    for (;;) {
        pthread_mutex_lock(&jb->lock);
        long long i = jb->failed ? jb->count : jb->next++;
        pthread_mutex_unlock(&jb->lock);
        if (i >= jb->count)
            return NULL;
        long long idx = jb->start + i;
        shapes_scene_t *sc = &jb->scenes[i];
        shapes_scene_make(sc, shapes_image_seed(jb->seed, jb->salt, (uint64_t)idx));
        char path[4096];
        snprintf(path, sizeof path, "%s/%07lld.png", jb->imgdir, idx + 1);
        perr_t e = {0};
        int rc = shapes_write_png(path, sc->rgb, sc->w, sc->h, jb->level, &e);
        shapes_scene_free(sc);
        if (rc) {
            pthread_mutex_lock(&jb->lock);
            if (!jb->failed) {
                jb->failed = 1;
                jb->err = e;
            }
            pthread_mutex_unlock(&jb->lock);
            return NULL;
        }
    }
}

static void write_json(FILE *f, const job_t *jb, const char *split)
{
    fprintf(f, "{\"info\": {\"description\": \"parity synthetic shapes\", \"generator\": "
               "\"gen-shapes\", \"split\": \"%s\", \"seed\": %llu, \"start\": %lld, "
               "\"count\": %lld},\n \"licenses\": [],\n \"images\": [",
            split, (unsigned long long)jb->seed, jb->start, jb->count);
    for (long long i = 0; i < jb->count; i++) {
        const shapes_scene_t *sc = &jb->scenes[i];
        long long id = jb->start + i + 1;
        fprintf(f, "%s\n  {\"id\": %lld, \"file_name\": \"%07lld.png\", \"width\": %d, "
                   "\"height\": %d}", i ? "," : "", id, id, sc->w, sc->h);
    }
    fprintf(f, "\n ],\n \"annotations\": [");
    long long nwritten = 0;
    for (long long i = 0; i < jb->count; i++) {
        const shapes_scene_t *sc = &jb->scenes[i];
        for (int k = 0; k < sc->nann; k++) {
            const shapes_ann_t *a = &sc->ann[k];
            /* Annotation ids: image id * 100 + k, unique across shards. */
            long long aid = (jb->start + i + 1) * 100 + k;
            fprintf(f, "%s\n  {\"id\": %lld, \"image_id\": %lld, \"category_id\": %d, "
                       "\"bbox\": [%.2f, %.2f, %.2f, %.2f], \"area\": %.1f, \"iscrowd\": 0, "
                       "\"visible\": %.3f}",
                    nwritten++ ? "," : "", aid, jb->start + i + 1,
                    a->cat + 1, a->bbox[0], a->bbox[1], a->bbox[2], a->bbox[3], a->area,
                    a->visible);
        }
    }
    fprintf(f, "\n ],\n \"categories\": [");
    for (int c = 0; c < SHAPE_NCAT; c++)
        fprintf(f, "%s\n  {\"id\": %d, \"name\": \"%s\", \"supercategory\": \"shape\"}",
                c ? "," : "", c + 1, shapes_category_names[c]);
    fprintf(f, "\n ]\n}\n");
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"split", required_argument, 0, 's'}, {"count", required_argument, 0, 'n'},
        {"start", required_argument, 0, 1}, {"seed", required_argument, 0, 2},
        {"output", required_argument, 0, 'o'}, {"png-level", required_argument, 0, 3},
        {"jobs", required_argument, 0, 'j'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0},
    };
    const char *prog = "gen-shapes", *split = NULL, *out = NULL;
    job_t jb = {0};
    jb.seed = 2024;
    jb.level = 6;
    jb.count = -1;
    long jobs = sysconf(_SC_NPROCESSORS_ONLN);
    int c;
    while ((c = getopt_long(argc, argv, "s:n:o:j:h", longopts, NULL)) != -1) {
        switch (c) {
        case 's': split = optarg; break;
        case 'n': jb.count = opt_int(prog, "--count", optarg, 1, 10000000); break;
        case 1: jb.start = opt_int(prog, "--start", optarg, 0, 100000000); break;
        case 2:
            jb.seed = (uint64_t)opt_int(prog, "--seed", optarg, 0, (long long)1 << 62);
            break;
        case 'o': out = optarg; break;
        case 3: jb.level = (int)opt_int(prog, "--png-level", optarg, 0, 9); break;
        case 'j': jobs = (long)opt_int(prog, "--jobs", optarg, 1, 256); break;
        case 'h': fputs(usage, stdout); return 0;
        default: fputs(usage, stderr); return EXIT_BADINPUT;
        }
    }
    if (optind < argc)
        die_usage(prog, "unexpected argument '%s'", argv[optind]);
    if (!split || !out || jb.count < 0)
        die_usage(prog, "--split, --count and -o are required (see --help)");
    if (strcmp(split, "train") && strcmp(split, "val"))
        die_usage(prog, "--split: expected train or val, got '%s'", split);
    jb.salt = split[0] == 't' ? 1 : 2;
    if (jobs < 1)
        jobs = 1;
    if (jobs > jb.count)
        jobs = (long)jb.count;

    perr_t e = {0};
    char *tmp = dir_stage_begin(out, &e);
    if (!tmp)
        perr_die(prog, &e);
    char *imgdir = path_join(tmp, "images");
    if (mkdir_p(imgdir, &e))
        perr_die(prog, &e);
    jb.imgdir = imgdir;
    jb.scenes = xcalloc((size_t)jb.count, sizeof *jb.scenes);
    pthread_mutex_init(&jb.lock, NULL);
    pthread_t *th = xcalloc((size_t)jobs, sizeof *th);
    long started = 0;
    for (long t = 0; t < jobs; t++, started++)
        if (pthread_create(&th[t], NULL, worker, &jb))
            break;
    if (started == 0)
        worker(&jb);
    for (long t = 0; t < started; t++)
        pthread_join(th[t], NULL);
    if (jb.failed) {
        remove_tree(tmp);
        perr_die(prog, &jb.err);
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *mf = open_memstream(&buf, &len);
    if (!mf) {
        remove_tree(tmp);
        INTERNAL(&e, "out of memory");
        perr_die(prog, &e);
    }
    write_json(mf, &jb, split);
    fclose(mf);
    char *gt = path_join(tmp, "annotations.json");
    if (atomic_write(gt, buf, len, &e) || dir_stage_commit(tmp, out, &e)) {
        remove_tree(tmp);
        perr_die(prog, &e);
    }
    free(gt);
    free(buf);
    free(imgdir);
    free(th);
    free(jb.scenes);
    pthread_mutex_destroy(&jb.lock);
    return 0;
}
