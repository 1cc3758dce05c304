/* pipeline.c — one image: decode, colour, resize, place (stretch, letterbox,
 * crop), normalise, and write the sample folder (tensors + meta.json).
 *
 * Normalisation goes through a per-channel table of the 256 possible results,
 * each computed with the float32 operations numpy performs
 * (x * scale, or x / N, then - mean, then / std), so it is exact and fast.
 * The folder is assembled under a temporary name and renamed into place, so a
 * sample folder is either complete or absent. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "image/color.h"
#include "io/npy.h"
#include "prep.h"
#include "tensor/half.h"
#include "io/tensorset.h"
#include "util/fsutil.h"
#include "util/jsonfile.h"

/* Whether convert_color changes an image of c channels. */
static int color_changes(const prep_cfg_t *p, int c)
{
    if (c == 2 || c == 4 || p->color == COLOR_RGBA || p->color == COLOR_BGRA)
        return 1;
    return c == 3 ? p->color == COLOR_GRAY : p->color != COLOR_GRAY;
}

/* Brings the decoded image to the configured channels (see color.h), in RGB
 * order: BGR's swap is make_tensor's, after the resize (which treats every
 * channel alike), so variants that differ only in the order share it. */
static void convert_color(const prep_cfg_t *p, image_t *im)
{
    int want_alpha = p->color == COLOR_RGBA || p->color == COLOR_BGRA;
    if (im->c == 2 || im->c == 4) {
        if (want_alpha)
            color_gray_to_rgb(im);
        else if (p->alpha == ALPHA_COMPOSITE)
            color_composite(im, p->background);
        else
            color_drop_alpha(im);
    } else if (want_alpha) {
        color_gray_to_rgb(im);
        color_add_alpha(im);
    }
    if (p->color == COLOR_GRAY && im->c == 3) {
        if (resize_is_pillow(p->method))
            color_gray_pil(im);
        else
            color_gray_cv(im);
    }
    if ((p->color == COLOR_RGB || p->color == COLOR_BGR) && im->c == 1)
        color_gray_to_rgb(im);
}

/* The letterbox fill, RGB(A) like the canvas. */
static void pad_pixel(const prep_cfg_t *p, uint8_t px[4])
{
    px[0] = p->pad[0], px[1] = p->pad[1], px[2] = p->pad[2], px[3] = 255;
}

/* The H x W x C network image from the resized one. */
static void place(const prep_cfg_t *p, const prep_geom_t *g, const image_t *rs, image_t *cv)
{
    int c = rs->c;
    int padded = p->mode == MODE_LETTERBOX || p->mode == MODE_FIT_HEIGHT;
    if (padded) {
        uint8_t px[4];
        pad_pixel(p, px);
        for (int64_t i = 0, n = cv->w * cv->h; i < n; i++)
            memcpy(cv->data + i * c, px, (size_t)c);
    }
    int64_t y0 = padded ? g->top : 0;
    int64_t x0 = padded ? g->left : 0;
    int64_t rows = rs->h < cv->h ? rs->h : cv->h, cols = rs->w < cv->w ? rs->w : cv->w;
    for (int64_t y = 0; y < rows; y++) {
        const uint8_t *S = rs->data + ((y + g->crop_y) * rs->w + g->crop_x) * c;
        memcpy(cv->data + ((y + y0) * cv->w + x0) * c, S, (size_t)(cols * c));
    }
}

/* out[c][v] = ((float)v * scale - mean[c]) / std[c] in float32. */
static void build_lut(const prep_cfg_t *p, float lut[4][256])
{
    for (int c = 0; c < p->channels; c++)
        for (int v = 0; v < 256; v++) {
            float x = (float)v;
            x = p->scale_divides ? x / p->scale : x * p->scale;
            x = x - p->mean[c];
            lut[c][v] = x / p->std[c];
        }
}

/* The image channel that tensor channel ch reads: BGR(A) swaps R and B. */
static int source_channel(const prep_cfg_t *p, int ch)
{
    int swap = p->color == COLOR_BGR || p->color == COLOR_BGRA;
    return swap && ch < 3 ? 2 - ch : ch;
}

