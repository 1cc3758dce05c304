/* qgemm.c — parity's integer GEMM (see qgemm.h): the driver. It packs A
 * (rows of uint8, k rounded up to 4) and B (panels of 64 columns of int8 in
 * vpdpbusd's layout: qgemm_impl.h), cuts C into tasks of rows x panels by
 * shape only, runs the instruction set's kernel on each tile and then
 * applies the zero-point correction to the tile's raw sums.
 *
 * Every operand pair is made uint8 x int8 by flipping top bits: A = Au - oa
 * (oa = 128 for int8 A, whose bytes are flipped to Au = A + 128; else 0),
 * B = Bs + ob (ob = 128 for uint8 B, flipped to Bs = B - 128). With a' =
 * oa + za (per row) and b' = zb - ob (per column),
 *   sum (A - za)(B - zb) = sum (Au - a')(Bs - b')
 *                        = S - b' * rowsum(Au) - a' * (colsum(Bs) - k * b')
 * where S = sum Au * Bs is the kernel's. All in uint32: each identity holds
 * modulo 2^32, so the result is the exact sum modulo 2^32 (qgemm.h). */
#include <stdlib.h>
#include <string.h>
#include "ops/gemm/qgemm.h"
#include "ops/gemm/qgemm_impl.h"
#include "util/err.h"
#include "util/isa.h"
#include "util/pool.h"

#define TILE_M 96      /* rows per task at most: a multiple of every kernel's mr */
#define MIN_TASKS 16   /* tasks wanted, cutting the panels finer where the rows are few */
#define PACK_ROWS 64   /* rows of A per packing task */

/* The kernels of the level in use. AVX-512F without VNNI has no table of
 * its own: the AVX2 one, the same sums in 16 bits. */
static const qgemm_arch_t *qgemm_arch(void)
{
#if ISA_X86
    return isa_pick(&qgemm_arch_generic, &qgemm_arch_avx2, qgemm_cpu_vnni() ? &qgemm_arch_avx512 : NULL);
#else
    return &qgemm_arch_generic;
#endif
}

const char *qgemm_kernel_name(void) { return qgemm_arch()->name; }

void q_range(const float *x, int64_t n, float *lo, float *hi) { qgemm_arch()->range(x, n, lo, hi); }

void q_to_u8(const float *x, int64_t n, float scale, float zp, uint8_t *y) { qgemm_arch()->to_u8(x, n, scale, zp, y); }

/* B packed: its shape and type (what a kept copy is checked against), the
 * column sums of Bs and the panels, in one 64-byte aligned block (xmalloc_huge)
 * that free() releases. */
typedef struct qg_packed {
    int64_t n, k, kp;
    int sgn;
    uint32_t *colsum;
    int8_t *panel;
} qg_packed_t;

static int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

static qg_packed_t *packed_new(int64_t n, int64_t k, int sgn)
{
    int64_t kp = round_up(k, QG_KU), np = (n + QG_NR - 1) / QG_NR;
    size_t head = 64, panels = (size_t)(np * kp * QG_NR), sums = (size_t)n * sizeof(uint32_t);
    size_t total = (size_t)round_up((int64_t)(head + panels + sums), 64);
    qg_packed_t *pb = xmalloc_huge(total);
    pb->n = n;
    pb->k = k;
    pb->kp = kp;
    pb->sgn = sgn;
    pb->panel = (int8_t *)pb + head;
    pb->colsum = (uint32_t *)(pb->panel + panels);
    return pb;
}

/* The flip that makes a byte of an operand uint8 (A) or int8 (B). */
static uint8_t flip_of(int sgn, int want_signed) { return sgn == want_signed ? 0 : 0x80; }

typedef struct pack_b_job { const qgemm_mat_t *b; qg_packed_t *pb; } pack_b_job_t;

