/* fgemm.c — parity's own float32 GEMM (see fgemm.h): the driver. C is cut
 * into tasks of rows x columns (by shape only, so the bits never depend on
 * --threads); each task packs a strip of 32 columns of B, KC steps of k at
 * a time, into a panel that stays in L2 while every block of its rows
 * goes past it; the instruction set's kernel (fgemm_impl.h: AVX-512,
 * AVX2+FMA or portable C, picked by util/isa) computes the tile of a block
 * (8 rows, 6 at AVX2) by 32 columns.
 *
 * Why not OpenBLAS for these shapes: convolutions give GEMMs with 8-256
 * rows and thousands of columns, where OpenBLAS spends as long packing as
 * multiplying; and its kernels differ between CPUs, so its bits do too.
 * The convolution packs its panel straight from the input planes (the
 * column matrix's strip, padding zeroed), so it needs no column buffer.
 *
 * k is summed in blocks of FG_KB steps (fgemm_impl.h): the driver hands
 * the tile one block at a time, and the blocks' sum waits in C between
 * them, as float32, so the panel's length (FG_KC, a multiple of FG_KB)
 * changes no bit. */
#include <assert.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include "ops/gemm/fgemm.h"
#include "ops/gemm/fgemm_impl.h"
#include "graph/graph.h"
#include "util/isa.h"
#include "ops/elementwise/vmath.h"
#include "util/pool.h"
#include "util/err.h"
#include "tensor/half.h"
#include "tensor/tensor.h"

/* A task is a tile of C: tile_m rows by a range of 32-column strips. The
 * tile_m rows of A stay in L2 while each strip of B (packed, in L1) goes
 * past them. Packing a strip costs about one 8-row block of work and is
 * repeated for every tile of rows, so a task takes as many rows as it can
 * (TILE_M_MAX) and the pool gets its tasks (at least MIN_TASKS: balanced
 * on two threads; with more threads, two tasks a thread) by cutting the
 * columns finer, the strips spread evenly over the tiles; rows are cut
 * only where there are too few strips. Where B is packed once for the
 * whole product (small B, many rows; a MatMul's constant B, its weights,
 * packed at its first run and kept: fgemm_kept) a task takes TILE_M_MIN
 * rows.
 *
 * The cut is the one place in the kernels where the thread count shapes
 * the tasks (util/pool.h's rule is the bits, which never do): no element's
 * arithmetic depends on the tile it falls in -- each one's k is summed in
 * the same FG_KB blocks, panel after panel, whatever rows and columns share
 * its task (isa_golden.t: 8-row blocks at AVX-512 and 6 at AVX2 give the
 * same bits) -- and a shape-only cut left the 512-channel 20x20 layers of
 * ResNet-18 8 tasks for 16 threads (5x at 16 threads against 23 ms at
 * one; issue 41). tests/unit/conv_kernels.c compares 1, 3 and 16 threads. */
#define TILE_M_MIN 64
#define TILE_M_MAX 256
#define TILE_STRIPS 8   /* strips per tile at most, where the tasks are many anyway */
#define MIN_TASKS 8
#define FEW_TASKS 64   /* below this many tasks, one task more for one thread shows */
/* Steps of k per packed panel: 2304 x 32 floats = 288 KiB, in L2 -- all
 * of k for every layer of a ResNet up to 256 channels in a 3x3 window.
 * Panels of 256 steps (32 KiB, in L1) cost more in the partial sums' trips
 * through C than they saved: 512-channel 3x3 layers ran 2% slower at one
 * thread and 7% at two, 3x3 stride 2 and 1x1 with k = 512 1-2%, the AVX2
 * kernels' 3x3 layers 2-3%; a whole 4608-step panel (576 KiB) was level
 * at AVX-512 and 3-9% slower at AVX2. */
#define KC FG_KC
/* B packed whole, once per product, when it is at most this many floats
 * and the rows span more than one tile (a MatMul's weights against many
 * rows of activations) or a cache slot keeps it (a MatMul's weights at any
 * row count). */
#define PREPACK_MAX ((int64_t)1 << 20)

/* Each thread's panel: KC steps of 32 floats, 64-byte aligned, made on
 * the thread's first product, freed when the thread ends. Not a
 * _Thread_local array: 288 KiB of static TLS moves every thread's stack,
 * and that alone made the pixel tile's layers, which never touch the
 * panel, 0.5-1.4% slower. */
