/* convert.h — writing any side compare reads as Polygraphy JSON, so parity's
 * outputs load in Polygraphy (`polygraphy run --load-outputs` compares
 * against them; --load-inputs feeds parity's preprocessed inputs). Samples
 * become iterations in sample order; one tensor is in memory at a time. */
#ifndef PARITY_COMPARE_CONVERT_H
#define PARITY_COMPARE_CONVERT_H

#include "io/polygraphy.h"

int convert_to_polygraphy(const char *src, const char *out, poly_kind_t kind, const char *runner, perr_t *e);

#endif