/* Panel t of B: step p of column j at group p / 4, lane j, byte p % 4. */
static void pack_b_panel(void *ctx, int64_t t)
{
    const pack_b_job_t *j = ctx;
    const qg_packed_t *pb = j->pb;
    const uint8_t *b = j->b->p, flip = flip_of(j->b->sgn, 1);
    int64_t j0 = t * QG_NR, nr = pb->n - j0 < QG_NR ? pb->n - j0 : QG_NR;
    int8_t *dst = pb->panel + t * pb->kp * QG_NR;
    uint32_t sum[QG_NR] = {0};
    memset(dst, 0, (size_t)(pb->kp * QG_NR));
    for (int64_t p = 0; p < pb->k; p++) {
        const uint8_t *row = b + p * j->b->ld + j0;
        int8_t *d = dst + p / QG_KU * QG_NR * QG_KU + p % QG_KU;
        for (int64_t c = 0; c < nr; c++) {
            int8_t v = (int8_t)(row[c] ^ flip);
            d[c * QG_KU] = v;
            sum[c] += (uint32_t)(int32_t)v;
        }
    }
    memcpy(pb->colsum + j0, sum, (size_t)nr * sizeof *sum);
}

static void for_each(int threaded, int64_t n, void (*fn)(void *, int64_t), void *ctx)
{
    if (threaded) pool_for(n, fn, ctx);
    else
        for (int64_t i = 0; i < n; i++) fn(ctx, i);
}

static qg_packed_t *pack_b(int64_t n, int64_t k, const qgemm_mat_t *b, int threaded)
{
    pack_b_job_t j = {b, packed_new(n, k, b->sgn)};
    for_each(threaded, (n + QG_NR - 1) / QG_NR, pack_b_panel, &j);
    return j.pb;
}

/* B from the cache where it holds B's packing, else packed now and kept
 * there if the slot is empty; *own says whether the caller frees it. */
static qg_packed_t *packed_b(int64_t n, int64_t k, const qgemm_mat_t *b, void **cache, int threaded, int *own)
{
    qg_packed_t *kept = cache ? *cache : NULL;
    *own = 0;
    if (kept && kept->n == n && kept->k == k && kept->sgn == b->sgn) return kept;
    qg_packed_t *pb = pack_b(n, k, b, threaded);
    if (cache && !kept) *cache = pb;
    else *own = 1;
    return pb;
}

/* The product's state shared by its tasks. */
typedef struct qg_job {
    const qgemm_arch_t *ar;
    int64_t m, n, k, kp;
    const qgemm_mat_t *a;
    uint8_t *apk;            /* packed A: m rows of kp bytes */
    uint32_t *arow, *rs;     /* a' and rowsum(Au) per row */
    const qg_packed_t *pb;
    uint32_t *bcol, *ct;     /* b' and colsum(Bs) - k * b' per column */
    int32_t *c;
    int64_t ldc, tile_m, chunks, per_chunk;
} qg_job_t;

/* Rows [t * PACK_ROWS, ...) of A: flipped to uint8, zero past k, with
 * their sums and a'. */
static void pack_a_rows(void *ctx, int64_t t)
{
    const qg_job_t *j = ctx;
    const qgemm_mat_t *a = j->a;
    uint8_t flip = flip_of(a->sgn, 0);
    uint32_t oa = a->sgn ? 128u : 0u;
    int64_t i1 = (t + 1) * PACK_ROWS < j->m ? (t + 1) * PACK_ROWS : j->m;
    for (int64_t i = t * PACK_ROWS; i < i1; i++) {
        const uint8_t *src = (const uint8_t *)a->p + i * a->ld;
        uint8_t *dst = j->apk + i * j->kp;
        uint32_t s = 0;
        for (int64_t p = 0; p < j->k; p++) {
            dst[p] = src[p] ^ flip;
            s += dst[p];
        }
        memset(dst + j->k, 0, (size_t)(j->kp - j->k));
        j->rs[i] = s;
        j->arow[i] = oa + (uint32_t)(a->nzp ? a->zp[a->nzp == 1 ? 0 : i] : 0);
    }
}

/* C's rows [i0, i0 + mr), columns [j0, j0 + nr) from raw sums to the
 * zero-point-corrected ones. */
