/* coco_results.c — fuzz harness: COCO results JSON (coco/dets.c). */
#include "fuzz/fuzz.h"
#include "coco/coco.h"

FUZZ_READER(coco_results)
{
    coco_dets_t dets;
    if (coco_dets_load(fuzz_file("results.json", d, n), 1, &dets, e)) return -1;
    coco_dets_free(&dets);
    return 0;
}