static _Thread_local float *panel_mem;
static pthread_key_t panel_key;
static pthread_once_t panel_once = PTHREAD_ONCE_INIT;

static void panel_key_make(void) { pthread_key_create(&panel_key, free); }

static float *thread_panel(void)
{
    if (!panel_mem) {
        panel_mem = xmalloc_huge((size_t)KC * FG_NR * sizeof(float));
        pthread_once(&panel_once, panel_key_make);
        pthread_setspecific(panel_key, panel_mem);
    }
    return panel_mem;
}

/* How an m x n product is cut into tasks. */
typedef struct tiling {
    int64_t tile_m, tiles_n, strips;
} tiling_t;

/* Column tiles rounded up so that the tasks are a multiple of MIN_TASKS
 * where they are few: two, four or eight threads then take as many tasks
 * each, and as many strips (they are spread evenly), instead of one task
 * more for one of them (25 tasks of an 80x80 1x1 convolution: 13 against
 * 12, 4% of the layer at two threads). Many tasks (a MatMul's 132 tiles of
 * rows) keep one column tile: one more task is little there, and a second
 * column tile would read the same rows of A twice. */
static int64_t round_tasks(int64_t row_tiles, int64_t tiles_n, int64_t min_tasks)
{
    if (row_tiles * tiles_n >= FEW_TASKS) return tiles_n;
    int64_t step = min_tasks;
    while (step > 1 && row_tiles % 2 == 0) {
        row_tiles /= 2;
        step /= 2;
    }
    return (tiles_n + step - 1) / step * step;
}

static tiling_t tiling_of(int64_t m, int64_t n, int64_t tile_m)
{
    tiling_t t = {tile_m, 0, (n + 31) / 32};
    int64_t min_tasks = 2 * (int64_t)pool_threads() > MIN_TASKS ? 2 * (int64_t)pool_threads() : MIN_TASKS;
    for (;;) {
        int64_t row_tiles = (m + t.tile_m - 1) / t.tile_m, want = (min_tasks + row_tiles - 1) / row_tiles;
        int64_t fewest = (t.strips + TILE_STRIPS - 1) / TILE_STRIPS;
        t.tiles_n = want > fewest ? want : fewest;
        t.tiles_n = round_tasks(row_tiles, t.tiles_n, min_tasks);
        if (t.tiles_n > t.strips) t.tiles_n = t.strips;
        if (row_tiles * t.tiles_n >= min_tasks || t.tile_m <= TILE_M_MIN) return t;
        t.tile_m /= 2;
    }
}

/* Task t's rows [*i0, *i1) and columns [*j0, *j1): the strips spread
 * evenly over the column tiles. */
static void task_range(const tiling_t *tl, int64_t m, int64_t n, int64_t t, int64_t *i0, int64_t *i1, int64_t *j0,
                       int64_t *j1)
{
    int64_t r = t / tl->tiles_n, c = t % tl->tiles_n;
    *i0 = r * tl->tile_m;
    *i1 = *i0 + tl->tile_m < m ? *i0 + tl->tile_m : m;
    *j0 = c * tl->strips / tl->tiles_n * 32;
    *j1 = (c + 1) * tl->strips / tl->tiles_n * 32;
    if (*j1 > n) *j1 = n;
}

static int64_t task_count(const tiling_t *tl, int64_t m) { return (m + tl->tile_m - 1) / tl->tile_m * tl->tiles_n; }

int fgemm_available(void) { return kernels_mode() == KERNELS_OWN; }

void fgemm_set_enabled(int on) { kernels_set_mode(on ? KERNELS_OWN : KERNELS_BLAS); }

/* The kernels of the instruction set in use. */
const fgemm_arch_t *fgemm_arch(void)
{
    return isa_pick(&fgemm_arch_generic, ISA_TABLE(&fgemm_arch_avx2), ISA_TABLE(&fgemm_arch_avx512));
}


static int fgemm_epi_supported(int act)
{
    return act == ACT_NONE || act == ACT_RELU || act == ACT_CLIP || act == ACT_LEAKY || act == ACT_SIGMOID ||
           act == ACT_SILU;
}

