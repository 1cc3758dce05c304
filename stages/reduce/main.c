/* reduce — from a failing cell to the smallest ONNX that still shows the
 * problem, ready to attach to a bug report against the engine.
 *
 *   reduce MODEL.onnx --inputs DIR --reference DUMP (--config PREC.yaml | --precision P)
 *          [compare's rule options] -o OUTDIR
 *   reduce --plan build/NAME/plan.json --cell VARIANT__PRECISION -o OUTDIR
 *
 * The cell: the model, its precision (a precision config as build-engine
 * reads it, or a global precision), the failing sample's inputs, the
 * reference dump (`infer --dump all` of the FP32 engine on that sample) and
 * the compare rule (--atol, --rtol, --check-error-stat, --per-tensor, or
 * --layer-snr-db: compare's flags and meanings). With --plan all of it comes
 * from the plan of `make validate` (`make reduce MODEL=NAME CELL=...`).
 *
 * How: the dump gives every tensor's reference value (an unfused FP32 run
 * in-process fills in what fusion hid); the cell's precision runs in-process
 * and the first non-finite tensor, else the first failing one by the rule,
 * is the target. The cut is searched by graph structure: bisection over the
 * topological order of the target's ancestors for the latest start that
 * still fails, then each remaining side node removed in turn (its outputs
 * become inputs holding their reference values) while it still fails. Each
 * candidate is a standalone ONNX of the model's own nodes (opset, names,
 * attributes kept), built and run at the cell's precision, judged by the
 * cell's rule. A cell whose layers each pass on their own is reported as
 * accumulating error: the shortest failing window and its per-layer profile.
 *
 * OUTDIR (appears complete or not at all): model.onnx, inputs/ (.npy),
 * inputs-raw/ (raw bytes for trtexec --loadInputs), inputs.json (Polygraphy
 * --load-inputs), reference/ (the output's FP32 value), precision.yaml,
 * report.json, repro.md. The same inputs give the same bytes.
 *
 * Exit: 0 reduced, 1 nothing to reduce (every tensor passes the rule),
 * 2 bad usage or bad input (a missing dump is named), 3 internal error.
 * docs/reduce.md.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ops/gemm/blas.h"
#include "reduce.h"
#include "util/args.h"
#include "util/fsutil.h"
#include "util/pool.h"
#include "version.h"

static const char usage[] =
    "usage: reduce MODEL.onnx --inputs DIR --reference DUMP (--config PREC.yaml | --precision P) [rule] -o OUTDIR\n"
    "       reduce --plan build/NAME/plan.json --cell VARIANT__PRECISION -o OUTDIR\n"
    "  -i, --inputs DIR          the failing sample's inputs (a tensor set)\n"
    "  -r, --reference DUMP      the reference's dump of that sample (infer --dump all)\n"
    "  -c, --config FILE         the cell's precision config (build-engine --config)\n"
    "  -p, --precision P         fp32 | tf32 | fp16 | bf16 (overrides the config's)\n"
    "      --plan FILE --cell C  everything above from a validation plan\n"
    "  rule (compare's): --atol A --rtol R --check-error-stat S --quantile Q --per-tensor NAME=atol,rtol\n"
    "                    --layer-snr-db X (tensors judged by SNR) --nan-equal --inf-equal\n"
    "  -o, --output DIR          the reduced reproducer\n"
    "      --threads N           worker threads (default 1); results do not depend on it\n"
    "  -q, --quiet | -h, --help | -V, --version      arguments may come from @FILE (a JSON array)\n"
    "Exit: 0 reduced, 1 nothing to reduce, 2 bad input, 3 internal error.\n";

static double nonneg(const char *opt, const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !isfinite(v) || v < 0) die_usage("reduce", "%s needs a non-negative number, not '%s'", opt, s);
    return v;
}

/* The rule as compare's flags (per-tensor names shell-quoted), for repro.md. */
static char *rule_args(const cmp_config_t *r)
{
    char *buf;
    size_t n;
    FILE *f = open_memstream(&buf, &n);
    fprintf(f, "--atol %.10g --rtol %.10g --check-error-stat %s", r->tol.atol, r->tol.rtol, cmp_stat_name(r->tol.stat));
    if (r->tol.stat == CMP_STAT_QUANTILE) fprintf(f, " --quantile %.10g", r->tol.quantile);
    if (r->tol.nan_equal) fputs(" --nan-equal", f);
    if (r->tol.inf_equal) fputs(" --inf-equal", f);
    for (int i = 0; i < r->n_over; i++) {
        fputs(" --per-tensor '", f);
        for (const char *s = r->over[i].pattern; *s; s++) { if (*s == '\'') fputs("'\\''", f); else fputc(*s, f); }
        fprintf(f, "=%.10g,%.10g'", r->over[i].atol, r->over[i].rtol);
    }
    fclose(f);
    return buf;
}

