/* config_model.c — fuzz harness: a validation config (configs/models/,
 * stages/lib/modelcfg/model.c), as `plan` reads it. */
#include "fuzz/fuzz.h"
#include "modelcfg/model.h"

FUZZ_READER(config_model)
{
    model_cfg_t m;
    int rc = model_load(&m, fuzz_file("model.yaml", d, n), fuzz_dir(), e);
    model_free(&m);     /* it frees what a failed load left, too */
    return rc;
}
