/* narrow.h — float32 constants stored in the engine file as float16 or
 * bfloat16 when every value converts there and back bit for bit (narrow.c). */
#ifndef PARITY_ENGINE_NARROW_H
#define PARITY_ENGINE_NARROW_H

#include <stdint.h>
#include "tensor/tensor.h"

/* The narrow type that holds every element of t exactly (DT_FLOAT16, else
 * DT_BFLOAT16), its n elements written to buf (n uint16); DT_UNDEFINED
 * when t is not float32 or some value needs all 32 bits. */
dtype_t narrow_exact(const tensor_t *t, uint16_t *buf);
/* Replaces a narrow tensor read from a file by its float32 widening (exact). */
void narrow_widen(tensor_t *t);

#endif
