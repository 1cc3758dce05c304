/* fconv_px.c — a 2-D convolution (stride 1 or 2) with the roles of fconv_rows'
 * operands swapped: each step of k broadcasts one input value of each of 8
 * output pixels against a vector of 32 output channels' weights (packed
 * once per call), the way direct convolutions on blocked layouts run,
 * instead of packing the input strip by strip for every block of output
 * channels (on high-resolution layers with few channels that packing is a
 * fifth of the work). Where m <= 16 and the set has it (tile_px16, at
 * AVX-512), the tile is 16 pixels by one vector of 16 channels instead,
 * the weights packed 16 a step: the wide tile would spend half its FMAs
 * on the zero weights past m (RT-DETR's 16 -> 16 layer at 160x160 1.8x
 * faster, its 3 -> 16 stem 1.5x, the kernels alone).
 *
 * 3x3 convolutions with pad 1 and few input channels (k <= FG_KB) and at
 * most 32 output channels -- RT-DETR's stem and its two 160x160 layers --
 * run on the set's row kernel instead where it has one (row_px, at
 * AVX-512; rows_of): 16 pixels of an output row in the lanes against 16
 * channels' weights broadcast, the input read in place under masks, no
 * tile, no copy, no transposed store (kernels alone, one thread: the 3 ->
 * 16 stem 0.345 -> 0.233 ms, 16 -> 16 at 160x160 1.170 -> 1.046, 16 -> 32
 * 2.298 -> 2.092). Where k is larger the tiles stay: their steps already
 * run at the FMA peak and the store is a small part of them.
 *
 * Large input planes are read where they lie: only the frame of output
 * pixels whose windows reach past the edges -- the rows above and below,
 * the first and last strips of the rows between -- reads zero-padded
 * copies of the bands of input it needs (so a tap never needs a mask); at
 * 320x320 that is a tenth of the bytes of a padded copy of the whole
 * input, which memory-bound cost 5-7% of such a layer (and a fifth of the
 * 640x640 stem). Smaller planes are read through such a copy of the whole
 * input, which the tile reads faster than the planes themselves
 * (INPLACE_MIN_PLANE), unless no window leaves them.
 *
 * Every output element is still summed over k in the order of the
 * weights (input channel, then kernel row, then column) in fgemm's
 * blocked order (fgemm_impl.h), zeros of the
 * padding included, then the bias and the activation, as fgemm_ref and
 * every other kernel: the bits are those of fconv_rows at every
 * instruction set, wherever a pixel reads from (the tile exists at AVX-512
 * and AVX2, the latter up to the k its arch says; elsewhere conv.c keeps
 * the packed path). */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ops/gemm/fgemm.h"
#include "ops/gemm/fgemm_impl.h"
#include "util/err.h"
#include "util/pool.h"

/* Output channels per tile (two AVX-512 vectors) and pixels per tile;
 * for at most 16 output channels, where the set has that tile (tile_px16),
 * 16 channels (one vector) by 16 pixels instead: the wide tile would
 * spend half its FMAs on zero weights. */
#define PX_OC 32
#define PX_PIX 8
#define PX16 16
/* Bands of the frame: top, bottom, left, right (or one for everything). */
#define MAX_BANDS 4
/* Input planes of at least this many floats are read in place. Below it a
 * padded copy of the whole input costs less than it saves: the windows of
 * a strip span 1.5 cache lines per row on average there instead of 2 (in
 * place, rows of 2^k floats start lines; the pad shifts them), and a
 * stride-2 strip's 8 pixels lie in one phase row instead of 17 floats.
 * Measured (fconv_px alone, 1 and 2 threads, alternating in one process):
 * in place 2-8% faster at 320x320 and 11-22% on the 640x640 stem, 2%
 * slower at 160x160 and below, 5-11% slower at stride 2 below 320x320. */
