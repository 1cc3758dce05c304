/* preprocess — PNG images to network input tensors, reproducing a training
 * pipeline's decoding, resizing (bit-exact with OpenCV or Pillow) and
 * normalisation, as a YAML config names it (settings.c lists the keys).
 *
 *   preprocess --config FILE [--set KEY=VALUE]... -o OUTDIR IMAGE.png...
 *   preprocess --config FILE -o OUTDIR --list FILE
 *   preprocess --config FILE -o OUTDIR --dataset COCO.json [--images DIR] [IMAGE.png...]
 *   preprocess --config FILE -o OUTDIR --images DIR
 *   preprocess --config A [--set ...] -o OUTA --config B [--set ...] -o OUTB ... (one image list)
 *
 * Writes OUTDIR/<sample-id>/<input>.npy (+ extra inputs) and meta.json per
 * image, then OUTDIR/index.json when every image succeeded. Several
 * variants in one run (each -o closes one: the --config and --set before
 * it) decode every image once, and resize it once for those that resize
 * it alike; plan runs a model's variants so. An OUTDIR that already held
 * exactly the new bytes is left untouched, times too. */
#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "prep.h"
#include "util/args.h"
#include "version.h"

static const char usage[] =
    "usage: preprocess --config FILE [--set KEY=VALUE]... -o OUTDIR IMAGE.png...\n"
    "       preprocess --config FILE -o OUTDIR --list FILE\n"
    "       preprocess --config FILE -o OUTDIR --dataset COCO.json [--images DIR]\n"
    "       preprocess --config FILE -o OUTDIR --images DIR\n"
    "       preprocess --config A [--set ..] -o OUTA --config B [--set ..] -o OUTB [sources]\n"
    "  -c, --config FILE      preprocessing config (YAML; configs/preprocess/*.yaml)\n"
    "  -s, --set KEY=VALUE    override a config key (value is YAML: 320x320, [0.5,0.5,0.5])\n"
    "  -o, --output OUTDIR    one folder per image: <input>.npy, extra inputs, meta.json;\n"
    "                         with several, each takes the --config and --set before it\n"
    "                         (one image list for all; each image decoded once)\n"
    "  -l, --list FILE        image paths, one per line (# comments)\n"
    "      --dataset FILE     COCO ground truth: sample ids are image ids; without IMAGEs,\n"
    "                         every image of it, found under --images DIR\n"
    "      --images DIR       folder of the dataset's images [the JSON's folder]; without\n"
    "                         --dataset, every PNG of DIR (sorted by name; ids: file stems)\n"
    "  -j, --jobs N           images processed in parallel [number of CPUs]\n"
    "  @FILE                  more arguments, from FILE: a JSON array of strings (plan's .args)\n"
    "  -h, --help | -V, --version\n"
    "Config keys: input.name, resize.size (HxW), resize.method (opencv-linear|opencv-area|\n"
    "opencv-nearest|opencv-cubic|pillow-bilinear|pillow-bicubic|pillow-nearest|\n"
    "pillow-lanczos), resize.mode (stretch|letterbox|center-crop|fit-height), resize.pad,\n"
    "resize.fill (the padding's value in the tensor),\n"
    "resize.shorter, color (rgb|bgr|gray|rgba|bgra), alpha (drop|composite), background,\n"
    "scale (number or 1/N), mean, std, layout (nchw|nhwc), dtype (float32|float16|uint8),\n"
    "extra.NAME (orig_wh|orig_hw|im_shape|scale_factor|input_wh).\n"
    "Exit: 0 done, 2 bad usage or bad input (the file is named), 3 internal error.\n";

enum { OPT_DATASET = 256, OPT_IMAGES };

/* One variant of the run: a config, its --set overrides, its output. */
typedef struct variant {
    const char *config, *outdir;
    const char **sets;
    int nsets;
    config_t *cfg;
    prep_cfg_t p;
} variant_t;

/* A source option (--dataset, --images, --list) may repeat, as every
 * variant's argument file names it, but only with the same value. */
static void set_source(const char **slot, const char *opt, const char *value)
{
    if (*slot && strcmp(*slot, value))
        die_usage("preprocess", "%s given twice with different values ('%s', '%s'): one image list per run",
                  opt, *slot, value);
    *slot = value;
}

