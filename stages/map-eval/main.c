/* map-eval — COCO bbox, segm and keypoints mAP, identical to pycocotools, and fast.
 *
 *   map-eval --gt GT.json --dt RESULTS.json|DIR [--iou-type bbox|segm|keypoints]
 *            [--json OUT.json] [--per-category] [--pr-curves DIR]
 *            [--write-results FILE] [decoding options]
 *
 * Prints the 12 COCO stats (10 for keypoints) in pycocotools' layout. --dt takes a COCO results
 * JSON, or a folder of inference outputs (DIR/<sample-id>/<tensor>.npy plus the
 * preprocess meta.json) decoded as the decoding options say (coco/decode.h).
 */
#include <getopt.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include "coco/coco.h"
#include "coco/decode.h"
#include "coco/jsonpar.h"
#include "util/fsutil.h"
#include "util/jsonfile.h"
#include "version.h"

static const char usage[] =
    "usage: map-eval --gt GT.json --dt RESULTS.json|DIR [options]\n"
    "COCO bbox, segm or keypoints evaluation with pycocotools' exact semantics.\n"
    "  -g, --gt FILE              COCO ground truth (images, categories, annotations)\n"
    "  -t, --iou-type T           bbox, segm (masks: RLE or polygons) or keypoints (OKS)\n"
    "                             [bbox]; a folder --dt needs a yolov8-seg / yolov8-pose head\n"
    "      --kpt-sigmas S,S,...   keypoints: the OKS sigma of each keypoint, which also\n"
    "                             sets their count [COCO's 17 person sigmas]\n"
    "  -d, --dt FILE|DIR          COCO results JSON, or a folder of inference outputs:\n"
    "                             DIR/<sample-id>/<tensor>.npy with the preprocess meta.json\n"
    "  -j, --json FILE            write {\"stats\", \"per_category_AP\", \"pr_curves\", ...}\n"
    "      --per-category         also print AP per category\n"
    "      --pr-curves DIR        write DIR/pr-curves.json and DIR/pr-curves.csv\n"
    "                             (precision per category, IoU and recall threshold)\n"
    "  -w, --write-results FILE   write the detections as a COCO results JSON (with their\n"
    "                             segmentation / keypoints for segm / keypoints)\n"
    "  -q, --quiet                do not print the stats\n"
    "  -v, --verbose              counts and the time of each phase on stderr\n"
    "      --threads N            worker threads (default: PARITY_THREADS or the CPUs)\n"
    "Decoding a DIR (defaults in brackets; a YAML section sets the same keys):\n"
    "      --decode FILE          YAML file with the decoding settings\n"
    "      --section KEY          its section holding them [decode]; '.' for the top\n"
    "      --set KEY=VALUE        override a key of that section (repeatable)\n"
    "      --meta DIR             where DIR/<sample-id>/meta.json are [the --dt DIR]\n"
    "      --labels NAME          tensor of class indices [labels]\n"
    "      --boxes NAME           tensor of boxes, [..., K, 4] [boxes]\n"
    "      --scores NAME          tensor of scores [scores]\n"
    "      --box-format F         xyxy, xywh or cxcywh [xyxy]\n"
    "      --box-coords C         original (image pixels) or input (model input pixels,\n"
    "                             mapped back with meta.json: (v - offset) / scale) [original]\n"
    "      --normalized           coordinates are fractions of that image's width/height\n"
    "      --score-threshold X    drop detections scoring below X [none]\n"
    "      --top-k N              keep the N best-scoring detections per image [all]\n"
    "      --label-map M          coco80 (0..79 to COCO ids 1..90), identity, or a YAML/JSON\n"
    "                             file holding the list of category ids [identity]\n"
    "      --clip                 clip boxes to the original image\n"
    "      --head H               a raw YOLO head: yolov8 [1,4+nc,N], yolov5 [1,N,5+nc],\n"
    "                             yolov8-seg [1,4+nc+nm,N] with --protos T [output1] and\n"
    "                             --mask-coefs NM [32], yolov8-pose [1,4+nc+3K,N] with\n"
    "                             --keypoints K [17]; --output T, --conf-threshold X, --nms-iou X, --max-det N,\n"
    "                             --max-nms N, --multi-label B, --agnostic B, --num-classes N,\n"
    "                             --letterbox-inverse ultralytics|meta (Ultralytics' validation\n"
    "                             rules and defaults; docs/metrics-detection.md)\n"
    "  -h, --help                 this text\n"
    "  -V, --version              print the version\n"
    "Exit: 0 evaluated, 2 bad usage or bad input (one line names the file and place),\n"
    "3 internal error. An empty detection list is an error (pycocotools crashes on it).\n";

enum {
    OPT_PERCAT = 256, OPT_PR, OPT_THREADS, OPT_DECODE, OPT_SECTION, OPT_SET, OPT_META,
    OPT_LABELS, OPT_BOXES, OPT_SCORES, OPT_FORMAT, OPT_COORDS, OPT_NORM, OPT_THR, OPT_TOPK,
    OPT_LMAP, OPT_CLIP, OPT_HEAD, OPT_OUTPUT, OPT_CONF, OPT_NMSIOU, OPT_MAXDET, OPT_MAXNMS, OPT_MULTI,
    OPT_AGNOSTIC, OPT_NC, OPT_LBINV, OPT_PROTOS, OPT_NMASK, OPT_KPTS, OPT_SIGMAS,
};

