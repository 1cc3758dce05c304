/* qgemm.c — checks parity's integer GEMM (ops/gemm/qgemm.c) against an int64
 * triple loop written here, reduced modulo 2^32 as the ONNX int32
 * accumulator: every operand type pair (uint8/int8 x uint8/int8), zero
 * points absent, per tensor, per row of A and per column of B, k odd, k
 * not a multiple of 4, of the 64-byte vector or of the 64-column panel,
 * one row (M = 1), row counts off the kernels' tiles, k = 0, and sums at
 * the int32 limits (the largest products 33,025 times: -2^31 + 33,023)
 * and past them (wrapping); at every instruction set the CPU has (the
 * same bytes: the sums are exact), at 1 and 3 threads, serial, and with B
 * kept packed in a cache slot across calls with changing zero points; and
 * DynamicQuantizeLinear's vectorised passes against the plain formulas. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "isa_each.h"
#include "ops/gemm/qgemm.h"
#include "util/pool.h"

static uint64_t rng_state = 88172645463325252ull;

static uint32_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}

/* An 8-bit value of the type: anywhere in range, or (extreme) only its ends. */
static int32_t value_of(int sgn, int extreme)
{
    int32_t lo = sgn ? -128 : 0, hi = sgn ? 127 : 255;
    return extreme ? (rnd() & 1 ? hi : lo) : lo + (int32_t)(rnd() % 256);
}

static void fill(uint8_t *p, int64_t n, int sgn, int extreme)
{
    for (int64_t i = 0; i < n; i++) p[i] = (uint8_t)value_of(sgn, extreme);
}

static int32_t load8(const uint8_t *p, int sgn) { return sgn ? (int32_t)(int8_t)*p : (int32_t)*p; }

/* The definition: int64 sums of the zero-point-subtracted products, then
 * two's complement reduction to int32. */
static void ref(int64_t m, int64_t n, int64_t k, const qgemm_mat_t *a, const qgemm_mat_t *b, int32_t *c)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            int64_t za = a->nzp ? a->zp[a->nzp == 1 ? 0 : i] : 0, zb = b->nzp ? b->zp[b->nzp == 1 ? 0 : j] : 0, s = 0;
            for (int64_t p = 0; p < k; p++)
                s += (load8((const uint8_t *)a->p + i * a->ld + p, a->sgn) - za) *
                     (load8((const uint8_t *)b->p + p * b->ld + j, b->sgn) - zb);
            c[i * n + j] = (int32_t)(uint32_t)(uint64_t)s;
        }
}

/* Zero points: mode 0 none, 1 one value, 2 one per row / column. */
static void zps(int32_t *z, int64_t count, int mode, int sgn, int extreme, int64_t *nzp)
{
    *nzp = mode == 0 ? 0 : mode == 1 ? 1 : count;
    for (int64_t i = 0; i < *nzp; i++) z[i] = value_of(sgn, extreme);
}

/* Every type pair and zero-point mode at one shape; returns the mismatches. */
static int check_shape(int64_t m, int64_t n, int64_t k, int extreme)
{
    int bad = 0;
    uint8_t *a = malloc((size_t)(m * k) + 1), *b = malloc((size_t)(k * n) + 1);
    int32_t *za = malloc((size_t)m * 4 + 4), *zb = malloc((size_t)n * 4 + 4);
    int32_t *want = malloc((size_t)(m * n) * 4 + 4), *got = malloc((size_t)(m * n) * 4 + 4);
    for (int t = 0; t < 4; t++)
        for (int mode = 0; mode < 3; mode++) {
            qgemm_mat_t qa = {a, k, t >> 1, za, 0}, qb = {b, n, t & 1, zb, 0};
            fill(a, m * k, qa.sgn, extreme);
            fill(b, k * n, qb.sgn, extreme);
            zps(za, m, mode, qa.sgn, extreme, &qa.nzp);
            zps(zb, n, 2 - mode, qb.sgn, extreme, &qb.nzp);
            ref(m, n, k, &qa, &qb, want);
            memset(got, 0x55, (size_t)(m * n) * 4);
            if (t & 1) qgemm_serial(m, n, k, &qa, &qb, got, n);
            else qgemm(m, n, k, &qa, &qb, got, n, NULL);
            if (memcmp(got, want, (size_t)(m * n) * 4)) {
                bad++;
                diag("m %lld n %lld k %lld: A %s B %s, zero points mode %d differ", (long long)m, (long long)n,
                     (long long)k, qa.sgn ? "int8" : "uint8", qb.sgn ? "int8" : "uint8", mode);
            }
        }
    free(a);
    free(b);
    free(za);
    free(zb);
    free(want);
    free(got);
    return bad;
}

static const int64_t shapes[][3] = {
    {1, 1, 1}, {1, 64, 4}, {1, 200, 33}, {1, 130, 768}, {3, 5, 7}, {6, 64, 64}, {7, 65, 13},
    {13, 130, 1027}, {97, 129, 67}, {200, 70, 19}, {5, 17, 0}, {2, 3, 2},
};

