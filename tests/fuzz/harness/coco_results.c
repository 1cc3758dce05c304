/* coco_results.c — fuzz harness: COCO results JSON (coco/dets.c), read as
 * box results and, against a fixed ground truth (images 6x8 and 4x4), as
 * segm results (masks: coco/shapes.c, coco/rle.c) and keypoints results. */
#include <stdlib.h>
#include <string.h>
#include "fuzz/fuzz.h"
#include "coco/coco.h"
#include "util/fsutil.h"

static const char gt_json[] =
    "{\"images\": [{\"id\": 1, \"width\": 8, \"height\": 6}, {\"id\": 2, \"width\": 4, \"height\": 4}],"
    " \"categories\": [{\"id\": 1}, {\"id\": 3}], \"annotations\": []}";

/* One load; a bad-input verdict is fine, anything else a finding. */
static int load_as(const char *res, const char *gtp, int type, perr_t *e)
{
    coco_task_t task;
    coco_task_init(&task, (coco_iou_type_t)type);
    coco_gt_t gt;
    if (coco_gt_load_task(gtp, 1, &task, &gt, e)) return -1;
    coco_dets_t dets;
    int rc = coco_dets_load_task(res, 1, &gt, &dets, e);
    if (!rc) coco_dets_free(&dets);
    coco_gt_free(&gt);
    return rc;
}

FUZZ_READER(coco_results)
{
    char *gtp = xstrdup(fuzz_file("gt.json", (const uint8_t *)gt_json, strlen(gt_json)));
    const char *res = fuzz_file("results.json", d, n);
    int rc = 0;
    for (int t = COCO_BBOX; t <= COCO_KEYPOINTS; t++) {
        perr_t e1 = {0};
        if (load_as(res, gtp, t, &e1)) {
            *e = e1;
            rc = -1;
            if (e1.code != EXIT_BADINPUT) break;
        }
    }
    free(gtp);
    return rc;
}
