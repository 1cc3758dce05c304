/* settings.c — the preprocess config keys, their defaults and validation.
 *
 *   input.name       tensor name                              [images]
 *   resize.size      HxW of the network input                 [640x640]
 *   resize.method    opencv-linear | opencv-area | opencv-nearest | opencv-cubic |
 *                    pillow-bilinear | pillow-bicubic | pillow-nearest | pillow-lanczos
 *                                                             [opencv-linear]
 *   resize.mode      stretch | letterbox | center-crop | fit-height  [stretch]
 *                    (fit-height: the text recognizers' resize, geometry.c)
 *   resize.pad       letterbox / fit-height fill, one value or [R, G, B]  [114]
 *   resize.fill      the padding's value in the output tensor itself (after
 *                    normalisation: PaddleOCR pads with 0), instead of resize.pad
 *   resize.shorter   center-crop: shorter side before cropping [max(H, W)]
 *   color            rgb | bgr | gray | rgba | bgra           [rgb]
 *   alpha            drop | composite                         [drop]
 *   background       composite background, one value or [R,G,B] [255]
 *   scale            multiplier, or "1/N" to divide by N      [1/255]
 *   mean, std        per tensor channel (or one value)        [0], [1]
 *   layout           nchw | nhwc                              [nchw]
 *   dtype            float32 | float16 | uint8                [float32]
 *   extra.NAME       orig_wh | orig_hw | im_shape | scale_factor | input_wh: an extra
 *                    input (input_wh: the network input's (w, h), int64, for a graph
 *                    that scales boxes by it: they come out in input pixels); NAME
 *                    is any tensor name whose file, NAME encoded + .npy, fits 255 bytes
 * Float output is ((x * scale) - mean) / std in float32 (x / N for "1/N"),
 * exactly numpy's float32 arithmetic; uint8 output is the resized pixels. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "prep.h"
#include "config/schema.h"
#include "io/tensorset.h"

static const char *const modes[] = { "stretch", "letterbox", "center-crop", "fit-height", NULL };
static const char *const colors[] = { "rgb", "bgr", "gray", "rgba", "bgra", NULL };
static const char *const alphas[] = { "drop", "composite", NULL };
static const char *const layouts[] = { "nchw", "nhwc", NULL };
static const char *const dtypes[] = { "float32", "float16", "uint8", NULL };
static const char *const extra_kinds[] = { "orig_wh", "orig_hw", "im_shape", "scale_factor",
                                           "input_wh", NULL };

/* The network input must fit the image limits a resize checks (geometry.c):
 * said here, at the key, rather than at the first image. */
static int check_size(const config_t *c, const prep_cfg_t *p, perr_t *e)
{
    char w[512];
    if (p->h > 1000000 || p->w > 1000000 || p->h * p->w > IMAGE_MAX_PIXELS)
        return BAD(e, "%s: resize.size: %lldx%lld is larger than an image may be (%lld pixels)",
                   cfg_node_where(config_get(c, "resize.size"), w, sizeof w), (long long)p->h, (long long)p->w,
                   (long long)IMAGE_MAX_PIXELS);
    return 0;
}

/* A colour: one value for all channels or [R, G, B], each 0..255. */
static int get_rgb(const config_t *c, const char *key, uint8_t out[3], perr_t *e)
{
    double v[3];
    int n = 0;
    int r = config_doubles(c, key, v, 3, &n, e);
    if (r <= 0)
        return r;
    const cfg_node_t *nd = config_get(c, key);
    char w[512];
    if (n != 1 && n != 3)
        return BAD(e, "%s: %s: expected one value or [R, G, B]", cfg_node_where(nd, w, sizeof w),
                   key);
    for (int i = 0; i < 3; i++) {
        double x = v[n == 1 ? 0 : i];
        if (!(x >= 0 && x <= 255) || x != floor(x))
            return BAD(e, "%s: %s: colour values are integers 0..255",
                       cfg_node_where(nd, w, sizeof w), key);
        out[i] = (uint8_t)x;
    }
    return 1;
}

/* Per-channel floats: one value, or exactly `channels` values. */
static int get_channels(const config_t *c, const char *key, int channels, float *out,
                        double *outd, perr_t *e)
{
    double v[4];
    int n = 0;
    int r = config_doubles(c, key, v, 4, &n, e);
    if (r <= 0)
        return r;
    char w[512];
    const cfg_node_t *nd = config_get(c, key);
    if (n != 1 && n != channels)
        return BAD(e, "%s: %s: expected 1 or %d values (one per channel), got %d",
                   cfg_node_where(nd, w, sizeof w), key, channels, n);
    for (int i = 0; i < channels; i++) {
        double x = v[n == 1 ? 0 : i];
        if (!isfinite(x))
            return BAD(e, "%s: %s: values must be finite", cfg_node_where(nd, w, sizeof w), key);
        out[i] = (float)x;
        outd[i] = x;
    }
    return 1;
}

