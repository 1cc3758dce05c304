/* half.c — the narrow-float conversions against independent references:
 * all 65,536 half values and a sweep of float32 inputs against GCC's own
 * _Float16 conversions (half_ref.h; round to nearest even), and bfloat16 / TF32
 * rounding against a nearest-neighbour search in double arithmetic. */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "tap.h"
#include "isa_each.h"
#include "tensor/half.h"
#include "tensor/tensor.h"
#include "half_ref.h"

static uint16_t ref_f32_to_f16(float f)
{
    half_ref_t h = (half_ref_t)f;
    uint16_t u;
    memcpy(&u, &h, 2);
    return u;
}

static float ref_f16_to_f32(uint16_t u)
{
    half_ref_t h;
    memcpy(&h, &u, 2);
    return (float)h;
}

/* Rounds f to a float with `keep` explicit mantissa bits by choosing the
 * nearer of the two neighbours in double (ties: even last kept bit). */
static float ref_round_mantissa(float f, int keep)
{
    if (isnan(f) || isinf(f)) return f;
    uint32_t u = f32_bits(f), drop = 23 - keep, mask = (1u << drop) - 1;
    uint32_t lo = u & ~mask, hi = lo + (1u << drop);
    double dl = fabs((double)bits_f32(lo) - (double)f);
    double dh = fabs((double)bits_f32(hi) - (double)f);   /* hi may be inf: distance inf */
    if ((hi & 0x7f800000u) == 0x7f800000u) {
        /* hi overflowed to inf: it wins if f is at least halfway to 2^128 */
        double top = ldexp(1.0, 128) * (f < 0 ? -1 : 1);
        dh = fabs(top - (double)f);
    }
    if (dl < dh) return bits_f32(lo);
    if (dh < dl) return bits_f32(hi);
    return ((lo >> drop) & 1) ? bits_f32(hi) : bits_f32(lo);
}

static uint32_t next_rand(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*s >> 32);
}

/* The bulk (vectorised) paths against the scalar conversions, NaN bits
 * included (an output's bytes must not depend on the CPU). */
static void bulk_checks(void)
{
    uint64_t s;
    enum { N = 1 << 20 };
    static float a[N], b[N], c[N];
    int bulk16 = 0, bulkbf = 0, bulktf = 0;
    s = 99;
    for (int i = 0; i < N; i++) {
        uint32_t u = next_rand(&s);
        if (i & 1) u = (u & 0x80000000u) | (0x33000000u + (u % 0x0c000000u));
        a[i] = b[i] = c[i] = bits_f32(u);
    }
    round_f16_inplace(a, N);
    /* bfloat16 and TF32 in pieces of 1..63 values: every vector tail, behind
     * none, one or more of the 32-value steps */
    for (int i = 0, len = 1; i < N; i += len, len = len % 63 + 1) {
        int m = N - i < len ? N - i : len;
        round_bf16_inplace(b + i, m);
        round_tf32_inplace(c + i, m);
    }
    s = 99;
    for (int i = 0; i < N; i++) {
        uint32_t u = next_rand(&s);
        if (i & 1) u = (u & 0x80000000u) | (0x33000000u + (u % 0x0c000000u));
        float f = bits_f32(u);
        float w16 = f32_round_f16(f), wbf = f32_round_bf16(f), wtf = f32_round_tf32(f);
        if (f32_bits(a[i]) != f32_bits(w16)) bulk16++;
        if (f32_bits(b[i]) != f32_bits(wbf)) bulkbf++;
        if (f32_bits(c[i]) != f32_bits(wtf)) bulktf++;
    }
    ok(bulk16 == 0, "bulk float16 rounding equals the scalar conversion on 1M values (%d bad)", bulk16);
    ok(bulkbf == 0, "bulk bfloat16 rounding equals the scalar conversion on 1M values (%d bad)", bulkbf);
    ok(bulktf == 0, "bulk TF32 rounding equals the scalar conversion on 1M values (%d bad)", bulktf);
}

/* The bfloat16 and TF32 bulk rounding with a NaN (signalling or quiet,
 * either sign, payload in high and low bits) at each position of 64
 * values, among values that round up, down, to even and into infinity:
 * the bulk path rounds a vector without a NaN alike on every lane and
 * gives a NaN's lanes their own rule (bfloat16: quieted, truncated; TF32:
 * as it is), so every element must be the scalar rounding's bits. */
