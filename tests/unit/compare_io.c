/* compare_io.c — the pieces of compare that stand alone: multi-rank
 * selection against a full sort, the radix and quickselect quantile paths
 * against sorted copies, base64 against RFC 4648's test vectors, trtexec raw
 * binding file names, and tensorset_read of a single .npz / Polygraphy JSON
 * file written by numpy (python3 with numpy, as make test provides). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tap.h"
#include "compare/metrics.h"
#include "compare/select.h"
#include "io/polygraphy.h"
#include "io/tensorset.h"
#include "io/trtexec.h"

static uint64_t rnd(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_f(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static void test_select(void)
{
    uint64_t seed = 42;
    int good = 1;
    for (int trial = 0; trial < 200; trial++) {
        int64_t n = 1 + (int64_t)(rnd(&seed) % 3000);
        uint64_t mod = trial % 3 == 0 ? 4 : 1000000;   /* many duplicates, or few */
        uint64_t *k = malloc(n * sizeof *k), *sorted = malloc(n * sizeof *k);
        for (int64_t i = 0; i < n; i++) k[i] = sorted[i] = rnd(&seed) % mod;
        qsort(sorted, n, sizeof *sorted, cmp_u64);
        int64_t ranks[SEL_MAX_RANKS];
        int m = 1 + (int)(rnd(&seed) % SEL_MAX_RANKS);
        for (int i = 0; i < m; i++) ranks[i] = (int64_t)(rnd(&seed) % (uint64_t)n);
        qsort(ranks, m, sizeof *ranks, cmp_u64);
        uint64_t out[SEL_MAX_RANKS];
        select_ranks(k, n, ranks, m, out);
        for (int i = 0; i < m; i++) good &= out[i] == sorted[ranks[i]];
        free(k);
        free(sorted);
    }
    ok(good, "select_ranks agrees with a full sort (200 arrays, up to 10 ranks, with and without duplicates)");
    uint64_t *k = malloc(100000 * sizeof *k);
    for (int i = 0; i < 100000; i++) k[i] = 7;
    int64_t r[2] = {0, 99999};
    uint64_t out[2];
    select_ranks(k, 100000, r, 2, out);
    ok(out[0] == 7 && out[1] == 7, "select_ranks on 100000 equal keys");
    free(k);

    uint32_t *h = calloc(SEL_DIGITS, sizeof *h);
    h[3] = 2; h[10] = 5; h[65535] = 1;
    int64_t rem[3] = {1, 2, 7};
    uint32_t dig[3];
    radix_step(h, 3, rem, dig);
    ok(dig[0] == 3 && rem[0] == 1 && dig[1] == 10 && rem[1] == 0 && dig[2] == 65535 && rem[2] == 0,
       "radix_step finds each rank's digit and its rank inside the digit");
    free(h);
}

/* The median and p99 of |a-b| of both selection paths against a sorted copy
 * (quantile by numpy's linear rule, written out here). */
static void test_quantile_paths(void)
{
    cmp_work_t *w = cmp_work_new();
    uint64_t seed = 9;
    int64_t sizes[] = {1, 2, 1000, 65536, 65537, 250001};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        int64_t n = sizes[si], dims[1] = {n};
        perr_t e = {0};
        tensor_t *a = tensor_new(DT_FLOAT, 1, dims, &e), *b = tensor_new(DT_FLOAT, 1, dims, &e);
        float *pa = a->data, *pb = b->data, *d = malloc(n * sizeof *d);
        for (int64_t i = 0; i < n; i++) {
            pb[i] = (float)(rnd(&seed) % 1000) / 7.0f;
            pa[i] = pb[i] + (float)((int)(rnd(&seed) % 2001) - 1000) / 3.0f * (i % 3 == 0 ? 0 : 1);
            d[i] = fabsf(pa[i] - pb[i]);
        }
        qsort(d, n, sizeof *d, cmp_f);
        cmp_tol_t tol = {1e-5, 1e-5, 0.99, CMP_RULE_POLYGRAPHY, CMP_STAT_ELEMWISE, 0, 0};
        cmp_stats_t st;
        int rc = cmp_pair(a, b, &tol, w, &st, &e);
        double med = n % 2 ? d[n / 2] : (double)((d[n / 2 - 1] + d[n / 2]) / 2.0f);
        double v = (double)(n - 1) * 0.99;
        int64_t lo = (int64_t)floor(v), hi = lo + 1 < n ? lo + 1 : n - 1;
        double g = v - (double)lo, x = d[lo], y = d[hi];
        double p99 = g >= 0.5 ? y - (y - x) * (1 - g) : x + (y - x) * g;
        ok(rc == 0 && st.abs.median == med && st.abs.p99 == p99 && st.abs.max == d[n - 1] && st.abs.min == d[0],
           "n=%lld (%s path): median, p99, min, max of |a-b| equal a sorted copy's", (long long)n,
           n <= 65536 ? "quickselect" : "radix");
        free(d);
        tensor_free(a);
        tensor_free(b);
    }
    cmp_work_free(w);
}

