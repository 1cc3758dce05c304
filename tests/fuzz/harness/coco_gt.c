/* coco_gt.c — fuzz harness: COCO ground-truth JSON (coco/gt.c), read for
 * each iou type (bbox; segm: masks from polygons and RLE, coco/shapes.c and
 * coco/rle.c; keypoints with COCO's 17 sigmas). */
#include "fuzz/fuzz.h"
#include "coco/coco.h"

FUZZ_READER(coco_gt)
{
    const char *path = fuzz_file("instances.json", d, n);
    int rc = 0;
    for (int t = COCO_BBOX; t <= COCO_KEYPOINTS; t++) {
        coco_task_t task;
        coco_task_init(&task, (coco_iou_type_t)t);
        coco_gt_t gt;
        perr_t e1 = {0};
        if (coco_gt_load_task(path, 1, &task, &gt, &e1)) {
            /* a bad-input verdict for one type is fine; anything else is a finding */
            *e = e1;
            rc = -1;
            if (e1.code != EXIT_BADINPUT) return -1;
            continue;
        }
        coco_gt_free(&gt);
    }
    return rc;
}