static int make_tensor(const prep_cfg_t *p, const image_t *im, tensor_t *t, perr_t *e)
{
    int c = im->c;
    int64_t hw = im->w * im->h;
    int64_t dims[4] = { 1, c, im->h, im->w };
    if (p->layout == LAYOUT_NHWC)
        dims[1] = im->h, dims[2] = im->w, dims[3] = c;
    if (tensor_alloc(t, p->dtype, 4, dims, e) < 0)
        return -1;
    /* element (i, ch) of the tensor goes to index i*c + ch (NHWC) or
     * ch*hw + i (NCHW), from the image's element (i, source_channel(ch)) */
    int64_t si = p->layout == LAYOUT_NHWC ? c : 1, sc = p->layout == LAYOUT_NHWC ? 1 : hw;
    if (p->dtype == DT_UINT8) {
        uint8_t *o = t->data;
        for (int ch = 0; ch < c; ch++) {
            const uint8_t *in = im->data + source_channel(p, ch);
            for (int64_t i = 0; i < hw; i++)
                o[i * si + ch * sc] = in[i * c];
        }
        return 0;
    }
    float lut[4][256];
    build_lut(p, lut);
    if (p->dtype == DT_FLOAT) {
        float *o = t->data;
        for (int ch = 0; ch < c; ch++) {
            const uint8_t *in = im->data + source_channel(p, ch);
            for (int64_t i = 0; i < hw; i++)
                o[i * si + ch * sc] = lut[ch][in[i * c]];
        }
    } else {
        uint16_t hl[4][256], *o = t->data;
        for (int ch = 0; ch < c; ch++)
            for (int v = 0; v < 256; v++)
                hl[ch][v] = f32_to_f16(lut[ch][v]);
        for (int ch = 0; ch < c; ch++) {
            const uint8_t *in = im->data + source_channel(p, ch);
            for (int64_t i = 0; i < hw; i++)
                o[i * si + ch * sc] = hl[ch][in[i * c]];
        }
    }
    return 0;
}

/* resize.fill: the padded elements take the value itself, in the tensor's
 * type (PaddleOCR pads its normalised image with 0, not with a pixel). */
static void apply_fill(const prep_cfg_t *p, const prep_geom_t *g, tensor_t *t)
{
    if (!p->has_fill)
        return;
    int64_t c = p->channels, H = p->h, W = p->w;
    float f = (float)p->fill;
    uint16_t h = f32_to_f16(f);
    for (int64_t y = 0; y < H; y++)
        for (int64_t x = 0; x < W; x++) {
            if (y >= g->top && y < g->top + g->rh && x >= g->left && x < g->left + g->rw)
                continue;
            for (int64_t ch = 0; ch < c; ch++) {
                int64_t i = p->layout == LAYOUT_NHWC ? (y * W + x) * c + ch : (ch * H + y) * W + x;
                if (p->dtype == DT_FLOAT) ((float *)t->data)[i] = f;
                else if (p->dtype == DT_FLOAT16) ((uint16_t *)t->data)[i] = h;
                else ((uint8_t *)t->data)[i] = (uint8_t)p->fill;
            }
        }
}

static int write_extra(const prep_extra_t *x, const prep_cfg_t *p, const image_t *orig,
                       const prep_geom_t *g, const char *dir, perr_t *e)
{
    int64_t dims[2] = { 1, 2 };
    tensor_t t = { 0 };
    int is_int = x->kind == EXTRA_ORIG_WH || x->kind == EXTRA_ORIG_HW || x->kind == EXTRA_INPUT_WH;
    if (tensor_alloc(&t, is_int ? DT_INT64 : DT_FLOAT, 2, dims, e) < 0)
        return -1;
    if (is_int) {
        int64_t *v = t.data;
        v[0] = x->kind == EXTRA_INPUT_WH ? p->w : x->kind == EXTRA_ORIG_WH ? orig->w : orig->h;
        v[1] = x->kind == EXTRA_INPUT_WH ? p->h : x->kind == EXTRA_ORIG_WH ? orig->h : orig->w;
    } else {
        float *v = t.data;
        v[0] = x->kind == EXTRA_IM_SHAPE ? (float)p->h : (float)g->scale_y;
        v[1] = x->kind == EXTRA_IM_SHAPE ? (float)p->w : (float)g->scale_x;
    }
    char *file = tensor_file_name(x->name);
    char *path = path_join(dir, file);
    int rc = npy_write(path, &t, e);
    free(path);
    free(file);
    tensor_free_data(&t);
    return rc;
}

