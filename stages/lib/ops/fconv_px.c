/* fconv_px.c — a stride-1 2-D convolution with the roles of fconv_rows'
 * operands swapped: each step of k broadcasts one input value of each of 8
 * output pixels against a vector of 32 output channels' weights (packed
 * once per call), the way direct convolutions on blocked layouts run. The
 * input is read where it lies, through a zero-padded copy (so a tap never
 * needs a mask), instead of being packed strip by strip for every block of
 * output channels: on high-resolution layers with few channels that
 * packing is a fifth of the work.
 *
 * Every output element is still one FMA chain over k in the order of the
 * weights (input channel, then kernel row, then column), then the bias and
 * the activation, as fgemm_ref and every other kernel: the bits are those
 * of fconv_rows at every instruction set (the tile exists at AVX-512 only;
 * elsewhere conv.c keeps the packed path). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ops/fgemm.h"
#include "ops/fgemm_impl.h"
#include "util/err.h"
#include "util/pool.h"

/* Output channels per tile (two AVX-512 vectors) and pixels per tile. */
#define PX_OC 32
#define PX_PIX 8

/* The padded input: rows [-top, ph - top) and columns [-left, pw - left)
 * of each plane, zero outside the input. */
typedef struct px_pad {
    int64_t top, left, ph, pw;
} px_pad_t;

static void pad_of(const fconv_geom_t *g, px_pad_t *p)
{
    int64_t lo_r = 0, hi_r = 0, lo_c = 0, hi_c = 0;
    for (int i = 0; i < g->kh; i++) {
        if (g->dh[i] < lo_r) lo_r = g->dh[i];
        if (g->dh[i] > hi_r) hi_r = g->dh[i];
    }
    for (int j = 0; j < g->kw; j++) {
        if (g->dw[j] < lo_c) lo_c = g->dw[j];
        if (g->dw[j] > hi_c) hi_c = g->dw[j];
    }
    p->top = -lo_r;
    p->left = -lo_c;
    /* the last output row reads rows up to oh - 1 + hi_r */
    p->ph = p->top + (g->oh + hi_r > g->h ? g->oh + hi_r : g->h);
    p->pw = p->left + (g->ow + hi_c > g->w ? g->ow + hi_c : g->w);
}

/* No tap reads outside the input (a 1x1 convolution, say): the input is
 * read in place, no padded copy. */
static int unpadded(const fconv_geom_t *g, const px_pad_t *p)
{
    return p->top == 0 && p->left == 0 && p->ph == g->h && p->pw == g->w;
}

int64_t fconv_px_floats(const fconv_geom_t *g, int64_t m)
{
    if (!fgemm_arch()->tile_px || g->sh != 1 || g->sw != 1 || m < 1) return 0;
    if (g->oh * g->ow < 1024) return 0;   /* small planes: packing the weights would not pay (see fconv_rows) */
    px_pad_t p;
    pad_of(g, &p);
    int64_t k = g->cin * g->kh * g->kw, blocks = (m + PX_OC - 1) / PX_OC;
    if (g->cin * p.ph * p.pw > INT32_MAX) return 0;   /* step offsets are int32 */
    return (unpadded(g, &p) ? 0 : g->cin * p.ph * p.pw) + blocks * k * PX_OC + 16;
}

typedef struct px_job {
    const fconv_geom_t *g;
    px_pad_t pad;
    const float *x;
    float *xp, *wp;
    const int32_t *koff;
    const float *w;
    float *y;
    int64_t m, k, blocks;
    fgemm_epi_t e;
} px_job_t;

