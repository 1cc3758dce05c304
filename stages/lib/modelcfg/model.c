/* model.c — reading configs/models/NAME.yaml (schema: docs/config.md).
 * Variants and precisions are names of files in configs/preprocess/ and
 * configs/precisions/, or inline mappings, which are written out as files
 * under build/NAME/configs/ (rewritten only when their content changes, so
 * make's timestamps stay meaningful). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model.h"
#include "coco/decode.h"
#include "config/schema.h"
#include "util/fsutil.h"
#include "util/jsonfile.h"

/* The model config's schema: every key and what it holds. config_check_keys
 * takes its patterns from here, and `plan --schema` prints it with the key
 * tables of the configs it embeds, so tests/stage/plan_injection.t probes
 * every key there is: a key added here is probed, and one deleted here is
 * no longer accepted in a config. Paths are dotted; "*" is any map key,
 * "[]" a list item. */
typedef struct model_key {
    const char *path, *what;
    const char *const *sub;   /* keys of an embedded config kind */
    int flat;                 /* sub keys are single map keys ("resize.size"), as --set takes them */
} model_key_t;

static const model_key_t model_schema[] = {
    {"name", "name"},
    {"description", "text (read by no step)"},
    {"model", "path"},
    {"inputs", "path"},
    {"input_shapes.*", "tensor name: shape"},
    {"dataset.gt", "path"},
    {"dataset.images", "path"},
    {"depends.[]", "path"},
    {"variants.[]", "name of configs/preprocess/NAME.yaml"},
    {"variants.[].name", "name"},
    {"variants.[].config", "inline preprocess config", prep_config_keys, 0},
    {"preprocess", "preprocess key: value (preprocess --set)", prep_config_keys, 1},
    {"precisions.[]", "name of configs/precisions/NAME.yaml"},
    {"precisions.[].name", "name"},
    {"precisions.[].backend", "backend name or path"},
    {"precisions.[].config", "inline precision config", precision_config_keys, 0},
    {"reference.variant", "name"},
    {"reference.precision", "name"},
    {"compare.atol", "number"},
    {"compare.rtol", "number"},
    {"compare.check_error_stat", "name"},
    {"outputs.[]", "tensor name or glob: an output the application reads (only those are judged)"},
    {"compare.ignore.[]", "tensor name or glob: an output not judged"},
    {"compare.outputs.*", "tensor name or glob: {atol, rtol}"},
    {"compare.outputs.*.atol", "number"},
    {"compare.outputs.*.rtol", "number"},
    {"detection", "detection decoding (map-eval)", decode_config_keys, 0},
    {"thresholds.max_map_drop", "number"},
    {"thresholds.min_map", "number"},
    {"thresholds.require_compare", "bool"},
    {"layerwise_sample", "name"},
    {"dump.budget", "bytes: a number, or with a unit (500MB, 1GB, 2GiB)"},
    {"variants.[].detection", "the variant's own decoding (map-eval), on top of detection:", decode_config_keys, 0},
    {"compare.layer_snr_db", "number (dB)"},
    {"compare.match", "detections | elements"},
    {"compare.match_iou", "number"},
    {"compare.score_floor", "number"},
    {"compare.pre_postprocess.[]", "tensor name"},
    {"expected_failures.[].variant", "name"},
    {"expected_failures.[].precision", "name"},
    {"expected_failures.[].reason", "text (shown, never run)"},
    {"task", "detection | classification | segmentation | matting | restoration"},
    {"dataset.labels", "path"},
    {"dataset.label_maps", "path"},
    {"dataset.clean", "path"},
    {"dataset.classes", "path"},
    {"metric.output", "tensor name"},
    {"metric.ignore_index", "number"},
    {"metric.num_classes", "number"},
    {"metric.band_radius", "number"},
    {"metric.convention", "skimage | basicsr"},
    {"metric.crop_border", "number"},
    {"metric.y_channel", "bool"},
    {"metric.round", "bool"},
    {"metric.output_max", "number"},
    {"thresholds.max_metric_drop.*", "metric name: number"},
    {"thresholds.min_metric.*", "metric name: number"},
    {"thresholds.max_metric.*", "metric name: number"},
};
#define N_MODEL_KEYS (sizeof model_schema / sizeof *model_schema)

