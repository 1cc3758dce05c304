/* coco_gt.c — fuzz harness: COCO ground-truth JSON (coco/gt.c). */
#include "fuzz/fuzz.h"
#include "coco/coco.h"

FUZZ_READER(coco_gt)
{
    coco_gt_t gt;
    if (coco_gt_load(fuzz_file("instances.json", d, n), 1, &gt, e)) return -1;
    coco_gt_free(&gt);
    return 0;
}