static void check_all(void)
{
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        ok(!check_shape(m, n, k, 0) && !check_shape(m, n, k, 1),
           "%lld x %lld x %lld: every type pair and zero-point form equal to the int64 sums mod 2^32", (long long)m,
           (long long)n, (long long)k);
    }
}

/* Sums at and past the int32 limit: (255 - 0) x (0 - 255) = -65,025 per step. */
static void check_limits(void)
{
    static const int64_t ks[] = {33025, 33026, 66100};
    for (int i = 0; i < 3; i++) {
        int64_t m = 3, n = 70, k = ks[i];
        uint8_t *a = malloc((size_t)(m * k)), *b = malloc((size_t)(k * n));
        memset(a, 255, (size_t)(m * k));
        memset(b, 0, (size_t)(k * n));
        int32_t zb = 255;
        qgemm_mat_t qa = {a, k, 0, NULL, 0}, qb = {b, n, 0, &zb, 1};
        int32_t *want = malloc((size_t)(m * n) * 4), *got = malloc((size_t)(m * n) * 4);
        ref(m, n, k, &qa, &qb, want);
        qgemm(m, n, k, &qa, &qb, got, n, NULL);
        int64_t exact = -65025 * k;
        ok(!memcmp(got, want, (size_t)(m * n) * 4) && got[0] == (int32_t)(uint32_t)(uint64_t)exact,
           "k = %lld of -65,025 products: %d, the exact sum %lld reduced mod 2^32 (%s)", (long long)k, got[0],
           (long long)exact, exact < INT32_MIN ? "wrapped" : "in range");
        free(a);
        free(b);
        free(want);
        free(got);
    }
}

/* B kept packed in a cache slot: later calls with other A and zero points
 * read it and still give the definition's sums. */
static void check_cache(void)
{
    int64_t m = 9, n = 100, k = 45;
    uint8_t *a = malloc((size_t)(m * k)), *b = malloc((size_t)(k * n));
    int32_t za[9], zb[100], want[900], got[900];
    void *slot = NULL;
    int bad = 0;
    fill(b, k * n, 1, 0);
    for (int call = 0; call < 3; call++) {
        qgemm_mat_t qa = {a, k, 0, za, 0}, qb = {b, n, 1, zb, 0};
        fill(a, m * k, 0, 0);
        zps(za, m, 1 + call % 2, 0, 0, &qa.nzp);
        zps(zb, n, 2 - call % 2, 1, 0, &qb.nzp);
        ref(m, n, k, &qa, &qb, want);
        qgemm(m, n, k, &qa, &qb, got, n, &slot);
        bad += memcmp(got, want, sizeof got) != 0;
    }
    ok(!bad && slot, "B kept packed across 3 calls with new A and zero points: the definition's sums each time");
    free(slot);
    free(a);
    free(b);
}

/* DynamicQuantizeLinear's passes against the formulas written out here
 * (the range by plain compares, NaN skipped; rintf, add, clamp, NaN to
 * 0), on every length to 40 (vector bodies and tails) with NaN, -0, ties
 * at .5 (to even), and values past both ends of uint8. */
static void check_dynquant(void)
{
    static const float special[] = {NAN, -0.0f, 0.5f, 1.5f, 2.5f, -0.5f, 1e9f, -1e9f, 254.5f, 255.5f, -300.0f};
    float x[40];
    uint8_t got[41], want[41];
    int bad = 0;
    for (int n = 0; n <= 40; n++)
        for (int round = 0; round < 4; round++) {
            for (int i = 0; i < n; i++)
                x[i] = rnd() % 3 == 0 ? special[rnd() % 11] : (float)((int)(rnd() % 2000) - 700) * 0.37f;
            float lo = 0.0f, hi = 0.0f, wl = 0.0f, wh = 0.0f;
            q_range(x, n, &lo, &hi);
            for (int i = 0; i < n; i++) {
                if (x[i] < wl) wl = x[i];
                if (x[i] > wh) wh = x[i];
            }
            float scale = round == 3 ? 1.0f : 0.7f + 0.3f * round, zp = (float)(rnd() % 256);
            memset(got, 0xA5, sizeof got);
            q_to_u8(x, n, scale, zp, got);
            for (int i = 0; i < n; i++) {
                float v = rintf(x[i] / scale) + zp;
                want[i] = v != v ? 0 : v < 0.0f ? 0 : v > 255.0f ? 255 : (uint8_t)v;
            }
            bad += memcmp(&lo, &wl, sizeof lo) || memcmp(&hi, &wh, sizeof hi) || memcmp(got, want, (size_t)n) ||
                   got[n] != 0xA5;
        }
    ok(!bad, "DynamicQuantizeLinear's range and uint8 pass: the plain formulas' bytes at every length to 40, "
             "NaN, -0, ties and saturation included, nothing written past the end");
}

static void checks(void)
{
    diag("qgemm kernels: %s", qgemm_kernel_name());
    check_all();
    check_limits();
    check_cache();
    check_dynquant();
}

int main(void)
{
    pool_set_threads(1);
    at_each_isa(checks);
    pool_set_threads(3);
    at_each_isa(checks);
    return done_testing();
}
