/* yolo_head.c — fuzz harness: YOLO raw-head decoding (coco/yolo.c). Input:
 * the settings on the first line as compare --detection takes them
 * ("head=yolov8,nms_iou=0.5,...", comma-separated KEY=VALUE), then a .npy
 * holding the head. A settings line that names no head decodes as yolov8. */
#include <stdlib.h>
#include <string.h>
#include "fuzz/fuzz.h"
#include "coco/yolo.h"
#include "io/npy.h"

FUZZ_READER(yolo_head)
{
    char line[256];
    const uint8_t *body;
    size_t nb;
    fuzz_split_line(d, n, line, sizeof line, &body, &nb);
    yolo_opts_t o;
    yolo_opts_init(&o);
    o.head = YOLO_V8;
    int rc = 0;
    char *save = NULL;
    for (char *kv = strtok_r(line, ",", &save); kv && !rc; kv = strtok_r(NULL, ",", &save)) {
        char *v = strchr(kv, '=');
        if (!v) continue;
        *v++ = 0;
        rc = yolo_opt_set(&o, kv, v, e) < 0 ? -1 : 0;
    }
    if (o.head == YOLO_NONE) o.head = YOLO_V8;
    tensor_t t = { 0 };
    if (!rc) rc = npy_parse(body, nb, "head.npy", &t, e);
    if (!rc) {
        yolo_det_t *dets;
        int64_t k;
        rc = yolo_decode(&t, "head.npy", &o, 0, NULL, &dets, &k, e);
        if (!rc) free(dets);
        tensor_free_data(&t);
    }
    yolo_opts_free(&o);
    return rc;
}