/* config_check_keys' patterns: each schema path up to its first list item
 * (a pattern allows everything below it). */
static const char *const *model_key_patterns(void)
{
    static char buf[N_MODEL_KEYS][64];
    static const char *pats[N_MODEL_KEYS + 1];
    for (size_t i = 0; i < N_MODEL_KEYS; i++) {
        snprintf(buf[i], sizeof buf[i], "%s", model_schema[i].path);
        char *li = strstr(buf[i], ".[]");
        if (li) *li = 0;
        pats[i] = buf[i];
    }
    return pats;
}

/* One schema line: the path as a JSON array of map keys ("*" any key, "[]" a
 * list item), a tab, what the value is. */
static void print_key(const char *path, const char *sub, int flat, const char *what)
{
    json_t *a = json_array();
    char *p = xstrdup(path);
    for (char *s = strtok(p, "."); s; s = strtok(NULL, ".")) json_array_append_new(a, json_string(s));
    free(p);
    if (sub && flat) {
        json_array_append_new(a, json_string(sub));
    } else if (sub) {
        p = xstrdup(sub);
        for (char *s = strtok(p, "."); s; s = strtok(NULL, ".")) json_array_append_new(a, json_string(s));
        free(p);
    }
    char *text = json_text(a, JSON_COMPACT);
    printf("%s\t%s\n", text, what);
    free(text);
    json_decref(a);
}

void model_print_schema(void)
{
    for (size_t i = 0; i < N_MODEL_KEYS; i++) {
        const model_key_t *k = &model_schema[i];
        if (!k->sub) { print_key(k->path, NULL, 0, k->what); continue; }
        if (k->flat) print_key(k->path, "*", 1, k->what);   /* the key itself reaches the step too */
        for (int j = 0; k->sub[j]; j++) print_key(k->path, k->sub[j], k->flat, k->what);
    }
}

int safe_name(const char *s)
{
    if (!s || !*s) return 0;
    for (; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
              *s == '.' || *s == '_' || *s == '-'))
            return 0;
    return 1;
}

int safe_path(const char *s)
{
    if (!s || !*s || strstr(s, "..")) return 0;
    for (; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
              *s == '.' || *s == '_' || *s == '-' || *s == '/' || *s == '+'))
            return 0;
    return 1;
}

/* A tensor name or glob that travels in an argument file: not empty, no
 * control characters (names such as "/model/Conv_output_0" or "out:0" are
 * tensor names as exporters write them). */
static int tensor_pattern_ok(const char *s)
{
    if (!*s) return 0;
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f) return 0;
    return 1;
}

static int get_checked(const model_cfg_t *m, const cfg_node_t *nd, const char *key, int path, char **out, perr_t *e)
{
    const char *s;
    if (cfg_node_str(nd, key, &s, e) < 0) return -1;
    if (path ? !safe_path(s) : !safe_name(s)) {
        char where[256];
        return BAD(e, "%s: %s: '%s' is not allowed (%s)", cfg_node_where(nd, where, sizeof where), key, s,
                   path ? "paths use only letters, digits and . _ - / +, without '..'"
                        : "names use only letters, digits and . _ -");
    }
    *out = xstrdup(s);
    (void)m;
    return 0;
}


