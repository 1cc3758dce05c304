/* coco_masks.c — COCO masks against pycocotools (tests/data/coco/segm/masks.json,
 * written by gen_segm_kpts.py): each polygon list, uncompressed and
 * compressed RLE read here must hold exactly the pixels of pycocotools'
 * own conversion (its compressed string), with the same area; and each
 * pair's IoU (plain and crowd, zero-length runs included) must be the very
 * double maskUtils.iou gave. */
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "coco/shapes.h"
#include "tap.h"

#define MASKS "tests/data/coco/segm/masks.json"

/* Pixels of a mask, column-major, 0/1. */
static unsigned char *pixels(const coco_mask_t *m)
{
    size_t n = (size_t)m->h * m->w, p = 0;
    unsigned char *b = calloc(n ? n : 1, 1);
    for (uint32_t i = 0; i < m->m; i++) {
        if (i & 1) memset(b + p, 1, m->cnts[i]);
        p += m->cnts[i];
    }
    return b;
}

int main(void)
{
    json_error_t je;
    json_t *root = json_load_file(MASKS, 0, &je);
    ok(root != NULL, "%s loads (%s)", MASKS, root ? "" : je.text);
    if (!root) return done_testing();
    json_t *ms = json_object_get(root, "masks"), *pairs = json_object_get(root, "pairs");
    size_t n = json_array_size(ms);
    coco_mask_t *mine = calloc(n ? n : 1, sizeof *mine);
    int bad_load = 0, bad_pix = 0, bad_area = 0, npoly = 0, nzero = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_array_get(ms, i);
        int64_t h = json_integer_value(json_object_get(o, "h"));
        int64_t w = json_integer_value(json_object_get(o, "w"));
        jplace_t pl = { MASKS, "masks", (int64_t)i };
        perr_t e = {0};
        npoly += json_is_array(json_object_get(o, "segmentation"));
        if (jf_segmentation(o, &pl, 1, h, w, &mine[i], &e)) {
            if (bad_load++ < 3) diag("mask %zu: %s", i, e.msg);
            continue;
        }
        nzero += mine[i].zero_runs;
        coco_mask_t ref;
        const char *s = json_string_value(json_object_get(o, "rle"));
        if (coco_rle_from_string(&ref, s, strlen(s), (uint32_t)h, (uint32_t)w, "ref", &e)) {
            if (bad_load++ < 3) diag("mask %zu reference: %s", i, e.msg);
            continue;
        }
        unsigned char *a = pixels(&mine[i]), *b = pixels(&ref);
        if (memcmp(a, b, (size_t)h * w)) {
            if (bad_pix++ < 3) diag("mask %zu (%lldx%lld): pixels differ", i, (long long)h, (long long)w);
        }
        if (mine[i].area != (uint64_t)json_integer_value(json_object_get(o, "area"))) bad_area++;
        free(a);
        free(b);
        coco_mask_free(&ref);
    }
    ok(n >= 300 && bad_load == 0, "all %zu masks read (%d polygon lists, %d with zero-length runs)",
       n, npoly, nzero);
    ok(bad_pix == 0, "every mask holds pycocotools' pixels (%d differ)", bad_pix);
    ok(bad_area == 0, "every area is pycocotools' (%d differ)", bad_area);
    size_t np = json_array_size(pairs);
    int bad_iou = 0, crowd = 0, pos = 0;
    for (size_t i = 0; i < np; i++) {
        json_t *p = json_array_get(pairs, i);
        int64_t a = json_integer_value(json_object_get(p, "dt"));
        int64_t b = json_integer_value(json_object_get(p, "gt"));
        int c = (int)json_integer_value(json_object_get(p, "iscrowd"));
        double want = json_real_value(json_object_get(p, "iou"));
        if (!mine[a].cnts || !mine[b].cnts) { bad_iou++; continue; }
        double got = coco_rle_iou(&mine[a], &mine[b], c);
        crowd += c;
        pos += want > 0;
        if (got != want && bad_iou++ < 5)
            diag("pair %zu (%lld, %lld, crowd %d): %.17g, pycocotools %.17g", i, (long long)a,
                 (long long)b, c, got, want);
        /* the shortcut never drops a pair that reaches 0.5 */
        if (want >= 0.5 && !coco_rle_may_reach(&mine[a], &mine[b], c, 0.5) && bad_iou++ < 5)
            diag("pair %zu: may_reach says no at IoU %.17g", i, want);
    }
    ok(np >= 1000 && bad_iou == 0,
       "all %zu IoUs are pycocotools' doubles (%d crowd, %d above 0)", np, crowd, pos);
    for (size_t i = 0; i < n; i++) coco_mask_free(&mine[i]);
    free(mine);
    json_decref(root);
    return done_testing();
}
