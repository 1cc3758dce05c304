/* preprocess — PNG images to network input tensors, reproducing a training
 * pipeline's decoding, resizing (bit-exact with OpenCV or Pillow) and
 * normalisation, as a YAML config names it (settings.c lists the keys).
 *
 *   preprocess --config FILE [--set KEY=VALUE]... -o OUTDIR IMAGE.png...
 *   preprocess --config FILE -o OUTDIR --list FILE
 *   preprocess --config FILE -o OUTDIR --dataset COCO.json [--images DIR] [IMAGE.png...]
 *   preprocess --config FILE -o OUTDIR --images DIR
 *
 * Writes OUTDIR/<sample-id>/<input>.npy (+ extra inputs) and meta.json per
 * image, then OUTDIR/index.json when every image succeeded. */
#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "prep.h"
#include "util/args.h"
#include "version.h"

static const char usage[] =
    "usage: preprocess --config FILE [--set KEY=VALUE]... -o OUTDIR IMAGE.png...\n"
    "       preprocess --config FILE -o OUTDIR --list FILE\n"
    "       preprocess --config FILE -o OUTDIR --dataset COCO.json [--images DIR]\n"
    "       preprocess --config FILE -o OUTDIR --images DIR\n"
    "  -c, --config FILE      preprocessing config (YAML; configs/preprocess/*.yaml)\n"
    "  -s, --set KEY=VALUE    override a config key (value is YAML: 320x320, [0.5,0.5,0.5])\n"
    "  -o, --output OUTDIR    one folder per image: <input>.npy, extra inputs, meta.json\n"
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
    const char *cfgfile = NULL, *outdir = NULL, *list = NULL, *dataset = NULL, *images = NULL;
    char **sets = xcalloc((size_t)argc + 1, sizeof *sets);
    int nsets = 0, c;
    long jobs = sysconf(_SC_NPROCESSORS_ONLN);
    while ((c = getopt_long(argc, argv, "c:s:o:l:j:hV", longopts, NULL)) != -1) {
        switch (c) {
        case 'c': cfgfile = optarg; break;
        case 's': sets[nsets++] = optarg; break;
        case 'o': outdir = optarg; break;
        case 'l': list = optarg; break;
        case OPT_DATASET: dataset = optarg; break;
        case OPT_IMAGES: images = optarg; break;
        case 'j': jobs = (long)opt_int("preprocess", "--jobs", optarg, 1, 64); break;
        case 'h': fputs(usage, stdout); free(sets); return 0;
        case 'V': puts("preprocess (parity) " PARITY_VERSION); free(sets); return 0;
        default: die_usage("preprocess", "unknown option");
        }
    }
    if (!cfgfile)
        die_usage("preprocess", "missing --config FILE");
    if (!outdir)
        die_usage("preprocess", "missing -o OUTDIR");
    if (jobs < 1) jobs = 1;   /* the default on a CPU count sysconf could not tell, or past 64 */
    if (jobs > 64) jobs = 64;

    /* Every image allocates the same large buffers: keep them in the heap
     * instead of returning them to the kernel and faulting them in again. */
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);

    perr_t e = { 0 };
    config_t *cfg = config_load_nonempty(cfgfile, &e);
    for (int i = 0; cfg && i < nsets; i++)
        if (config_set(cfg, sets[i], &e) < 0)
            perr_die("preprocess", &e);
    prep_cfg_t p;
    if (!cfg || prep_cfg_load(cfg, &p, &e) < 0)
        perr_die("preprocess", &e);
    prep_inputs_t in;
    if (prep_inputs_build(argv + optind, argc - optind, list, dataset, images, &in, &e) < 0 ||
        prep_run(&p, &in, outdir, (int)jobs, &e) < 0)
        perr_die("preprocess", &e);
    prep_inputs_free(&in);
    prep_cfg_free(&p);
    config_free(cfg);
    free(sets);
    return 0;
}