/* An entry of variants: / precisions: a name, or {name: N, config: {...}}. */
static int load_entry(model_cfg_t *m, const cfg_node_t *nd, const char *what, const char *dir,
                      const char *build_dir, char **name, char **file, char **text, char **backend, perr_t *e)
{
    char where[256];
    if (nd->kind == CFG_SCALAR) {
        if (get_checked(m, nd, what, 0, name, e)) return -1;
        size_t l = strlen(dir) + strlen(*name) + 8;
        *file = xmalloc(l);
        snprintf(*file, l, "%s/%s.yaml", dir, *name);
        if (!file_exists(*file))
            return BAD(e, "%s: %s '%s': no such file %s", cfg_node_where(nd, where, sizeof where), what, *name, *file);
        return 0;
    }
    if (nd->kind != CFG_MAP) return BAD(e, "%s: %s: expected a name or {name, config}", cfg_node_where(nd, where, sizeof where), what);
    const cfg_node_t *nn = cfg_map_get(nd, "name"), *cc = cfg_map_get(nd, "config"), *bk = cfg_map_get(nd, "backend");
    if (nn && !cc && !bk && cfg_map_get(nd, "detection") && !strcmp(what, "variant"))
        return load_entry(m, nn, what, dir, build_dir, name, file, text, backend, e);   /* {name, detection}: the named file */
    if (bk && nn && !strcmp(what, "precision")) {
        /* a column run by another backend: {name: ort, backend: onnxruntime} */
        char *b;
        if (get_checked(m, nn, "name", 0, name, e) || get_checked(m, bk, "backend", 1, &b, e)) return -1;
        if (!strchr(b, '/')) {
            size_t l = strlen(b) + 32;
            *backend = xmalloc(l);
            snprintf(*backend, l, "pipeline/backends/%s", b);
            free(b);
        } else {
            *backend = b;
        }
        if (!file_exists(*backend))
            return BAD(e, "%s: backend: no such backend %s", cfg_node_where(bk, where, sizeof where), *backend);
        *file = NULL;
        return 0;
    }
    if (!nn || !cc || cc->kind != CFG_MAP)
        return BAD(e, "%s: %s: an inline entry needs 'name' and a 'config' mapping", cfg_node_where(nd, where, sizeof where), what);
    if (get_checked(m, nn, "name", 0, name, e)) return -1;
    json_t *j = cfg_node_to_json(cc);
    *text = json_file_text(j, JSON_SORT_KEYS | JSON_INDENT(1));   /* JSON is YAML */
    json_decref(j);
    if (!*text) return INTERNAL(e, "%s: %s: cannot serialise the inline config", m->path, what);
    size_t l = strlen(build_dir) + strlen(what) + strlen(*name) + 32;
    *file = xmalloc(l);
    snprintf(*file, l, "%s/configs/%s-%s.yaml", build_dir, what, *name);
    return 0;
}

/* A variant's decoding: the model's detection: with the variant's keys on
 * top (e.g. box_coords: input for a letterbox whose boxes come out in input
 * pixels), written by plan_emit as build/NAME/detection-VARIANT.yaml. */
static int variant_detection(model_cfg_t *m, const cfg_node_t *dn, const char *name, const char *build_dir,
                             variant_t *v, perr_t *e)
{
    const cfg_node_t *base = config_get(m->cfg, "detection");
    char where[256];
    if (!base || base->kind != CFG_MAP)
        return BAD(e, "%s: detection: a variant's decoding needs the model's detection: mapping", cfg_node_where(dn, where, sizeof where));
    json_t *j = cfg_node_to_json(base), *over = cfg_node_to_json(dn);
    json_object_update(j, over);
    json_decref(over);
    v->detection_text = json_file_text(j, JSON_SORT_KEYS | JSON_INDENT(1));   /* JSON is YAML */
    json_decref(j);
    if (!v->detection_text) return INTERNAL(e, "%s: detection: cannot serialise variant %s's decoding", m->path, name);
    size_t l = strlen(build_dir) + strlen(name) + 32;
    v->detection = xmalloc(l);
    snprintf(v->detection, l, "%s/detection-%s.yaml", build_dir, name);
    return 0;
}

static int load_list(model_cfg_t *m, const char *key, const char *dir, const char *build_dir, perr_t *e)
{
    const cfg_node_t *l = config_get(m->cfg, key);
    char where[256];
    if (!l) return BAD(e, "%s: %s: required key missing", m->path, key);
    if (l->kind != CFG_SEQ || l->n == 0 || l->n > PLAN_MAX)
        return BAD(e, "%s: %s: expected a list of 1 to %d names", cfg_node_where(l, where, sizeof where), key, PLAN_MAX);
    for (int64_t i = 0; i < l->n; i++) {
        char *name = NULL, *file = NULL, *text = NULL, *backend = NULL;
        const char *what = !strcmp(key, "variants") ? "variant" : "precision";
        int rc = load_entry(m, l->items[i], what, !strcmp(key, "variants") ? "configs/preprocess" : "configs/precisions",
                            build_dir, &name, &file, &text, &backend, e);
        const cfg_node_t *dn = !rc && l->items[i]->kind == CFG_MAP ? cfg_map_get(l->items[i], "detection") : NULL;
        if (dn && (strcmp(key, "variants") || dn->kind != CFG_MAP))
            rc = BAD(e, "%s: detection: only a variant may carry its own decoding, as a mapping",
                     cfg_node_where(dn, where, sizeof where));
        else if (dn)
            rc = variant_detection(m, dn, name, build_dir, &m->variants[m->n_variants], e);
        if (!strcmp(key, "variants")) {   /* owned by m even when it failed */
            m->variants[m->n_variants].name = name;
            m->variants[m->n_variants].text = text;
            m->variants[m->n_variants++].config = file;
        } else {
            m->precisions[m->n_precisions].name = name;
            m->precisions[m->n_precisions].backend = backend;
            m->precisions[m->n_precisions].text = text;
            m->precisions[m->n_precisions++].config = file;
        }
        if (rc) return -1;
    }
    return 0;
}