/* scale: a number, or the string "1/N". */
static int get_scale(const config_t *c, prep_cfg_t *p, perr_t *e)
{
    const cfg_node_t *nd = config_get(c, "scale");
    p->scale_divides = 1;
    p->scale = 255.f;
    p->scale_d = 255.0;
    if (!nd)
        return 0;
    const char *s;
    if (nd->kind == CFG_SCALAR && !strncmp(nd->text, "1/", 2) &&
        cfg_node_str(nd, "scale", &s, e) == 0) {
        char *end;
        double d = strtod(s + 2, &end);
        char w[512];
        if (*end || !(d > 0) || !isfinite(d))
            return BAD(e, "%s: scale: expected a number or 1/N, got '%s'",
                       cfg_node_where(nd, w, sizeof w), s);
        p->scale = (float)d;
        p->scale_d = d;
        return 1;
    }
    double d;
    if (config_double(c, "scale", &d, e) < 0)
        return -1;
    p->scale_divides = 0;
    p->scale = (float)d;
    p->scale_d = d;
    return 1;
}

static int get_extras(const config_t *c, prep_cfg_t *p, perr_t *e)
{
    const cfg_node_t *ex = config_get(c, "extra");
    if (!ex || ex->kind != CFG_MAP)
        return 0;
    if (ex->n > PREP_MAX_EXTRAS) {
        char w[512];
        return BAD(e, "%s: extra: at most %d extra inputs", cfg_node_where(ex, w, sizeof w),
                   PREP_MAX_EXTRAS);
    }
    for (int64_t i = 0; i < ex->n; i++) {
        /* the value's node itself: a tensor name may be of any length, and
         * a key path of it would be refused past 255 characters */
        char key[300];
        snprintf(key, sizeof key, "extra.%s", ex->keys[i]);
        int kind = 0;
        if (cfg_node_enum(ex->items[i], key, extra_kinds, &kind, e) < 0)
            return -1;
        char *file = tensor_file_name(ex->keys[i]);   /* written as OUT/<sample>/FILE */
        size_t bytes = strlen(file);
        free(file);
        if (bytes > 255) {
            char w[512];
            return BAD(e, "%s: extra: the name '%.40s...' is too long for a file name (%zu bytes encoded, at most 251)",
                       cfg_node_where(ex->items[i], w, sizeof w), ex->keys[i], bytes - 4);
        }
        p->extra[p->nextra].name = xstrdup(ex->keys[i]);
        p->extra[p->nextra++].kind = (prep_extra_kind_t)kind;
    }
    return 0;
}

static json_t *rgb_json(const uint8_t v[3])
{
    return json_pack("[iii]", v[0], v[1], v[2]);
}

static json_t *channels_json(const double *v, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_real(v[i]));
    return a;
}

/* Every setting, defaults included, so meta.json alone says what was done. */
static json_t *resolved_json(const prep_cfg_t *p)
{
    char size[64], scale[64];
    snprintf(size, sizeof size, "%lldx%lld", (long long)p->h, (long long)p->w);
    json_t *j = json_object();
    json_object_set_new(j, "input", json_pack("{s:s}", "name", p->input_name));
    json_object_set_new(j, "resize", json_pack("{s:s,s:s,s:s,s:o,s:I}", "size", size,
                        "method", resize_method_names[p->method], "mode", modes[p->mode],
                        "pad", rgb_json(p->pad), "shorter", (json_int_t)p->shorter));
    if (p->has_fill)
        json_object_set_new(json_object_get(j, "resize"), "fill", json_real(p->fill));
    json_object_set_new(j, "color", json_string(colors[p->color]));
    json_object_set_new(j, "alpha", json_string(alphas[p->alpha]));
    json_object_set_new(j, "background", rgb_json(p->background));
    if (p->scale_divides) {
        snprintf(scale, sizeof scale, "1/%.17g", p->scale_d);
        json_object_set_new(j, "scale", json_string(scale));
    } else {
        json_object_set_new(j, "scale", json_real(p->scale_d));
    }
    json_object_set_new(j, "mean", channels_json(p->mean_d, p->channels));
    json_object_set_new(j, "std", channels_json(p->std_d, p->channels));
    json_object_set_new(j, "layout", json_string(layouts[p->layout]));
    json_object_set_new(j, "dtype", json_string(dtype_name(p->dtype)));
    json_t *ex = json_object();
    for (int i = 0; i < p->nextra; i++)
        json_object_set_new(ex, p->extra[i].name, json_string(extra_kinds[p->extra[i].kind]));
    json_object_set_new(j, "extra", ex);
    return j;
}