static const struct option longopts[] = {
    {"gt", required_argument, 0, 'g'}, {"dt", required_argument, 0, 'd'},
    {"json", required_argument, 0, 'j'}, {"per-category", no_argument, 0, OPT_PERCAT},
    {"pr-curves", required_argument, 0, OPT_PR}, {"write-results", required_argument, 0, 'w'},
    {"quiet", no_argument, 0, 'q'}, {"verbose", no_argument, 0, 'v'}, {"threads", required_argument, 0, OPT_THREADS},
    {"decode", required_argument, 0, OPT_DECODE}, {"section", required_argument, 0, OPT_SECTION},
    {"set", required_argument, 0, OPT_SET}, {"meta", required_argument, 0, OPT_META},
    {"labels", required_argument, 0, OPT_LABELS}, {"boxes", required_argument, 0, OPT_BOXES},
    {"scores", required_argument, 0, OPT_SCORES}, {"box-format", required_argument, 0, OPT_FORMAT},
    {"box-coords", required_argument, 0, OPT_COORDS}, {"normalized", no_argument, 0, OPT_NORM},
    {"score-threshold", required_argument, 0, OPT_THR}, {"top-k", required_argument, 0, OPT_TOPK},
    {"label-map", required_argument, 0, OPT_LMAP}, {"clip", no_argument, 0, OPT_CLIP},
    {"head", required_argument, 0, OPT_HEAD}, {"output", required_argument, 0, OPT_OUTPUT},
    {"conf-threshold", required_argument, 0, OPT_CONF}, {"nms-iou", required_argument, 0, OPT_NMSIOU},
    {"max-det", required_argument, 0, OPT_MAXDET}, {"max-nms", required_argument, 0, OPT_MAXNMS},
    {"multi-label", required_argument, 0, OPT_MULTI}, {"agnostic", required_argument, 0, OPT_AGNOSTIC},
    {"num-classes", required_argument, 0, OPT_NC}, {"letterbox-inverse", required_argument, 0, OPT_LBINV},
    {"protos", required_argument, 0, OPT_PROTOS}, {"mask-coefs", required_argument, 0, OPT_NMASK},
    {"keypoints", required_argument, 0, OPT_KPTS},
    {"iou-type", required_argument, 0, 't'}, {"kpt-sigmas", required_argument, 0, OPT_SIGMAS},
    {"help", no_argument, 0, 'h'}, {"version", no_argument, 0, 'V'}, {0, 0, 0, 0},
};

static const char *prog = "map-eval";

static void die(const perr_t *e)
{
    perr_die(prog, e);
}

static int verbose;

static void free_args(const char **dopt, int ndopt, const char **sets)
{
    for (int i = 0; i < ndopt; i++) free((void *)dopt[i]);
    free(dopt);
    free(sets);
}

/* --kpt-sigmas: positive finite numbers, comma-separated. */
static void parse_sigmas(const char *arg, coco_task_t *t)
{
    int n = 0;
    const char *p = arg;
    for (;;) {
        char *end;
        double v = strtod(p, &end);
        if (end == p || !(v > 0) || v > 1e6)
            die_usage(prog, "--kpt-sigmas: '%s' is not a list of positive numbers", arg);
        if (n == COCO_MAX_KPTS) die_usage(prog, "--kpt-sigmas: more than %d values", COCO_MAX_KPTS);
        t->sigmas[n++] = v;
        if (*end == 0) break;
        if (*end != ',') die_usage(prog, "--kpt-sigmas: '%s' is not a list of positive numbers", arg);
        p = end + 1;
    }
    t->nkpt = n;
}

/* With --verbose: the wall and CPU time since the previous call. */
static void phase(const char *what)
{
    static double last_wall, last_cpu;
    struct timespec w, c;
    clock_gettime(CLOCK_MONOTONIC, &w);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c);
    double wall = (double)w.tv_sec + (double)w.tv_nsec * 1e-9;
    double cpu = (double)c.tv_sec + (double)c.tv_nsec * 1e-9;
    if (verbose && what)
        fprintf(stderr, "%s: %-10s %8.3f s wall %8.3f s cpu\n", prog, what, wall - last_wall,
                cpu - last_cpu);
    last_wall = wall;
    last_cpu = cpu;
}

