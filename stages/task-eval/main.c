/* task-eval — the task metric of a dataset run: classification accuracy,
 * segmentation IoU, matting error, restoration PSNR/SSIM.
 *
 *   task-eval --task TASK --dt DIR [ground truth] [options] --json OUT.json
 *
 * DIR is what infer writes for a dataset: DIR/<sample-id>/<tensor>.npy, one
 * folder per sample (the sample id is the image's id as preprocess named its
 * folder). The ground truth is found by that id. The definitions, and which
 * published implementation each is identical to, are in
 * docs/metrics-classification.md, docs/metrics-segmentation.md and
 * docs/metrics-restoration.md; the summary is the usage text below.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "taskeval.h"
#include "util/args.h"
#include "util/fsutil.h"
#include "util/jsonfile.h"
#include "version.h"

static const char usage[] =
    "usage: task-eval --task TASK --dt DIR [ground truth] [options] [--json OUT.json]\n"
    "The task metric of a dataset run DIR/<sample-id>/<tensor>.npy (infer's output).\n"
    "  -t, --task TASK          classification | segmentation | matting | restoration\n"
    "  -d, --dt DIR             the run to evaluate\n"
    "  -r, --ref DIR            the reference cell's run (classification: top-1 flips)\n"
    "  -o, --output NAME        the output tensor [the sample's only tensor]\n"
    "  -j, --json FILE          write the results (metrics, per class, per sample)\n"
    "  -q, --quiet              do not print the metrics\n"
    "Classification (output [1, C] scores; top-1/top-5 accuracy in %, ties to the\n"
    "lower class index, a NaN score makes the sample wrong):\n"
    "      --labels FILE        sample -> class index: JSON {\"NAME\": k} or CSV NAME,k\n"
    "      --classes FILE       class names (JSON list or one a line); count must be C\n"
    "Segmentation (output [1, C, H, W] logits, argmax with ties to the lower index,\n"
    "or an integer label map [1, H, W]; mIoU from one confusion matrix over all\n"
    "pixels, MMSegmentation's IoUMetric; classes absent from prediction and GT are\n"
    "left out of the mean):\n"
    "      --gt-maps DIR        DIR/<sample-id>.png label maps (gray or palette indices),\n"
    "                           at the output's size\n"
    "      --classes FILE       class names; count must be C\n"
    "      --num-classes N      for label-map outputs without --classes\n"
    "      --ignore-index K     GT value left out [255]\n"
    "Matting (output [1, 1, H, W] alpha in [0, 1], clipped; GT DIR/<sample-id>.png,\n"
    "8-bit alpha / 255): MAE, MSE, and the MAE over the boundary band: pixels within\n"
    "R (Chebyshev) of a pixel whose 3x3 neighbourhood holds GT alpha both <= 0.5 and > 0.5\n"
    "      --gt-maps DIR        the GT alpha mattes\n"
    "      --band-radius R      [5]\n"
    "Restoration (output [1, C, H, W], C 1 or 3, in [0, 1]: clamped, x 255 in float32,\n"
    "rounded half to even, as BasicSR's tensor2img; mean over samples of each image's\n"
    "PSNR and SSIM against the clean image):\n"
    "      --clean DIR          DIR/<sample-id>.png clean images (RGB or gray)\n"
    "      --convention C       skimage: peak_signal_noise_ratio(data_range=255) and\n"
    "                           structural_similarity(channel_axis=2, gaussian_weights,\n"
    "                           sigma 1.5, population covariance) [skimage];\n"
    "                           basicsr: calculate_psnr / calculate_ssim\n"
    "      --crop-border N      basicsr: pixels cut from each side [0]\n"
    "      --y-channel          basicsr: test_y_channel (BT.601 Y, float32 steps)\n"
    "      --no-round           truncate instead of rounding (astype(uint8) alone)\n"
    "      --output-max N       outputs in [0, N] (255: pixel values): clamped to it and\n"
    "                           divided by N in float32 first, tensor2img's min_max [1]\n"
    "  -h, --help               this text\n"
    "  -V, --version            print the version\n"
    "Arguments may come from a file: @FILE holds a JSON array of strings.\n"
    "Exit: 0 evaluated, 2 bad usage or bad input (one line names the file and the\n"
    "problem: a missing or wrong-size GT, a class outside the class list, a class\n"
    "file whose count is not the output's), 3 internal error.\n";

enum { OPT_LABELS = 256, OPT_CLASSES, OPT_GTMAPS, OPT_NCLS, OPT_IGNORE, OPT_BAND, OPT_CLEAN, OPT_CONV,
       OPT_CROP, OPT_Y, OPT_NOROUND, OPT_OUTMAX };

static const struct option longopts[] = {
    {"task", required_argument, 0, 't'}, {"dt", required_argument, 0, 'd'}, {"ref", required_argument, 0, 'r'},
    {"output", required_argument, 0, 'o'}, {"json", required_argument, 0, 'j'}, {"quiet", no_argument, 0, 'q'},
    {"labels", required_argument, 0, OPT_LABELS}, {"classes", required_argument, 0, OPT_CLASSES},
    {"gt-maps", required_argument, 0, OPT_GTMAPS}, {"num-classes", required_argument, 0, OPT_NCLS},
    {"ignore-index", required_argument, 0, OPT_IGNORE}, {"band-radius", required_argument, 0, OPT_BAND},
    {"clean", required_argument, 0, OPT_CLEAN}, {"convention", required_argument, 0, OPT_CONV},
    {"crop-border", required_argument, 0, OPT_CROP}, {"y-channel", no_argument, 0, OPT_Y},
    {"no-round", no_argument, 0, OPT_NOROUND}, {"output-max", required_argument, 0, OPT_OUTMAX},
    {"help", no_argument, 0, 'h'}, {"version", no_argument, 0, 'V'}, {0, 0, 0, 0},
};

static const char *prog = "task-eval";

static task_t parse_task(const char *s)
{
    static const char *const names[] = {"classification", "segmentation", "matting", "restoration"};
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, names[i])) return (task_t)i;
    die_usage(prog, "--task: '%s' is not classification, segmentation, matting or restoration", s);
}

/* The options each task needs, and none that it would ignore. */
static void check_opts(const te_opts_t *o, int conv_given)
{
    if (!o->dt) die_usage(prog, "missing --dt DIR");
    int cls = o->task == TASK_CLASSIFICATION, seg = o->task == TASK_SEGMENTATION;
    int mat = o->task == TASK_MATTING, res = o->task == TASK_RESTORATION;
    if (cls && !o->labels) die_usage(prog, "classification needs --labels FILE");
    if ((seg || mat) && !o->gt_dir) die_usage(prog, "%s needs --gt-maps DIR", seg ? "segmentation" : "matting");
    if (res && !o->clean_dir) die_usage(prog, "restoration needs --clean DIR");
    if (!cls && o->labels) die_usage(prog, "--labels is for classification");
    if (!(seg || mat) && o->gt_dir) die_usage(prog, "--gt-maps is for segmentation and matting");
    if (!res && (o->clean_dir || conv_given || o->crop_border || o->y_channel || o->no_round || o->output_max != 1))
        die_usage(prog, "--clean, --convention, --crop-border, --y-channel, --no-round and --output-max are for restoration");
    if (!o->basicsr && (o->crop_border || o->y_channel))
        die_usage(prog, "--crop-border and --y-channel are BasicSR's: add --convention basicsr");
    if (!(cls || seg) && o->classes) die_usage(prog, "--classes is for classification and segmentation");
    if (!seg && o->num_classes) die_usage(prog, "--num-classes is for segmentation");
    if (o->ref && !cls) die_usage(prog, "--ref is for classification (top-1 flips)");
}

