/* compare — do two runs agree, and if not, where does it start?
 *
 *   compare A B [--atol X] [--rtol Y] [--check-error-stat S] [--quantile Q]
 *               [--rule polygraphy|allclose] [--nan-equal] [--inf-equal]
 *               [--per-tensor NAME=atol,rtol]... [--judge GLOB]... [--ignore GLOB]...
 *               [--json OUT.json] [--quiet]
 *   compare A B --layerwise --layers LAYERS.json [--local] [tolerances] [--json OUT.json]
 *   compare A B --detection labels=L,boxes=B,scores=S[,iou=0.5,score_floor=0.3,format=xyxy] [...]
 *   compare --to-polygraphy OUT.json [--inputs] [--runner NAME] SRC
 *
 * B is the reference. A and B are tensor sets (folders of .npy/.pb/trtexec
 * .raw files, .npz, Polygraphy or trtexec JSON) or folders of them, matched
 * by sample and tensor name; a missing or extra tensor or a shape mismatch
 * fails. The rule is Polygraphy's: an element fails when |a-b| > atol AND
 * |a-b|/|b| > rtol; --check-error-stat checks max/mean/median/quantile of
 * the differences instead; --rule allclose uses |a-b| <= atol + rtol*|b|.
 * --layerwise walks the layer report (build-engine --layers-out) in order
 * over two dumps (infer --dump all): the first failing tensor, the first
 * NaN/Inf, the error layer by layer; --local when A came from
 * infer --reference B ranks layers by their own error; --layer-snr-db X
 * judges each layer by its SNR against the reference instead (a measure
 * free of the tensor's scale), so the first failure is where the signal is
 * lost, not where an absolute tolerance happens to be crossed.
 * --detection matches a detector's outputs by detection (per class, greedy
 * by score, IoU >= iou) and judges by it: nothing missed, extra or flipped
 * above score_floor; element-wise statistics stay in the JSON. A raw YOLO
 * head (head=...) is decoded on both sides first (coco/yolo.h).
 * --to-polygraphy writes SRC as Polygraphy RunResults (or --save-inputs
 * list with --inputs) for `polygraphy run --load-outputs/--load-inputs`.
 *
 * Exit: 0 all pass, 1 a tensor fails, 2 bad usage or input, 3 internal.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "compare/detmatch.h"
#include "compare/layerwise.h"
#include "compare/report.h"
#include "compare/convert.h"
#include "util/args.h"
#include "util/jsonfile.h"
#include "version.h"

static const char usage[] =
    "usage: compare A B [options]            (B is the reference)\n"
    "       compare --to-polygraphy OUT.json [--inputs] [--runner NAME] SRC\n"
    "  --atol X, --rtol Y          tolerances (default 1e-5 each)\n"
    "  --check-error-stat S        elemwise (default), max, mean, median or quantile\n"
    "  --quantile Q                the quantile for --check-error-stat quantile (default 0.99)\n"
    "  --rule R                    polygraphy (default: fails when |a-b| > atol and |a-b|/|b| > rtol)\n"
    "                              or allclose (passes when |a-b| <= atol + rtol*|b|)\n"
    "  --nan-equal                 NaN in both A and B counts as equal\n"
    "  --inf-equal                 equal infinities count as equal\n"
    "  --per-tensor NAME=atol,rtol tolerances for tensors matching NAME (a glob; repeatable)\n"
    "  --judge GLOB                judge only the tensors matching GLOB (repeatable: the outputs\n"
    "                              the application reads); the others are shown, not counted\n"
    "  --ignore GLOB               do not judge tensors matching GLOB (repeatable)\n"
    "  --json FILE                 every statistic, as JSON\n"
    "  --layerwise --layers FILE   first diverging layer, from two --dump all runs\n"
    "  --local                     A ran each layer on B's inputs: rank layers by own error\n"
    "  --layer-snr-db X            layerwise: a layer fails when its SNR is below X dB (scale-free)\n"
    "  --detection SPEC            labels=L,boxes=B,scores=S[,format=xyxy][,iou=0.5][,score_floor=0.3]:\n"
    "                              match detections per class and judge by them; a raw YOLO\n"
    "                              head: head=yolov8|yolov5[,output=T,conf_threshold=..,nms_iou=..]\n"
    "                              instead of labels/boxes/scores (docs/metrics-detection.md)\n"
    "  -q, --quiet                 no text summary\n"
    "  @FILE                       more arguments, from FILE: a JSON array of strings (plan's .args)\n"
    "  -h, --help | -V, --version\n"
    "Exit: 0 all pass, 1 a tensor fails, 2 bad usage or bad input, 3 internal error.\n";

enum { O_ATOL = 256, O_RTOL, O_STAT, O_QUANT, O_RULE, O_NANEQ, O_INFEQ, O_PER, O_JSON, O_LAYERWISE,
       O_LAYERS, O_LOCAL, O_TOPOLY, O_INPUTS, O_RUNNER, O_LSNR, O_DET, O_JUDGE, O_IGNORE };

static double parse_nonneg(const char *opt, const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !isfinite(v) || v < 0) die_usage("compare", "%s needs a non-negative number, not '%s'", opt, s);
    return v;
}

typedef struct args {
    cmp_config_t cfg;
    const char *json, *layers, *topoly, *runner;
    int layerwise, local, quiet, inputs, detection;
    dm_config_t det;
} args_t;

static void parse_args(int argc, char **argv, args_t *a)
{
    static const struct option longopts[] = {
        {"atol", required_argument, 0, O_ATOL}, {"rtol", required_argument, 0, O_RTOL},
        {"check-error-stat", required_argument, 0, O_STAT}, {"quantile", required_argument, 0, O_QUANT},
        {"rule", required_argument, 0, O_RULE}, {"nan-equal", no_argument, 0, O_NANEQ},
        {"inf-equal", no_argument, 0, O_INFEQ}, {"per-tensor", required_argument, 0, O_PER},
        {"json", required_argument, 0, O_JSON}, {"layerwise", no_argument, 0, O_LAYERWISE},
        {"layers", required_argument, 0, O_LAYERS}, {"local", no_argument, 0, O_LOCAL},
        {"to-polygraphy", required_argument, 0, O_TOPOLY}, {"inputs", no_argument, 0, O_INPUTS},
        {"runner", required_argument, 0, O_RUNNER}, {"quiet", no_argument, 0, 'q'},
        {"layer-snr-db", required_argument, 0, O_LSNR}, {"detection", required_argument, 0, O_DET},
        {"judge", required_argument, 0, O_JUDGE}, {"ignore", required_argument, 0, O_IGNORE},
        {"help", no_argument, 0, 'h'}, {"version", no_argument, 0, 'V'}, {0, 0, 0, 0},
    };
    cmp_config_init(&a->cfg);
    perr_t e = {0};
    int c;
    while ((c = getopt_long(argc, argv, "qhV", longopts, NULL)) != -1) {
        switch (c) {
        case O_ATOL: a->cfg.tol.atol = parse_nonneg("--atol", optarg); break;
        case O_RTOL: a->cfg.tol.rtol = parse_nonneg("--rtol", optarg); break;
        case O_STAT:
            if (cmp_stat_parse(optarg, &a->cfg.tol.stat)) die_usage("compare", "--check-error-stat: unknown '%s'", optarg);
            break;
        case O_QUANT:
            a->cfg.tol.quantile = parse_nonneg("--quantile", optarg);
            if (a->cfg.tol.quantile > 1) die_usage("compare", "--quantile must be in [0, 1]");
            break;
        case O_RULE:
            if (cmp_rule_parse(optarg, &a->cfg.tol.rule)) die_usage("compare", "--rule: unknown '%s'", optarg);
            break;
        case O_NANEQ: a->cfg.tol.nan_equal = 1; break;
        case O_INFEQ: a->cfg.tol.inf_equal = 1; break;
        case O_PER:
            if (cmp_config_add_override(&a->cfg, optarg, &e)) die_usage("compare", "%s", e.msg);
            break;
        case O_JUDGE: case O_IGNORE:
            if (!*optarg) die_usage("compare", "%s needs a tensor name or glob", c == O_JUDGE ? "--judge" : "--ignore");
            cmp_config_add_glob(&a->cfg, c == O_IGNORE, optarg);
            break;
        case O_JSON: a->json = optarg; break;
        case O_LAYERWISE: a->layerwise = 1; break;
        case O_LAYERS: a->layers = optarg; break;
        case O_LOCAL: a->local = 1; break;
        case O_TOPOLY: a->topoly = optarg; break;
        case O_INPUTS: a->inputs = 1; break;
        case O_RUNNER: a->runner = optarg; break;
        case O_LSNR: a->cfg.layer_snr_db = parse_nonneg("--layer-snr-db", optarg); break;
        case O_DET:
            if (a->detection) dm_config_free(&a->det);
            if (dm_config_parse(&a->det, optarg, &e)) die_usage("compare", "%s", e.msg);
            a->detection = 1;
            break;
        case 'q': a->quiet = 1; break;
        case 'h': fputs(usage, stdout); exit(0);
        case 'V': puts("compare (parity) " PARITY_VERSION); exit(0);
        default: die_usage("compare", "unknown option");
        }
    }
    if (a->cfg.tol.rule == CMP_RULE_ALLCLOSE && a->cfg.tol.stat != CMP_STAT_ELEMWISE)
        die_usage("compare", "--rule allclose is an element rule: it takes no --check-error-stat");
    if ((a->layerwise || a->local) && !a->layers) die_usage("compare", "--layerwise needs --layers LAYERS.json");
    if (a->layers) a->layerwise = 1;
    if (a->detection && a->layerwise) die_usage("compare", "--detection compares outputs: it takes no --layerwise");
}

/* Judges by detection; the element-wise result stays in the JSON. */
static int run_detection(const args_t *a, const cmp_side_t *sa, const cmp_side_t *sb, json_t *doc, int elem_status)
{
    perr_t e = {0};
    dm_result_t r;
    if (dm_run(sa, sb, &a->det, &r, &e)) perr_die("compare", &e);
    char why[256];
    if (!a->quiet) {
        printf("detections: %lld matched, %lld missed, %lld extra, %lld label flips above score %g (IoU >= %g): %s\n",
               (long long)r.n, (long long)r.missed, (long long)r.extra, (long long)r.label_flips,
               a->det.score_floor, a->det.iou, dm_passed(&r) ? "PASS" : dm_judged(&r) ? "FAIL" : "NOT JUDGED (FAIL)");
        if (!dm_judged(&r)) printf("not judged: %s\n", dm_not_judged(&r, &a->det, why, sizeof why));
    }
    if (doc) {
        json_object_set_new(doc, "passed_elementwise", json_boolean(elem_status == EXIT_PASS));
        json_object_set_new(doc, "detections", dm_json(&r, &a->det));
        json_object_set_new(doc, "passed", json_boolean(dm_passed(&r)));
        json_object_set_new(doc, "judged", json_boolean(dm_judged(&r)));
        if (dm_judged(&r)) json_object_del(doc, "not_judged");
        else json_object_set_new(doc, "not_judged", json_string(dm_not_judged(&r, &a->det, why, sizeof why)));
    }
    int status = dm_passed(&r) ? EXIT_PASS : EXIT_CHECK;
    dm_result_free(&r);
    return status;
}