static void test_base64(void)
{
    static const char *plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    static const char *coded[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    int good = 1;
    for (int i = 0; i < 7; i++) {
        char enc[16] = {0};
        uint8_t dec[16];
        size_t n = base64_encode((const uint8_t *)plain[i], strlen(plain[i]), enc);
        int64_t m = base64_decode(coded[i], strlen(coded[i]), dec);
        good &= n == strlen(coded[i]) && !memcmp(enc, coded[i], n) && m == (int64_t)strlen(plain[i]) &&
                !memcmp(dec, plain[i], (size_t)m);
    }
    ok(good, "base64 encodes and decodes RFC 4648's test vectors");
    uint8_t dec[16];
    ok(base64_decode("Zm9", 3, dec) < 0 && base64_decode("Zm=v", 4, dec) < 0 && base64_decode("Zm9*", 4, dec) < 0,
       "base64 refuses bad length, data after padding, foreign characters");
}

static void test_raw_names(void)
{
    char *name = NULL;
    int io, nd;
    int64_t d[TENSOR_MAX_DIMS];
    dtype_t dt;
    int rc = trtexec_raw_name("_head_logits.output.1.10.fp32.raw", &name, &io, &nd, d, &dt);
    ok(rc == 0 && !strcmp(name, "_head_logits") && !io && nd == 2 && d[0] == 1 && d[1] == 10 && dt == DT_FLOAT,
       "raw binding name: NAME.output.1.10.fp32.raw");
    free(name);
    rc = trtexec_raw_name("a.output.3.input.2.fp16.raw", &name, &io, &nd, d, &dt);
    ok(rc == 0 && !strcmp(name, "a.output.3") && io && nd == 1 && d[0] == 2 && dt == DT_FLOAT16,
       "raw binding name: dots inside the name, the rightmost input/output token wins");
    free(name);
    rc = trtexec_raw_name("s.output..int32.raw", &name, &io, &nd, d, &dt);
    ok(rc == 0 && !strcmp(name, "s") && nd == 0 && dt == DT_INT32, "raw binding name: a scalar has empty dimensions");
    free(name);
    ok(trtexec_raw_name("x.output.1.f32.raw", &name, &io, &nd, d, &dt) < 0 &&
       trtexec_raw_name("x.1.2.fp32.raw", &name, &io, &nd, d, &dt) < 0 &&
       trtexec_raw_name("x.output.1a.fp32.raw", &name, &io, &nd, d, &dt) < 0,
       "raw binding name: unknown type, no input/output token, non-numeric dimension are refused");
    char *s = trtexec_safe_name("/model/a:0,b-c.d");
    ok(!strcmp(s, "_model_a_0,b-c.d"), "trtexec's file-name sanitiser keeps [A-Za-z0-9._,-]");
    free(s);
}

static void test_tensorset_files(void)
{
    const char *py = getenv("PYTHON") ? getenv("PYTHON") : "/usr/bin/python3";
    char dir[] = "/tmp/parity-compare-io-XXXXXX";
    if (!mkdtemp(dir)) { ok(0, "mkdtemp"); return; }
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "cd %s && %s -c \"import numpy as np, json, base64, io\n"
             "a = np.arange(12, dtype=np.float32).reshape(3, 4) / 7\n"
             "np.savez_compressed('s.npz', **{'out/0': a, 'i': np.arange(5)})\n"
             "f = io.BytesIO(); np.save(f, a)\n"
             "arr = {'array': base64.b64encode(f.getvalue()).decode(), 'polygraphy_class': 'ndarray'}\n"
             "it = {'outputs': {'y:0': {'values': arr, 'polygraphy_class': 'LazyArray'}}, 'runtime': 1.0,"
             " 'runner_name': 'r', 'polygraphy_class': 'IterationResult'}\n"
             "json.dump({'lst': [['r', [it]]], 'polygraphy_class': 'RunResults'}, open('p.json', 'w'))\n\"",
             dir, py);
    if (system(cmd) != 0) { ok(0, "python3 with numpy writes the fixtures"); return; }
    char p[512];
    perr_t e = {0};
    tensor_set_t s;
    snprintf(p, sizeof p, "%s/s.npz", dir);
    int rc = tensorset_read(p, &s, &e);
    tensor_t *t = rc ? NULL : tensorset_get(&s, "out/0"), *ti = rc ? NULL : tensorset_get(&s, "i");
    ok(rc == 0 && s.n == 2 && t && t->ndim == 2 && t->dims[1] == 4 && ((float *)t->data)[11] == 11.0f / 7 && ti &&
       ti->dtype == DT_INT64 && ((int64_t *)ti->data)[4] == 4, "tensorset_read reads a numpy .npz (deflated) file");
    if (!rc) tensorset_free(&s);
    snprintf(p, sizeof p, "%s/p.json", dir);
    rc = tensorset_read(p, &s, &e);
    t = rc ? NULL : tensorset_get(&s, "y:0");
    ok(rc == 0 && s.n == 1 && t && ((float *)t->data)[5] == 5.0f / 7, "tensorset_read reads a Polygraphy RunResults file");
    if (!rc) tensorset_free(&s);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) diag("could not remove %s", dir);
}

int main(void)
{
    test_select();
    test_quantile_paths();
    test_base64();
    test_raw_names();
    test_tensorset_files();
    return done_testing();
}
