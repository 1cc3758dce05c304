/* config_precision.c — fuzz harness: a precision config (configs/precisions/,
 * precision/precision.c). */
#include "fuzz/fuzz.h"
#include "precision/precision.h"

FUZZ_READER(config_precision)
{
    precision_policy_t pp;
    int rc = precision_policy_load(&pp, fuzz_file("precision.yaml", d, n), NULL, e);
    precision_policy_free(&pp);
    return rc;
}