/* Task ch: plane ch into its padded copy. */
static void pad_plane(void *ctx, int64_t ch)
{
    const px_job_t *j = ctx;
    const fconv_geom_t *g = j->g;
    float *dst = j->xp + ch * j->pad.ph * j->pad.pw;
    const float *src = j->x + ch * g->h * g->w;
    memset(dst, 0, (size_t)(j->pad.ph * j->pad.pw) * sizeof *dst);
    for (int64_t r = 0; r < g->h; r++)
        memcpy(dst + (r + j->pad.top) * j->pad.pw + j->pad.left, src + r * g->w, (size_t)g->w * sizeof *dst);
}

/* Task b: the weights of output channels [32 b, 32 b + 32) as k steps of
 * 32 (channels past m zero). */
static void pack_block(void *ctx, int64_t b)
{
    const px_job_t *j = ctx;
    float *dst = j->wp + b * j->k * PX_OC;
    for (int64_t p = 0; p < j->k; p++, dst += PX_OC)
        for (int c = 0; c < PX_OC; c++) {
            int64_t oc = b * PX_OC + c;
            dst[c] = oc < j->m ? j->w[oc * j->k + p] : 0.0f;
        }
}

/* Task r: output row r, every block of channels, 8 pixels at a time. */
static void px_row(void *ctx, int64_t r)
{
    const px_job_t *j = ctx;
    const fconv_geom_t *g = j->g;
    const fgemm_arch_t *ar = fgemm_arch();
    int64_t n = g->oh * g->ow;
    for (int64_t b = 0; b < j->blocks; b++) {
        int noc = j->m - b * PX_OC < PX_OC ? (int)(j->m - b * PX_OC) : PX_OC;
        const float *bias = j->e.bias ? j->e.bias + b * PX_OC : NULL;
        for (int64_t o0 = 0; o0 < g->ow; o0 += PX_PIX) {
            int npix = g->ow - o0 < PX_PIX ? (int)(g->ow - o0) : PX_PIX;
            const float *px[PX_PIX];
            for (int i = 0; i < PX_PIX; i++)   /* pixels past the row repeat its last one: read, never stored */
                px[i] = j->xp + (r + j->pad.top) * j->pad.pw + j->pad.left + o0 + (i < npix ? i : npix - 1);
            float *y = j->y + b * PX_OC * n + r * g->ow + o0;
            ar->tile_px(j->k, px, j->koff, j->wp + b * j->k * PX_OC, y, n, npix, noc, bias, &j->e);
            fgemm_tile_sigmoid(y, n, noc, npix, &j->e);
        }
    }
}

int fconv_px(int64_t m, const fconv_geom_t *g, const float *w, const float *x, float *y, const fgemm_epi_t *epi,
             float *scratch)
{
    if (!fconv_px_floats(g, m)) return -1;
    px_job_t j = {.g = g, .x = x, .w = w, .y = y, .m = m};
    pad_of(g, &j.pad);
    j.k = g->cin * g->kh * g->kw;
    j.blocks = (m + PX_OC - 1) / PX_OC;
    if (epi) j.e = *epi;
    /* scratch: the padded planes (unless the input serves as they are),
     * then the packed weights at a 64-byte boundary */
    int copy = !unpadded(g, &j.pad);
    j.xp = copy ? scratch : (float *)x;
    uintptr_t wp = (uintptr_t)(scratch + (copy ? g->cin * j.pad.ph * j.pad.pw : 0));
    j.wp = (float *)((wp + 63) & ~(uintptr_t)63);
    int32_t *koff = xmalloc((size_t)(j.k > 0 ? j.k : 1) * sizeof *koff);
    int taps = g->kh * g->kw;
    for (int64_t p = 0; p < j.k; p++) {
        int64_t ch = p / taps, t = p % taps;
        koff[p] = (int32_t)(ch * j.pad.ph * j.pad.pw + g->dh[t / g->kw] * j.pad.pw + g->dw[t % g->kw]);
    }
    j.koff = koff;
    if (copy) pool_for(g->cin, pad_plane, &j);
    pool_for(j.blocks, pack_block, &j);
    pool_for(g->oh, px_row, &j);
    free(koff);
    return 0;
}