static void nan_lane_checks(void)
{
    static const uint32_t nans[] = {0x7f800001u, 0xff800001u, 0x7fc00000u, 0x7fa5a5a5u, 0xffffffffu, 0x7f80ffffu};
    static const uint32_t vals[] = {0x3f808000u, 0x3f818000u, 0x3f80ffffu, 0x7f7fffffu, 0x00018000u, 0x80000001u,
                                    0x3f801000u, 0x3f803000u, 0x7f800000u, 0xff800000u, 0x00000000u, 0x80000000u};
    int bad = 0;
    for (int q = 0; q < (int)(sizeof nans / sizeof nans[0]); q++)
        for (int p = 0; p < 64; p++) {
            float b[64], t[64], in[64];
            for (int i = 0; i < 64; i++) in[i] = bits_f32(vals[(i * 7 + p) % 12]);
            in[p] = bits_f32(nans[q]);
            memcpy(b, in, sizeof b);
            memcpy(t, in, sizeof t);
            round_bf16_inplace(b, 64);
            round_tf32_inplace(t, 64);
            for (int i = 0; i < 64; i++)
                bad += f32_bits(b[i]) != f32_bits(f32_round_bf16(in[i])) || f32_bits(t[i]) != f32_bits(f32_round_tf32(in[i]));
        }
    ok(bad == 0, "bfloat16/TF32 bulk rounding with a NaN at each of 64 positions: the scalar bits (%d bad)", bad);
}

/* The FP16 storage rounding at its edges, through the bulk path of every
 * ISA level (16 lanes at AVX-512, 8 with F16C, scalar): each edge value at
 * every lane of arrays of 1..47 values (the 32-value steps and every tail
 * of 1..15 behind them), against IEEE binary16's rules written out here
 * (round to nearest even; below half the smallest subnormal to a signed
 * zero; 65520 and up to inf; a NaN stays NaN, quiet, with its top 10
 * payload bits), and nothing written past the end. */
static void f16_edge_checks(void)
{
    static const struct { uint32_t in, want; } edge[] = {
        {0x00000000u, 0x00000000u}, {0x80000000u, 0x80000000u},   /* +-0 */
        {0x33800000u, 0x33800000u},   /* 2^-24, the smallest subnormal */
        {0x33000000u, 0x00000000u},   /* 2^-25: a tie, to even (zero) */
        {0xb3000000u, 0x80000000u},   /* -2^-25: to -0 */
        {0x33000001u, 0x33800000u},   /* just above the tie: up */
        {0x33c00000u, 0x34000000u},   /* 1.5 x 2^-24: a tie, to even (2^-23) */
        {0x34200000u, 0x34000000u},   /* 2.5 x 2^-24: a tie, to even (2^-23) */
        {0x00000001u, 0x00000000u}, {0x807fffffu, 0x80000000u},   /* float32 subnormals */
        {0x387fc000u, 0x387fc000u},   /* the largest half subnormal */
        {0x387fe000u, 0x38800000u},   /* halfway to 2^-14: up to the smallest normal */
        {0x3f801000u, 0x3f800000u}, {0x3f803000u, 0x3f804000u},   /* ties near 1 */
        {0x477fe000u, 0x477fe000u},   /* 65504 */
        {0x477fefffu, 0x477fe000u},   /* just below 65520 */
        {0x477ff000u, 0x7f800000u}, {0xc77ff000u, 0xff800000u},   /* +-65520: inf */
        {0x7f7fffffu, 0x7f800000u},   /* FLT_MAX */
        {0x7f800000u, 0x7f800000u}, {0xff800000u, 0xff800000u},   /* +-inf */
        {0x7fc00000u, 0x7fc00000u}, {0xffc00000u, 0xffc00000u},   /* quiet NaNs */
        {0x7fc12345u, 0x7fc12000u},   /* a payload: the low 13 bits go */
        {0x7f800001u, 0x7fc00000u},   /* signalling, payload in the low bits only: quieted */
        {0x7fa00000u, 0x7fe00000u},   /* signalling with a high payload: quieted, kept */
        {0xff812345u, 0xffc12000u},
    };
    enum { NE = sizeof edge / sizeof edge[0], MAXLEN = 47 };
    const uint32_t guard = 0x12345678u;
    float x[MAXLEN], y[MAXLEN + 1];
    int bad_rule = 0, bad_scalar = 0, bad_guard = 0;
    for (int e = 0; e < NE; e++) {
        if (f32_bits(f32_round_f16(bits_f32(edge[e].in))) != edge[e].want) bad_scalar++;
        for (int len = 1; len <= MAXLEN; len++)
            for (int at = 0; at < len; at++) {
                for (int i = 0; i < len; i++) x[i] = 1.0f + (float)i / 1024;   /* exact halves */
                x[at] = bits_f32(edge[e].in);
                for (int i = 0; i <= len; i++) y[i] = bits_f32(guard);
                round_f16_copy(y, x, len);
                for (int i = 0; i < len; i++)
                    if (f32_bits(y[i]) != (i == at ? edge[e].want : f32_bits(x[i]))) bad_rule++;
                if (f32_bits(y[len]) != guard) bad_guard++;
            }
    }
    ok(bad_scalar == 0, "f32_round_f16 follows binary16's rules at %d edges (%d bad)", NE, bad_scalar);
    ok(bad_rule == 0, "bulk float16 rounding: every edge at every lane of 1..%d values (%d bad)", MAXLEN, bad_rule);
    ok(bad_guard == 0, "bulk float16 rounding writes nothing past the end (%d bad)", bad_guard);
}

