/* onnx.c — fuzz harness: the ONNX model loader (onnx/load.c), from a file in
 * the scratch folder, so external-data paths resolve against it. */
#include "fuzz/fuzz.h"
#include "onnx/load.h"

FUZZ_READER(onnx)
{
    graph_t *g = onnx_load(fuzz_file("model.onnx", d, n), e);
    graph_free(g);
    return g ? 0 : -1;
}
