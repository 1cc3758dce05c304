/* decode.c — turning inference output tensor sets plus preprocess meta.json
 * into COCO detections (see decode.h for the settings and the box mapping). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "coco/decode.h"
#include "config/config.h"
#include "config/schema.h"
#include "io/npy.h"
#include "util/fsutil.h"

const int64_t coco80_ids[80] = {
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14, 15, 16, 17, 18, 19, 20, 21,
    22, 23, 24, 25, 27, 28, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44,
    46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65,
    67, 70, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 84, 85, 86, 87, 88, 89, 90,
};

static const char *const format_names[] = { "xyxy", "xywh", "cxcywh", NULL };
static const char *const coords_names[] = { "original", "input", NULL };

/* ---- settings ---- */

static void set_str(char **dst, const char *v)
{
    free(*dst);
    *dst = xstrdup(v);
}

static int set_label_list(coco_decode_opts_t *o, const int64_t *ids, int64_t n)
{
    free(o->label_map);
    free(o->label_map_src);
    o->label_map_src = NULL;
    o->label_map = xmalloc((n ? n : 1) * sizeof *o->label_map);
    memcpy(o->label_map, ids, n * sizeof *ids);
    o->nlabel_map = n;
    return 0;
}

/* A file holding the category id of each class index: JSON (a list) or
 * YAML (label_map: [...]). */
static int load_label_file(coco_decode_opts_t *o, const char *path, perr_t *e)
{
    size_t n = strlen(path);
    if (n > 5 && !strcmp(path + n - 5, ".json")) {
        json_error_t je;
        json_t *j = json_load_file(path, 0, &je);
        if (!j) return BAD(e, "%s: line %d: %s", path, je.line, je.text);
        int rc = 0;
        if (!json_is_array(j)) rc = BAD(e, "%s: label map must be a JSON list of category ids", path);
        int64_t m = rc ? 0 : (int64_t)json_array_size(j);
        int64_t *ids = xmalloc((m ? m : 1) * sizeof *ids);
        for (int64_t i = 0; !rc && i < m; i++) {
            json_t *v = json_array_get(j, i);
            if (!json_is_integer(v)) rc = BAD(e, "%s: [%lld]: category id must be an integer", path, (long long)i);
            else ids[i] = json_integer_value(v);
        }
        if (!rc) set_label_list(o, ids, m), o->label_map_src = xstrdup(path);
        free(ids);
        json_decref(j);
        return rc;
    }
    config_t *c = config_load(path, e);
    if (!c) return -1;
    const cfg_node_t *nd = config_get(c, "label_map");
    int rc = 0;
    if (!nd || nd->kind != CFG_SEQ) {
        rc = BAD(e, "%s: expected 'label_map:' holding the list of category ids", path);
    } else {
        int64_t *ids = xmalloc((nd->n ? nd->n : 1) * sizeof *ids);
        for (int64_t i = 0; !rc && i < nd->n; i++) rc = cfg_node_int(nd->items[i], "label_map", &ids[i], e);
        if (!rc) set_label_list(o, ids, nd->n), o->label_map_src = xstrdup(path);
        free(ids);
    }
    config_free(c);
    return rc;
}

static int set_label_map_name(coco_decode_opts_t *o, const char *v, perr_t *e)
{
    if (!strcmp(v, "coco80")) return set_label_list(o, coco80_ids, 80);
    if (!strcmp(v, "identity")) {
        free(o->label_map);
        o->label_map = NULL;
        o->nlabel_map = 0;
        return 0;
    }
    if (!file_exists(v))
        return BAD(e, "label map '%s': not coco80, identity or an existing file", v);
    return load_label_file(o, v, e);
}

static int pick(const char *v, const char *const *names, const char *what, int *out, perr_t *e)
{
    for (int i = 0; names[i]; i++)
        if (!strcmp(v, names[i])) {
            *out = i;
            return 0;
        }
    return BAD(e, "%s: '%s' is not one of xyxy/xywh/cxcywh or original/input", what, v);
}

/* The YOLO keys of the section's mapping: scalars handed to yolo_opt_set,
 * errors placed at the key's line. */
