/* fix-precision — finds a small set of layers to keep in FP32 so a model
 * meets an accuracy criterion at reduced precision, and hands back what a
 * deployment takes as it is.
 *
 *   fix-precision CONFIG --precision fp16|bf16|tf32 -o OUTDIR [options]
 *
 * CONFIG is a validation config (configs/models/NAME.yaml): its model, input
 * shapes, inputs (or the reference variant's preprocessed dataset under
 * --build-dir), compare tolerances and detection settings.
 *
 * The criterion (--criterion, repeatable; every one must hold):
 *   map-drop=P    at most P AP points lost against the FP32 reference
 *   min-map=A     the AP itself at least A (the reference must reach it)
 *   compare       compare's rules with the config's tolerances, every output
 *   snr=DB        every float output's SNR against the reference >= DB
 *   cosine=C      every float output's cosine similarity >= C
 * Default: map-drop from the config's thresholds.max_map_drop when it has a
 * detection section; else snr=compare.layer_snr_db when the config sets it;
 * else compare when it sets its own tolerances; else snr=30.
 *
 * How: the FP32 reference runs once; each layer's own error at the target
 * precision (fed the reference's inputs) and its value range rank the
 * candidates, overflow sites first; units keep a decomposed LayerNorm
 * whole. The search evaluates sets of units in-process (build with per-layer
 * overrides, run the search samples, score): the overflow sites in one
 * step, then greedy addition by measured gain among the next --beam units,
 * then pruning (each removal re-verified), within --max-evals and
 * --max-seconds; the answer is verified on held-out samples. AutoCast's
 * rules and Polygraphy's prefix/suffix bisection run beside it as baselines.
 *
 * OUTDIR (appears complete or not at all): precision.yaml (build-engine
 * --config), model.onnx (strongly typed mixed precision; not for tf32),
 * trtexec.txt (TensorRT <= 10 flags), report.json, report.md, and
 * autocast.yaml / bisect.yaml for the baselines.
 *
 * Exit: 0 criterion met on the held-out samples, 1 not met (the best attempt
 * is written), 4 met only with more than half of the compute in FP32 (no
 * useful split; written too), 2 bad usage or bad input, 3 internal error.
 * --max-seconds bounds the whole run. docs/precision-repair.md.
 */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "modelcfg/model.h"
#include "ops/gemm/blas.h"
#include "search.h"
#include "util/fsutil.h"
#include "util/pool.h"
#include "version.h"

static const char usage[] =
    "usage: fix-precision CONFIG --precision fp16|bf16|tf32 -o OUTDIR [options]\n"
    "  -p, --precision P       target precision: fp16, bf16 or tf32\n"
    "  -o, --output DIR        outputs (precision.yaml, model.onnx, trtexec.txt, report.json/.md)\n"
    "  -c, --criterion C       map-drop=P | min-map=A | compare | snr=DB | cosine=C (repeatable)\n"
    "      --inputs DIR        samples (sub-folders) instead of the config's\n"
    "      --build-dir DIR     where plan put the preprocessed dataset [build/NAME]\n"
    "      --samples N         search samples (default 8)\n"
    "      --holdout N         held-out verification samples (default 8)\n"
    "      --max-evals N       evaluation budget of the search (default 60)\n"
    "      --max-seconds S     time budget of the whole run, 0 = none (default 0): no evaluation\n"
    "                          starts that would end past it\n"
    "      --beam K            candidates measured per greedy step (default 4)\n"
    "      --margin M          the search's own evaluations must beat the criterion by M (AP points for\n"
    "                          map-drop/min-map, dB for snr; default 0); held-out checks use it as given\n"
    "      --threads N         worker threads (default 1); results do not depend on it\n"
    "  -q, --quiet             no progress on stderr\n"
    "  -h, --help | -V, --version\n"
    "Exit: 0 met on held-out samples, 1 not met (best attempt written), 4 met only with more than half\n"
    "of the compute in FP32 (no useful split), 2 bad input, 3 internal error.\n";

static double parse_num(const char *s, const char *what)
{
    char *end;
    double v = strtod(s, &end);
    if (!*s || *end || !isfinite(v)) die_usage("fix-precision", "%s: '%s' is not a number", what, s);
    return v;
}

/* A criterion's number within what it can mean: refused, not searched for. */
static double parse_in(const char *s, const char *spec, double lo, double hi, const char *range)
{
    double v = parse_num(s, spec);
    if (!(v >= lo && v <= hi)) die_usage("fix-precision", "--criterion '%s': %s", spec, range);
    return v;
}

