/* npy.h — NumPy .npy files (v1/v2/v3, little-endian, C order). Reading
 * honours any header padding; writing pads headers to 64 bytes as numpy does. */
#ifndef PARITY_NPY_H
#define PARITY_NPY_H

#include <stdint.h>
#include "tensor/tensor.h"

int npy_read(const char *path, tensor_t *t, perr_t *e);
/* Writes atomically. */
int npy_write(const char *path, const tensor_t *t, perr_t *e);
/* Parses a complete .npy image held in memory (npz members, Polygraphy JSON);
 * `what` names it in errors. The tensor gets its own copy of the data. */
int npy_parse(const void *buf, size_t n, const char *what, tensor_t *t, perr_t *e);
/* Serialises into a malloc'd buffer; returns its size. */
size_t npy_serialize(const tensor_t *t, uint8_t **out);

#endif