int main(int argc, char **argv)
{
    const char *gt_path = NULL, *dt_path = NULL, *json_out = NULL, *pr_dir = NULL;
    const char *results_out = NULL, *decode_file = NULL, *section = "decode";
    int per_category = 0, quiet = 0, nthreads = jsonpar_default_threads(), type = COCO_BBOX;
    const char *sigmas = NULL;
    const char **sets = calloc(argc + 1, sizeof *sets);
    int nsets = 0;
    /* command-line decoding options, applied over the YAML ones */
    const char **dopt = calloc(argc + 1, sizeof *dopt);
    int ndopt = 0;
    int c;
    while ((c = getopt_long(argc, argv, "g:d:t:j:w:qvhV", longopts, NULL)) != -1) {
        switch (c) {
        case 'g': gt_path = optarg; break;
        case 'd': dt_path = optarg; break;
        case 'j': json_out = optarg; break;
        case 'w': results_out = optarg; break;
        case 'q': quiet = 1; break;
        case 't':
            type = coco_iou_type_parse(optarg);
            if (type < 0) die_usage(prog, "--iou-type wants bbox, segm or keypoints, not '%s'", optarg);
            break;
        case OPT_SIGMAS: sigmas = optarg; break;
        case 'v': verbose = 1; break;
        case OPT_PERCAT: per_category = 1; break;
        case OPT_PR: pr_dir = optarg; break;
        case OPT_THREADS:
            nthreads = atoi(optarg);
            if (nthreads < 1 || nthreads > 64) die_usage(prog, "--threads wants 1..64");
            break;
        case OPT_DECODE: decode_file = optarg; break;
        case OPT_SECTION: section = optarg; break;
        case OPT_SET: sets[nsets++] = optarg; break;
        case 'h': fputs(usage, stdout); goto done;
        case 'V': puts("map-eval (parity) " PARITY_VERSION); goto done;
        default:
            if (c >= OPT_META && c <= OPT_KPTS) {
                /* kept as "option=value" and handed to the decoder in order */
                const char *name = longopts[0].name;
                for (const struct option *o = longopts; o->name; o++)
                    if (o->val == c) name = o->name;
                size_t n = strlen(name) + (optarg ? strlen(optarg) : 0) + 2;
                char *s = malloc(n);
                snprintf(s, n, "%s=%s", name, optarg ? optarg : "");
                dopt[ndopt++] = s;
                break;
            }
            die_usage(prog, "unknown option");
        }
    }
    if (optind != argc) die_usage(prog, "unexpected argument '%s'", argv[optind]);
    if (!gt_path) die_usage(prog, "missing --gt GT.json");
    if (!dt_path) die_usage(prog, "missing --dt RESULTS.json or DIR");

    coco_task_t task;
    coco_task_init(&task, (coco_iou_type_t)type);
    if (sigmas) {
        if (type != COCO_KEYPOINTS) die_usage(prog, "--kpt-sigmas applies to --iou-type keypoints");
        parse_sigmas(sigmas, &task);
    }

    perr_t e = {0};
    phase(NULL);
    coco_gt_t gt;
    if (coco_gt_load_task(gt_path, nthreads, &task, &gt, &e)) die(&e);
    phase("gt");
    coco_dets_t dets;
    if (is_dir(dt_path)) {
        coco_decode_opts_t o;
        if (coco_decode_opts_init(&o, decode_file, section, sets, nsets, &e) ||
            coco_decode_opts_apply(&o, dopt, ndopt, &e) ||
            coco_decode_dir(dt_path, &gt, &o, &dets, &e))
            die(&e);
        coco_decode_opts_free(&o);
    } else {
        if (decode_file || nsets || ndopt)
            die_usage(prog, "decoding options apply only when --dt is a folder");
        if (coco_dets_load_task(dt_path, nthreads, &gt, &dets, &e)) die(&e);
    }
    free_args(dopt, ndopt, sets);
    dopt = NULL;
    sets = NULL;
    ndopt = 0;
    phase("dt");
    coco_eval_t ev;
    if (coco_evaluate(&gt, &dets, nthreads, &ev, &e)) {
        perr_prefix(&e, "%s: ", dt_path);
        die(&e);
    }
    phase("evaluate");
    if (verbose)
        fprintf(stderr, "%s: %lld images, %lld categories, %lld ground truths, %lld detections "
                "(%lld of unknown categories dropped), %d threads\n", prog, (long long)gt.nimg,
                (long long)gt.ncat, (long long)gt.nann, (long long)ev.ndets_used,
                (long long)ev.ndets_dropped, nthreads);
    /* outputs only once everything is known to be good */
    if (results_out && coco_dets_write(results_out, &dets, &e)) die(&e);
    if (!quiet) {
        coco_print_stats(stdout, &ev);
        if (per_category) coco_print_per_category(stdout, &gt, &ev);
    }
    if (json_out) {
        json_t *j = coco_eval_json(&gt, &ev);
        int rc = write_json(json_out, j, COCO_JSON_FLAGS, &e);
        json_decref(j);
        if (rc) die(&e);
    }
    if (pr_dir && coco_write_pr_curves(pr_dir, &gt, &ev, &e)) die(&e);
    phase("output");
    if (fflush(stdout) != 0) {
        perr_set(&e, EXIT_INTERNAL, "cannot write to standard output");
        die(&e);
    }
    coco_eval_free(&ev);
    coco_dets_free(&dets);
    coco_gt_free(&gt);
done:
    free_args(dopt, ndopt, sets);
    return 0;
}