static int run_convert(const args_t *a, int argc, char **argv)
{
    if (argc != 1) die_usage("compare", "--to-polygraphy takes exactly one SRC");
    perr_t e = {0};
    if (convert_to_polygraphy(argv[0], a->topoly, a->inputs ? POLY_INPUTS : POLY_OUTPUTS, a->runner, &e))
        perr_die("compare", &e);
    return 0;
}

int main(int argc, char **argv)
{
    args_t a = {0};
    args_expand("compare", &argc, &argv);
    parse_args(argc, argv, &a);
    if (a.topoly) return run_convert(&a, argc - optind, argv + optind);
    if (argc - optind != 2) die_usage("compare", "expected A and B");

    perr_t e = {0};
    cmp_side_t sa, sb;
    if (side_open(argv[optind], &sa, &e) || side_open(argv[optind + 1], &sb, &e)) perr_die("compare", &e);
    cmp_report_t rep = {.a = &sa, .b = &sb, .cfg = &a.cfg};
    json_t *doc = NULL;
    int status;
    if (a.layerwise) {
        lw_layers_t L;
        lw_result_t r;
        if (lw_layers_read(a.layers, &L, &e) || lw_run(&sa, &sb, &L, &a.cfg, a.local, &r, &e)) perr_die("compare", &e);
        if (!a.quiet) lw_text(stdout, &r, &rep);
        status = lw_status(&r);
        if (a.json) {
            doc = report_json(&rep);
            json_object_del(doc, "counts");
            json_object_del(doc, "tensors");
            json_object_set_new(doc, "passed", json_boolean(status == EXIT_PASS));
            json_object_set_new(doc, "layerwise", lw_json(&r));
        }
        lw_result_free(&r);
        lw_layers_free(&L);
    } else {
        if (cmp_run(&sa, &sb, &a.cfg, &rep, &e) || cmp_check_judged(&a.cfg, &rep, &e)) perr_die("compare", &e);
        if (!a.quiet) report_text(stdout, &rep);
        status = cmp_report_status(&rep);
        if (a.json) doc = report_json(&rep);
        if (a.detection) status = run_detection(&a, &sa, &sb, doc, status);
    }
    if (doc && write_json(a.json, doc, CMP_JSON_FLAGS, &e)) perr_die("compare", &e);
    json_decref(doc);
    cmp_report_free(&rep);
    side_free(&sa);
    side_free(&sb);
    cmp_config_free(&a.cfg);
    if (a.detection) dm_config_free(&a.det);
    return status;
}