/* The part of the epilogue the instruction set's tiles leave, applied to
 * a finished tile while it is still in L1. With a residual the tiles store
 * the sum with its biases (fgemm_epi_tile) and the residual is added here,
 * then the activation: the order of the unfused Conv, Add and activation,
 * each element's one float32 addition the Add's (commutative in IEEE
 * arithmetic, so r + y and y + r are the same bits). Without one, only
 * Sigmoid and SiLU where the set's tiles do not apply them. The
 * activations are the standalone kernels' (run.c's node_act_range:
 * fgemm_finish_one's formulas, vmath.h's Sigmoid and SiLU, elementwise and
 * the same bits on every CPU), so the bits are those of the unfused layers. */
static int post_act(const fgemm_epi_t *e)
{
    if (e->res) return e->act != ACT_NONE;
    return (e->act == ACT_SIGMOID || e->act == ACT_SILU) && !fgemm_arch()->tile_sigmoid;
}

fgemm_epi_t fgemm_epi_tile(const fgemm_epi_t *e)
{
    fgemm_epi_t t = *e;
    if (e->res) t.act = ACT_NONE;
    t.round = 0;   /* after the post's steps (fgemm.c's epi_split may give it back) */
    return t;
}

static void act_row(float *x, int n, const fgemm_epi_t *e)
{
    const fgemm_epi_t act = {.act = e->act, .a = e->a, .b = e->b};
    switch (e->act) {
    case ACT_SIGMOID: vm_sigmoid_f32(x, x, n); break;
    case ACT_SILU: vm_silu_f32(x, x, n); break;
    case ACT_NONE: break;
    default:
        for (int j = 0; j < n; j++) x[j] = fgemm_finish_one(x[j], 0.0f, 0.0f, &act);
    }
}

static void add_row(float *restrict x, const float *restrict r, int n)
{
    for (int j = 0; j < n; j++) x[j] = x[j] + r[j];
}

/* The storage rounding of a finished tile's rows (fgemm_epi_t.round) where
 * the tiles left it: the pass node_run would run over the whole output, a
 * row at a time (fconv_px.c's runs of a block's outputs, long rows). */
static void round_rows(float *c, int64_t ldc, int mr, int nr, int round)
{
    for (int r = 0; r < mr; r++, c += ldc)
        if (round == DT_FLOAT16) round_f16_inplace(c, nr);
        else round_bf16_inplace(c, nr);
}

int fgemm_rounds(int round, int act)
{
    fgemm_epi_t e = {.act = act};
    return round == DT_FLOAT16 && fgemm_arch()->tile_round_f16 && !post_act(&e);
}

/* The tiles' part of the epilogue (te) and fgemm_tile_post's (pe): the
 * storage rounding goes to the tiles, in registers, where the set's tiles
 * do it and nothing is left after them (no residual, no activation for the
 * post); else it stays with the post, after the rest. */
static void epi_split(const fgemm_epi_t *e, fgemm_epi_t *te, fgemm_epi_t *pe)
{
    *te = fgemm_epi_tile(e);
    *pe = *e;
    if (e->round == DT_FLOAT16 && fgemm_arch()->tile_round_f16 && !e->res && !post_act(e)) {
        te->round = e->round;
        pe->round = 0;
    }
}

void fgemm_tile_post(float *c, int64_t ldc, int mr, int nr, const float *res, const fgemm_epi_t *e)
{
    const fgemm_arch_t *ar = fgemm_arch();
    int act = post_act(e);
    if (res && ar->residual) ar->residual(c, ldc, mr, nr, res, e);
    else if (act || res) {
        float *row = c;
        for (int r = 0; r < mr; r++, row += ldc) {
            if (res) add_row(row, res + r * ldc, nr);
            if (act) act_row(row, nr, e);
        }
    }
    if (e->round) round_rows(c, ldc, mr, nr, e->round);
}

int fgemm_epi_act(fgemm_epi_t *e, const node_t *n)
{
    if (!fgemm_epi_supported(n->act)) return 0;
    e->act = n->act;
    e->a = n->act_a;
    e->b = n->act_b;
    return 1;
}

/* The same computation in plain C, element by element (fmaf is the FMA the
 * kernel does): the path where the kernel cannot run, and the tests' oracle
 * for the kernel's bits. */
