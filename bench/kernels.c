/* kernels.c — the convolution and GEMM kernels alone, on the shapes of the
 * full-size RT-DETR (R18-vd at 640x640): GFLOP/s per shape at every
 * instruction set the CPU has, timed by the thread's own CPU clock as well
 * as the wall clock, so a number taken on a shared machine still says what
 * the kernel costs (a descheduled thread's CPU clock stands still).
 *
 *   kernels [--isa LEVEL] [--reps N] [--threads N] [--residual] [--filter SUBSTRING | --shape CIN,COUT,H,W,K,S]
 *
 * Prints one line per shape: name, GFLOP, ms (cpu), GFLOP/s (cpu), ms (wall).
 * A checksum of each output guards against a kernel that skips work.
 * --residual: a ResNet block's end instead, y = Relu(conv(x) + r), in two
 * forms timed in turn: the residual and Relu in the epilogue (fgemm_epi_t.res)
 * against the passes after the convolution that ops/run.c ran before it (y +=
 * r, then Relu, over the whole output); prints both and apart / fused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ops/gemm/fgemm.h"
#include "util/err.h"
#include "util/isa.h"
#include "util/pool.h"

typedef struct shape {
    const char *name;
    int cin, cout, h, w, k, s;   /* k = 0: a MatMul of cout x cin times cin x h*w */
} shape_t;

static const shape_t SHAPES[] = {
    {"stem 3->32 s2 640", 3, 32, 640, 640, 3, 2},
    {"3x3 32->32 320", 32, 32, 320, 320, 3, 1},
    {"3x3 32->64 320", 32, 64, 320, 320, 3, 1},
    {"3x3 64->64 160", 64, 64, 160, 160, 3, 1},
    {"3x3 128->128 80", 128, 128, 80, 80, 3, 1},
    {"3x3 256->256 40", 256, 256, 40, 40, 3, 1},
    {"3x3 512->512 20", 512, 512, 20, 20, 3, 1},
    {"3x3 128->128 40", 128, 128, 40, 40, 3, 1},
    {"3x3 s2 64->128 160", 64, 128, 160, 160, 3, 2},
    {"3x3 s2 128->256 80", 128, 256, 80, 80, 3, 2},
    {"3x3 s2 256->512 40", 256, 512, 40, 40, 3, 2},
    {"3x3 s2 256->256 80", 256, 256, 80, 80, 3, 2},
    {"1x1 512->128 80", 512, 128, 80, 80, 1, 1},
    {"1x1 128->256 80", 128, 256, 80, 80, 1, 1},
    {"1x1 256->256 80", 256, 256, 80, 80, 1, 1},
    {"1x1 64->64 160", 64, 64, 160, 160, 1, 1},
    {"1x1 128->256 40", 128, 256, 40, 40, 1, 1},
    {"matmul 8400x256 * 256x256", 256, 256, 8400, 1, 0, 1},
    {"matmul 300x256 * 256x1024", 256, 1024, 300, 1, 0, 1},
};

static double clock_s(clockid_t id)
{
    struct timespec t;
    clock_gettime(id, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static float *random_floats(size_t n, unsigned seed)
{
    float *p = xmalloc_huge(n * sizeof *p);   /* as the engine's arena: 2 MiB pages where THP allows */
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = (float)((seed >> 8) & 0xFFFF) / 65536.0f - 0.5f;
    }
    return p;
}

/* Scratch kept across calls, as the engine keeps its scratch pool across
 * runs (a fresh block each call would time its page faults). */
static float *scratch_of(size_t floats)
{
    static float *buf;
    static size_t have;
    if (floats > have) {
        free(buf);
        buf = xmalloc_huge(floats * sizeof *buf);
        have = floats;
    }
    return buf;
}

/* One run of the shape's layer as conv.c runs it (kept: the slot of the
 * packed weights kept across runs, as the engine keeps a node's), except
 * that fconv_rows stands for im2col + GEMM on planes under 256 pixels. */
static void run_once(const shape_t *s, const float *w, const float *x, float *y, const fgemm_epi_t *e, void **kept)
{
    if (s->k == 0) {   /* activations [h x cin] times weights [cin x cout], as a MatMul layer */
        fgemm(s->h, s->cout, s->cin, x, s->cin, w, s->cout, y, s->cout, e);
        return;
    }
    int pad = s->k / 2;
    fconv_geom_t g = {s->cin, s->h, s->w, (s->h + 2 * pad - s->k) / s->s + 1, (s->w + 2 * pad - s->k) / s->s + 1,
                      s->k, s->k, s->s, s->s, {0}, {0}, NULL};
    for (int i = 0; i < s->k; i++) g.dh[i] = g.dw[i] = i - pad;
    if (s->k == 1 && s->s == 1) {   /* a pointwise conv is a GEMM, as conv.c runs it */
        fgemm(s->cout, (int64_t)s->h * s->w, s->cin, w, s->cin, x, (int64_t)s->h * s->w, y, (int64_t)s->h * s->w, e);
        return;
    }
    int64_t px = fconv_px_floats(&g, s->cout, 1);   /* as conv.c: the pixel-broadcast tile where it applies */
    if (px) {
        fconv_px(s->cout, &g, w, x, y, e, scratch_of((size_t)px), kept);
        return;
    }
    int64_t phase = fconv_phase_floats(&g);   /* as conv.c: strided convolutions on their stride phases */
    g.phase = phase ? scratch_of((size_t)phase) : NULL;
    fconv_rows(s->cout, &g, w, x, y, e);
}

static void bench_shape(const shape_t *s, int reps)
{
    int64_t oh = s->k ? (s->h + 2 * (s->k / 2) - s->k) / s->s + 1 : s->h;
    int64_t ow = s->k ? (s->w + 2 * (s->k / 2) - s->k) / s->s + 1 : s->w;
    int kk = s->k ? s->k : 1;
    size_t nx = (size_t)s->cin * s->h * s->w, nw = (size_t)s->cout * s->cin * kk * kk, ny = (size_t)s->cout * oh * ow;
    float *x = random_floats(nx, 1), *w = random_floats(nw, 2), *y = random_floats(ny, 3);
    double gflop = 2.0 * s->cout * s->cin * kk * kk * oh * ow * 1e-9;
    void *kept = NULL;
    run_once(s, w, x, y, NULL, &kept);   /* warm: caches, page faults, the weights packed */
    double best_cpu = 1e30, best_wall = 1e30;
    for (int r = 0; r < reps; r++) {
        double c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID), w0 = clock_s(CLOCK_MONOTONIC);
        run_once(s, w, x, y, NULL, &kept);
        double dc = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0, dw = clock_s(CLOCK_MONOTONIC) - w0;
        if (dc < best_cpu) best_cpu = dc;
        if (dw < best_wall) best_wall = dw;
    }
    double sum = 0;
    for (size_t i = 0; i < ny; i++) sum += y[i];
    printf("%-24s %7.3f GF  cpu %8.3f ms %6.1f GF/s  wall %8.3f ms %6.1f GF/s  sum %.6g\n", s->name, gflop,
           best_cpu * 1e3, gflop / best_cpu, best_wall * 1e3, gflop / best_wall, sum);
    fflush(stdout);
    free(x); free(w); free(y); free(kept);
}

