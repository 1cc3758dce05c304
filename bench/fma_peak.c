/* fma_peak.c — the CPU's float32 FMA peak: what no convolution or matrix
 * product can beat, measured rather than taken from a datasheet (clocks
 * under AVX-512 load, double-pumped 512-bit units, SMT siblings).
 *
 *   fma_peak [--threads N] [--isa avx512|avx2] [--seconds S]
 *
 * Each thread runs CHAINS (AVX2: CHAINS_AVX2) independent chains of fused multiply-adds on
 * registers only (no loads or stores in the loop: enough chains to cover
 * the FMA latency on two ports), for about S seconds. Prints GFLOP/s per
 * thread by the thread's CPU clock and in all by the wall clock (2 FLOP per
 * lane per FMA). issue 41 divides a model's GFLOP by it: the time below
 * which no engine computing the same products can go. */
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHAINS 16        /* AVX-512: 32 registers */
#define CHAINS_AVX2 12   /* AVX2 has 16: the chains, a and b, no spills */
#define STEPS 4096   /* FMAs per chain between clock reads */

typedef struct job {
    int avx512;
    double seconds, cpu_s, flops, sink;
} job_t;

static double clock_s(clockid_t id)
{
    struct timespec t;
    clock_gettime(id, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* One loop per instruction set, the same text: reps x STEPS rounds of an
 * FMA on each of NCH registers (unrolled: the chains stay in registers). */
#define FMA_LOOP(NAME, TARGET, VEC, SET1, FMADD, ADD, STORE, NCH, LANES)                 \
    __attribute__((target(TARGET))) static double NAME(long reps)                         \
    {                                                                                     \
        VEC acc[NCH], a = SET1(0.999999f), b = SET1(1e-7f);                               \
        for (int c = 0; c < NCH; c++) acc[c] = SET1((float)c);                            \
        for (long r = 0; r < reps; r++)                                                   \
            for (int s = 0; s < STEPS; s++) {                                             \
                _Pragma("GCC unroll 16") for (int c = 0; c < NCH; c++) acc[c] = FMADD(acc[c], a, b); \
            }                                                                             \
        float out[LANES];                                                                 \
        VEC sum = acc[0];                                                                 \
        for (int c = 1; c < NCH; c++) sum = ADD(sum, acc[c]);                             \
        STORE(out, sum);                                                                  \
        return out[0];                                                                    \
    }

FMA_LOOP(loop_avx512, "avx512f", __m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps, _mm512_storeu_ps, CHAINS, 16)
FMA_LOOP(loop_avx2, "avx2,fma", __m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps, _mm256_storeu_ps, CHAINS_AVX2, 8)

static void *run_job(void *p)
{
    job_t *j = p;
    int lanes = j->avx512 ? 16 : 8;
    long reps = 16;
    double c0 = clock_s(CLOCK_THREAD_CPUTIME_ID), w0 = clock_s(CLOCK_MONOTONIC);
    j->flops = 0;
    while (clock_s(CLOCK_MONOTONIC) - w0 < j->seconds) {
        j->sink += j->avx512 ? loop_avx512(reps) : loop_avx2(reps);
        j->flops += 2.0 * lanes * (j->avx512 ? CHAINS : CHAINS_AVX2) * STEPS * (double)reps;
    }
    j->cpu_s = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = 1, avx512 = -1;
    double seconds = 2.0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--isa") && i + 1 < argc) {
            i++;
            avx512 = !strcmp(argv[i], "avx512") ? 1 : !strcmp(argv[i], "avx2") ? 0 : -2;
        } else avx512 = -2;
        if (avx512 == -2 || threads < 1 || threads > 1024 || !(seconds > 0)) {
            fprintf(stderr, "usage: fma_peak [--threads N] [--isa avx512|avx2] [--seconds S]\n");
            return 2;
        }
    }
    __builtin_cpu_init();
    if (avx512 < 0) avx512 = __builtin_cpu_supports("avx512f");
    if (avx512 ? !__builtin_cpu_supports("avx512f") : !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) {
        fprintf(stderr, "fma_peak: this CPU lacks %s\n", avx512 ? "avx512f" : "avx2/fma");
        return 2;
    }
    job_t *jobs = calloc((size_t)threads, sizeof *jobs);
    pthread_t *tid = calloc((size_t)threads, sizeof *tid);
    if (!jobs || !tid) return 3;
    double w0 = clock_s(CLOCK_MONOTONIC);
    for (int t = 0; t < threads; t++) {
        jobs[t] = (job_t){.avx512 = avx512, .seconds = seconds};
        if (pthread_create(&tid[t], NULL, run_job, &jobs[t])) return 3;
    }
    double flops = 0, per_min = 1e300, per_max = 0, sink = 0;
    for (int t = 0; t < threads; t++) {
        pthread_join(tid[t], NULL);
        double g = jobs[t].flops / jobs[t].cpu_s * 1e-9;
        per_min = g < per_min ? g : per_min;
        per_max = g > per_max ? g : per_max;
        flops += jobs[t].flops;
        sink += jobs[t].sink;
    }
    double wall = clock_s(CLOCK_MONOTONIC) - w0;
    printf("isa %s threads %d: %.1f GFLOP/s in all (wall), %.1f-%.1f per thread (CPU clock)%s\n",
           avx512 ? "avx512" : "avx2", threads, flops / wall * 1e-9, per_min, per_max, sink == 12345.0 ? " " : "");
    free(jobs);
    free(tid);
    return 0;
}