static json_t *meta_json(const prep_cfg_t *p, const prep_sample_t *s, const image_t *orig,
                         const png_info_s_t *pi, const prep_geom_t *g)
{
    static const char *const modes[] = { "stretch", "letterbox", "center-crop", "fit-height" };
    json_t *j = json_object();
    json_object_set_new(j, "file", json_string(s->file));
    json_object_set_new(j, "sample_id", json_string(s->id));
    if (s->image_id >= 0)
        json_object_set_new(j, "image_id", json_integer(s->image_id));
    json_object_set_new(j, "width", json_integer(orig->w));
    json_object_set_new(j, "height", json_integer(orig->h));
    json_object_set_new(j, "input_width", json_integer(p->w));
    json_object_set_new(j, "input_height", json_integer(p->h));
    json_object_set_new(j, "scale_x", json_real(g->scale_x));
    json_object_set_new(j, "scale_y", json_real(g->scale_y));
    json_object_set_new(j, "offset_x", json_real(g->offset_x));
    json_object_set_new(j, "offset_y", json_real(g->offset_y));
    json_object_set_new(j, "pad", json_pack("{s:I,s:I,s:I,s:I,s:[iii]}", "left",
                        (json_int_t)g->left, "top", (json_int_t)g->top, "right",
                        (json_int_t)g->right, "bottom", (json_int_t)g->bottom, "value",
                        p->pad[0], p->pad[1], p->pad[2]));
    json_object_set_new(json_object_get(j, "pad"), "fill", p->has_fill ? json_real(p->fill) : json_null());
    json_object_set_new(j, "mode", json_string(modes[p->mode]));
    json_object_set_new(j, "method", json_string(resize_method_names[p->method]));
    json_object_set_new(j, "resized", json_pack("{s:I,s:I}", "width", (json_int_t)g->rw,
                        "height", (json_int_t)g->rh));
    json_object_set_new(j, "crop", json_pack("{s:I,s:I}", "x", (json_int_t)g->crop_x, "y",
                        (json_int_t)g->crop_y));
    json_object_set_new(j, "png", json_pack("{s:i,s:i,s:b,s:b}", "bit_depth", pi->bit_depth,
                        "color_type", pi->color_type, "interlaced", pi->interlaced, "trns",
                        pi->has_trns));
    json_object_set_new(j, "config", json_deep_copy(p->resolved));
    return j;
}

static int write_meta(json_t *j, const char *dir, perr_t *e)
{
    char *path = path_join(dir, "meta.json");
    int rc = write_json(path, j, JSON_INDENT(2), e);
    free(path);
    return rc;
}

/* Removes a folder holding only files (a sample folder). */
static void remove_flat_dir(const char *dir)
{
    perr_t ignore = { 0 };
    char **names;
    int n = list_dir(dir, &names, &ignore);
    for (int i = 0; i < n; i++) {
        char *f = path_join(dir, names[i]);
        unlink(f);
        free(f);
    }
    if (n >= 0)
        free_list(names, n);
    rmdir(dir);
}

/* Moves the finished temporary folder to its final name, replacing an old one. */
static int commit_dir(const char *tmp, const char *final, const char *old, perr_t *e)
{
    int had_old = is_dir(final);
    if (had_old && rename(final, old) != 0)
        return BAD(e, "%s: cannot replace the old sample folder", final);
    if (rename(tmp, final) != 0)
        return BAD(e, "%s: cannot create the sample folder", final);
    if (had_old)
        remove_flat_dir(old);
    return 0;
}

/* The input tensor file of sample s in variant folder outdir (malloc'd). */
static char *tensor_path(const prep_cfg_t *p, const prep_sample_t *s, const char *outdir)
{
    char *enc = name_encode(s->id), *file = tensor_file_name(p->input_name);
    char *dir = path_join(outdir, enc), *path = path_join(dir, file);
    free(dir);
    free(file);
    free(enc);
    return path;
}

