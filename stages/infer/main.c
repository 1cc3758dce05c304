/* infer — runs an engine on input tensor sets.
 *
 *   infer ENGINE -i IN -o OUT [--stats stats.json] [[--engine ENGINE2] -i IN2 -o OUT2 [--stats S2]]...
 *         [--dump all|GLOB [--dump-budget BYTES | --dump-like DUMP]]
 *         [--threads N] [--runs N]
 *         [--reference REF_DUMP] [--profile profile.json]
 *         [--warmup N] [--judge GLOB]... [--ignore GLOB]... [--show-sample NAME]
 *
 * IN is one tensor set (a folder of .npy/.pb files) or a folder of them, one
 * subfolder per sample, mirrored into OUT. --dump adds intermediate tensors
 * to the outputs without changing any computed value. --reference feeds every
 * layer the reference dump's inputs (local error, see compare --layerwise).
 * Outputs are identical for any thread count. Each output folder appears
 * only when complete. --judge/--ignore name the outputs the comparison
 * judges: only those are written for every sample, the others for the
 * sample the report shows (issue 34: disk use at 1024x1024). Several
 * -i/-o pairs run in one session, each sample beside the first set's
 * sample of the same name: where it differs from that one only in some
 * inputs, only the layers they reach run again (run.c; issue 41: the
 * matrix's variants that differ only in an input read at the graph's end).
 * --engine gives the pairs after it another engine: its layers that
 * compute what the first engine's do (engine/match.c decides from the
 * engines' bytes) take the first set's values instead of running (the
 * matrix's fp16 and mixed engines share their backbone), and its twins
 * take what they can from an earlier set of their own engine.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "engine/engine.h"
#include "engine/exec.h"
#include "ops/gemm/blas.h"
#include "util/isa.h"
#include "run.h"
#include "util/pool.h"
#include "util/fsutil.h"
#include "util/args.h"
#include "version.h"

static const char usage[] =
    "usage: infer ENGINE -i IN -o OUT [options]\n"
    "  -i, --input IN           a tensor set, or a folder of them (one per sample)\n"
    "  -o, --output OUT         output tensor set(s), mirroring IN\n"
    "                           -i/-o again (and --stats, once per pair or never): more sets in the\n"
    "                           same process; a sample that differs from the first set's sample of\n"
    "                           its name only in some inputs reruns only the layers they reach\n"
    "      --engine ENGINE2     the -i/-o pairs after it run ENGINE2 (until the next --engine): the\n"
    "                           layers it computes as ENGINE does take the first set's values, and\n"
    "                           a set whose sample differs from an earlier ENGINE2 set's only in some\n"
    "                           inputs reruns only the layers they reach (the same bytes always;\n"
    "                           a set that cannot share runs whole)\n"
    "      --dump all|GLOB      also write intermediate tensors (by tensor name)\n"
    "      --dump-budget BYTES  write at most BYTES per sample (graph outputs, always written,\n"
    "                           included): every k-th dumped tensor in execution order, k the\n"
    "                           smallest that fits\n"
    "      --run-budget BYTES   the dump's share of a whole run's budget: BYTES less --engines N\n"
    "                           engines of this one's size and --cells N cells' outputs (this\n"
    "                           sample's, judged ones x --samples N), over --dumps N dumps\n"
    "      --dump-like DUMP     write only the dumped tensors the folder DUMP holds (the other\n"
    "                           side of a layerwise comparison)\n"
    "      --threads N          worker threads (default 1); results do not depend on it\n"
    "      --runs N             run each sample N times for latency (default 1)\n"
    "      --warmup N           run each sample N times more first, outside the statistics\n"
    "                           and the profile (default 0: a cold first run counts)\n"
    "      --judge GLOB         an output the comparison judges (repeatable; default: all): the\n"
    "                           others are written for the shown sample only, and a dump holds\n"
    "                           them as it holds intermediate tensors\n"
    "      --ignore GLOB        an output not judged (repeatable)\n"
    "      --show-sample NAME   the sample whose every output is written (default: the first)\n"
    "      --reference DUMP     run each layer on the reference dump's inputs (local error)\n"
    "      --stats FILE         latency statistics (JSON): of the layers run, where a set reran part\n"
    "      --profile FILE       per-layer times (JSON, laid out as trtexec --exportProfile)\n"
    "      --isa LEVEL          avx512, avx2 or generic: cap the kernels' instruction set\n"
    "                           [PARITY_ISA, else the CPU's best]; the same bits at every level\n"
    "      --kernels own|blas   matrix products on parity's kernels (default: the same bits on every\n"
    "                           CPU) or OpenBLAS (often faster; results depend on the CPU)\n"
    "  @FILE                    more arguments, from FILE: a JSON array of strings (plan's .args)\n"
    "  -h, --help | -V, --version\n"
    "Exit: 0 done, 2 bad usage or bad input, 3 internal error.\n";

static void add_path(const char ***v, int *n, const char *p)
{
    *v = xrealloc(*v, (size_t)(*n + 1) * sizeof **v);
    (*v)[(*n)++] = p;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"input", required_argument, 0, 'i'}, {"output", required_argument, 0, 'o'},
        {"dump", required_argument, 0, 'd'}, {"threads", required_argument, 0, 't'},
        {"runs", required_argument, 0, 'r'}, {"reference", required_argument, 0, 'R'},
        {"stats", required_argument, 0, 's'}, {"profile", required_argument, 0, 'P'},
        {"warmup", required_argument, 0, 'W'}, {"dump-budget", required_argument, 0, 'B'},
        {"dump-like", required_argument, 0, 'L'}, {"judge", required_argument, 0, 'J'},
        {"ignore", required_argument, 0, 'N'}, {"show-sample", required_argument, 0, 'S'},
        {"run-budget", required_argument, 0, 'U'}, {"dumps", required_argument, 0, 'D'},
        {"engines", required_argument, 0, 'E'}, {"cells", required_argument, 0, 'C'},
        {"samples", required_argument, 0, 'M'}, {"engine", required_argument, 0, 'G'},
        {"isa", required_argument, 0, 'I'}, {"kernels", required_argument, 0, 'K'}, {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, 'V'}, {0, 0, 0, 0},
    };
    infer_job_t job = {.runs = 1, .dump = {.budget = -1, .run = {.bytes = -1, .dumps = 1, .engines = 1, .cells = 1, .samples = 1}}};
    run_budget_t *rb = &job.dump.run;
    exec_config_t xc = {.threads = 1};
    const char *reference = NULL;
    const char *isa = NULL, *kernels = NULL;
    const char **ins = NULL, **outs = NULL, **stats = NULL, **engines = NULL;
    int n_ins = 0, n_outs = 0, n_stats = 0, n_engines = 0, *in_engine = NULL, engine_used = 1;
    add_path(&engines, &n_engines, NULL);   /* [0]: ENGINE, known once the options are read */
    name_sel_t keep = {0};
    int c;
    args_expand("infer", &argc, &argv);
    while ((c = getopt_long(argc, argv, "i:o:hV", longopts, NULL)) != -1) {
        switch (c) {
        case 'i':
            in_engine = xrealloc(in_engine, (size_t)(n_ins + 1) * sizeof *in_engine);
            in_engine[n_ins] = n_engines - 1;
            engine_used = 1;
            add_path(&ins, &n_ins, optarg);
            break;
        case 'G':
            if (!n_ins) die_usage("infer", "--engine %s before the first -i: the first pair runs ENGINE", optarg);
            if (!engine_used) die_usage("infer", "--engine %s: the --engine before it has no -i/-o pair", optarg);
            add_path(&engines, &n_engines, optarg);
            engine_used = 0;
            break;
        case 'o': add_path(&outs, &n_outs, optarg); break;
        case 'd': xc.dump = optarg; break;
        case 't': xc.threads = (int)opt_int("infer", "--threads", optarg, 1, 256); break;
        case 'r': job.runs = (int)opt_int("infer", "--runs", optarg, 1, 1000000); break;
        case 'W': job.warmup = (int)opt_int("infer", "--warmup", optarg, 0, 1000000); break;
        case 'R': reference = optarg; break;
        case 'B': job.dump.budget = opt_int("infer", "--dump-budget", optarg, 0, (long long)1 << 50); break;
        case 'L': job.dump.like = optarg; break;
        case 'J': case 'N':
            if (!*optarg) die_usage("infer", "%s needs a tensor name or glob", c == 'J' ? "--judge" : "--ignore");
            name_sel_add(&keep, c == 'N', optarg);
            break;
        case 'S': job.show_sample = optarg; break;
        case 'U': rb->bytes = opt_int("infer", "--run-budget", optarg, 0, (long long)1 << 50); break;
        case 'D': rb->dumps = (int)opt_int("infer", "--dumps", optarg, 1, 1 << 20); break;
        case 'E': rb->engines = (int)opt_int("infer", "--engines", optarg, 0, 1 << 20); break;
        case 'C': rb->cells = (int)opt_int("infer", "--cells", optarg, 0, 1 << 20); break;
        case 'M': rb->samples = (int)opt_int("infer", "--samples", optarg, 0, 1 << 30); break;
        case 's': add_path(&stats, &n_stats, optarg); break;
        case 'P': job.profile = optarg; break;
        case 'I': isa = optarg; break;
        case 'K': kernels = optarg; break;
        case 'h': fputs(usage, stdout); return 0;
        case 'V': puts("infer (parity) " PARITY_VERSION); return 0;
        default: die_usage("infer", "unknown option");
        }
    }
    if (optind != argc - 1) die_usage("infer", "expected exactly one ENGINE");
    if (!engine_used) die_usage("infer", "--engine %s: no -i/-o pair follows it", engines[n_engines - 1]);
    engines[0] = argv[optind];
    if (!n_ins || !n_outs) die_usage("infer", "missing -i IN or -o OUT");
    if (n_ins != n_outs) die_usage("infer", "%d -i and %d -o: give one -o for each -i", n_ins, n_outs);
    if (n_stats && n_stats != n_ins) die_usage("infer", "%d --stats for %d -i: give one for each -i, or none", n_stats, n_ins);
    if (n_ins > 1 && (xc.dump || reference || job.profile))
        die_usage("infer", "several -i/-o pairs: not with --dump, --reference or --profile (one set each)");
    job.n_sets = n_ins;
    job.sets = xcalloc((size_t)n_ins, sizeof *job.sets);
    for (int k = 0; k < n_ins; k++) job.sets[k] = (infer_set_t){ins[k], outs[k], n_stats ? stats[k] : NULL, in_engine[k]};
    job.engines = engines;
    for (int k = 0; k < n_ins; k++)
        for (int j = 0; j < k; j++)
            if (!strcmp(outs[j], outs[k])) die_usage("infer", "-o %s given twice", outs[k]);
    if ((job.dump.budget >= 0 || job.dump.like) && !xc.dump) die_usage("infer", "--dump-budget and --dump-like need --dump");
    if (job.dump.budget >= 0 && job.dump.like) die_usage("infer", "--dump-budget and --dump-like: give one");
    if (rb->bytes >= 0 && (job.dump.budget >= 0 || job.dump.like || !xc.dump))
        die_usage("infer", "--run-budget needs --dump, and replaces --dump-budget and --dump-like");
    struct stat st;
    if (rb->bytes >= 0 && stat(argv[optind], &st) == 0) rb->engine_bytes = st.st_size;   /* unreadable: engine_read says so */
    if (job.dump.like && !is_dir(job.dump.like)) die_usage("infer", "--dump-like %s: not a folder", job.dump.like);
    if (name_sel_narrows(&keep)) job.dump.keep = &keep;
    /* OpenBLAS stays single-threaded: parity's pool splits work into tiles
     * that do not depend on the thread count (ops/gemm/blas.c) */
    isa_configure("infer", isa, kernels);
    blas_single_thread();
    pool_set_threads(xc.threads);

    perr_t e = {0};
    graph_t **g = xcalloc((size_t)n_engines, sizeof *g);
    for (int i = 0; i < n_engines; i++)
        if (!(g[i] = engine_read(engines[i], NULL, &e))) perr_die("infer", &e);
    job.reference = reference;
    if (infer_all(g, &xc, &job, &e)) perr_die("infer", &e);
    for (int i = 0; i < n_engines; i++) graph_free(g[i]);
    free(g);
    free(engines);
    free(in_engine);
    name_sel_free(&keep);
    free(job.sets);
    free(ins);
    free(outs);
    free(stats);
    return 0;
}