int prep_cfg_load(const config_t *c, prep_cfg_t *p, perr_t *e)
{
    memset(p, 0, sizeof *p);
    if (config_check_keys(c, prep_config_keys, e) < 0)
        return -1;
    const char *name = "images";
    int method = RESIZE_CV_LINEAR, mode = MODE_STRETCH, color = COLOR_RGB, alpha = ALPHA_DROP;
    int layout = LAYOUT_NCHW, dt = 0;
    p->h = p->w = 640;
    memset(p->pad, 114, 3);
    memset(p->background, 255, 3);
    if (config_str(c, "input.name", &name, e) < 0 ||
        config_size(c, "resize.size", &p->h, &p->w, e) < 0 ||
        check_size(c, p, e) < 0 ||
        config_enum(c, "resize.method", resize_method_names, &method, e) < 0 ||
        config_enum(c, "resize.mode", modes, &mode, e) < 0 ||
        get_rgb(c, "resize.pad", p->pad, e) < 0 ||
        config_enum(c, "color", colors, &color, e) < 0 ||
        config_enum(c, "alpha", alphas, &alpha, e) < 0 ||
        get_rgb(c, "background", p->background, e) < 0 ||
        get_scale(c, p, e) < 0 ||
        config_enum(c, "layout", layouts, &layout, e) < 0 ||
        config_enum(c, "dtype", dtypes, &dt, e) < 0)
        return -1;
    p->input_name = xstrdup(name);
    p->method = (resize_method_t)method;
    p->mode = (prep_mode_t)mode;
    p->color = (prep_color_t)color;
    p->alpha = (prep_alpha_t)alpha;
    p->layout = (prep_layout_t)layout;
    p->dtype = dt == 0 ? DT_FLOAT : dt == 1 ? DT_FLOAT16 : DT_UINT8;
    p->channels = color == COLOR_GRAY ? 1 : (color == COLOR_RGBA || color == COLOR_BGRA) ? 4 : 3;
    p->shorter = p->h > p->w ? p->h : p->w;
    if (config_int(c, "resize.shorter", &p->shorter, e) < 0)
        return -1;
    if (config_get(c, "resize.fill")) {
        char w[512];
        const cfg_node_t *fn = config_get(c, "resize.fill");
        if (config_double(c, "resize.fill", &p->fill, e) < 0)
            return -1;
        if (p->mode != MODE_LETTERBOX && p->mode != MODE_FIT_HEIGHT)
            return BAD(e, "%s: resize.fill: only letterbox and fit-height pad", cfg_node_where(fn, w, sizeof w));
        if (!isfinite(p->fill) || (p->dtype == DT_UINT8 && (p->fill != floor(p->fill) || p->fill < 0 || p->fill > 255)))
            return BAD(e, "%s: resize.fill: expected a finite number (0..255, whole, with dtype uint8)",
                       cfg_node_where(fn, w, sizeof w));
        p->has_fill = 1;
    }
    if (p->shorter < 1 || p->shorter > 1000000) {
        char w[512];
        return BAD(e, "%s: resize.shorter: expected 1..1000000",
                   cfg_node_where(config_get(c, "resize.shorter"), w, sizeof w));
    }
    for (int i = 0; i < 4; i++) {
        p->mean[i] = 0.f, p->std[i] = 1.f;
        p->mean_d[i] = 0.0, p->std_d[i] = 1.0;
    }
    if (get_channels(c, "mean", p->channels, p->mean, p->mean_d, e) < 0 ||
        get_channels(c, "std", p->channels, p->std, p->std_d, e) < 0)
        return -1;
    for (int i = 0; i < p->channels; i++)
        if (p->std[i] == 0.f) {
            char w[512];
            return BAD(e, "%s: std: values must not be 0",
                       cfg_node_where(config_get(c, "std"), w, sizeof w));
        }
    if (get_extras(c, p, e) < 0)
        return -1;
    p->resolved = resolved_json(p);
    return 0;
}

void prep_cfg_free(prep_cfg_t *p)
{
    free(p->input_name);
    for (int i = 0; i < p->nextra; i++)
        free(p->extra[i].name);
    json_decref(p->resolved);
    memset(p, 0, sizeof *p);
}
