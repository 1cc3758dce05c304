/* tensorproto.h — ONNX TensorProto <-> tensor_t, and .pb tensor files (the
 * ONNX test-data convention). External data is resolved inside the model's
 * folder only. */
#ifndef PARITY_TENSORPROTO_H
#define PARITY_TENSORPROTO_H

#include "tensor/tensor.h"
#include "onnx.pb-c.h"

/* Converts; model_dir (may be NULL: external data is then an error) is where
 * external data files are looked up. */
int tensorproto_to_tensor(const Onnx__TensorProto *p, const char *model_dir, tensor_t *t, perr_t *e);
/* Fills a TensorProto (raw_data pointing at t->data: keep t alive while packing). */
void tensor_to_tensorproto(const tensor_t *t, const char *name, Onnx__TensorProto *p);

/* Reads a serialized TensorProto file; *name gets its name (malloc'd, may be ""). */
int pb_read(const char *path, tensor_t *t, char **name, perr_t *e);
int pb_write(const char *path, const tensor_t *t, const char *name, perr_t *e);

#endif
