/* fconv_px.c — a 2-D convolution (stride 1 or 2) with the roles of fconv_rows'
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
#include <assert.h>
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
/* Tasks the padded copy is cut into at least (planes, or parts of them). */
#define PAD_TASKS 8

/* The input as the tile reads it: zero-padded (top rows and left columns
 * before the input, enough after it) and, for strides sh x sw, split into
 * its sh * sw stride phases, phase (py, px) holding padded element (sh i +
 * py, sw j + px) at (i, j) of a ph x pw plane. Output pixel (r, o) then
 * reads tap (a, b) at (r + (dh[a] + top) / sh, o + (dw[b] + left) / sw) of
 * phase ((dh[a] + top) % sh, (dw[b] + left) % sw): 8 pixels of an output
 * row read 8 consecutive floats, whatever the stride. */
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
    /* padded rows: the input's, and those the last output row reads */
    int64_t rows = p->top + (g->sh * (g->oh - 1) + hi_r + 1 > g->h ? g->sh * (g->oh - 1) + hi_r + 1 : g->h);
    int64_t cols = p->left + (g->sw * (g->ow - 1) + hi_c + 1 > g->w ? g->sw * (g->ow - 1) + hi_c + 1 : g->w);
    p->ph = (rows + g->sh - 1) / g->sh;
    p->pw = (cols + g->sw - 1) / g->sw;
}

/* Floats per input channel in the tile's layout. */
static int64_t plane_of(const fconv_geom_t *g, const px_pad_t *p) { return (int64_t)g->sh * g->sw * p->ph * p->pw; }

/* No tap reads outside the input and no stride (a 1x1 convolution, say):
 * the input is read in place. */
static int unpadded(const fconv_geom_t *g, const px_pad_t *p)
{
    return g->sh == 1 && g->sw == 1 && p->top == 0 && p->left == 0 && p->ph == g->h && p->pw == g->w;
}

int64_t fconv_px_floats(const fconv_geom_t *g, int64_t m)
{
    if (!fgemm_arch()->tile_px || g->sh > 2 || g->sw > 2 || m < 1) return 0;
    if (g->oh * g->ow < 1024) return 0;   /* small planes: packing the weights would not pay (see fconv_rows) */
    px_pad_t p;
    pad_of(g, &p);
    int64_t k = g->cin * g->kh * g->kw, blocks = (m + PX_OC - 1) / PX_OC;
    if (g->cin * plane_of(g, &p) > INT32_MAX) return 0;   /* step offsets are int32 */
    return (unpadded(g, &p) ? 0 : g->cin * plane_of(g, &p)) + blocks * k * PX_OC + 16;
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
    int64_t pad_parts;   /* pad_plane tasks per input channel */
    fgemm_epi_t e;
} px_job_t;

/* Task t: part t % pad_parts of plane t / pad_parts (rows [i0, i1) of
 * each of its stride phases) into the padded (and phase-split) copy. A
 * plane is cut in parts only where the planes are fewer than the tasks a
 * pool wants (the stem's three). */
static void pad_plane(void *ctx, int64_t t)
{
    const px_job_t *j = ctx;
    const fconv_geom_t *g = j->g;
    const px_pad_t *pd = &j->pad;
    int64_t ch = t / j->pad_parts, part = t % j->pad_parts;
    int64_t i0 = pd->ph * part / j->pad_parts, i1 = pd->ph * (part + 1) / j->pad_parts;
    const float *src = j->x + ch * g->h * g->w;
    for (int py = 0; py < g->sh; py++)
        for (int px = 0; px < g->sw; px++) {
            float *dst = j->xp + ch * plane_of(g, pd) + ((int64_t)py * g->sw + px) * pd->ph * pd->pw + i0 * pd->pw;
            for (int64_t i = i0; i < i1; i++, dst += pd->pw) {
                int64_t row = g->sh * i + py - pd->top;
                /* columns j with 0 <= sw j + px - left < w */
                int64_t c0 = px - pd->left, j0 = c0 >= 0 ? 0 : (-c0 + g->sw - 1) / g->sw;
                int64_t j1 = c0 < g->w ? (g->w - c0 + g->sw - 1) / g->sw : 0;
                if (j1 > pd->pw) j1 = pd->pw;
                if (row < 0 || row >= g->h || j1 <= j0) {
                    memset(dst, 0, (size_t)pd->pw * sizeof *dst);
                    continue;
                }
                memset(dst, 0, (size_t)j0 * sizeof *dst);
                const float *s0 = src + row * g->w + c0 + g->sw * j0;
                if (g->sw == 1) memcpy(dst + j0, s0, (size_t)(j1 - j0) * sizeof *dst);
                else fgemm_gather_even(dst + j0, s0, j1 - j0);
                memset(dst + j1, 0, (size_t)(pd->pw - j1) * sizeof *dst);
            }
        }
}

