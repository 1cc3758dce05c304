/* images.c — restoration: each sample's output becomes an 8-bit image the
 * way BasicSR's tensor2img makes it, then PSNR and SSIM against the clean
 * image, in scikit-image's or BasicSR's convention; the run's figures are
 * the means over samples, as both projects' scripts report them
 * (docs/metrics-restoration.md). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "taskeval.h"
#include "metrics/metrics.h"

static int restore_sample(const te_opts_t *o, const char *sample, double *psnr, double *ssim, perr_t *e)
{
    tensor_t t = {0};
    image_t clean = {0};
    char what[1024], *path = NULL;
    int64_t c, h, w;
    snprintf(what, sizeof what, "%s/%s", o->dt, sample);
    int rc = te_read_planes(o, sample, &t, NULL, &c, &h, &w, e);
    if (!rc && c != 1 && c != 3) rc = BAD(e, "%s: %lld channels: expected an image [1, 3, H, W] or [1, 1, H, W]", what, (long long)c);
    if (!rc) rc = te_read_png(o->clean_dir, sample, "clean image", &clean, &path, e);
    if (!rc && clean.c != c)
        rc = BAD(e, "%s: %d channels, the output of sample '%s' has %lld (an RGB or gray PNG without alpha)", path,
                 clean.c, sample, (long long)c);
    if (!rc && (clean.w != w || clean.h != h))
        rc = BAD(e, "%s: clean image is %lldx%lld (WxH), the output of sample '%s' is %lldx%lld", path,
                 (long long)clean.w, (long long)clean.h, sample, (long long)w, (long long)h);
    int64_t least = o->basicsr ? 11 + 2 * (int64_t)o->crop_border : 11;
    if (!rc && (h < least || w < least))
        rc = BAD(e, "%s: %lldx%lld: SSIM needs at least %lldx%lld pixels%s", what, (long long)w, (long long)h,
                 (long long)least, (long long)least, o->basicsr ? " (11 after the crop border)" : " (its 11x11 window)");
    if (!rc) {
        uint8_t *img = xmalloc((size_t)(h * w * c));
        img_from_chw(t.data, c, h, w, o->output_max, o->no_round, img);
        if (o->basicsr) {
            *psnr = psnr_basicsr(clean.data, img, h, w, (int)c, o->crop_border, o->y_channel);
            *ssim = ssim_basicsr(clean.data, img, h, w, (int)c, o->crop_border, o->y_channel);
        } else {
            *psnr = psnr_skimage(clean.data, img, (size_t)(h * w * c));
            *ssim = ssim_skimage(clean.data, img, h, w, (int)c);
        }
        free(img);
    }
    tensor_free_data(&t);
    image_free(&clean);
    free(path);
    return rc;
}

/* A PSNR for JSON: +inf (identical images) is written as null with a flag. */
static json_t *psnr_json(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

json_t *eval_restoration(const te_opts_t *o, perr_t *e)
{
    char **samples = NULL;
    int n = 0, rc = 0;
    if (te_samples(o->dt, &samples, &n, e)) return NULL;
    double psum = 0, ssum = 0;
    int identical = 0;
    json_t *per = json_array();
    for (int i = 0; i < n && !rc; i++) {
        double p = 0, s = 0;
        rc = restore_sample(o, samples[i], &p, &s, e);
        if (rc) break;
        psum += p;
        ssum += s;
        identical += isinf(p);
        json_array_append_new(per, json_pack("{s:s, s:o, s:f}", "sample", samples[i], "psnr", psnr_json(p), "ssim", s));
    }
    json_t *r = NULL;
    if (!rc) {
        json_t *m = json_object();
        json_object_set_new(m, "psnr", te_metric(psum / n, "dB", 1));
        json_object_set_new(m, "ssim", te_metric(ssum / n, "", 1));
        json_t *conv = o->basicsr ? json_pack("{s:s, s:i, s:b}", "name", "basicsr", "crop_border", o->crop_border,
                                              "test_y_channel", o->y_channel)
                                  : json_pack("{s:s}", "name", "skimage");
        char how[96];
        if (o->output_max == 1)
            snprintf(how, sizeof how, "clamp [0,1], x255 in float32, %s", o->no_round ? "truncate" : "round half to even");
        else
            snprintf(how, sizeof how, "clamp [0,%d], /%d then x255 in float32, %s", o->output_max, o->output_max,
                     o->no_round ? "truncate" : "round half to even");
        json_object_set_new(conv, "to_image", json_string(how));
        r = json_pack("{s:s, s:i, s:i, s:o, s:o, s:o}", "task", "restoration", "samples", n, "identical_samples",
                      identical, "metrics", m, "convention", conv, "per_sample", per);
    } else {
        json_decref(per);
    }
    for (int i = 0; i < n; i++) free(samples[i]);
    free(samples);
    return r;
}