static void add_criterion(fp_criterion_t *k, const char *spec)
{
    const char *eq = strchr(spec, '=');
    size_t l = eq ? (size_t)(eq - spec) : strlen(spec);
    if (l == 7 && !strncmp(spec, "compare", l) && !eq) k->use_tol = 1;
    else if (eq && l == 8 && !strncmp(spec, "map-drop", l)) { k->use_map = k->use_drop = 1; k->max_map_drop = parse_in(eq + 1, spec, 0, 100, "an AP drop in points, 0..100"); }
    else if (eq && l == 7 && !strncmp(spec, "min-map", l)) { k->use_map = 1; k->min_map = parse_in(eq + 1, spec, 0, 1, "an AP, 0..1"); }
    else if (eq && l == 3 && !strncmp(spec, "snr", l)) { k->use_snr = 1; k->min_snr_db = parse_num(eq + 1, spec); }
    else if (eq && l == 6 && !strncmp(spec, "cosine", l)) { k->use_cos = 1; k->min_cosine = parse_in(eq + 1, spec, -1, 1, "a cosine similarity, -1..1"); }
    else die_usage("fix-precision", "--criterion '%s': expected map-drop=P, min-map=A, compare, snr=DB or cosine=C", spec);
}

/* The config's compare tolerances, as compare applies them. */
static int config_tolerances(const model_cfg_t *m, cmp_config_t *t, perr_t *e)
{
    cmp_config_init(t);
    t->tol.atol = m->atol;
    t->tol.rtol = m->rtol;
    if (m->error_stat && cmp_stat_parse(m->error_stat, &t->tol.stat))
        return BAD(e, "%s: compare.check_error_stat '%s' unknown", m->path, m->error_stat);
    for (int i = 0; i < m->n_tols; i++) {
        char spec[600];
        snprintf(spec, sizeof spec, "%s=%.17g,%.17g", m->tols[i].name, m->tols[i].atol, m->tols[i].rtol);
        if (cmp_config_add_override(t, spec, e)) return -1;
    }
    /* only the outputs the application reads are judged, as validate judges them */
    for (int i = 0; i < m->n_judge; i++) cmp_config_add_glob(t, 0, m->judge[i]);
    for (int i = 0; i < m->n_ignore; i++) cmp_config_add_glob(t, 1, m->ignore[i]);
    return 0;
}

/* outputs: / compare.ignore that leave none of the model's outputs judged
 * would make every criterion hold trivially. */
static int check_judged(const fp_ctx_t *c, const char *config, perr_t *e)
{
    const tensor_set_t *ref = c->n_samples ? &c->s[0].ref : NULL;
    for (int k = 0; ref && k < ref->n; k++)
        if (cmp_config_judged(&c->crit.tol, ref->names[k])) return 0;
    return BAD(e, "%s: outputs: / compare.ignore leave none of the model's outputs to judge", config);
}

typedef struct cli {
    const char *config, *precision, *out, *inputs, *build_dir;
    int samples, holdout, beam, explicit_crit;
} cli_t;

/* Inputs: --inputs, the config's inputs, or plan's preprocessed reference variant. */
static char *input_dir(const cli_t *a, const model_cfg_t *m, char **meta)
{
    char buf[2048];
    *meta = NULL;
    if (a->inputs) return xstrdup(a->inputs);
    if (m->inputs) return xstrdup(m->inputs);
    if (a->build_dir) snprintf(buf, sizeof buf, "%s/pre/%s", a->build_dir, m->variants[m->ref_variant].name);
    else snprintf(buf, sizeof buf, "build/%s/pre/%s", m->name, m->variants[m->ref_variant].name);
    *meta = xstrdup(buf);
    return xstrdup(buf);
}