/* Task b: the weights of output channels [32 b, 32 b + 32) as k steps of
 * 32 (channels past m zero). */
static void pack_block(void *ctx, int64_t b)
{
    const px_job_t *j = ctx;
    float *dst = j->wp + b * j->k * PX_OC;
    if ((b + 1) * PX_OC <= j->m && fgemm_arch()->pack_px) {   /* a whole block: register transposes */
        fgemm_arch()->pack_px(j->w + b * PX_OC * j->k, j->k, dst);
        return;
    }
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
                px[i] = j->xp + r * j->pad.pw + o0 + (i < npix ? i : npix - 1);
            float *y = j->y + b * PX_OC * n + r * g->ow + o0;
            ar->tile_px(j->k, px, j->koff, j->wp + b * j->k * PX_OC, y, n, npix, noc, bias, &j->e);
            fgemm_tile_sigmoid(y, n, noc, npix, &j->e);
        }
    }
}

/* The packed weights kept in a cache slot: for which m and k they are,
 * then the panels at a 64-byte boundary. */
typedef struct px_packed {
    int64_t m, k;
    _Alignas(64) float wp[];
} px_packed_t;

int fconv_px(int64_t m, const fconv_geom_t *g, const float *w, const float *x, float *y, const fgemm_epi_t *epi,
             float *scratch, void **cache)
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
    uintptr_t wp = (uintptr_t)(scratch + (copy ? g->cin * plane_of(g, &j.pad) : 0));
    j.wp = (float *)((wp + 63) & ~(uintptr_t)63);
    int32_t *koff = xmalloc((size_t)(j.k > 0 ? j.k : 1) * sizeof *koff);
    int taps = g->kh * g->kw;
    for (int64_t p = 0; p < j.k; p++) {
        int64_t ch = p / taps, t = p % taps;
        int64_t rr = g->dh[t / g->kw] + j.pad.top, cc = g->dw[t % g->kw] + j.pad.left;
        int64_t phase = rr % g->sh * g->sw + cc % g->sw;
        koff[p] = (int32_t)(ch * plane_of(g, &j.pad) + phase * j.pad.ph * j.pad.pw + rr / g->sh * j.pad.pw +
                            cc / g->sw);
    }
    j.koff = koff;
    j.pad_parts = g->cin >= PAD_TASKS ? 1 : (PAD_TASKS + g->cin - 1) / g->cin;
    if (j.pad_parts > j.pad.ph) j.pad_parts = j.pad.ph > 0 ? j.pad.ph : 1;
    if (copy) pool_for(g->cin * j.pad_parts, pad_plane, &j);
    px_packed_t *kept = cache ? *cache : NULL;
    int pack = !kept;   /* into the scratch, or into a slot met empty */
    if (cache && !kept) {
        size_t bytes = sizeof *kept + (size_t)(j.blocks * j.k * PX_OC) * sizeof(float);
        kept = aligned_alloc(64, (bytes + 63) / 64 * 64);
        if (!kept) {   /* the plain path runs instead */
            free(koff);
            return -1;
        }
        kept->m = m;
        kept->k = j.k;
        *cache = kept;
    }
    assert(!kept || (kept->m == m && kept->k == j.k));   /* one node's constant weights */
    if (kept) j.wp = kept->wp;
    if (pack) pool_for(j.blocks, pack_block, &j);
    pool_for(g->oh, px_row, &j);
    free(koff);
    return 0;
}
