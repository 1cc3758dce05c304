/* config_preprocess.c — fuzz harness: a preprocess config
 * (configs/preprocess/, stages/preprocess/settings.c). */
#include "fuzz/fuzz.h"
#include "config/config.h"
#include "preprocess/prep.h"

FUZZ_READER(config_preprocess)
{
    config_t *c = config_parse((const char *)d, n, "preprocess.yaml", e);
    if (!c) return -1;
    prep_cfg_t p;
    int rc = prep_cfg_load(c, &p, e);
    prep_cfg_free(&p);  /* it frees what a failed load left, too */
    config_free(c);
    return rc;
}
