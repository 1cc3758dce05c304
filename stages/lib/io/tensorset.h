/* tensorset.h — a tensor set: named tensors, stored as a folder with one
 * file per tensor (docs/design.md "Data formats"). File names are name_encode()d
 * tensor names plus .npy; .pb files (ONNX TensorProto, the ONNX test-data
 * convention) are read too, named by the TensorProto's name or, when that is
 * empty, left unnamed ("") with their file order kept for positional binding. */
#ifndef PARITY_TENSORSET_H
#define PARITY_TENSORSET_H

#include "tensor/tensor.h"

typedef struct tensor_set {
    int n, cap;
    char **names;
    tensor_t **ts;
} tensor_set_t;

/* Reads a folder (or a single .npz / Polygraphy JSON file where supported). */
int tensorset_read(const char *path, tensor_set_t *s, perr_t *e);
/* The file a tensor named name is stored in: its name_encode()d name plus
 * .npy (malloc'd). */
char *tensor_file_name(const char *name);
/* Writes every tensor as DIR/<encoded name>.npy (atomic per file; DIR created). */
int tensorset_write(const char *dir, const tensor_set_t *s, perr_t *e);
/* Adds a tensor; the set takes ownership of t. */
void tensorset_add(tensor_set_t *s, const char *name, tensor_t *t);
tensor_t *tensorset_get(const tensor_set_t *s, const char *name);
void tensorset_free(tensor_set_t *s);

#endif