/* Reads variant v's config, applies its overrides, resolves its settings. */
static void load_variant(variant_t *v)
{
    perr_t e = { 0 };
    v->cfg = config_load_nonempty(v->config, &e);
    for (int i = 0; v->cfg && i < v->nsets; i++)
        if (config_set(v->cfg, v->sets[i], &e) < 0)
            perr_die("preprocess", &e);
    if (!v->cfg || prep_cfg_load(v->cfg, &v->p, &e) < 0)
        perr_die("preprocess", &e);
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"config", required_argument, 0, 'c'}, {"set", required_argument, 0, 's'},
        {"output", required_argument, 0, 'o'}, {"list", required_argument, 0, 'l'},
        {"dataset", required_argument, 0, OPT_DATASET},
        {"images", required_argument, 0, OPT_IMAGES}, {"jobs", required_argument, 0, 'j'},
        {"help", no_argument, 0, 'h'}, {"version", no_argument, 0, 'V'}, {0, 0, 0, 0},
    };
    args_expand("preprocess", &argc, &argv);
    const char *list = NULL, *dataset = NULL, *images = NULL;
    variant_t *vs = xcalloc(PREP_MAX_VARIANTS + 1, sizeof *vs);
    const char **sets = xcalloc((size_t)argc + 1, sizeof *sets);
    int nv = 0, nsets = 0, c;
    variant_t *cur = &vs[0];   /* the variant the next -o closes */
    cur->sets = sets;
    long jobs = sysconf(_SC_NPROCESSORS_ONLN);
    while ((c = getopt_long(argc, argv, "c:s:o:l:j:hV", longopts, NULL)) != -1) {
        switch (c) {
        case 'c':
            if (cur->config)
                die_usage("preprocess", "two --config before one -o ('%s', '%s'): each -o takes one", cur->config, optarg);
            cur->config = optarg;
            break;
        case 's': sets[nsets++] = optarg; cur->nsets++; break;
        case 'o':
            if (nv == PREP_MAX_VARIANTS)
                die_usage("preprocess", "more than %d outputs", PREP_MAX_VARIANTS);
            cur->outdir = optarg;
            cur = &vs[++nv];
            cur->sets = sets + nsets;
            break;
        case 'l': set_source(&list, "--list", optarg); break;
        case OPT_DATASET: set_source(&dataset, "--dataset", optarg); break;
        case OPT_IMAGES: set_source(&images, "--images", optarg); break;
        case 'j': jobs = (long)opt_int("preprocess", "--jobs", optarg, 1, 64); break;
        case 'h': fputs(usage, stdout); free(vs); free(sets); return 0;
        case 'V': puts("preprocess (parity) " PARITY_VERSION); free(vs); free(sets); return 0;
        default: die_usage("preprocess", "unknown option");
        }
    }
    if (!nv)
        die_usage("preprocess", "missing -o OUTDIR");
    if (nv == 1 && (cur->config || cur->nsets)) {
        /* one output: its options may come in any order */
        if (vs[0].config && cur->config)
            die_usage("preprocess", "two --config for one -o ('%s', '%s')", vs[0].config, cur->config);
        vs[0].config = vs[0].config ? vs[0].config : cur->config;
        vs[0].nsets += cur->nsets;
    } else if (cur->config || cur->nsets) {
        die_usage("preprocess", "--config or --set after the last -o: with several outputs, each -o takes those before it");
    }
    for (int v = 0; v < nv; v++) {
        if (!vs[v].config)
            die_usage("preprocess", "missing --config FILE for -o %s", vs[v].outdir);
        for (int u = 0; u < v; u++)
            if (!strcmp(vs[u].outdir, vs[v].outdir))
                die_usage("preprocess", "-o %s given twice: one output per variant", vs[v].outdir);
    }
    if (jobs < 1) jobs = 1;   /* the default on a CPU count sysconf could not tell, or past 64 */
    if (jobs > 64) jobs = 64;

    /* Every image allocates the same large buffers: keep them in the heap
     * instead of returning them to the kernel and faulting them in again. */
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);

    const prep_cfg_t *cfgs[PREP_MAX_VARIANTS];
    const char *outdirs[PREP_MAX_VARIANTS];
    for (int v = 0; v < nv; v++) {
        load_variant(&vs[v]);
        cfgs[v] = &vs[v].p;
        outdirs[v] = vs[v].outdir;
    }
    perr_t e = { 0 };
    prep_inputs_t in;
    if (prep_inputs_build(argv + optind, argc - optind, list, dataset, images, &in, &e) < 0 ||
        prep_run(cfgs, nv, &in, outdirs, (int)jobs, &e) < 0)
        perr_die("preprocess", &e);
    prep_inputs_free(&in);
    for (int v = 0; v < nv; v++) {
        prep_cfg_free(&vs[v].p);
        config_free(vs[v].cfg);
    }
    free(vs);
    free(sets);
    return 0;
}