static void correct_tile(const qg_job_t *j, int64_t i0, int mr, int64_t j0, int nr)
{
    for (int64_t i = i0; i < i0 + mr; i++) {
        uint32_t ar = j->arow[i], rs = j->rs[i];
        int32_t *c = j->c + i * j->ldc + j0;
        const uint32_t *bc = j->bcol + j0, *ct = j->ct + j0;
        for (int q = 0; q < nr; q++) c[q] = (int32_t)((uint32_t)c[q] - bc[q] * rs - ar * ct[q]);
    }
}

/* Task t: a tile of rows by a chunk of panels. */
static void gemm_task(void *ctx, int64_t t)
{
    const qg_job_t *j = ctx;
    int64_t r0 = t / j->chunks * j->tile_m, r1 = r0 + j->tile_m < j->m ? r0 + j->tile_m : j->m;
    int64_t p0 = t % j->chunks * j->per_chunk, np = (j->n + QG_NR - 1) / QG_NR;
    int64_t p1 = p0 + j->per_chunk < np ? p0 + j->per_chunk : np;
    for (int64_t pn = p0; pn < p1; pn++) {
        int64_t c0 = pn * QG_NR;
        int nr = (int)(j->n - c0 < QG_NR ? j->n - c0 : QG_NR);
        const int8_t *panel = j->pb->panel + pn * j->kp * QG_NR;
        for (int64_t i = r0; i < r1; i += j->ar->mr) {
            int mr = (int)(r1 - i < j->ar->mr ? r1 - i : j->ar->mr);
            j->ar->tile(j->kp / QG_KU, j->apk + i * j->kp, j->kp, mr, panel, j->c + i * j->ldc + c0, j->ldc, nr);
            correct_tile(j, i, mr, c0, nr);
        }
    }
}

static void qgemm_run(int64_t m, int64_t n, int64_t k, const qgemm_mat_t *a, const qgemm_mat_t *b, int32_t *c,
                      int64_t ldc, void **cache, int threaded)
{
    if (m <= 0 || n <= 0) return;
    int own;
    qg_job_t j = {qgemm_arch(), m, n, k, round_up(k, QG_KU), a};
    j.pb = packed_b(n, k, b, cache, threaded, &own);
    j.apk = xmalloc((size_t)(m * j.kp) + 1);
    j.arow = xmalloc((size_t)(2 * m + 2 * n) * sizeof(uint32_t));
    j.rs = j.arow + m;
    j.bcol = j.rs + m;
    j.ct = j.bcol + n;
    for_each(threaded, (m + PACK_ROWS - 1) / PACK_ROWS, pack_a_rows, &j);
    uint32_t ob = b->sgn ? 0u : 128u;
    for (int64_t q = 0; q < n; q++) {
        j.bcol[q] = (uint32_t)(b->nzp ? b->zp[b->nzp == 1 ? 0 : q] : 0) - ob;
        j.ct[q] = j.pb->colsum[q] - (uint32_t)k * j.bcol[q];
    }
    /* tasks by shape only: tiles of TILE_M rows, the panels cut into as
     * many chunks as bring the tasks to MIN_TASKS */
    int64_t np = (n + QG_NR - 1) / QG_NR, rt = (m + TILE_M - 1) / TILE_M;
    j.tile_m = TILE_M;
    j.chunks = (MIN_TASKS + rt - 1) / rt;
    if (j.chunks > np) j.chunks = np;
    j.per_chunk = (np + j.chunks - 1) / j.chunks;
    j.chunks = (np + j.per_chunk - 1) / j.per_chunk;
    j.c = c;
    j.ldc = ldc;
    for_each(threaded, rt * j.chunks, gemm_task, &j);
    free(j.apk);
    free(j.arow);
    if (own) free((void *)j.pb);
}

void qgemm(int64_t m, int64_t n, int64_t k, const qgemm_mat_t *a, const qgemm_mat_t *b, int32_t *c, int64_t ldc,
           void **cache)
{
    qgemm_run(m, n, k, a, b, c, ldc, cache, 1);
}

void qgemm_serial(int64_t m, int64_t n, int64_t k, const qgemm_mat_t *a, const qgemm_mat_t *b, int32_t *c,
                  int64_t ldc)
{
    qgemm_run(m, n, k, a, b, c, ldc, NULL, 0);
}