/* tensor_convert's bfloat16 <-> float32 paths (the conversions around every
 * BF16-stored layer) against the scalar conversions, value by value: all
 * 65,536 bfloat16 values widened, and 1M float32 bit patterns (NaNs with
 * payloads, infinities, subnormals included) narrowed. */
static void convert_bf16_checks(void)
{
    enum { N = 1 << 20 };
    static uint16_t h[N], back[N];
    static float f[N];
    int64_t dims[1] = {65536};
    tensor_t hs = {0}, fs = {0}, nb = {0};
    perr_t e = {0};
    int bad = 0;
    ok(tensor_alloc(&hs, DT_BFLOAT16, 1, dims, &e) == 0 && tensor_alloc(&fs, DT_FLOAT, 1, dims, &e) == 0,
       "tensors for the bfloat16 sweep");
    for (uint32_t i = 0; i < 65536; i++) ((uint16_t *)hs.data)[i] = (uint16_t)i;
    ok(tensor_convert(&hs, &fs, &e) == 0, "bfloat16 -> float32 converts");
    for (uint32_t i = 0; i < 65536; i++)
        if (f32_bits(((float *)fs.data)[i]) != f32_bits(bf16_to_f32((uint16_t)i))) bad++;
    ok(bad == 0, "all 65,536 bfloat16 values widen as bf16_to_f32 (%d bad)", bad);
    uint64_t s = 7;
    for (int i = 0; i < N; i++) {
        uint32_t u = next_rand(&s);
        if (i % 4 == 1) u = (u & 0x807fffffu) | 0x7f800000u;           /* inf and NaNs with payloads */
        if (i % 4 == 2) u &= 0x807fffffu;                              /* zeros and subnormals */
        f[i] = bits_f32(u);
    }
    int64_t n1[1] = {N};
    tensor_t fl = {.dtype = DT_FLOAT, .ndim = 1, .dims = {N}, .data = f};
    ok(tensor_alloc(&nb, DT_BFLOAT16, 1, n1, &e) == 0 && tensor_convert(&fl, &nb, &e) == 0,
       "float32 -> bfloat16 converts");
    bad = 0;
    memcpy(back, nb.data, sizeof back);
    for (int i = 0; i < N; i++)
        if (back[i] != f32_to_bf16(f[i])) bad++;
    ok(bad == 0, "1M float32 bit patterns narrow to bfloat16 as f32_to_bf16 (%d bad)", bad);
    (void)h;
    tensor_free_data(&hs);
    tensor_free_data(&fs);
    tensor_free_data(&nb);
}

/* tensor_convert's float16 <-> float32 paths (F16C where the ISA level has
 * it) against the scalar conversions: all 65,536 half values widened (the
 * signalling NaNs included), 1M float32 bit patterns narrowed, in pieces of
 * 1..31 so every vector tail runs. */