float fgemm_finish_one(float x, float bias, float col_bias, const fgemm_epi_t *e)
{
    if (e->bias) x += bias;
    if (e->col_bias) x += col_bias;
    switch (e->act) {
    case ACT_RELU: return x < 0 ? 0.0f : x;
    case ACT_LEAKY: return x < 0 ? e->a * x : x;
    case ACT_CLIP: return x < e->a ? (e->a > e->b ? e->b : e->a) : x > e->b ? e->b : x;
    default: return x;
    }
}

void fgemm_ref(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
               int64_t ldc, const fgemm_epi_t *epi)
{
    fgemm_epi_t none = {0};
    if (!epi) epi = &none;
    /* the biases, the residual, the activation (act: the activation alone), then the rounding */
    fgemm_epi_t bare = *epi, act = {.act = epi->act, .a = epi->a, .b = epi->b};
    bare.act = ACT_NONE;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            float acc = 0.0f;
            for (int64_t p0 = 0; p0 < k; p0 += FG_KB) {
                float blk = 0.0f;
                for (int64_t p = p0; p < k && p < p0 + FG_KB; p++) blk = fmaf(a[i * lda + p], b[p * ldb + j], blk);
                acc = p0 == 0 ? blk : acc + blk;
            }
            float y = fgemm_finish_one(acc, epi->bias ? epi->bias[i] : 0.0f, epi->col_bias ? epi->col_bias[j] : 0.0f, &bare);
            if (epi->res) y = y + epi->res[i * ldc + j];
            y = fgemm_finish_one(y, 0.0f, 0.0f, &act);
            if (epi->act == ACT_SIGMOID || epi->act == ACT_SILU) y = epi->act == ACT_SILU ? y * vm_sigmoidf(y) : vm_sigmoidf(y);
            if (epi->round) y = epi->round == DT_FLOAT16 ? f32_round_f16(y) : f32_round_bf16(y);
            c[i * ldc + j] = y;
        }
}

/* The panel's kc steps from p0 (of k in all) into one tile, an
 * accumulation block (FG_KB steps from a multiple of FG_KB) per call:
 * the first block of k stores its sum, each later one adds its sum to
 * C's, the last one finishes the tile. a: the tile's rows from column 0. */
static void tile_blocks(const fgemm_arch_t *ar, int64_t p0, int64_t kc, int64_t k, const float *a, int64_t lda, int mr,
                        const float *bp, int nr, float *c, int64_t ldc, const float *bias, const float *cbias,
                        const fgemm_epi_t *e)
{
    assert(p0 % FG_KB == 0);
    for (int64_t q = 0; q < kc || q == 0; q += FG_KB) {
        int64_t kb = kc - q < FG_KB ? kc - q : FG_KB;
        ar->tile(kb, a + p0 + q, lda, mr, bp + q * FG_NR, nr, c, ldc, p0 + q == 0, p0 + q + FG_KB >= k, bias, cbias, e);
    }
}

typedef struct fgemm_job {
    int64_t m, n, k, lda, ldb, ldc;
    tiling_t tiles;
    const float *a, *b;
    const float *bpack;   /* B packed whole (strip s at s * k * 32), or NULL: each task packs its strips */
    float *c;
    fgemm_epi_t e, te, pe;   /* the epilogue; the tiles' and fgemm_tile_post's parts of it (epi_split) */
} fgemm_job_t;

static void fgemm_tile(void *ctx, int64_t t)
{
    const fgemm_job_t *j = ctx;
    int64_t i0, i1, j0, j1;
    task_range(&j->tiles, j->m, j->n, t, &i0, &i1, &j0, &j1);
    const fgemm_arch_t *ar = fgemm_arch();
    for (int64_t col = j0; col < j1; col += 32) {
        int nr = j1 - col < 32 ? (int)(j1 - col) : 32;
        for (int64_t p0 = 0; p0 < j->k || p0 == 0; p0 += KC) {
            int64_t kc = j->k - p0 < KC ? j->k - p0 : KC;
            const float *bp;
            if (j->bpack) bp = j->bpack + (col / 32 * j->k + p0) * 32;
            else {
                float *panel = thread_panel();
                ar->pack_b(j->b + p0 * j->ldb + col, j->ldb, kc, nr, panel);
                bp = panel;
            }
            for (int64_t row = i0; row < i1; row += ar->mr) {
                int mr = i1 - row < ar->mr ? (int)(i1 - row) : ar->mr;
                tile_blocks(ar, p0, kc, j->k, j->a + row * j->lda, j->lda, mr, bp, nr, j->c + row * j->ldc + col,
                            j->ldc, j->e.bias ? j->e.bias + row : NULL, j->e.col_bias ? j->e.col_bias + col : NULL,
                            &j->te);
                if (p0 + KC >= j->k)
                    fgemm_tile_post(j->c + row * j->ldc + col, j->ldc, mr, nr,
                                    j->e.res ? j->e.res + row * j->ldc + col : NULL, &j->pe);
            }
        }
    }
}