#define INPLACE_MIN_PLANE 65536
/* Output planes of at least this many pixels take the tile; below it, with
 * the weights kept across calls (packed once), planes under SMALL_MAX_PLANE
 * pixels of at least SMALL_MIN_M channels too: there conv.c's alternative
 * is im2col + GEMM, and the tile's strips of consecutive pixels (px_run)
 * waste little of a 10x10 plane. Measured against fconv_rows (kernels
 * --shape, one thread, CPU clock): 10x10, 256 channels -6%, stride 2 to
 * 10x10 with 256 -3%, with 128 level; 32 channels at 10x10 +14%; 400
 * pixels level to +3%, where fconv_rows stays. At AVX2 (up to its
 * px_max_k): 64 -> 128 at 10x10 -30%, 64 -> 256 stride 2 to 10x10 -9%. */
#define PX_MIN_PLANE 1024
#define SMALL_MAX_PLANE 256
#define SMALL_MIN_M 128

/* Where the tiles of output rows [ra, rb), columns [ca, cb) read: pixel
 * (r, o)'s window is anchored at at + (r - r_at) rstep + (o - c_at) cstep
 * (pixel (r_at, c_at) at at), and step p of k reads koff[p] past the
 * anchor. Either the input itself (r_at = c_at = 0, rstep = sh w, cstep =
 * sw) or a band (r_at = ra, c_at = ca): a zero-padded copy
 * (buf) of input rows and columns from (r0, c0) on, of every channel,
 * split into its sh x sw stride phases (phase (py, px) holding
 * band element (sh i + py, sw j + px) at (i, j) of a ph x pw plane), so
 * that the 8 pixels of a strip read 8 consecutive floats whatever the
 * stride (rstep = pw, cstep = 1). */
typedef struct px_src {
    const float *at;
    float *buf;
    int64_t ra, rb, ca, cb, r_at, c_at, rstep, cstep;
    int64_t r0, c0, ph, pw;
    int32_t *koff;
} px_src_t;

/* The tile (oc output channels by pix pixels, a strip), the input read in
 * place (its rectangle of output pixels), and the bands of the frame
 * around it. */
typedef struct px_plan {
    int oc, pix;
    int rows;   /* 1: the set's row kernel, no tile, nothing copied (rows_of) */
    /* one source for all (a band, or the input): strips of consecutive
     * pixels per task; else 0 (a task per output row) */
    int64_t run;
    px_src_t in;
    px_src_t band[MAX_BANDS];
    int nbands;
} px_plan_t;

/* The taps' offsets' extent: rows [*lo_r, *hi_r], columns [*lo_c, *hi_c]. */
static void taps_extent(const fconv_geom_t *g, int64_t *lo_r, int64_t *hi_r, int64_t *lo_c, int64_t *hi_c)
{
    *lo_r = *hi_r = g->dh[0];
    *lo_c = *hi_c = g->dw[0];
    for (int i = 1; i < g->kh; i++) {
        if (g->dh[i] < *lo_r) *lo_r = g->dh[i];
        if (g->dh[i] > *hi_r) *hi_r = g->dh[i];
    }
    for (int j = 1; j < g->kw; j++) {
        if (g->dw[j] < *lo_c) *lo_c = g->dw[j];
        if (g->dw[j] > *hi_c) *hi_c = g->dw[j];
    }
}

static int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
static int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }
static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* The band of output rows [ra, rb), columns [ca, cb): the input rows and
 * columns their windows reach, as stride phases. */
static px_src_t band_of(const fconv_geom_t *g, int64_t ra, int64_t rb, int64_t ca, int64_t cb)
{
    int64_t lo_r, hi_r, lo_c, hi_c;
    taps_extent(g, &lo_r, &hi_r, &lo_c, &hi_c);
    px_src_t b = {.ra = ra, .rb = rb, .ca = ca, .cb = cb, .r_at = ra, .c_at = ca, .cstep = 1};
    b.r0 = g->sh * ra + lo_r;
    b.c0 = g->sw * ca + lo_c;
    b.ph = ceil_div(g->sh * (rb - 1) + hi_r + 1 - b.r0, g->sh);   /* input rows [r0, ...), as phase rows */
    b.pw = ceil_div(g->sw * (cb - 1) + hi_c + 1 - b.c0, g->sw);
    b.rstep = b.pw;
    return b;
}

