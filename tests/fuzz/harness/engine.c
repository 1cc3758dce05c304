/* engine.c — fuzz harness: the engine file reader (engine/engine.c), and the
 * layer report written from what it read (infer and compare trust both). */
#include <stdio.h>
#include "fuzz/fuzz.h"
#include "engine/engine.h"

FUZZ_READER(engine)
{
    engine_meta_t meta;
    graph_t *g = engine_read(fuzz_file("model.engine", d, n), &meta, e);
    if (!g) return -1;
    char out[300];
    snprintf(out, sizeof out, "%s/layers.json", fuzz_dir());
    int rc = layers_write_json(g, &meta, out, e);
    graph_free(g);
    return rc;
}
