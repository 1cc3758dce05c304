/* config_detection.c — fuzz harness: the detection decoding settings
 * (map-eval --decode, coco/decode.c), the detection.yaml plan writes for each model (top level, --section .). */
#include "fuzz/fuzz.h"
#include "coco/decode.h"

FUZZ_READER(config_detection)
{
    coco_decode_opts_t o;
    int rc = coco_decode_opts_init(&o, fuzz_file("detection.yaml", d, n), ".", NULL, 0, e);
    coco_decode_opts_free(&o);
    return rc;
}
