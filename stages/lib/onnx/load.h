/* load.h — ONNX model -> graph IR. Handles opset imports per domain,
 * initializers (raw and typed fields, external data inside the model's folder
 * only), Constant nodes, every attribute type, and model-local functions
 * (inlined, recursively). */
#ifndef PARITY_ONNX_LOAD_H
#define PARITY_ONNX_LOAD_H

#include "graph/graph.h"

/* Loads MODEL.onnx. Graph inputs that also have an initializer become
 * constants (old exporters list weights as inputs). Returns NULL with e set. */
graph_t *onnx_load(const char *path, perr_t *e);
/* Fills *hex (65 bytes) with the SHA-256 of a file. */
int file_sha256(const char *path, char hex[65], perr_t *e);

#endif