/* Floats per channel of a band. */
static int64_t band_plane(const fconv_geom_t *g, const px_src_t *b) { return (int64_t)g->sh * g->sw * b->ph * b->pw; }

/* The plan of one band for the whole output, no pixel in place. */
static void plan_whole(const fconv_geom_t *g, px_plan_t *pl)
{
    pl->band[0] = band_of(g, 0, g->oh, 0, g->ow);
    pl->nbands = 1;
    pl->in.rb = pl->in.ra;
    pl->run = (g->ow + pl->pix - 1) / pl->pix;   /* about a row's pixels a task, as many tasks */
}

/* The output's pixels read in place -- windows inside the input: rows
 * [r_lo, r_hi), and there the strips of pl->pix pixels inside columns
 * [o_lo, o_hi) -- and the bands of the frame around them: the rows above
 * and below, and in between the strips that reach past the left or the
 * right edge. Small planes (unless nothing is framed at stride 1), and
 * planes too narrow or short for a frame smaller than the whole, are one
 * band. */
static void plan_of(const fconv_geom_t *g, px_plan_t *pl)
{
    int64_t lo_r, hi_r, lo_c, hi_c;
    taps_extent(g, &lo_r, &hi_r, &lo_c, &hi_c);
    /* rows r with 0 <= sh r + lo_r and sh r + hi_r < h; columns alike */
    int64_t r_lo = clamp64(ceil_div(-lo_r, g->sh), 0, g->oh), r_hi = clamp64(floor_div(g->h - 1 - hi_r, g->sh) + 1, 0, g->oh);
    int64_t o_lo = clamp64(ceil_div(-lo_c, g->sw), 0, g->ow), o_hi = clamp64(floor_div(g->w - 1 - hi_c, g->sw) + 1, 0, g->ow);
    /* strips start at multiples of pix: the left ones end at the first
     * start at or past o_lo, the right ones start at the strip holding o_hi */
    int64_t left_end = clamp64(ceil_div(o_lo, pl->pix) * pl->pix, 0, g->ow);
    int64_t right_start = o_hi < g->ow ? o_hi / pl->pix * pl->pix : g->ow;
    pl->in = (px_src_t){.ra = r_lo, .rb = r_hi, .ca = left_end, .cb = right_start, .rstep = g->sh * g->w,
                        .cstep = g->sw};
    pl->nbands = 0;
    pl->run = 0;
    int framed = r_lo > 0 || r_hi < g->oh || left_end > 0 || right_start < g->ow;
    int large = g->h * g->w >= INPLACE_MIN_PLANE;
    if (r_lo >= r_hi || left_end > right_start || !(large || (!framed && g->sh == 1 && g->sw == 1))) {
        plan_whole(g, pl);
        return;
    }
    if (r_lo > 0) pl->band[pl->nbands++] = band_of(g, 0, r_lo, 0, g->ow);
    if (r_hi < g->oh) pl->band[pl->nbands++] = band_of(g, r_hi, g->oh, 0, g->ow);
    if (left_end > 0) pl->band[pl->nbands++] = band_of(g, r_lo, r_hi, 0, left_end);
    if (right_start < g->ow) pl->band[pl->nbands++] = band_of(g, r_lo, r_hi, right_start, g->ow);
    /* a frame as large as the whole (a plane a few strips wide) is one band */
    px_src_t whole = band_of(g, 0, g->oh, 0, g->ow);
    int64_t frame = 0;
    for (int i = 0; i < pl->nbands; i++) frame += band_plane(g, &pl->band[i]);
    if (frame >= band_plane(g, &whole)) plan_whole(g, pl);
    else if (pl->nbands == 0) pl->run = (g->ow + pl->pix - 1) / pl->pix;   /* all in place: one source, as plan_whole */
}