static void setup(fp_ctx_t *c, cli_t *a, model_cfg_t *m, perr_t *e)
{
    if (model_load(m, a->config, a->build_dir ? a->build_dir : "build", e)) perr_die("fix-precision", e);
    c->model = m->model;
    c->shapes = (const char **)m->shapes;
    c->n_shapes = m->n_shapes;
    if (config_tolerances(m, &c->crit.tol, e)) perr_die("fix-precision", e);
    if (!a->explicit_crit) {
        /* the default that fits the model: a detector's mAP; the config's own
         * rule where it sets one (a layer SNR, or tolerances); else an SNR,
         * since the default tolerances (1e-5) are a bit-exactness check that
         * no reduced precision meets: it would keep everything in FP32 */
        int own_tol = config_get(m->cfg, "compare.atol") || config_get(m->cfg, "compare.rtol") || m->n_tols;
        if (m->detection && m->max_map_drop >= 0) { c->crit.use_map = c->crit.use_drop = 1; c->crit.max_map_drop = m->max_map_drop; }
        else if (m->layer_snr_db > 0) { c->crit.use_snr = 1; c->crit.min_snr_db = m->layer_snr_db; }
        else if (own_tol) c->crit.use_tol = 1;
        else { c->crit.use_snr = 1; c->crit.min_snr_db = FP_DEFAULT_SNR_DB; }
    }
    if (c->crit.use_map && !m->detection)
        die_usage("fix-precision", "%s: criterion map-drop/min-map needs a detection: section", a->config);
    char *meta;
    char *dir = input_dir(a, m, &meta);
    if (c->crit.use_map) {
        if (!meta) meta = xstrdup(dir);
        c->meta_dir = meta;
        if (coco_gt_load(m->gt, 1, &c->gt, e) ||
            coco_decode_opts_init(&c->dec, a->config, "detection", NULL, 0, e)) perr_die("fix-precision", e);
        c->has_gt = 1;
    } else {
        free(meta);
    }
    if (!is_dir(dir)) {
        BAD(e, "%s: inputs '%s' not found (run `make fix-precision MODEL=%s`, which prepares them)", a->config, dir, m->name);
        perr_die("fix-precision", e);
    }
    if (fp_load_samples(c, dir, a->samples, a->holdout, e)) perr_die("fix-precision", e);
    free(dir);
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"precision", required_argument, 0, 'p'}, {"output", required_argument, 0, 'o'},
        {"criterion", required_argument, 0, 'c'}, {"inputs", required_argument, 0, 'I'},
        {"build-dir", required_argument, 0, 'B'}, {"samples", required_argument, 0, 'S'},
        {"holdout", required_argument, 0, 'H'}, {"max-evals", required_argument, 0, 'E'},
        {"max-seconds", required_argument, 0, 'T'}, {"beam", required_argument, 0, 'K'},
        {"margin", required_argument, 0, 'M'},
        {"threads", required_argument, 0, 't'}, {"quiet", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'}, {"version", no_argument, 0, 'V'}, {0, 0, 0, 0},
    };
    cli_t a = {.samples = 8, .holdout = 8, .beam = 4};
    fp_ctx_t c = {.threads = 1, .max_evals = 60, .crit.min_map = -1};
    int ch;
    while ((ch = getopt_long(argc, argv, "p:o:c:qhV", longopts, NULL)) != -1) {
        switch (ch) {
        case 'p': a.precision = optarg; break;
        case 'o': a.out = optarg; break;
        case 'c': add_criterion(&c.crit, optarg); a.explicit_crit = 1; break;
        case 'I': a.inputs = optarg; break;
        case 'B': a.build_dir = optarg; break;
        case 'S': a.samples = (int)parse_num(optarg, "--samples"); break;
        case 'H': a.holdout = (int)parse_num(optarg, "--holdout"); break;
        case 'E': c.max_evals = (int)parse_num(optarg, "--max-evals"); break;
        case 'T': c.max_seconds = parse_num(optarg, "--max-seconds"); break;
        case 'K': a.beam = (int)parse_num(optarg, "--beam"); break;
        case 'M': c.crit.margin = parse_num(optarg, "--margin"); break;
        case 't': c.threads = (int)parse_num(optarg, "--threads"); break;
        case 'q': c.quiet = 1; break;
        case 'h': fputs(usage, stdout); return 0;
        case 'V': puts("fix-precision (parity) " PARITY_VERSION); return 0;
        default: die_usage("fix-precision", "unknown option");
        }
    }
    if (optind != argc - 1) die_usage("fix-precision", "expected exactly one CONFIG");
    a.config = argv[optind];
    if (!a.precision || !a.out) die_usage("fix-precision", "missing --precision or -o OUTDIR");
    if (strcmp(a.precision, "fp16") && strcmp(a.precision, "bf16") && strcmp(a.precision, "tf32"))
        die_usage("fix-precision", "--precision '%s': expected fp16, bf16 or tf32", a.precision);
    if (c.crit.margin < 0) die_usage("fix-precision", "--margin must be at least 0");
    if (a.samples < 1 || a.holdout < 0 || a.beam < 1 || c.threads < 1 || c.threads > 256)
        die_usage("fix-precision", "--samples, --beam and --threads must be at least 1, --holdout at least 0");
    if (c.max_seconds < 0) die_usage("fix-precision", "--max-seconds must be at least 0 (0: no limit)");
    struct stat st;
    if (lstat(a.out, &st) == 0 && !S_ISDIR(st.st_mode))
        die_usage("fix-precision", "-o '%s': exists and is not a folder (it would be replaced by one)", a.out);
    if (c.max_evals < 2 || (c.max_seconds > 0 && c.max_seconds < 1))
        die_usage("fix-precision", "budget too small: the search needs at least 2 evaluations (--max-evals) and 1 s");
    c.low = a.precision;
    blas_single_thread();
    pool_set_threads(c.threads);

    perr_t e = {0};
    model_cfg_t m;
    setup(&c, &a, &m, &e);
    char *work = dir_stage_begin(a.out, &e);
    if (!work) perr_die("fix-precision", &e);
    c.work = work;
    c.t0 = c.t_start = fp_now();
    if (fp_reference(&c, &e) || check_judged(&c, a.config, &e)) goto fail;
    if (c.crit.min_map >= 0 && c.ref_map_search < c.crit.min_map) {
        BAD(&e, "%s: the FP32 reference itself has AP %.4f < min-map %.4f on the search samples: nothing to repair",
            a.config, c.ref_map_search, c.crit.min_map);
        goto fail;
    }
    if (fp_analyze(&c, &e)) goto fail;
    fp_result_t ours = {0}, ac = {0}, bi = {0}, low = {0};
    ours.reason = xcalloc(c.n_units + 1, sizeof *ours.reason);
    ours.gain = xcalloc(c.n_units + 1, sizeof *ours.gain);
    if (fp_score_result(&c, &low, &e) || fp_autocast(&c, 512, 65504, &ac, &e) || fp_prefix_suffix(&c, &bi, &e))
        goto fail;
    /* the smallest baseline that passes the search samples seeds elimination;
     * every layer in FP32 (the reference itself) is no repair */
    int bi_ok = bi.search.pass && bi.n_layers < c.n_layers, ac_ok = ac.search.pass && ac.n_layers < c.n_layers;
    fp_result_t *seed = ac_ok && (!bi_ok || ac.n_layers <= bi.n_layers) ? &ac : bi_ok ? &bi : NULL;
    if (fp_search(&c, a.beam, seed, &ours, &e)) goto fail;
    /* nothing unverified is handed back while a baseline passes both sample sets */
    if (ours.has_hold && !ours.hold.pass) {
        fp_result_t *b[2] = {&ac, &bi}, *best = NULL;
        for (int i = 0; i < 2; i++)
            if (b[i]->search.pass && b[i]->has_hold && b[i]->hold.pass && b[i]->n_layers < c.n_layers &&
                (!best || b[i]->n_layers < best->n_layers))
                best = b[i];
        if (best && fp_adopt_baseline(&c, &ours, best, best == &ac ? "AutoCast's answer, which passes both, is kept"
                                                                   : "the bisection's answer, which passes both, is kept", &e))
            goto fail;
    }
    /* the budget ended the search: evaluations left out, or no time for one more round */
    c.time_hit = c.max_seconds > 0 && (c.skipped_evals || fp_now() - c.t_start + c.sample_s * c.n_samples > c.max_seconds);
    int met = ours.hold.pass && ours.search.pass;
    double share = ours.flops / (c.total_flops ? c.total_flops : 1);
    /* met, but only by keeping most of the compute in FP32: no split worth deploying */
    int useless = met && share > FP_USEFUL_MAX_FP32;
    c.verdict = useless ? "no_useful_split" : met ? "met" : "not_met";
    if (fp_emit(&c, work, a.config, &ours, &ac, &bi, &low, &e)) goto fail;
    if (dir_stage_commit(work, a.out, &e)) perr_die("fix-precision", &e);
    char budget[160] = "";
    if (c.time_hit)
        snprintf(budget, sizeof budget, " (--max-seconds %g ended the search: %d evaluation(s) left out, %.1f s in all)",
                 c.max_seconds, c.skipped_evals, fp_now() - c.t_start);
    if (useless)
        fprintf(stderr, "fix-precision: %s: no useful reduced-precision split: %.1f%% of compute stays FP32 (%d of %d layers; "
                "a split is useful below %.0f%%): deploy FP32, or relax the criterion%s; report %s/report.md\n",
                a.config, 100.0 * share, ours.n_layers, c.n_layers, 100.0 * FP_USEFUL_MAX_FP32, budget, a.out);
    else if (!c.quiet || !met)
        fprintf(stderr, "fix-precision: %s: %d of %d layers in fp32 (%.2f%% of the FLOPs): %s%s; report %s/report.md\n",
                a.config, ours.n_layers, c.n_layers, 100.0 * share,
                met ? "criterion met on the held-out samples"
                    : ours.search.pass ? "criterion met on the search samples but NOT on the held-out ones"
                                       : "criterion NOT met within the budget; best attempt written",
                budget, a.out);
    fp_result_free(&ours); fp_result_free(&ac); fp_result_free(&bi); fp_result_free(&low);
    fp_ctx_free(&c);
    model_free(&m);
    return useless ? FP_EXIT_NO_SPLIT : met ? 0 : 1;
fail:
    remove_tree(work);
    perr_die("fix-precision", &e);
}