static int find_index(const model_cfg_t *m, const char *key, int variants, int *out, perr_t *e)
{
    const char *s;
    int r = config_str(m->cfg, key, &s, e);
    if (r < 0) return -1;
    if (r == 0) { *out = 0; return 0; }   /* default: the first */
    int n = variants ? m->n_variants : m->n_precisions;
    for (int i = 0; i < n; i++)
        if (!strcmp(variants ? m->variants[i].name : m->precisions[i].name, s)) { *out = i; return 0; }
    char where[256];
    return BAD(e, "%s: %s: '%s' is not one of the %s", cfg_node_where(config_get(m->cfg, key), where, sizeof where),
               key, s, variants ? "variants" : "precisions");
}

static int load_map_pairs(model_cfg_t *m, const char *key, char **dst, int *n, int shapes, perr_t *e)
{
    const cfg_node_t *mp = config_get(m->cfg, key);
    char where[256];
    if (!mp) return 0;
    if (mp->kind != CFG_MAP || mp->n > PLAN_MAX) return BAD(e, "%s: %s: expected a mapping", cfg_node_where(mp, where, sizeof where), key);
    for (int64_t i = 0; i < mp->n; i++) {
        const char *v;
        if (cfg_node_str(mp->items[i], mp->keys[i], &v, e) < 0) return -1;
        /* preprocess values are YAML ([0.485, 0.456, 0.406]): they travel in an
         * argument file, verbatim (write.c); shapes and key names are names */
        int okk = shapes ? safe_name(mp->keys[i]) : safe_path(mp->keys[i]);
        int okv = shapes ? safe_name(v) : 1;
        if (!okk || !okv)
            return BAD(e, "%s: %s.%s: %s '%s' is not allowed (letters, digits and . _ - / + only)",
                       cfg_node_where(mp->items[i], where, sizeof where), key, mp->keys[i], okk ? "value" : "key",
                       okk ? v : mp->keys[i]);
        size_t l = strlen(mp->keys[i]) + strlen(v) + 2;
        dst[*n] = xmalloc(l);
        snprintf(dst[(*n)++], l, "%s=%s", mp->keys[i], v);
    }
    return 0;
}

static int load_tolerances(model_cfg_t *m, perr_t *e)
{
    m->atol = 1e-5;
    m->rtol = 1e-5;
    if (config_double(m->cfg, "compare.atol", &m->atol, e) < 0) return -1;
    if (config_double(m->cfg, "compare.rtol", &m->rtol, e) < 0) return -1;
    const char *stat = "elemwise";
    if (config_str(m->cfg, "compare.check_error_stat", &stat, e) < 0) return -1;
    if (!safe_name(stat)) return BAD(e, "%s: compare.check_error_stat: '%s' is not allowed", m->path, stat);
    m->error_stat = xstrdup(stat);
    const cfg_node_t *outs = config_get(m->cfg, "compare.outputs");
    char where[256];
    if (!outs) return 0;
    if (outs->kind != CFG_MAP || outs->n > PLAN_MAX)
        return BAD(e, "%s: compare.outputs: expected a mapping of tensor name to {atol, rtol}", cfg_node_where(outs, where, sizeof where));
    for (int64_t i = 0; i < outs->n; i++) {
        tensor_tol_t *t = &m->tols[m->n_tols++];
        /* a name or a glob (compare --per-tensor): it reaches compare through
         * the argument file, never make, so any text without control characters */
        if (!tensor_pattern_ok(outs->keys[i]))
            return BAD(e, "%s: compare.outputs: tensor name '%s' is not allowed (empty, or control characters)",
                       cfg_node_where(outs, where, sizeof where), outs->keys[i]);
        t->name = xstrdup(outs->keys[i]);
        if (outs->items[i]->kind != CFG_MAP)   /* not silently the defaults */
            return BAD(e, "%s: compare.outputs.%s: expected {atol, rtol}", cfg_node_where(outs->items[i], where, sizeof where),
                       outs->keys[i]);
        t->atol = m->atol;
        t->rtol = m->rtol;
        const cfg_node_t *a = cfg_map_get(outs->items[i], "atol"), *r = cfg_map_get(outs->items[i], "rtol");
        char ka[300], kr[300];   /* the key's whole path: the name is the user's text */
        snprintf(ka, sizeof ka, "compare.outputs.%s.atol", outs->keys[i]);
        snprintf(kr, sizeof kr, "compare.outputs.%s.rtol", outs->keys[i]);
        if ((a && cfg_node_double(a, ka, &t->atol, e) < 0) || (r && cfg_node_double(r, kr, &t->rtol, e) < 0)) return -1;
    }
    return 0;
}