fgemm_packed_t *fgemm_packed_new(int64_t rows, int64_t k, int64_t floats)
{
    size_t bytes = sizeof(fgemm_packed_t) + (size_t)floats * sizeof(float);
    fgemm_packed_t *kp = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!kp) return NULL;
    kp->rows = rows;
    kp->k = k;
    return kp;
}

typedef struct pack_job { const float *b; int64_t ldb, n, k; float *dst; } pack_job_t;

/* Task s: strip s of B. */
static void pack_strip(void *ctx, int64_t s)
{
    const pack_job_t *j = ctx;
    fgemm_arch()->pack_b(j->b + s * 32, j->ldb, j->k, j->n - s * 32 < 32 ? (int)(j->n - s * 32) : 32,
                         j->dst + s * j->k * 32);
}

/* B packed whole, strip s (32 columns, the last one zero-padded) at s * k
 * * 32, into a new fgemm_packed_t (NULL where it cannot be had). */
static fgemm_packed_t *pack_whole(const float *b, int64_t ldb, int64_t n, int64_t k)
{
    int64_t strips = (n + 31) / 32;
    fgemm_packed_t *bp = fgemm_packed_new(n, k, strips * 32 * k);
    if (!bp) return NULL;
    pack_job_t j = {b, ldb, n, k, bp->p};
    pool_for(strips, pack_strip, &j);
    return bp;
}

void fgemm_kept(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
                int64_t ldc, const fgemm_epi_t *epi, void **cache)
{
    if (m <= 0 || n <= 0) return;
    int64_t strips = (n + 31) / 32;
    fgemm_job_t j = {m, n, k, lda, ldb, ldc, tiling_of(m, n, TILE_M_MAX), a, b, NULL, c, {0}};
    if (epi) j.e = *epi;
    epi_split(&j.e, &j.te, &j.pe);
    fgemm_packed_t *own = NULL, *kept = cache ? *cache : NULL;
    assert(!kept || (kept->rows == n && kept->k == k));   /* one node's constant B */
    if (!kept && (m > TILE_M_MAX || cache) && k > 0 && strips * 32 * k <= PREPACK_MAX) {
        /* the rows span several tiles, each of which would pack the same
         * strips: pack them once. With one tile of rows every strip is
         * packed once anyway, into L1, and a packed copy of the whole of
         * B would only go through memory (1x1 convolutions: measured 2-9%
         * slower alone, 2.2% on the 640 model) -- unless it is kept: a
         * MatMul's weights against a few rows (RT-DETR's decoder, 100
         * queries) were packed again on every run, 1.9% of an inference
         * of the 320 model at one thread in pack_b alone */
        own = kept = pack_whole(b, ldb, n, k);
        if (cache && kept) {
            *cache = kept;
            own = NULL;
        }
    }
    if (kept) {
        j.bpack = kept->p;
        j.tiles = tiling_of(m, n, TILE_M_MIN);
    }
    pool_for(task_count(&j.tiles, m), fgemm_tile, &j);
    free(own);
}

void fgemm(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
           int64_t ldc, const fgemm_epi_t *epi)
{
    fgemm_kept(m, n, k, a, lda, b, ldb, c, ldc, epi, NULL);
}

struct tap_layout;
typedef struct fconv_job {
    int64_t m, n;
    tiling_t tiles;
    const fconv_geom_t *g;
    const struct tap_layout *tl;
    const float *w;
    float *y;
    fgemm_epi_t e, te, pe;   /* the epilogue; the tiles' and fgemm_tile_post's parts of it (epi_split) */
} fconv_job_t;

