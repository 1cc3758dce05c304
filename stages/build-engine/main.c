/* build-engine — turns an ONNX model into a parity engine file.
 *
 *   build-engine MODEL.onnx -o ENGINE [--input-shape NAME=1x3x320x320]...
 *                [--precision fp32|tf32|fp16|bf16] [--config precision.yaml]
 *                [--layers-out layers.json] [-v]
 *   build-engine --list-passes
 *
 * The engine holds the optimised graph (constants folded, dead nodes gone),
 * every layer's precision and the memory plan; the layer report lists the
 * layers in execution order. An unsupported operator fails the build with
 * one line naming the node, its op and opset, and no engine file is written.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include "engine/build.h"
#include "ops/gemm/blas.h"
#include "util/args.h"
#include "util/isa.h"
#include "version.h"

static const char usage[] =
    "usage: build-engine MODEL.onnx -o ENGINE [options]\n"
    "  -o, --output ENGINE          engine file to write\n"
    "      --input-shape NAME=DIMS  fix an input's shape, e.g. images=1x3x320x320 (repeatable)\n"
    "      --precision P            fp32 (default), tf32, fp16 or bf16 (overrides the config)\n"
    "      --config FILE            precision config: per-layer constraints, strongly_typed\n"
    "      --layers-out FILE        write the layer report (JSON)\n"
    "      --no-fusion              keep activations as layers of their own\n"
    "      --no-narrow              store every float32 constant in 4 bytes (by default one that\n"
    "                               float16 or bfloat16 holds exactly is stored in 2, read back exactly)\n"
    "      --no-widen               run float16 tensors of FP16-weight models as float16 (slower,\n"
    "                               the same values; default: float32 rounded to float16)\n"
    "  -v, --verbose                each pass on stderr as it ends: its name, nodes before and after\n"
    "      --list-passes            print the build's passes, in order, and exit\n"
    "      --isa LEVEL              avx512, avx2 or generic: cap the kernels' instruction set\n"
    "                               [PARITY_ISA, else the CPU's best]; the same bits at every level\n"
    "      --kernels own|blas       matrix products on parity's kernels (default: the same bits on every\n"
    "                               CPU) or OpenBLAS (often faster; results depend on the CPU)\n"
    "      @FILE                    more arguments, from FILE: a JSON array of strings (plan's .args)\n"
    "  -h, --help                   this text\n"
    "  -V, --version                print the version\n"
    "Exit: 0 built, 2 bad usage or bad model, 3 internal error.\n";

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"output", required_argument, 0, 'o'}, {"input-shape", required_argument, 0, 's'},
        {"precision", required_argument, 0, 'p'}, {"config", required_argument, 0, 'c'}, {"layers-out", required_argument, 0, 'l'}, {"no-fusion", no_argument, 0, 'F'}, {"no-widen", no_argument, 0, 'W'}, {"no-narrow", no_argument, 0, 'N'},
        {"verbose", no_argument, 0, 'v'}, {"list-passes", no_argument, 0, 'L'},
        {"isa", required_argument, 0, 'I'}, {"kernels", required_argument, 0, 'K'},
        {"help", no_argument, 0, 'h'}, {"version", no_argument, 0, 'V'}, {0, 0, 0, 0},
    };
    args_expand("build-engine", &argc, &argv);
    const char *out = NULL, *layers = NULL;
    build_opts_t o = {0};
    o.input_shapes = calloc(argc + 1, sizeof *o.input_shapes);
    const char *isa = NULL, *kernels = NULL;
    int c, list = 0, no_narrow = 0;
    while ((c = getopt_long(argc, argv, "o:vhV", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 's': o.input_shapes[o.n_input_shapes++] = optarg; break;
        case 'p': o.precision = optarg; break;
        case 'c': o.precision_config = optarg; break;
        case 'l': layers = optarg; break;
        case 'F': o.no_fusion = 1; break;
        case 'W': o.no_widen = 1; break;
        case 'N': no_narrow = 1; break;
        case 'v': o.trace = stderr; break;
        case 'L': list = 1; break;
        case 'I': isa = optarg; break;
        case 'K': kernels = optarg; break;
        case 'h': fputs(usage, stdout); return 0;
        case 'V': puts("build-engine (parity) " PARITY_VERSION); return 0;
        default: die_usage("build-engine", "unknown option");
        }
    }
    if (list) {
        engine_list_passes(stdout);
        free(o.input_shapes);
        return 0;
    }
    if (optind != argc - 1) die_usage("build-engine", "expected exactly one MODEL.onnx");
    if (!out) die_usage("build-engine", "missing -o ENGINE");

    /* constants are folded with the kernels infer uses, OpenBLAS single-threaded
     * as there, so the engine's bytes do not depend on this machine's cores */
    isa_configure("build-engine", isa, kernels);
    blas_single_thread();
    perr_t e = {0};
    engine_meta_t m;
    graph_t *g = engine_build(argv[optind], &o, &m, &e);
    if (!g) perr_die("build-engine", &e);
    m.no_narrow = no_narrow;
    /* the engine is written last: its existence means the build completed */
    if (layers && layers_write_json(g, &m, layers, &e)) perr_die("build-engine", &e);
    if (engine_write(g, &m, out, &e)) perr_die("build-engine", &e);
    graph_free(g);
    free(o.input_shapes);
    return 0;
}