/* same_as: the file of an earlier variant's tensor with the same bytes, or
 * NULL: the file is a second link to it (twin variants: no second copy). */
static int write_sample(const prep_cfg_t *p, const prep_sample_t *s, const image_t *orig,
                        const png_info_s_t *pi, const prep_geom_t *g, const tensor_t *t,
                        const char *same_as, const char *outdir, perr_t *e)
{
    char *enc = name_encode(s->id);
    size_t n = strlen(enc) + 64;
    char *tname = xmalloc(n), *oname = xmalloc(n);
    snprintf(tname, n, ".tmp.%s.%ld", enc, (long)getpid());
    snprintf(oname, n, ".old.%s.%ld", enc, (long)getpid());
    char *tmp = path_join(outdir, tname), *old = path_join(outdir, oname);
    char *final = path_join(outdir, enc);
    char *file = tensor_file_name(p->input_name);
    char *tpath = path_join(tmp, file);
    free(file);
    remove_flat_dir(tmp);
    int rc = mkdir_p(tmp, e);
    if (!rc && !(same_as && link(same_as, tpath) == 0))
        rc = npy_write(tpath, t, e);
    for (int i = 0; !rc && i < p->nextra; i++)
        rc = write_extra(&p->extra[i], p, orig, g, tmp, e);
    if (!rc) {
        json_t *j = meta_json(p, s, orig, pi, g);
        rc = write_meta(j, tmp, e);
        json_decref(j);
    }
    if (!rc)
        rc = commit_dir(tmp, final, old, e);
    if (rc)
        remove_flat_dir(tmp);
    free(tpath);
    free(final);
    free(old);
    free(tmp);
    free(oname);
    free(tname);
    free(enc);
    return rc;
}

static png_opts_t png_opts_of(const prep_cfg_t *p)
{
    return (png_opts_t){ .cv_gray = p->color == COLOR_GRAY && !resize_is_pillow(p->method) &&
                                    p->alpha == ALPHA_DROP };
}

static int same_png_opts(const prep_cfg_t *a, const prep_cfg_t *b)
{
    png_opts_t x = png_opts_of(a), y = png_opts_of(b);
    return x.cv_gray == y.cv_gray;
}

/* Whether a and b resize the same image the same way: the same decoding,
 * colour conversion (channel order aside: make_tensor's) and resize. */
static int same_resize(const prep_cfg_t *a, const prep_geom_t *ga, const prep_cfg_t *b,
                       const prep_geom_t *gb)
{
    int ca = a->color == COLOR_BGR ? COLOR_RGB : a->color == COLOR_BGRA ? COLOR_RGBA : a->color;
    int cb = b->color == COLOR_BGR ? COLOR_RGB : b->color == COLOR_BGRA ? COLOR_RGBA : b->color;
    return same_png_opts(a, b) && ca == cb && a->alpha == b->alpha && a->method == b->method &&
           !memcmp(a->background, b->background, 3) && ga->rw == gb->rw && ga->rh == gb->rh;
}

static int image_clone(const image_t *src, image_t *dst, perr_t *e)
{
    if (image_alloc(dst, src->w, src->h, src->c, e) < 0)
        return -1;
    memcpy(dst->data, src->data, (size_t)(src->w * src->h * src->c));
    return 0;
}

/* The decoded image resized for variant p: colour first, on a copy where
 * that changes anything (the decoded image is every variant's). */
static int resize_for(const prep_cfg_t *p, const image_t *dec, const prep_geom_t *g, image_t *rs,
                      perr_t *e)
{
    image_t conv = { 0 };
    const image_t *src = dec;
    if (color_changes(p, dec->c)) {
        if (image_clone(dec, &conv, e) < 0)
            return -1;
        convert_color(p, &conv);
        src = &conv;
    }
    int rc = resize_image(src, g->rw, g->rh, p->method, rs, e);
    image_free(&conv);
    return rc;
}