/* dump.budget: bytes, or a number with a unit (kB/KB, MB, GB, TB: powers of
 * 1000; KiB, MiB, GiB, TiB: of 1024). Default 950 MB for the engines, the
 * outputs and the layerwise dumps: with the preprocessed inputs of a few
 * 1024x1024 images (12.6 MB each, not counted) and the reports, build/NAME
 * stays under 1 GB (docs/config.md). */
static int load_dump_budget(model_cfg_t *m, perr_t *e)
{
    static const struct { const char *u; double f; } units[] = {
        {"", 1}, {"B", 1}, {"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
        {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
    };
    const char *s;
    char where[256];
    m->dump_budget = 950e6;
    int r = config_str(m->cfg, "dump.budget", &s, e);
    if (r <= 0) return r;
    char *end;
    double v = strtod(s, &end);
    while (*end == ' ') end++;
    for (size_t i = 0; end != s && i < sizeof units / sizeof *units; i++)
        if (!strcmp(end, units[i].u) && v >= 0 && v * units[i].f <= 1e15) { m->dump_budget = v * units[i].f; return 0; }
    return BAD(e, "%s: dump.budget: '%s' is not a size (a number of bytes, or 500MB, 1GB, 2GiB)",
               cfg_node_where(config_get(m->cfg, "dump.budget"), where, sizeof where), s);
}

/* outputs: / compare.ignore: lists of tensor names or globs. */
static int load_globs(model_cfg_t *m, const char *key, char **dst, int *n, perr_t *e)
{
    const cfg_node_t *l = config_get(m->cfg, key);
    char where[256];
    if (!l) return 0;
    if (l->kind != CFG_SEQ || l->n == 0 || l->n > PLAN_MAX)
        return BAD(e, "%s: %s: expected a list of 1 to %d tensor names or globs", cfg_node_where(l, where, sizeof where), key, PLAN_MAX);
    for (int64_t i = 0; i < l->n; i++) {
        const char *s;
        if (cfg_node_str(l->items[i], key, &s, e) < 0) return -1;
        if (!tensor_pattern_ok(s))
            return BAD(e, "%s: %s: tensor name '%s' is not allowed (empty, or control characters)",
                       cfg_node_where(l->items[i], where, sizeof where), key, s);
        dst[(*n)++] = xstrdup(s);
    }
    return 0;
}

/* A raw YOLO head (detection.head): compare decodes it as map-eval does
 * (coco/yolo.h), so its --detection spec carries the same settings. Its
 * boxes are in input pixels: only cells of one preprocessing compare by
 * detection (m->det_input_coords). A yolov8-seg / yolov8-pose head makes
 * map-eval evaluate masks / keypoints (m->det_iou_type). */
static int yolo_det_spec(model_cfg_t *m, double iou, double floor, perr_t *e)
{
    if (!config_get(m->cfg, "detection.head")) return 0;
    coco_decode_opts_t o;
    int rc = coco_decode_opts_from(&o, m->cfg, "detection", e);
    if (!rc && o.yolo.head != YOLO_NONE) {
        if (!safe_path(o.yolo.output))
            rc = BAD(e, "%s: detection.output: tensor name '%s' is not allowed", m->path, o.yolo.output);
        char *spec = rc ? NULL : yolo_opts_spec(&o.yolo);
        if (spec) {
            size_t l = strlen(spec) + 96;
            m->det_spec = xmalloc(l);
            snprintf(m->det_spec, l, "%s,iou=%.10g,score_floor=%.10g", spec, iou, floor);
            m->det_input_coords = 1;
        }
        /* a seg / pose head is judged by its masks / keypoints */
        m->det_iou_type = o.yolo.head == YOLO_V8_SEG ? "segm" : o.yolo.head == YOLO_V8_POSE ? "keypoints" : NULL;
        free(spec);
    }
    if (rc) perr_prefix(e, "%s: ", m->path);
    coco_decode_opts_free(&o);
    return rc;
}

/* compare.layer_snr_db, compare.match (detections | elements),
 * compare.match_iou, compare.score_floor, compare.pre_postprocess. */
static int load_compare_extras(model_cfg_t *m, perr_t *e)
{
    char where[256];
    if (config_double(m->cfg, "compare.layer_snr_db", &m->layer_snr_db, e) < 0) return -1;
    if (!(m->layer_snr_db >= 0 && m->layer_snr_db < 400))
        return BAD(e, "%s: compare.layer_snr_db: expected a number of dB in [0, 400)", m->path);
    static const char *const matches[] = {"detections", "elements", NULL};
    int match = m->detection ? 0 : 1;
    if (config_get(m->cfg, "compare.match") && config_enum(m->cfg, "compare.match", matches, &match, e) < 0) return -1;
    if (match == 0 && !m->detection) return BAD(e, "%s: compare.match: detections needs a detection: section", m->path);
    double iou = 0.5, floor = 0.3;
    if (config_double(m->cfg, "compare.match_iou", &iou, e) < 0 || config_double(m->cfg, "compare.score_floor", &floor, e) < 0)
        return -1;
    if (!(iou > 0 && iou <= 1) || !(floor >= 0 && floor <= 1))
        return BAD(e, "%s: compare.match_iou and compare.score_floor are numbers in (0, 1] and [0, 1]", m->path);
    m->match_detections = match == 0;
    if (m->match_detections && yolo_det_spec(m, iou, floor, e)) return -1;
    if (m->match_detections && !m->det_spec) {
        const char *keys[3] = {"labels", "boxes", "scores"}, *v[3], *fmt = "xyxy";
        for (int i = 0; i < 3; i++) {
            char k[64];
            snprintf(k, sizeof k, "detection.%s", keys[i]);
            v[i] = keys[i];
            if (config_str(m->cfg, k, &v[i], e) < 0) return -1;
            if (!safe_path(v[i])) return BAD(e, "%s: %s: tensor name '%s' is not allowed", m->path, k, v[i]);
        }
        if (config_str(m->cfg, "detection.box_format", &fmt, e) < 0) return -1;
        if (strcmp(fmt, "xyxy") && strcmp(fmt, "xywh") && strcmp(fmt, "cxcywh"))
            return BAD(e, "%s: detection.box_format: '%s' is not xyxy, xywh or cxcywh", m->path, fmt);
        size_t l = strlen(v[0]) + strlen(v[1]) + strlen(v[2]) + 128;
        m->det_spec = xmalloc(l);
        snprintf(m->det_spec, l, "labels=%s,boxes=%s,scores=%s,format=%s,iou=%.10g,score_floor=%.10g", v[0], v[1], v[2],
                 fmt, iou, floor);
    }
    const cfg_node_t *pp = config_get(m->cfg, "compare.pre_postprocess");
    if (pp) {
        if (pp->kind != CFG_SEQ || pp->n > PLAN_MAX)
            return BAD(e, "%s: compare.pre_postprocess: expected a list of tensor names", cfg_node_where(pp, where, sizeof where));
        for (int64_t i = 0; i < pp->n; i++)
            if (get_checked(m, pp->items[i], "compare.pre_postprocess", 1, &m->pre_post[m->n_pre_post++], e)) return -1;
    }
    return 0;
}

static int index_of(const model_cfg_t *m, const char *s, int variants)
{
    int n = variants ? m->n_variants : m->n_precisions;
    for (int i = 0; i < n; i++)
        if (!strcmp(variants ? m->variants[i].name : m->precisions[i].name, s)) return i;
    return -1;
}

/* expected_failures: [{variant: V, precision: P, reason: "..."}]: a missing
 * variant or precision means all of them; the reason is shown, never run. */
static int load_expected(model_cfg_t *m, perr_t *e)
{
    const cfg_node_t *l = config_get(m->cfg, "expected_failures");
    char where[256];
    if (!l) return 0;
    if (l->kind != CFG_SEQ || l->n > PLAN_MAX)
        return BAD(e, "%s: expected_failures: expected a list of {variant, precision, reason}", cfg_node_where(l, where, sizeof where));
    for (int64_t i = 0; i < l->n; i++) {
        const cfg_node_t *x = l->items[i];
        if (x->kind != CFG_MAP)
            return BAD(e, "%s: expected_failures: each entry is {variant, precision, reason}", cfg_node_where(x, where, sizeof where));
        struct expect *ex = &m->expect[m->n_expect];
        ex->variant = ex->precision = -1;
        for (int64_t k = 0; k < x->n; k++) {
            const char *key = x->keys[k], *v;
            if (cfg_node_str(x->items[k], key, &v, e) < 0) return -1;
            cfg_node_where(x->items[k], where, sizeof where);
            if (!strcmp(key, "variant") || !strcmp(key, "precision")) {
                int vv = !strcmp(key, "variant"), idx = index_of(m, v, vv);
                if (idx < 0) return BAD(e, "%s: expected_failures.%s: '%s' is not one of the %ss", where, key, v, key);
                if (vv) ex->variant = idx; else ex->precision = idx;
            } else if (!strcmp(key, "reason")) {
                for (const char *c = v; *c; c++)
                    if ((unsigned char)*c < 0x20) return BAD(e, "%s: expected_failures.reason: control characters are not allowed", where);
                if (strlen(v) > 400) return BAD(e, "%s: expected_failures.reason: at most 400 characters", where);
                free(ex->reason);
                ex->reason = xstrdup(v);
            } else {
                return BAD(e, "%s: expected_failures: unknown key '%s' (variant, precision, reason)", where, key);
            }
        }
        if (ex->variant < 0 && ex->precision < 0)
            return BAD(e, "%s: expected_failures: an entry names a variant, a precision or both (not only a reason)",
                       cfg_node_where(x, where, sizeof where));
        if (ex->variant == m->ref_variant && (ex->precision < 0 || ex->precision == m->ref_precision))
            return BAD(e, "%s: expected_failures: the reference cell cannot be expected to fail", cfg_node_where(x, where, sizeof where));
        if (!ex->reason) ex->reason = xstrdup("");
        m->n_expect++;
    }
    return 0;
}

int model_load(model_cfg_t *m, const char *path, const char *build_dir, perr_t *e)
{
    memset(m, 0, sizeof *m);
    m->path = xstrdup(path);
    m->max_map_drop = m->min_map = -1;
    m->require_compare = 1;
    m->cfg = config_load(path, e);
    if (!m->cfg) return -1;
    if (config_check_keys(m->cfg, model_key_patterns(), e)) return -1;
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    char *stem = xstrndup(base, strcspn(base, "."));
    const char *name = stem;
    if (config_str(m->cfg, "name", &name, e) < 0) { free(stem); return -1; }
    if (!safe_name(name)) { BAD(e, "%s: name '%s' is not allowed (letters, digits and . _ -)", path, name); free(stem); return -1; }
    m->name = xstrdup(name);
    free(stem);
    const cfg_node_t *nd;
    if (!(nd = config_get(m->cfg, "model"))) return BAD(e, "%s: model: required key missing", path);
    if (get_checked(m, nd, "model", 1, &m->model, e)) return -1;
    if ((nd = config_get(m->cfg, "inputs")) && get_checked(m, nd, "inputs", 1, &m->inputs, e)) return -1;
    if ((nd = config_get(m->cfg, "dataset.gt")) && get_checked(m, nd, "dataset.gt", 1, &m->gt, e)) return -1;
    if ((nd = config_get(m->cfg, "dataset.images")) && get_checked(m, nd, "dataset.images", 1, &m->images, e)) return -1;
    /* a dataset is a folder of images; ground truth (dataset.gt) is what a
     * metric needs, not what preprocessing needs: a matting or restoration
     * model without COCO annotations is a folder alone */
    if (!m->inputs == !m->images)
        return BAD(e, "%s: give either inputs (ready tensor sets) or dataset.images (a folder of images to preprocess, "
                      "with dataset.gt when there is COCO ground truth)", path);
    if (m->gt && !m->images) return BAD(e, "%s: dataset.images: required with dataset.gt", path);
    if (load_map_pairs(m, "input_shapes", m->shapes, &m->n_shapes, 1, e)) return -1;
    if (load_map_pairs(m, "preprocess", m->pre_set, &m->n_pre_set, 0, e)) return -1;
    if (m->images) {
        if (load_list(m, "variants", "configs/preprocess", build_dir, e)) return -1;
    } else {
        if (config_get(m->cfg, "variants")) return BAD(e, "%s: variants need a dataset (inputs are used as they are)", path);
        m->variants[0].name = xstrdup("inputs");
        m->variants[0].config = NULL;
        m->n_variants = 1;
    }
    if (load_list(m, "precisions", "configs/precisions", build_dir, e)) return -1;
    if (m->images && find_index(m, "reference.variant", 1, &m->ref_variant, e)) return -1;
    if (find_index(m, "reference.precision", 0, &m->ref_precision, e)) return -1;
    if (load_tolerances(m, e)) return -1;
    m->detection = config_get(m->cfg, "detection") != NULL;
    if (m->detection && !m->gt) return BAD(e, "%s: detection: needs ground truth to evaluate against (dataset.gt)", path);
    if (config_double(m->cfg, "thresholds.max_map_drop", &m->max_map_drop, e) < 0) return -1;
    if (config_double(m->cfg, "thresholds.min_map", &m->min_map, e) < 0) return -1;
    if (config_bool(m->cfg, "thresholds.require_compare", &m->require_compare, e) < 0) return -1;
    if ((nd = config_get(m->cfg, "layerwise_sample")) && get_checked(m, nd, "layerwise_sample", 0, &m->layerwise_sample, e))
        return -1;
    if (load_compare_extras(m, e) || load_expected(m, e) || load_dump_budget(m, e)) return -1;
    if (model_load_task(m, e)) return -1;
    if (load_globs(m, "outputs", m->judge, &m->n_judge, e) || load_globs(m, "compare.ignore", m->ignore, &m->n_ignore, e))
        return -1;
    if ((nd = config_get(m->cfg, "depends"))) {
        char where[256];
        if (nd->kind != CFG_SEQ || nd->n > PLAN_MAX) return BAD(e, "%s: depends: expected a list of paths", cfg_node_where(nd, where, sizeof where));
        for (int64_t i = 0; i < nd->n; i++)
            if (get_checked(m, nd->items[i], "depends", 1, &m->depends[m->n_depends++], e)) return -1;
    }
    return 0;
}

void model_free(model_cfg_t *m)
{
    for (int i = 0; i < m->n_variants; i++) {
        free(m->variants[i].name); free(m->variants[i].config); free(m->variants[i].text);
        free(m->variants[i].detection); free(m->variants[i].detection_text);
    }
    for (int i = 0; i < m->n_pre_post; i++) free(m->pre_post[i]);
    for (int i = 0; i < m->n_expect; i++) free(m->expect[i].reason);
    free(m->det_spec);
    model_free_task(m);
    for (int i = 0; i < m->n_precisions; i++) {
        free(m->precisions[i].name); free(m->precisions[i].config); free(m->precisions[i].backend);
        free(m->precisions[i].text);
    }
    for (int i = 0; i < m->n_shapes; i++) free(m->shapes[i]);
    for (int i = 0; i < m->n_pre_set; i++) free(m->pre_set[i]);
    for (int i = 0; i < m->n_tols; i++) free(m->tols[i].name);
    for (int i = 0; i < m->n_judge; i++) free(m->judge[i]);
    for (int i = 0; i < m->n_ignore; i++) free(m->ignore[i]);
    free(m->name); free(m->path); free(m->model); free(m->inputs); free(m->gt); free(m->images);
    free(m->error_stat); free(m->layerwise_sample);
    for (int i = 0; i < m->n_depends; i++) free(m->depends[i]);
    if (m->cfg) config_free(m->cfg);
    memset(m, 0, sizeof *m);
}