enum { O_PLAN = 256, O_CELL, O_ATOL, O_RTOL, O_STAT, O_QUANT, O_RULE, O_PER, O_LSNR, O_NANEQ, O_INFEQ, O_THREADS };

static void parse_args(int argc, char **argv, rd_cell_t *cell, const char **plan, const char **cname,
                       const char **out, rd_ctx_t *c)
{
    static const struct option longopts[] = {
        {"inputs", required_argument, 0, 'i'}, {"reference", required_argument, 0, 'r'},
        {"config", required_argument, 0, 'c'}, {"precision", required_argument, 0, 'p'},
        {"output", required_argument, 0, 'o'}, {"plan", required_argument, 0, O_PLAN},
        {"cell", required_argument, 0, O_CELL}, {"atol", required_argument, 0, O_ATOL},
        {"rtol", required_argument, 0, O_RTOL}, {"check-error-stat", required_argument, 0, O_STAT},
        {"quantile", required_argument, 0, O_QUANT}, {"rule", required_argument, 0, O_RULE},
        {"per-tensor", required_argument, 0, O_PER}, {"layer-snr-db", required_argument, 0, O_LSNR},
        {"nan-equal", no_argument, 0, O_NANEQ}, {"inf-equal", no_argument, 0, O_INFEQ},
        {"threads", required_argument, 0, O_THREADS}, {"quiet", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'}, {"version", no_argument, 0, 'V'}, {0, 0, 0, 0},
    };
    perr_t e = {0};
    int ch;
    while ((ch = getopt_long(argc, argv, "i:r:c:p:o:qhV", longopts, NULL)) != -1) {
        switch (ch) {
        case 'i': free(cell->inputs); cell->inputs = xstrdup(optarg); break;
        case 'r': free(cell->dump); cell->dump = xstrdup(optarg); break;
        case 'c': free(cell->config); cell->config = xstrdup(optarg); break;
        case 'p':
            if (strcmp(optarg, "fp32") && strcmp(optarg, "tf32") && strcmp(optarg, "fp16") && strcmp(optarg, "bf16"))
                die_usage("reduce", "--precision '%s': expected fp32, tf32, fp16 or bf16", optarg);
            free(cell->precision); cell->precision = xstrdup(optarg);
            break;
        case 'o': *out = optarg; break;
        case O_PLAN: *plan = optarg; break;
        case O_CELL: *cname = optarg; break;
        case O_ATOL: cell->rule.tol.atol = nonneg("--atol", optarg); break;
        case O_RTOL: cell->rule.tol.rtol = nonneg("--rtol", optarg); break;
        case O_STAT:
            if (cmp_stat_parse(optarg, &cell->rule.tol.stat)) die_usage("reduce", "--check-error-stat: unknown '%s'", optarg);
            break;
        case O_QUANT:
            cell->rule.tol.quantile = nonneg("--quantile", optarg);
            if (cell->rule.tol.quantile > 1) die_usage("reduce", "--quantile must be in [0, 1]");
            break;
        case O_RULE:
            if (cmp_rule_parse(optarg, &cell->rule.tol.rule)) die_usage("reduce", "--rule: unknown '%s'", optarg);
            break;
        case O_PER:
            if (cmp_config_add_override(&cell->rule, optarg, &e)) die_usage("reduce", "%s", e.msg);
            break;
        case O_LSNR: cell->rule.layer_snr_db = nonneg("--layer-snr-db", optarg); break;
        case O_NANEQ: cell->rule.tol.nan_equal = 1; break;
        case O_INFEQ: cell->rule.tol.inf_equal = 1; break;
        case O_THREADS: c->threads = (int)opt_int("reduce", "--threads", optarg, 1, 256); break;
        case 'q': c->quiet = 1; break;
        case 'h': fputs(usage, stdout); exit(0);
        case 'V': puts("reduce (parity) " PARITY_VERSION); exit(0);
        default: die_usage("reduce", "unknown option");
        }
    }
}

static void resolve_cell(int argc, char **argv, rd_cell_t *cell, const char *plan, const char *cname)
{
    perr_t e = {0};
    if (plan || cname) {
        if (!plan || !cname) die_usage("reduce", "--plan and --cell go together");
        if (optind != argc || cell->model || cell->inputs || cell->dump || cell->config)
            die_usage("reduce", "--plan takes the model, inputs, dump and config from the plan: give no others");
        rd_cell_t pc;
        if (rd_cell_from_plan(plan, cname, &pc, &e)) perr_die("reduce", &e);
        free(pc.precision);
        pc.precision = cell->precision;
        cmp_config_free(&cell->rule);
        *cell = pc;
        return;
    }
    if (optind != argc - 1) die_usage("reduce", "expected exactly one MODEL.onnx (or --plan and --cell)");
    cell->model = xstrdup(argv[optind]);
    cell->name = xstrdup("");
    if (!cell->inputs || !cell->dump) die_usage("reduce", "missing --inputs DIR or --reference DUMP");
    if (!cell->config && !cell->precision) die_usage("reduce", "missing --config PREC.yaml or --precision P");
    char *first = rd_first_sample(cell->inputs, &e);
    if (!first) perr_die("reduce", &e);
    free(cell->inputs);
    cell->inputs = first;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    args_expand("reduce", &argc, &argv);
    rd_cell_t cell = {0};
    cmp_config_init(&cell.rule);
    rd_ctx_t c = {.threads = 1, .cell = &cell};
    const char *plan = NULL, *cname = NULL, *out = NULL;
    parse_args(argc, argv, &cell, &plan, &cname, &out, &c);
    if (!out) die_usage("reduce", "missing -o OUTDIR");
    resolve_cell(argc, argv, &cell, plan, cname);
    cell.rule_args = rule_args(&cell.rule);
    blas_single_thread();
    pool_set_threads(c.threads);
    double t0 = now();
    perr_t e = {0};
    if (sg_load(cell.model, &c.sg, &e) || rd_reference(&c, &e)) perr_die("reduce", &e);
    int found = rd_diagnose(&c, &e);
    if (found < 0) perr_die("reduce", &e);
    if (!found) {
        fprintf(stderr, "reduce: %s%s%s: nothing to reduce: every tensor of the sample passes the cell's rule\n",
                cell.model, cell.name[0] ? ", cell " : "", cell.name);
        rd_ctx_free(&c); rd_cell_free(&cell);
        return EXIT_CHECK;
    }
    char *work = dir_stage_begin(out, &e);
    if (!work) perr_die("reduce", &e);
    c.work = work;
    char *cand = path_join(work, "candidate.onnx");
    if (rd_search(&c, &e) || (remove(cand), rd_emit(&c, work, &e))) {
        remove_tree(work);
        perr_die("reduce", &e);
    }
    free(cand);
    if (dir_stage_commit(work, out, &e)) perr_die("reduce", &e);
    if (!c.quiet)
        fprintf(stderr, "reduce: %s: %d of %d layers, output '%s' (%s): %s; %d evaluations, %.1f s; %s/repro.md\n",
                cell.model, c.n_keep, c.sg.n_nodes, c.sg.val[c.target], c.start_reason,
                c.accumulating ? "the error accumulates, no layer fails on its own" : "a layer fails on its own",
                c.evals, now() - t0, out);
    rd_ctx_free(&c);
    rd_cell_free(&cell);
    return 0;
}