/* One 32-wide strip of output positions [j0, j0 + nr): each lane's input
 * offset before the tap's shift, (r*sh)*w + o*sw for (r, o) = divmod(j0 +
 * l, ow), and the masks of each tap: lane l of tap (i, j) is set where
 * the tap reads inside the input, (r*sh + dh[i], o*sw + dw[j]) in h x w.
 * Lanes past nr stay clear. */
static void strip_setup(const fconv_geom_t *g, int64_t j0, int nr, int32_t *base, uint32_t *mk)
{
    uint32_t rows[FCONV_MAX_K] = {0}, cols[FCONV_MAX_K] = {0};
    int64_t r = j0 / g->ow, o = j0 % g->ow;
    for (int l = 0; l < 32; l++) base[l] = 0;
    for (int l = 0; l < nr; l++) {
        int64_t ir = r * g->sh, ic = o * g->sw;
        base[l] = (int32_t)(ir * g->w + ic);
        for (int i = 0; i < g->kh; i++)
            if (ir + g->dh[i] >= 0 && ir + g->dh[i] < g->h) rows[i] |= 1u << l;
        for (int j = 0; j < g->kw; j++)
            if (ic + g->dw[j] >= 0 && ic + g->dw[j] < g->w) cols[j] |= 1u << l;
        if (++o == g->ow) { o = 0; r++; }
    }
    for (int i = 0; i < g->kh; i++)
        for (int j = 0; j < g->kw; j++) mk[i * g->kw + j] = rows[i] & cols[j];
}

/* Where a tap of the convolution reads, for the whole job: each tap's
 * offset from a lane's base, the distance between input channels, and
 * whether a strip's lanes read consecutive elements. */
typedef struct tap_layout {
    const float *x;      /* the input planes, or their stride phases */
    int64_t plane;       /* floats per input channel in x */
    int64_t tapoff[FCONV_MAX_K * FCONV_MAX_K];
    int contiguous;
} tap_layout_t;

static void fconv_tile(void *ctx, int64_t t)
{
    const fconv_job_t *j = ctx;
    const fconv_geom_t *g = j->g;
    const tap_layout_t *tl = j->tl;
    int taps = g->kh * g->kw;
    int64_t k = g->cin * taps;
    uint32_t mk[FCONV_MAX_K * FCONV_MAX_K];
    const fgemm_arch_t *ar = fgemm_arch();
    int32_t base[32];
    int64_t i0, i1, j0, j1;
    task_range(&j->tiles, j->m, j->n, t, &i0, &i1, &j0, &j1);
    for (int64_t col = j0; col < j1; col += 32) {
        int nr = j1 - col < 32 ? (int)(j1 - col) : 32;
        strip_setup(g, col, nr, base, mk);
        if (g->phase)   /* phase planes are ow wide: a lane's offset is its output index */
            for (int l = 0; l < nr; l++) base[l] = (int32_t)(col + l);
        for (int64_t p0 = 0; p0 < k || p0 == 0; p0 += KC) {
            int64_t kc = k - p0 < KC ? k - p0 : KC;
            float *panel = thread_panel();
            ar->pack_taps(tl->x, tl->plane, taps, tl->tapoff, mk, base, tl->contiguous, p0, kc, panel);
            for (int64_t row = i0; row < i1; row += ar->mr) {
                int mr = i1 - row < ar->mr ? (int)(i1 - row) : ar->mr;
                tile_blocks(ar, p0, kc, k, j->w + row * k, k, mr, panel, nr, j->y + row * j->n + col, j->n,
                            j->e.bias ? j->e.bias + row : NULL, NULL, &j->te);
                if (p0 + KC >= k)
                    fgemm_tile_post(j->y + row * j->n + col, j->n, mr, nr,
                                    j->e.res ? j->e.res + row * j->n + col : NULL, &j->pe);
            }
        }
    }
}

/* Stride phases: for strides (sh, sw), input plane ch becomes sh * sw
 * planes of ceil(h/sh) x ceil(w/sw), phase (py, px) holding x[py + sh*i][px +
 * sw*j] (zero past the input). Tap (a, b) of output (r, o) then reads phase
 * (dh mod sh, dw mod sw) at (r + floor(dh/sh), o + floor(dw/sw)): when the
 * phases are ow wide, a strip reads consecutive elements, as a stride-1
 * convolution does, instead of gathering. Only the layout changes: the
 * products and their order are the same. */