/* 1 where every offset from a window's anchor fits the int32 koff: the
 * planes of a band; in place, the input's planes and the taps' reach. */
static int offsets_fit(const fconv_geom_t *g, const px_src_t *s, int in_place)
{
    if (!in_place) return g->cin * band_plane(g, s) <= INT32_MAX;
    int64_t lo_r, hi_r, lo_c, hi_c;
    taps_extent(g, &lo_r, &hi_r, &lo_c, &hi_c);
    int64_t reach_r = -lo_r > hi_r ? -lo_r : hi_r, reach_c = -lo_c > hi_c ? -lo_c : hi_c;
    return g->cin * g->h * g->w + reach_r * g->w + reach_c <= INT32_MAX;
}

/* 1 where the set's row kernel applies (fgemm_impl.h's row_px): 3x3,
 * stride 1 or 2, pad 1 on every side, k within one accumulation block
 * (at most 28 input channels), at most 32 output channels (the weights
 * packed as for the tiles), rows of at least 16 pixels; at stride 1
 * wherever the tile would run, at stride 2 on planes large enough to be
 * read in place. Kernels alone (CPU clock): RT-DETR's 3 -> 16 stem at
 * 320x320 0.345 -> 0.233 ms (tile_px16 ran at 55% of the FMA peak), its
 * 16 -> 16 and 16 -> 32 layers at 160x160 see bench/README.md. */
static int rows_of(const fconv_geom_t *g, int64_t m)
{
    int s = g->sh;
    return fgemm_arch()->row_px && m <= PX_OC && g->kh == 3 && g->kw == 3 && (s == 1 || s == 2) && g->sw == s &&
           g->dh[0] == -1 && g->dh[1] == 0 && g->dh[2] == 1 && g->dw[0] == -1 && g->dw[1] == 0 && g->dw[2] == 1 &&
           g->oh == (g->h - 1) / s + 1 && g->ow == (g->w - 1) / s + 1 && g->ow >= 16 && g->cin * 9 <= FG_KB &&
           (s == 1 ? g->oh * g->ow >= PX_MIN_PLANE : g->h * g->w >= INPLACE_MIN_PLANE);
}

/* The plan into *pl and the scratch floats it needs, or 0 where the tile
 * does not apply (kept: the weights are kept across calls). */
static int64_t plan_floats(const fconv_geom_t *g, int64_t m, int kept, px_plan_t *pl)
{
    const fgemm_arch_t *ar = fgemm_arch();
    if (!ar->tile_px || g->sh > 2 || g->sw > 2 || m < 1) return 0;
    if (rows_of(g, m)) {   /* the weights alone, packed as the tile's */
        int oc = m <= PX16 && ar->tile_px16 ? PX16 : PX_OC;
        *pl = (px_plan_t){.oc = oc, .pix = oc, .rows = 1};
        return g->cin * g->kh * g->kw * oc + 16;
    }
    if (ar->px_max_k && g->cin * g->kh * g->kw > ar->px_max_k) return 0;
    /* small planes: packing the weights would not pay (see fconv_rows) */
    int64_t plane = g->oh * g->ow;
    if (plane < PX_MIN_PLANE && !(kept && plane < SMALL_MAX_PLANE && m >= SMALL_MIN_M)) return 0;
    int narrow = m <= PX16 && ar->tile_px16;
    pl->oc = narrow ? PX16 : PX_OC;
    pl->pix = narrow ? PX16 : PX_PIX;
    plan_of(g, pl);
    if (!offsets_fit(g, &pl->in, 1)) return 0;
    int64_t n = 0;
    for (int i = 0; i < pl->nbands; i++) {
        if (!offsets_fit(g, &pl->band[i], 0)) return 0;
        n += g->cin * band_plane(g, &pl->band[i]);
    }
    int64_t k = g->cin * g->kh * g->kw, blocks = (m + pl->oc - 1) / pl->oc;
    return n + blocks * k * pl->oc + 16;
}

