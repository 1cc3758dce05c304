/* onnx.c — fuzz harness: an ONNX model as build-engine reads it: the loader
 * (onnx/load.c; external data resolved in the scratch folder), then what
 * the build does with what it read (op resolution, constant folding within
 * its size limit, dead-node removal, precision assignment, memory plan). */
#include "fuzz/fuzz.h"
#include "engine/build.h"

FUZZ_READER(onnx)
{
    build_opts_t o = {0};
    engine_meta_t meta;
    graph_t *g = engine_build(fuzz_file("model.onnx", d, n), &o, &meta, e);
    graph_free(g);
    return g ? 0 : -1;
}
