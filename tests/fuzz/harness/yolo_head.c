/* yolo_head.c — fuzz harness: YOLO raw-head decoding (coco/yolo.c) and,
 * for yolov8-seg / yolov8-pose heads, each kept detection's mask or
 * keypoints (coco/yolo_task.c). Input: the settings on the first line as
 * compare --detection takes them ("head=yolov8,nms_iou=0.5,...",
 * comma-separated KEY=VALUE), then a .npy holding the head. A settings line
 * that names no head decodes as yolov8. The masks use proto planes
 * [mask_coefs, 8, 8] filled from the head's own values (so fuzzed values
 * reach them) and a fixed 32x32 letterboxed input of a 48x40 image. */
#include <stdlib.h>
#include <string.h>
#include "fuzz/fuzz.h"
#include "coco/yolo_task.h"
#include "io/npy.h"

/* Protos [nm, 8, 8] cycling through the head's values, checked as map-eval checks them. */
static int make_protos(const tensor_t *t, const yolo_opts_t *o, tensor_t *p, perr_t *e)
{
    int64_t dims[3] = { o->mask_coefs, 8, 8 }, m = tensor_numel(t);
    if (o->mask_coefs > 64) return BAD(e, "fuzz: mask_coefs over 64");
    if (tensor_alloc(p, DT_FLOAT, 3, dims, e)) return -1;
    float *v = p->data;
    for (int64_t i = 0; i < tensor_numel(p); i++) v[i] = m ? (float)tensor_get_f64(t, i % m) : 0.0f;
    return yolo_protos_check(p, "protos.npy", o, e);
}

/* The masks or keypoints of the kept detections. */
static int shapes(const tensor_t *t, const yolo_opts_t *o, const yolo_det_t *d, int64_t k, perr_t *e)
{
    yolo_geom_t g = { 32.0 / 48, 32.0 / 48, 0, 3, 48, 40, 32, 32, 1 };
    int64_t nc = t->dims[t->ndim - 2] - 4 - yolo_extra(o);
    tensor_t p = { 0 };
    int rc = o->head == YOLO_V8_SEG ? make_protos(t, o, &p, e) : 0;
    double *kp = o->head == YOLO_V8_POSE && o->keypoints <= 1024 ? xmalloc((size_t)(3 * o->keypoints) * sizeof *kp) : NULL;
    for (int64_t i = 0; !rc && i < k && i < 8; i++) {
        if (o->head == YOLO_V8_SEG) {
            coco_mask_t m;
            rc = yolo_seg_mask(t, &p, nc, &d[i], &g, "head.npy", &m, e);
            if (!rc) {
                free(coco_rle_to_string(&m));
                coco_mask_free(&m);
            }
        } else if (kp) {
            rc = yolo_pose_kpts(t, nc, o->keypoints, &d[i], &g, "head.npy", kp, e);
        }
    }
    free(kp);
    tensor_free_data(&p);
    return rc;
}

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
        if (!rc) {
            /* the detections are ours whether or not their shapes decode */
            if (o.head == YOLO_V8_SEG || o.head == YOLO_V8_POSE) rc = shapes(&t, &o, dets, k, e);
            free(dets);
        }
        tensor_free_data(&t);
    }
    yolo_opts_free(&o);
    return rc;
}