int64_t fconv_px_floats(const fconv_geom_t *g, int64_t m, int kept)
{
    px_plan_t pl;
    return plan_floats(g, m, kept, &pl);
}

typedef struct px_job {
    const fconv_geom_t *g;
    px_plan_t plan;
    const float *x;
    float *wp;
    const float *w;
    float *y;
    int64_t m, k, blocks;
    fgemm_epi_t e, te;   /* the epilogue; the tiles' part of it (fgemm_epi_tile) */
} px_job_t;

/* Task t: channel t / nbands of band t % nbands into its stride phases,
 * zero outside the input. */
static void fill_band(void *ctx, int64_t t)
{
    const px_job_t *j = ctx;
    const fconv_geom_t *g = j->g;
    const px_src_t *b = &j->plan.band[t % j->plan.nbands];
    int64_t ch = t / j->plan.nbands;
    const float *src = j->x + ch * g->h * g->w;
    float *dst = b->buf + ch * band_plane(g, b);
    for (int py = 0; py < g->sh; py++)
        for (int px = 0; px < g->sw; px++) {
            /* phase columns jj with 0 <= c0 + sw jj + px < w */
            int64_t c = b->c0 + px, j0 = clamp64(ceil_div(-c, g->sw), 0, b->pw);
            int64_t j1 = clamp64(ceil_div(g->w - c, g->sw), j0, b->pw);
            for (int64_t i = 0; i < b->ph; i++, dst += b->pw) {
                int64_t row = b->r0 + g->sh * i + py;
                if (row < 0 || row >= g->h || j1 == j0) {
                    memset(dst, 0, (size_t)b->pw * sizeof *dst);
                    continue;
                }
                memset(dst, 0, (size_t)j0 * sizeof *dst);
                const float *s0 = src + row * g->w + c + g->sw * j0;
                if (g->sw == 1) memcpy(dst + j0, s0, (size_t)(j1 - j0) * sizeof *dst);
                else fgemm_gather_even(dst + j0, s0, j1 - j0);
                memset(dst + j1, 0, (size_t)(b->pw - j1) * sizeof *dst);
            }
        }
}

/* Step p's offset past a window's anchor, in the order of the weights
 * (channel, kernel row, column): in place rows and planes of the input; in
 * a band the phase of the tap and its row and column there. Each tap's
 * offset within a channel is formed once, then repeated a channel's
 * floats apart: no division per step (a division per step of k, 3 of
 * them 64-bit, were a third of a small layer's setup). */
static int32_t *koff_of(const fconv_geom_t *g, const px_src_t *s, int in_place)
{
    int64_t k = g->cin * g->kh * g->kw, taps = g->kh * g->kw, lo_r, hi_r, lo_c, hi_c;
    taps_extent(g, &lo_r, &hi_r, &lo_c, &hi_c);
    int32_t *koff = xmalloc((size_t)(k > 0 ? k : 1) * sizeof *koff);
    int64_t chan = in_place ? g->h * g->w : band_plane(g, s);
    for (int64_t t = 0; t < taps; t++) {
        int64_t dr = g->dh[t / g->kw], dc = g->dw[t % g->kw];
        int64_t tr = dr - lo_r, tc = dc - lo_c;   /* from the band's first row and column */
        int64_t at = in_place ? dr * g->w + dc
                              : (tr % g->sh * g->sw + tc % g->sw) * s->ph * s->pw + tr / g->sh * s->pw + tc / g->sw;
        for (int64_t ch = 0; ch < g->cin; ch++) koff[ch * taps + t] = (int32_t)(ch * chan + at);
    }
    return koff;
}

/* The source of the strip at output row r, columns [o0, o0 + npix). */
static const px_src_t *source_of(const px_plan_t *pl, int64_t r, int64_t o0, int npix)
{
    for (int i = 0; i < pl->nbands; i++) {
        const px_src_t *b = &pl->band[i];
        if (r >= b->ra && r < b->rb && o0 >= b->ca && o0 + npix <= b->cb) return b;
    }
    assert(r >= pl->in.ra && r < pl->in.rb && o0 >= pl->in.ca && o0 + npix <= pl->in.cb);
    return &pl->in;
}

