/* layers.c — fuzz harness: the layer report (build-engine --layers-out) as
 * compare's layerwise mode reads it (compare/layerwise.c). */
#include "fuzz/fuzz.h"
#include "compare/layerwise.h"

FUZZ_READER(layers)
{
    lw_layers_t L;
    if (lw_layers_read(fuzz_file("layers.json", d, n), &L, e)) return -1;
    lw_layers_free(&L);
    return 0;
}