/* The residual passes ops/run.c ran after the convolution before the
 * epilogue took them: y += r over the output, then the Relu over it. */
static void residual_apart(float *y, const float *r, size_t n)
{
    for (size_t i = 0; i < n; i++) y[i] = y[i] + r[i];
    for (size_t i = 0; i < n; i++) y[i] = y[i] < 0 ? 0.0f : y[i];
}

/* --residual: the two forms of Relu(conv(x) + r) in turn, best CPU time of each. */
static void bench_residual(const shape_t *s, int reps)
{
    int64_t oh = (s->h + 2 * (s->k / 2) - s->k) / s->s + 1, ow = (s->w + 2 * (s->k / 2) - s->k) / s->s + 1;
    size_t nx = (size_t)s->cin * s->h * s->w, nw = (size_t)s->cout * s->cin * s->k * s->k, ny = (size_t)s->cout * oh * ow;
    float *x = random_floats(nx, 1), *w = random_floats(nw, 2), *y = random_floats(ny, 3), *r = random_floats(ny, 4);
    float *y2 = random_floats(ny, 5);
    fgemm_epi_t fused = {.act = ACT_RELU, .res = r};
    void *kept = NULL;
    double best[2] = {1e30, 1e30};
    for (int i = 0; i <= reps; i++)   /* the first round warms both */
        for (int form = 0; form < 2; form++) {
            double c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
            if (form == 0) run_once(s, w, x, y, &fused, &kept);
            else {
                run_once(s, w, x, y2, NULL, &kept);
                residual_apart(y2, r, ny);
            }
            double dc = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
            if (i > 0 && dc < best[form]) best[form] = dc;
        }
    printf("%-24s fused cpu %8.3f ms  apart cpu %8.3f ms  apart/fused %.3f  outputs %s\n", s->name, best[0] * 1e3,
           best[1] * 1e3, best[1] / best[0], memcmp(y, y2, ny * sizeof *y) ? "DIFFER" : "identical");
    fflush(stdout);
    free(x); free(w); free(y); free(r); free(y2); free(kept);
}

int main(int argc, char **argv)
{
    int reps = 5, threads = 1, residual = 0;
    shape_t own = {NULL, 0, 0, 0, 0, 0, 0};
    const char *filter = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--isa") && i + 1 < argc) {
            char err[128];
            if (isa_select(argv[++i], err, sizeof err)) { fprintf(stderr, "kernels: %s\n", err); return 2; }
        } else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--filter") && i + 1 < argc) filter = argv[++i];
        else if (!strcmp(argv[i], "--residual")) residual = 1;
        else if (!strcmp(argv[i], "--shape") && i + 1 < argc) {   /* CIN,COUT,H,W,K,S: one shape of one's own */
            shape_t one = {argv[++i], 0, 0, 0, 0, 0, 1};
            if (sscanf(one.name, "%d,%d,%d,%d,%d,%d", &one.cin, &one.cout, &one.h, &one.w, &one.k, &one.s) != 6 ||
                one.cin < 1 || one.cout < 1 || one.h < 1 || one.w < 1 || one.k < 0 || one.s < 1) {
                fprintf(stderr, "kernels: --shape wants CIN,COUT,H,W,K,S (K 0: a MatMul of H rows)\n");
                return 2;
            }
            own = one;
        }
        else {
            fprintf(stderr, "usage: kernels [--isa LEVEL] [--reps N] [--threads N] [--residual] [--filter TEXT]\n");
            return 2;
        }
    }
    if (reps < 1) reps = 1;
    pool_set_threads(threads);
    printf("# isa %s, %d thread(s), best of %d (cpu: the process's CPU clock)\n", isa_name(isa_active()), threads, reps);
    if (own.name) {
        if (residual && own.k) bench_residual(&own, reps);
        else bench_shape(&own, reps);
        return 0;
    }
    for (size_t i = 0; i < sizeof SHAPES / sizeof *SHAPES; i++)
        if (residual && SHAPES[i].k && (!filter || strstr(SHAPES[i].name, filter))) bench_residual(&SHAPES[i], reps);
        else if (!residual && (!filter || strstr(SHAPES[i].name, filter))) bench_shape(&SHAPES[i], reps);
    return 0;
}
