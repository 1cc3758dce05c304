/* parsers.c — a mutation smoke test of the ONNX, engine and .npy parsers,
 * run in `make test`: thousands of corrupted inputs (bit flips, truncation,
 * byte runs, length-field damage) must each either load or fail with a bad
 * input error (code 2) — never crash, hang or trip ASan/UBSan. The seeds are
 * models from libonnx-testdata plus a .npy written here; the mutation stream
 * is a fixed LCG so failures reproduce. The coverage-guided libFuzzer
 * harnesses of these and every other reader are in tests/fuzz/harness/
 * (`make fuzz`, docs/fuzzing.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tap.h"
#include "engine/build.h"
#include "engine/exec.h"
#include "io/npy.h"
#include "io/tensorproto.h"
#include "util/fsutil.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t next(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng >> 33);
}

static size_t mutate(const uint8_t *src, size_t n, uint8_t *dst)
{
    memcpy(dst, src, n);
    int kind = next() % 5, count = 1 + next() % 8;
    switch (kind) {
    case 0: for (int i = 0; i < count; i++) dst[next() % n] ^= (uint8_t)(1u << (next() % 8)); return n;
    case 1: return next() % n;                                        /* truncate */
    case 2: for (int i = 0; i < count; i++) dst[next() % n] = (uint8_t)next(); return n;
    case 3: { size_t at = next() % n; memset(dst + at, 0xff, (n - at) < 8 ? n - at : 8); return n; } /* huge varints */
    default: { size_t at = next() % n, len = next() % 64; if (at + len > n) len = n - at; memset(dst + at, 0, len); return n; }
    }
}

static int check_onnx(const char *seed_path, int iters, const char *tmpdir)
{
    char *seed;
    size_t n;
    perr_t e = {0};
    if (read_file(seed_path, &seed, &n, &e)) return -1;
    uint8_t *buf = xmalloc(n + 1);
    char path[512];
    snprintf(path, sizeof path, "%s/m.onnx", tmpdir);
    int bad = 0;
    for (int i = 0; i < iters; i++) {
        size_t m = mutate((uint8_t *)seed, n, buf);
        FILE *f = fopen(path, "wb");
        fwrite(buf, 1, m, f);
        fclose(f);
        perr_t err = {0};
        engine_meta_t meta;
        build_opts_t o = {0};
        graph_t *g = engine_build(path, &o, &meta, &err);
        if (g) graph_free(g);
        else if (err.code != EXIT_BADINPUT) { bad++; diag("iteration %d: code %d: %s", i, err.code, err.msg); }
    }
    free(buf);
    free(seed);
    return bad;
}

/* Builds an engine from a seed model, then feeds corrupted copies of the
 * engine file to engine_read. */
static int check_engine(const char *seed_path, int iters, const char *tmpdir)
{
    perr_t e = {0};
    engine_meta_t meta;
    build_opts_t o = {0};
    char epath[512], mpath[512];
    snprintf(epath, sizeof epath, "%s/seed.engine", tmpdir);
    snprintf(mpath, sizeof mpath, "%s/m.engine", tmpdir);
    graph_t *g = engine_build(seed_path, &o, &meta, &e);
    if (!g || engine_write(g, &meta, epath, &e)) { diag("%s", e.msg); graph_free(g); return -1; }
    graph_free(g);
    char *seed;
    size_t n;
    if (read_file(epath, &seed, &n, &e)) return -1;
    uint8_t *buf = xmalloc(n + 1);
    int bad = 0;
    for (int i = 0; i < iters; i++) {
        size_t m = mutate((uint8_t *)seed, n, buf);
        FILE *f = fopen(mpath, "wb");
        fwrite(buf, 1, m, f);
        fclose(f);
        perr_t err = {0};
        graph_t *r = engine_read(mpath, NULL, &err);
        if (r) {
            /* a damaged engine that still loads must run or fail cleanly */
            tensor_set_t in = {0}, out = {0};
            for (int k = 0; k < r->n_inputs; k++) {
                const value_t *v = &r->vals[r->inputs[k]];
                int64_t dims[TENSOR_MAX_DIMS];
                for (int d = 0; d < v->t.ndim; d++) dims[d] = v->t.dims[d] < 0 ? 1 : v->t.dims[d];
                perr_t e2 = {0};
                tensor_t *t = tensor_new(v->t.dtype ? v->t.dtype : DT_FLOAT, v->t.ndim, dims, &e2);
                if (t) tensorset_add(&in, v->name, t);
            }
            const exec_config_t xc = {.threads = 1};
            if (exec_once(r, &xc, &in, NULL, &out, &err) && err.code != EXIT_BADINPUT) bad++;
            tensorset_free(&in);
            tensorset_free(&out);
            graph_free(r);
        } else if (err.code != EXIT_BADINPUT) {
            bad++;
        }
    }
    free(buf);
    free(seed);
    return bad;
}

static int check_npy(int iters)
{
    int64_t dims[3] = {3, 4, 5};
    perr_t e = {0};
    tensor_t *t = tensor_new(DT_FLOAT, 3, dims, &e);
    uint8_t *img;
    size_t n = npy_serialize(t, &img);
    uint8_t *buf = xmalloc(n);
    int bad = 0;
    for (int i = 0; i < iters; i++) {
        size_t m = mutate(img, n, buf);
        tensor_t out;
        perr_t err = {0};
        if (npy_parse(buf, m, "fuzz.npy", &out, &err) == 0) tensor_free_data(&out);
        else if (err.code != EXIT_BADINPUT) bad++;
    }
    free(buf);
    free(img);
    tensor_free(t);
    return bad;
}

int main(void)
{
    char tmpdir[] = "/tmp/parity-fuzz-XXXXXX";
    if (!mkdtemp(tmpdir)) return 3;
    const char *data = getenv("ONNX_TESTDATA") ? getenv("ONNX_TESTDATA") : "/usr/share/libonnx-testdata/data";
    const char *seeds[] = {"node/test_conv_with_strides_padding/model.onnx", "node/test_gemm_default_matrix_bias/model.onnx",
                           "node/test_resize_upsample_scales_linear/model.onnx", "pytorch-converted/test_ConvTranspose2d/model.onnx",
                           "node/test_layer_normalization_4d_axis0/model.onnx", "node/test_slice/model.onnx"};
    for (size_t s = 0; s < sizeof seeds / sizeof *seeds; s++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", data, seeds[s]);
        int bad = check_onnx(path, 400, tmpdir);
        ok(bad == 0, "400 mutations of %s load or fail as bad input (%d otherwise)", seeds[s], bad);
    }
    char epath[1024];
    snprintf(epath, sizeof epath, "%s/%s", data, seeds[0]);
    int bad = check_engine(epath, 1000, tmpdir);
    ok(bad == 0, "1000 mutations of an engine file read or fail as bad input (%d otherwise)", bad);
    bad = check_npy(5000);
    ok(bad == 0, "5000 mutations of a .npy parse or fail as bad input (%d otherwise)", bad);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd)) diag("could not remove %s", tmpdir);
    return done_testing();
}