/* Prints the headline metrics, one a line. */
static void print_metrics(const json_t *r)
{
    const char *k;
    json_t *m;
    json_object_foreach(json_object_get(r, "metrics"), k, m) {
        json_t *v = json_object_get(m, "value");
        const char *unit = json_string_value(json_object_get(m, "unit"));
        if (json_is_number(v)) printf("%-14s %.6f %s\n", k, json_number_value(v), unit ? unit : "");
        else printf("%-14s n/a\n", k);
    }
}

int main(int argc, char **argv)
{
    args_expand(prog, &argc, &argv);
    te_opts_t o = {.ignore_index = 255, .band_radius = 5, .output_max = 1};
    const char *json_out = NULL;
    int quiet = 0, conv_given = 0, task_given = 0, c;
    while ((c = getopt_long(argc, argv, "t:d:r:o:j:qhV", longopts, NULL)) != -1) {
        switch (c) {
        case 't': o.task = parse_task(optarg); task_given = 1; break;
        case 'd': o.dt = optarg; break;
        case 'r': o.ref = optarg; break;
        case 'o': o.output = optarg; break;
        case 'j': json_out = optarg; break;
        case 'q': quiet = 1; break;
        case OPT_LABELS: o.labels = optarg; break;
        case OPT_CLASSES: o.classes = optarg; break;
        case OPT_GTMAPS: o.gt_dir = optarg; break;
        case OPT_NCLS: o.num_classes = opt_int(prog, "--num-classes", optarg, 1, 65535); break;
        case OPT_IGNORE: o.ignore_index = (int)opt_int(prog, "--ignore-index", optarg, 0, 255); break;
        case OPT_BAND: o.band_radius = (int)opt_int(prog, "--band-radius", optarg, 0, 1000); break;
        case OPT_CLEAN: o.clean_dir = optarg; break;
        case OPT_CONV:
            conv_given = 1;
            if (!strcmp(optarg, "skimage")) o.basicsr = 0;
            else if (!strcmp(optarg, "basicsr")) o.basicsr = 1;
            else die_usage(prog, "--convention: '%s' is not skimage or basicsr", optarg);
            break;
        case OPT_CROP: o.crop_border = (int)opt_int(prog, "--crop-border", optarg, 0, 10000); break;
        case OPT_Y: o.y_channel = 1; break;
        case OPT_NOROUND: o.no_round = 1; break;
        case OPT_OUTMAX: o.output_max = (int)opt_int(prog, "--output-max", optarg, 1, 65535); break;
        case 'h': fputs(usage, stdout); return 0;
        case 'V': puts("task-eval (parity) " PARITY_VERSION); return 0;
        default: die_usage(prog, "unknown option (see --help)");
        }
    }
    if (optind != argc) die_usage(prog, "unexpected argument '%s'", argv[optind]);
    if (!task_given) die_usage(prog, "missing --task");
    check_opts(&o, conv_given);

    perr_t e = {0};
    json_t *r = o.task == TASK_CLASSIFICATION ? eval_classification(&o, &e)
              : o.task == TASK_SEGMENTATION   ? eval_segmentation(&o, &e)
              : o.task == TASK_MATTING        ? eval_matting(&o, &e)
                                              : eval_restoration(&o, &e);
    if (!r) perr_die(prog, &e);
    if (json_out) {
        if (write_json(json_out, r, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17), &e)) perr_die(prog, &e);
    }
    if (!quiet) print_metrics(r);
    json_decref(r);
    if (fflush(stdout) != 0) { INTERNAL(&e, "cannot write to standard output"); perr_die(prog, &e); }
    return 0;
}