static void convert_f16_checks(void)
{
    enum { N = 1 << 20 };
    static uint16_t h[65536 + 31], nh[N];
    static float w[65536 + 31], f[N];
    int bad = 0;
    for (uint32_t i = 0; i < 65536; i++) h[i] = (uint16_t)i;
    for (int i = 0, len = 1; i < 65536; i += len, len = len % 31 + 1)
        f16_widen(h + i, w + i, 65536 - i < len ? 65536 - i : len);
    for (uint32_t i = 0; i < 65536; i++)
        if (f32_bits(w[i]) != f32_bits(f16_to_f32((uint16_t)i))) bad++;
    ok(bad == 0, "all 65,536 float16 values widen in bulk as f16_to_f32, NaN payloads included (%d bad)", bad);
    uint64_t s = 5;
    for (int i = 0; i < N; i++) {
        uint32_t u = next_rand(&s);
        if (i % 4 == 1) u = (u & 0x807fffffu) | 0x7f800000u;           /* inf and NaNs with payloads */
        if (i % 4 == 2) u = (u & 0x80000000u) | (0x33000000u + (u % 0x0c000000u));   /* the half range */
        f[i] = bits_f32(u);
    }
    for (int i = 0, len = 1; i < N; i += len, len = len % 31 + 1) f16_narrow(f + i, nh + i, N - i < len ? N - i : len);
    bad = 0;
    for (int i = 0; i < N; i++)
        if (nh[i] != f32_to_f16(f[i])) bad++;
    ok(bad == 0, "1M float32 bit patterns narrow in bulk as f32_to_f16 (%d bad)", bad);
}

int main(void)
{
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float got = f16_to_f32((uint16_t)h), want = ref_f16_to_f32((uint16_t)h);
        int same = isnan(want) ? isnan(got) : f32_bits(got) == f32_bits(want);
        if (!same) bad++;
        /* and back: every non-NaN half survives the round trip bit for bit */
        if (!isnan(want) && f32_to_f16(got) != h) bad++;
    }
    ok(bad == 0, "all 65,536 half values widen exactly and round-trip (%d bad)", bad);

    bad = 0;
    uint64_t s = 42;
    for (int i = 0; i < 4000000; i++) {
        uint32_t u = next_rand(&s);
        /* concentrate on the half range, its subnormals and the overflow edge */
        if (i & 1) u = (u & 0x80000000u) | (0x33000000u + (u % 0x0c000000u));
        float f = bits_f32(u);
        if (isnan(f)) continue;
        if (f32_to_f16(f) != ref_f32_to_f16(f)) bad++;
    }
    /* exact ties between halves, all exponents */
    for (uint32_t h = 0; h < 0x7c00; h++) {
        float a = f16_to_f32((uint16_t)h), b = f16_to_f32((uint16_t)(h + 1));
        float mid = (float)(((double)a + (double)b) / 2);
        if (f32_to_f16(mid) != ref_f32_to_f16(mid)) bad++;
        if (f32_to_f16(-mid) != ref_f32_to_f16(-mid)) bad++;
    }
    ok(bad == 0, "float32 -> float16 rounds to nearest even like libgcc on 4M samples and every tie (%d bad)", bad);
    ok(f32_to_f16(65520.0f) == 0x7c00 && f32_to_f16(65519.99f) == 0x7bff, "65520 overflows to inf, just below stays 65504");
    ok((f32_to_f16(NAN) & 0x7c00) == 0x7c00 && (f32_to_f16(NAN) & 0x3ff), "NaN stays NaN");

    int bad_bf = 0, bad_tf = 0;
    s = 7;
    for (int i = 0; i < 4000000; i++) {
        float f = bits_f32(next_rand(&s));
        if (isnan(f)) continue;
        if (f32_bits(f32_round_bf16(f)) != f32_bits(ref_round_mantissa(f, 7))) bad_bf++;
        if (f32_bits(f32_round_tf32(f)) != f32_bits(ref_round_mantissa(f, 10))) bad_tf++;
    }
    for (uint32_t u = 0x3f800000u; u < 0x3f800000u + (1u << 17); u++) {   /* every tie pattern near 1.0 */
        float f = bits_f32(u);
        if (f32_bits(f32_round_bf16(f)) != f32_bits(ref_round_mantissa(f, 7))) bad_bf++;
        if (f32_bits(f32_round_tf32(f)) != f32_bits(ref_round_mantissa(f, 10))) bad_tf++;
    }
    ok(bad_bf == 0, "bfloat16 rounding matches the nearest-even reference (%d bad)", bad_bf);
    ok(bad_tf == 0, "TF32 rounding matches the nearest-even reference (%d bad)", bad_tf);
    ok(isnan(f32_round_bf16(NAN)) && isinf(f32_round_bf16(INFINITY)) && isnan(f32_round_tf32(NAN)),
       "NaN and inf survive bfloat16 and TF32 rounding");
    at_each_isa(bulk_checks);
    at_each_isa(nan_lane_checks);
    at_each_isa(f16_edge_checks);
    at_each_isa(convert_f16_checks);
    convert_bf16_checks();
    return done_testing();
}