/* Task b: the weights of output channels [oc b, oc b + oc) as k steps of
 * oc (channels past m zero). */
static void pack_block(void *ctx, int64_t b)
{
    const px_job_t *j = ctx;
    int noc = j->plan.oc;
    float *dst = j->wp + b * j->k * noc;
    if (noc == PX_OC && (b + 1) * PX_OC <= j->m && fgemm_arch()->pack_px) {   /* a whole block: register transposes */
        fgemm_arch()->pack_px(j->w + b * PX_OC * j->k, j->k, dst);
        return;
    }
    for (int64_t p = 0; p < j->k; p++, dst += noc)
        for (int c = 0; c < noc; c++) {
            int64_t oc = b * noc + c;
            dst[c] = oc < j->m ? j->w[oc * j->k + p] : 0.0f;
        }
}

/* The anchors of a strip of npix pixels from output pixel (r, o) on, in
 * the order of the output (into the next rows only where s is the whole
 * band), in px[0 .. pix); pixels past npix repeat the last one: read,
 * never stored. */
static void strip_anchors(const fconv_geom_t *g, const px_src_t *s, int64_t r, int64_t o, int npix, int pix,
                          const float **px)
{
    const float *at = s->at + (r - s->r_at) * s->rstep + (o - s->c_at) * s->cstep;
    if (o + npix <= g->ow) {   /* within a row (most strips): cstep apart */
        for (int i = 0; i < pix; i++) px[i] = at + (i < npix ? i : npix - 1) * s->cstep;
        return;
    }
    for (int i = 0; i < pix; i++) {
        px[i] = s->at + (r - s->r_at) * s->rstep + (o - s->c_at) * s->cstep;
        if (i + 1 < npix && ++o == g->ow) {
            o = 0;
            r++;
        }
    }
}

/* Output pixels per task of px_run. */
static int64_t run_span(const fconv_geom_t *g, const px_plan_t *pl) { return pl->run ? pl->run * pl->pix : g->ow; }

/* Task t: block t % blocks of channels on run t / blocks of output
 * pixels, a strip at a time: output row t / blocks where the plan reads
 * in place (a strip's pixels share a source, so strips stay in rows),
 * else the run of plan.run strips of consecutive pixels, rows or not (a
 * 10-pixel row is then no strip of 8 and one of 2, where 6 pixels are
 * computed for nothing). One thread takes the tasks in the order one task
 * per run took its blocks; many threads get rows x blocks tasks, not rows
 * (a 40x40 plane was 40 tasks for 16 threads: 83% of them busy). */
static void px_run(void *ctx, int64_t t)
{
    const px_job_t *j = ctx;
    const fconv_geom_t *g = j->g;
    const fgemm_arch_t *ar = fgemm_arch();
    const px_plan_t *pl = &j->plan;
    int64_t span = run_span(g, pl), n = g->oh * g->ow, q0 = t / j->blocks * span, q1 = q0 + span < n ? q0 + span : n;
    int boc = pl->oc;
    void (*tile)(int64_t, const float *const *, const int32_t *, const float *, float *, int64_t, int, int,
                 const float *, const fgemm_epi_t *) = boc == PX16 ? ar->tile_px16 : ar->tile_px;
    {
        int64_t b = t % j->blocks;
        int noc = j->m - b * boc < boc ? (int)(j->m - b * boc) : boc;
        const float *bias = j->e.bias ? j->e.bias + b * boc : NULL;
        int64_t r = q0 / g->ow, o = q0 % g->ow;
        for (int64_t q = q0; q < q1; q += pl->pix) {
            int npix = q1 - q < pl->pix ? (int)(q1 - q) : pl->pix;
            const px_src_t *s = !pl->run ? source_of(pl, r, o, npix) : pl->nbands ? &pl->band[0] : &pl->in;
            const float *px[PX16];
            strip_anchors(g, s, r, o, npix, pl->pix, px);
            tile(j->k, px, s->koff, j->wp + b * j->k * boc, j->y + b * boc * n + q, n, npix, noc, bias, &j->te);
            for (o += npix; o >= g->ow; o -= g->ow) r++;
        }
        /* the rest of the epilogue on the block's run of outputs, still
         * in L1 or L2: noc runs of q1 - q0 floats, where a tile's pixels
         * would read the residual as noc runs of a strip a plane apart */
        int64_t at = b * boc * n + q0;
        fgemm_tile_post(j->y + at, n, noc, (int)(q1 - q0), j->e.res ? j->e.res + at : NULL, &j->e);
    }
}