static int yolo_from_node(coco_decode_opts_t *o, const cfg_node_t *node, const char *section, perr_t *e)
{
    char w[512];
    for (int64_t i = 0; i < node->n; i++) {
        const cfg_node_t *v = node->items[i];
        perr_t e2 = { 0 };
        int r = v->kind == CFG_SCALAR ? yolo_opt_set(&o->yolo, node->keys[i], v->text, &e2) : 0;
        if (r < 0) return BAD(e, "%s: %s: %s", cfg_node_where(v, w, sizeof w), section, e2.msg);
        if (!r && v->kind != CFG_SCALAR && !strcmp(node->keys[i], "head"))
            return BAD(e, "%s: %s: head: expected yolov8, yolov5, yolov8-seg or yolov8-pose", cfg_node_where(v, w, sizeof w), section);
    }
    return 0;
}

/* With a head: the keys of the decoded-output path that would silently not
 * apply are refused, and clip defaults to on (Ultralytics clips). */
static int check_head(coco_decode_opts_t *o, perr_t *e)
{
    if (o->yolo.head == YOLO_NONE) return 0;
    if (o->has_threshold || o->top_k)
        return BAD(e, "decoding: score_threshold and top_k apply to decoded outputs; with head: %s use "
                   "conf_threshold and max_det", yolo_head_name(o->yolo.head));
    if (!o->clip_set) o->clip = 1;
    return 0;
}

/* One setting from its text (command line); key uses '_'. */
static int set_text(coco_decode_opts_t *o, const char *key, const char *v, perr_t *e)
{
    char *end;
    int k = yolo_opt_set(&o->yolo, key, v, e);
    if (k) return k < 0 ? -1 : 0;
    if (!strcmp(key, "labels")) set_str(&o->labels, v);
    else if (!strcmp(key, "boxes")) set_str(&o->boxes, v);
    else if (!strcmp(key, "scores")) set_str(&o->scores, v);
    else if (!strcmp(key, "meta")) set_str(&o->meta_dir, v);
    else if (!strcmp(key, "normalized")) o->normalized = 1;
    else if (!strcmp(key, "clip")) o->clip = o->clip_set = 1;
    else if (!strcmp(key, "label_map")) {
        set_str(&o->label_src, "--label-map");
        return set_label_map_name(o, v, e);
    }
    else if (!strcmp(key, "box_format")) {
        if (pick(v, format_names, "--box-format", &k, e)) return -1;
        o->format = (coco_box_format_t)k;
    } else if (!strcmp(key, "box_coords")) {
        if (pick(v, coords_names, "--box-coords", &k, e)) return -1;
        o->coords = (coco_box_coords_t)k;
    } else if (!strcmp(key, "score_threshold")) {
        o->threshold = strtod(v, &end);
        if (!*v || *end || !isfinite(o->threshold))
            return BAD(e, "--score-threshold: '%s' is not a number", v);
        o->has_threshold = 1;
    } else if (!strcmp(key, "top_k")) {
        long long t = strtoll(v, &end, 10);
        if (!*v || *end || t < 0) return BAD(e, "--top-k: '%s' is not a count >= 0", v);
        o->top_k = t;
    } else {
        return INTERNAL(e, "decode: unknown setting '%s'", key);
    }
    return 0;
}

int coco_decode_opts_apply(coco_decode_opts_t *o, const char *const *opts, int n, perr_t *e)
{
    for (int i = 0; i < n; i++) {
        char key[64];
        const char *eq = strchr(opts[i], '=');
        size_t len = eq ? (size_t)(eq - opts[i]) : strlen(opts[i]);
        if (len >= sizeof key) return INTERNAL(e, "decode: option too long");
        for (size_t j = 0; j < len; j++) key[j] = opts[i][j] == '-' ? '_' : opts[i][j];
        key[len] = 0;
        if (set_text(o, key, eq ? eq + 1 : "", e)) return -1;
    }
    return check_head(o, e);
}