static int64_t phase_rows(const fconv_geom_t *g) { return (g->h + g->sh - 1) / g->sh; }
static int64_t phase_cols(const fconv_geom_t *g) { return (g->w + g->sw - 1) / g->sw; }

int64_t fconv_phase_floats(const fconv_geom_t *g)
{
    if ((g->sh == 1 && g->sw == 1) || phase_cols(g) != g->ow) return 0;
    return g->cin * g->sh * g->sw * phase_rows(g) * phase_cols(g);
}

typedef struct phase_job {
    const fconv_geom_t *g;
    const float *x;
} phase_job_t;

static void phase_fill(void *ctx, int64_t ch)
{
    const phase_job_t *j = ctx;
    const fconv_geom_t *g = j->g;
    int64_t ph = phase_rows(g), pw = phase_cols(g);
    const float *xc = j->x + ch * g->h * g->w;
    float *dst = g->phase + ch * g->sh * g->sw * ph * pw;
    for (int py = 0; py < g->sh; py++)
        for (int px = 0; px < g->sw; px++)
            for (int64_t i = 0; i < ph; i++, dst += pw) {
                int64_t row = py + (int64_t)g->sh * i;
                int64_t n = row < g->h && px < g->w ? (g->w - px + g->sw - 1) / g->sw : 0;
                const float *src = xc + row * g->w + px;
                if (g->sw == 2) fgemm_arch()->gather_even(dst, src, n);
                else
                    for (int64_t q = 0; q < n; q++) dst[q] = src[q * g->sw];
                for (int64_t q = n; q < pw; q++) dst[q] = 0.0f;
            }
}

/* The taps' offsets: into the input planes, or (g->phase) into the phases. */
static void tap_layout_setup(const fconv_geom_t *g, const float *x, tap_layout_t *tl)
{
    tl->x = x;
    tl->plane = g->h * g->w;
    tl->contiguous = g->sh == 1 && g->sw == 1 && g->ow == g->w;
    for (int i = 0; i < g->kh; i++)
        for (int q = 0; q < g->kw; q++) tl->tapoff[i * g->kw + q] = g->dh[i] * g->w + g->dw[q];
    if (!g->phase) return;
    int64_t ph = phase_rows(g), pw = phase_cols(g);
    tl->x = g->phase;
    tl->plane = g->sh * g->sw * ph * pw;
    tl->contiguous = 1;
    for (int i = 0; i < g->kh; i++)
        for (int q = 0; q < g->kw; q++) {
            int64_t py = ((g->dh[i] % g->sh) + g->sh) % g->sh, px = ((g->dw[q] % g->sw) + g->sw) % g->sw;
            int64_t fr = (g->dh[i] - py) / g->sh, fc = (g->dw[q] - px) / g->sw;
            tl->tapoff[i * g->kw + q] = (py * g->sw + px) * ph * pw + fr * pw + fc;
        }
}

int fconv_rows(int64_t m, const fconv_geom_t *g, const float *w, const float *x, float *y, const fgemm_epi_t *epi)
{
    if (g->kh < 1 || g->kw < 1 || g->kh > FCONV_MAX_K || g->kw > FCONV_MAX_K) return -1;
    if (g->sh < 1 || g->sw < 1 || g->h * g->w > INT32_MAX / 2) return -1;   /* gather offsets are int32 */
    if (g->phase && !fconv_phase_floats(g)) return -1;
    int64_t n = g->oh * g->ow;
    if (m <= 0 || n <= 0) return 0;
    if (g->phase) {
        phase_job_t pj = {g, x};
        pool_for(g->cin, phase_fill, &pj);
    }
    tap_layout_t tl;
    tap_layout_setup(g, x, &tl);
    fconv_job_t j = {m, n, tiling_of(m, n, TILE_M_MAX), g, &tl, w, y, {0}};
    if (epi) j.e = *epi;
    epi_split(&j.e, &j.te, &j.pe);
    pool_for(task_count(&j.tiles, m), fconv_tile, &j);
    return 0;
}


void fgemm_gather_even(float *dst, const float *src, int64_t n) { fgemm_arch()->gather_even(dst, src, n); }