/* Variant v's tensor ts[v] from its resized image, written to outdirs[v];
 * the file of an earlier variant's tensor with the same bytes (ts[u], from
 * the same resized image: from_rs) is linked. */
static int finish_variant(const prep_cfg_t *const *p, int v, const prep_sample_t *s,
                          const image_t *dec, const png_info_s_t *pi, const prep_geom_t *g,
                          const image_t *rs, const int *from_rs, char *const *outdirs, tensor_t *ts,
                          perr_t *e)
{
    image_t canvas = { 0 };
    const image_t *net = rs;
    int rc = 0;
    if (p[v]->mode != MODE_STRETCH) {
        rc = image_alloc(&canvas, p[v]->w, p[v]->h, rs->c, e);
        if (!rc)
            place(p[v], g, rs, &canvas);
        net = &canvas;
    }
    if (!rc)
        rc = make_tensor(p[v], net, &ts[v], e);
    if (!rc)
        apply_fill(p[v], g, &ts[v]);
    char *same_as = NULL;
    for (int u = 0; !rc && u < v && !same_as; u++)
        if (from_rs[u] == from_rs[v] && ts[u].data && !strcmp(p[u]->input_name, p[v]->input_name) &&
            tensor_identical(&ts[u], &ts[v]))
            same_as = tensor_path(p[u], s, outdirs[u]);
    if (!rc)
        rc = write_sample(p[v], s, dec, pi, g, &ts[v], same_as, outdirs[v], e);
    free(same_as);
    image_free(&canvas);
    return rc;
}

/* Each image is decoded once for the variants with the same PNG options,
 * and resized once for those that resize it alike (same_resize); a tensor
 * with the same bytes as an earlier variant's is a link to its file. The
 * files are the bytes each variant alone would write. */
int prep_sample(const prep_cfg_t *const *p, int n, const prep_sample_t *s, char *const *outdirs,
                perr_t *e)
{
    assert(n >= 1 && n <= PREP_MAX_VARIANTS);
    image_t dec[PREP_MAX_VARIANTS] = { { 0 } }, rs[PREP_MAX_VARIANTS] = { { 0 } };
    tensor_t ts[PREP_MAX_VARIANTS] = { { 0 } };
    png_info_s_t pi[PREP_MAX_VARIANTS];
    prep_geom_t g[PREP_MAX_VARIANTS];
    int from_dec[PREP_MAX_VARIANTS], from_rs[PREP_MAX_VARIANTS];
    int rc = 0;
    for (int v = 0; v < n && !rc; v++) {
        from_dec[v] = v;
        for (int u = 0; u < v && from_dec[v] == v; u++)
            if (same_png_opts(p[u], p[v]))
                from_dec[v] = from_dec[u];
        if (from_dec[v] == v) {
            png_opts_t po = png_opts_of(p[v]);
            rc = png_load(s->file, &po, &dec[v], &pi[v], e);
            if (!rc && s->coco_w > 0 && (s->coco_w != dec[v].w || s->coco_h != dec[v].h))
                rc = BAD(e, "%s: the dataset says %lldx%lld, the file is %lldx%lld", s->file,
                         (long long)s->coco_w, (long long)s->coco_h, (long long)dec[v].w,
                         (long long)dec[v].h);
            if (rc)
                break;
        }
        const image_t *d = &dec[from_dec[v]];
        if ((rc = prep_geometry(p[v], d->w, d->h, &g[v], e)) < 0) {
            perr_prefix(e, "%s: ", s->file);
            break;
        }
        from_rs[v] = v;
        for (int u = 0; u < v && from_rs[v] == v; u++)
            if (same_resize(p[u], &g[u], p[v], &g[v]))
                from_rs[v] = from_rs[u];
        if (from_rs[v] == v)
            rc = resize_for(p[v], d, &g[v], &rs[v], e);
        if (!rc)
            rc = finish_variant(p, v, s, d, &pi[from_dec[v]], &g[v], &rs[from_rs[v]], from_rs, outdirs, ts, e);
    }
    for (int v = 0; v < n; v++) {
        tensor_free_data(&ts[v]);
        image_free(&rs[v]);
        image_free(&dec[v]);
    }
    return rc;
}