static int from_config(coco_decode_opts_t *o, const config_t *c, const char *file, const char *section, perr_t *e)
{
    const char *sec = strcmp(section, ".") ? section : NULL;
    const cfg_node_t *node = sec ? config_get(c, sec) : c->root;
    char w[512];
    if (!node && file)   /* a misspelt --section is not "all defaults" */
        return BAD(e, "%s: no section '%s' of decoding settings (--section)", file, section);
    if (!node) return 0;
    if (node->kind != CFG_MAP)
        return BAD(e, "%s: %s: expected a mapping of decoding settings", cfg_node_where(node, w, sizeof w), section);
    for (int64_t i = 0; i < node->n; i++) {
        int known = 0;
        for (int k = 0; decode_config_keys[k]; k++) known |= !strcmp(node->keys[i], decode_config_keys[k]);
        if (!known)
            return BAD(e, "%s: unknown decoding key '%s' (known: labels, boxes, scores, box_format, "
                       "box_coords, normalized, score_threshold, top_k, label_map, clip, meta, head, output, "
                       "conf_threshold, nms_iou, max_det, max_nms, multi_label, agnostic, num_classes, "
                       "letterbox_inverse, protos, mask_coefs, keypoints)", cfg_node_where(node->items[i], w, sizeof w), node->keys[i]);
    }
    if (yolo_from_node(o, node, section, e)) return -1;
    char key[256];
#define KEY(k) (snprintf(key, sizeof key, "%s%s%s", sec ? sec : "", sec ? "." : "", k), key)
    const char *s;
    int r, b, k;
    const char *names[] = { "labels", "boxes", "scores", "meta" };
    char **dst[] = { &o->labels, &o->boxes, &o->scores, &o->meta_dir };
    for (int i = 0; i < 4; i++) {
        if ((r = config_str(c, KEY(names[i]), &s, e)) < 0) return -1;
        if (r) set_str(dst[i], s);
    }
    if ((r = config_enum(c, KEY("box_format"), format_names, &k, e)) < 0) return -1;
    if (r) o->format = (coco_box_format_t)k;
    if ((r = config_enum(c, KEY("box_coords"), coords_names, &k, e)) < 0) return -1;
    if (r) o->coords = (coco_box_coords_t)k;
    if ((r = config_bool(c, KEY("normalized"), &b, e)) < 0) return -1;
    if (r) o->normalized = b;
    if ((r = config_bool(c, KEY("clip"), &b, e)) < 0) return -1;
    if (r) o->clip = b, o->clip_set = 1;
    if ((r = config_double(c, KEY("score_threshold"), &o->threshold, e)) < 0) return -1;
    if (r) o->has_threshold = 1;
    if ((r = config_int(c, KEY("top_k"), &o->top_k, e)) < 0) return -1;
    if (r && o->top_k < 0)
        return BAD(e, "%s: %s must be >= 0", cfg_node_where(config_get(c, KEY("top_k")), w, sizeof w), key);
    const cfg_node_t *lm = config_get(c, KEY("label_map"));
    if (lm) set_str(&o->label_src, cfg_node_where(lm, w, sizeof w));
    if (lm && lm->kind == CFG_SEQ) {
        int64_t *ids = xmalloc((lm->n ? lm->n : 1) * sizeof *ids);
        int rc = 0;
        for (int64_t i = 0; !rc && i < lm->n; i++) rc = cfg_node_int(lm->items[i], key, &ids[i], e);
        if (!rc) set_label_list(o, ids, lm->n);
        free(ids);
        if (rc) return -1;
    } else if (lm) {
        if (cfg_node_str(lm, key, &s, e)) return -1;
        if (set_label_map_name(o, s, e)) return perr_prefix(e, "%s: %s: ", o->label_src, key);
    }
#undef KEY
    return 0;
}

static void set_defaults(coco_decode_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->labels = xstrdup("labels");
    o->boxes = xstrdup("boxes");
    o->scores = xstrdup("scores");
    yolo_opts_init(&o->yolo);
}

int coco_decode_opts_from(coco_decode_opts_t *o, const config_t *c, const char *section, perr_t *e)
{
    set_defaults(o);
    return from_config(o, c, NULL, section, e) || check_head(o, e) ? -1 : 0;
}

int coco_decode_opts_init(coco_decode_opts_t *o, const char *file, const char *section,
                          const char *const *sets, int nsets, perr_t *e)
{
    set_defaults(o);
    if (!file && nsets == 0) return 0;
    config_t *c = file ? config_load(file, e) : config_new("<none>");
    if (!c) return -1;
    int rc = 0;
    for (int i = 0; !rc && i < nsets; i++) {
        /* overrides are relative to the section */
        char buf[1024];
        if (strcmp(section, "."))
            snprintf(buf, sizeof buf, "%s.%s", section, sets[i]);
        else
            snprintf(buf, sizeof buf, "%s", sets[i]);
        rc = config_set(c, buf, e);
    }
    if (!rc) rc = from_config(o, c, file, section, e);
    if (!rc) rc = check_head(o, e);
    config_free(c);
    return rc;
}

void coco_decode_opts_free(coco_decode_opts_t *o)
{
    free(o->labels); free(o->boxes); free(o->scores); free(o->label_map); free(o->meta_dir); free(o->label_map_src);
    free(o->label_src);
    yolo_opts_free(&o->yolo);
    memset(o, 0, sizeof *o);
}