/* Task r: output row r by the row kernel (row_px), 16 channels at a time
 * (the halves of a block of 32: wstep 32), then the rest of the epilogue
 * on the row as px_run's. */
static void px_row(void *ctx, int64_t r)
{
    const px_job_t *j = ctx;
    const fconv_geom_t *g = j->g;
    int64_t n = g->oh * g->ow, at = r * g->ow;
    for (int64_t c = 0; c < j->m; c += PX16) {
        int noc = j->m - c < PX16 ? (int)(j->m - c) : PX16;
        fgemm_arch()->row_px(j->x, g->cin, g->h, g->w, g->sh, r, g->ow, j->wp + c, j->plan.oc, j->y + c * n + at, n,
                             noc, j->e.bias ? j->e.bias + c : NULL, &j->te);
    }
    fgemm_tile_post(j->y + at, n, (int)j->m, (int)g->ow, j->e.res ? j->e.res + at : NULL, &j->e);
}

int fconv_px(int64_t m, const fconv_geom_t *g, const float *w, const float *x, float *y, const fgemm_epi_t *epi,
             float *scratch, void **cache)
{
    px_job_t j = {.g = g, .x = x, .w = w, .y = y, .m = m};
    if (!plan_floats(g, m, cache != NULL, &j.plan)) return -1;
    int64_t n = g->oh * g->ow;
    j.k = g->cin * g->kh * g->kw;
    j.blocks = (m + j.plan.oc - 1) / j.plan.oc;
    if (epi) j.e = *epi;
    j.te = fgemm_epi_tile(&j.e);
    /* scratch: the bands, then the packed weights at a 64-byte boundary */
    j.plan.in.at = x;
    float *at = scratch;
    for (int i = 0; i < j.plan.nbands; i++) {
        px_src_t *b = &j.plan.band[i];
        b->at = b->buf = at;
        at += g->cin * band_plane(g, b);
    }
    j.wp = (float *)(((uintptr_t)at + 63) & ~(uintptr_t)63);
    fgemm_packed_t *kept = cache ? *cache : NULL;
    int pack = !kept;   /* into the scratch, or into a slot met empty */
    if (cache && !kept) {
        kept = fgemm_packed_new(m, j.k, j.blocks * j.k * j.plan.oc);
        if (!kept) return -1;   /* the plain path runs instead */
        *cache = kept;
    }
    assert(!kept || (kept->rows == m && kept->k == j.k));   /* one node's constant weights */
    if (kept) j.wp = kept->p;
    if (pack) pool_for(j.blocks, pack_block, &j);
    if (j.plan.rows) {
        pool_for(g->oh, px_row, &j);
        return 0;
    }
    j.plan.in.koff = koff_of(g, &j.plan.in, 1);
    for (int i = 0; i < j.plan.nbands; i++) j.plan.band[i].koff = koff_of(g, &j.plan.band[i], 0);
    pool_for(g->cin * j.plan.nbands, fill_band, &j);
    pool_for((n + run_span(g, &j.plan) - 1) / run_span(g, &j.plan) * j.blocks, px_run, &j);
    free(j.plan.in.koff);
    for (int i = 0; i < j.plan.nbands; i++) free(j.plan.band[i].koff);
    return 0;
}
