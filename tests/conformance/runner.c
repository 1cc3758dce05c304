/* runner.c — the ONNX backend conformance runner (after onnx2c's): for each
 * test folder it runs build-engine and infer as a user would, then checks
 * every output of every test_data_set against the expected .pb, matched by
 * name (by position where the file has no name), NaN/Inf aware.
 *
 *   runner --bin DIR --data DIR [--skip FILE] [--filter REGEX] [--keep DIR]
 *
 * Prints TAP: one line per test; a test listed in the skip file is reported
 * as skipped with its reason (and is still run: if it passes, a note says the
 * entry is stale). Ends with "N passed, M failed, K skipped".
 */
#include <fcntl.h>
#include <fnmatch.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "io/tensorset.h"
#include "io/tensorproto.h"
#include "util/fsutil.h"
#include "onnx.pb-c.h"

typedef struct rule { char *pattern; char *reason; double rtol, atol; int skip; } rule_t;
static rule_t rules[2048];
static int n_rules;

static void load_rules(const char *path, int skip)
{
    FILE *f = fopen(path, "r");
    if (!f) { fprintf(stderr, "runner: cannot open %s\n", path); exit(2); }
    char line[1024];
    while (fgets(line, sizeof line, f) && n_rules < 2048) {
        char *p = line;
        while (*p == ' ') p++;
        if (*p == '#' || *p == '\n' || !*p) continue;
        line[strcspn(line, "\n")] = 0;
        char *sp = strpbrk(p, " \t");
        rule_t *r = &rules[n_rules++];
        r->skip = skip;
        r->pattern = xstrndup(p, sp ? (size_t)(sp - p) : strlen(p));
        p = sp ? sp : p + strlen(p);
        while (*p == ' ' || *p == '\t') p++;
        if (!skip) {   /* tolerance file: PATTERN RTOL ATOL reason */
            char *end;
            r->rtol = strtod(p, &end); p = end;
            r->atol = strtod(p, &end); p = end;
            while (*p == ' ' || *p == '\t') p++;
        }
        r->reason = xstrdup(p);
        if (!r->reason[0]) { fprintf(stderr, "runner: %s: entry '%s' has no reason\n", path, r->pattern); exit(2); }
    }
    fclose(f);
}

static const rule_t *find_rule(const char *test, int skip)
{
    for (int i = 0; i < n_rules; i++)
        if (rules[i].skip == skip && fnmatch(rules[i].pattern, test, 0) == 0) return &rules[i];
    return NULL;
}

/* Runs argv with stderr captured into err (first line kept). */
static int run_cmd(char *const argv[], char *err, size_t errsz)
{
    int pfd[2];
    if (pipe(pfd)) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(pfd[1], 2);
        int devnull = open("/dev/null", 1);
        if (devnull >= 0) dup2(devnull, 1);
        close(pfd[0]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(pfd[1]);
    size_t k = 0;
    ssize_t r;
    char buf[4096];
    while ((r = read(pfd[0], buf, sizeof buf)) > 0)
        for (ssize_t i = 0; i < r; i++) if (k + 1 < errsz) err[k++] = buf[i];
    err[k] = 0;
    err[strcspn(err, "\n")] = 0;
    close(pfd[0]);
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* Names of the model's graph outputs, for positional matching. */
static int model_outputs(const char *model, char ***names)
{
    char *buf; size_t n; perr_t e = {0};
    if (read_file(model, &buf, &n, &e)) return -1;
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, n, (uint8_t *)buf);
    free(buf);
    if (!m || !m->graph) return -1;
    *names = xcalloc(m->graph->n_output + 1, sizeof **names);
    int k = (int)m->graph->n_output;
    for (int i = 0; i < k; i++) (*names)[i] = xstrdup(m->graph->output[i]->name);
    onnx__model_proto__free_unpacked(m, NULL);
    return k;
}

static int close_enough(double a, double b, double rtol, double atol)
{
    if (isnan(b)) return isnan(a);
    if (isinf(b)) return a == b;
    return fabs(a - b) <= atol + rtol * fabs(b);
}

/* ONNX 1.12's test data stores bfloat16 tensors as uint16 bit patterns
 * (numpy has no bfloat16): the runner treats the pair as the same bits. */
static int bf16_as_uint16(dtype_t a, dtype_t b)
{
    return (a == DT_BFLOAT16 && b == DT_UINT16) || (a == DT_UINT16 && b == DT_BFLOAT16);
}

static int compare_tensor(const tensor_t *got, const tensor_t *want, double rtol, double atol, char *why, size_t whysz)
{
    char a[160], b[160];
    if (bf16_as_uint16(got->dtype, want->dtype)) {
        tensor_t g2 = *got;
        g2.dtype = want->dtype;
        return compare_tensor(&g2, want, rtol, atol, why, whysz);
    }
    if (got->dtype != want->dtype) {
        snprintf(why, whysz, "dtype %s, expected %s", dtype_name(got->dtype), dtype_name(want->dtype));
        return 0;
    }
    if (!tensor_same_shape(got, want)) {
        snprintf(why, whysz, "shape %s, expected %s", shape_str(got->ndim, got->dims, a, sizeof a),
                 shape_str(want->ndim, want->dims, b, sizeof b));
        return 0;
    }
    int64_t n = tensor_numel(want), bad = 0, first = -1;
    int fl = dtype_is_float(want->dtype);
    for (int64_t i = 0; i < n; i++) {
        int okv = fl ? close_enough(tensor_get_f64(got, i), tensor_get_f64(want, i), rtol, atol)
                     : (want->dtype == DT_UINT64 ? ((uint64_t *)got->data)[i] == ((uint64_t *)want->data)[i]
                                                 : tensor_get_i64(got, i) == tensor_get_i64(want, i));
        if (!okv) { if (first < 0) first = i; bad++; }
    }
    if (bad) {
        snprintf(why, whysz, "%lld of %lld elements differ; first at %lld: got %.9g, expected %.9g",
                 (long long)bad, (long long)n, (long long)first, tensor_get_f64(got, first), tensor_get_f64(want, first));
        return 0;
    }
    return 1;
}

/* Links an input file into the staging folder; a uint16 tensor for a
 * bfloat16 model input (see bf16_as_uint16) is rewritten with its real type. */
static int stage_input(const char *model, const char *src, const char *dst, int index)
{
    tensor_t t;
    char *name = NULL;
    perr_t e = {0};
    if (pb_read(src, &t, &name, &e)) return symlink(src, dst);
    int rc = 0;
    dtype_t want = DT_UNDEFINED;
    char *buf; size_t n;
    if (t.dtype == DT_UINT16 && !read_file(model, &buf, &n, &e)) {
        Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, n, (uint8_t *)buf);
        free(buf);
        if (m && m->graph) {
            size_t k = 0;
            for (size_t i = 0; i < m->graph->n_input; i++) {
                const Onnx__ValueInfoProto *vi = m->graph->input[i];
                int named = name[0] && !strcmp(vi->name, name);
                if ((named || (!name[0] && (int)k == index)) && vi->type && vi->type->tensor_type)
                    want = (dtype_t)vi->type->tensor_type->elem_type;
                k++;
            }
        }
        if (m) onnx__model_proto__free_unpacked(m, NULL);
    }
    if (want == DT_BFLOAT16) {
        t.dtype = DT_BFLOAT16;
        rc = pb_write(dst, &t, name, &e);
    } else {
        rc = symlink(src, dst);
    }
    tensor_free_data(&t);
    free(name);
    return rc;
}

/* Runs one test folder; returns 1 pass, 0 fail (why filled). */
static int run_test(const char *bin, const char *dir, const char *work, double rtol, double atol, char *why, size_t whysz)
{
    char model[4096], engine[4096], be[4096], inf[4096], err[2048];
    snprintf(model, sizeof model, "%s/model.onnx", dir);
    snprintf(engine, sizeof engine, "%s/engine", work);
    snprintf(be, sizeof be, "%s/build-engine", bin);
    snprintf(inf, sizeof inf, "%s/infer", bin);
    char *bargv[] = {be, model, "-o", engine, NULL};
    int rc = run_cmd(bargv, err, sizeof err);
    if (rc) { snprintf(why, whysz, "build-engine exit %d: %s", rc, err); return 0; }
    char **outs = NULL;
    int n_outs = model_outputs(model, &outs);
    char **sets;
    perr_t e = {0};
    int n = list_dir(dir, &sets, &e), ran = 0, pass = 1;
    for (int s = 0; s < n && pass; s++) {
        if (strncmp(sets[s], "test_data_set_", 14)) continue;
        ran++;
        char in[4096], out[4096];
        snprintf(in, sizeof in, "%s/%s", dir, sets[s]);
        snprintf(out, sizeof out, "%s/out_%s", work, sets[s]);
        /* the inputs are the input_*.pb files: stage them alone */
        char stage[4096];
        snprintf(stage, sizeof stage, "%s/in_%s", work, sets[s]);
        mkdir_p(stage, &e);
        char **files;
        int nf = list_dir(in, &files, &e);
        tensor_set_t want = {0};
        char **want_files = xcalloc(nf + 1, sizeof *want_files);
        int nw = 0;
        for (int f = 0; f < nf; f++) {
            char src[8192], dst[8192];
            snprintf(src, sizeof src, "%s/%s", in, files[f]);
            if (!strncmp(files[f], "input_", 6)) {
                snprintf(dst, sizeof dst, "%s/%s", stage, files[f]);
                if (stage_input(model, src, dst, atoi(files[f] + 6))) { snprintf(why, whysz, "cannot stage %s", src); pass = 0; }
            } else if (!strncmp(files[f], "output_", 7)) {
                want_files[nw++] = xstrdup(files[f]);
            }
        }
        char *iargv[] = {inf, engine, "-i", stage, "-o", out, NULL};
        if (pass && (rc = run_cmd(iargv, err, sizeof err))) {
            snprintf(why, whysz, "%s: infer exit %d: %s", sets[s], rc, err);
            pass = 0;
        }
        tensor_set_t got = {0};
        if (pass && tensorset_read(out, &got, &e)) { snprintf(why, whysz, "%s", e.msg); pass = 0; }
        for (int w = 0; w < nw && pass; w++) {
            char path[8192];
            snprintf(path, sizeof path, "%s/%s", in, want_files[w]);
            tensor_t t; char *name = NULL;
            if (pb_read(path, &t, &name, &e)) { snprintf(why, whysz, "expected %s unreadable: %s", path, e.msg); pass = 0; break; }
            int idx = atoi(want_files[w] + 7);
            const char *key = name && name[0] ? name : (idx < n_outs ? outs[idx] : "");
            tensor_t *g = tensorset_get(&got, key);
            if (!g) { snprintf(why, whysz, "%s: output '%s' missing", sets[s], key); pass = 0; }
            else {
                char w2[1024];
                if (!compare_tensor(g, &t, rtol, atol, w2, sizeof w2)) {
                    snprintf(why, whysz, "%s: output '%s': %s", sets[s], key, w2);
                    pass = 0;
                }
            }
            tensor_free_data(&t);
            free(name);
        }
        tensorset_free(&got);
        tensorset_free(&want);
        for (int w = 0; w < nw; w++) free(want_files[w]);
        free(want_files);
        if (nf >= 0) free_list(files, nf);
    }
    if (n >= 0) free_list(sets, n);
    for (int i = 0; i < n_outs; i++) free(outs[i]);
    free(outs);
    if (pass && !ran) { snprintf(why, whysz, "no test_data_set folders"); return 0; }
    return pass;
}

int main(int argc, char **argv)
{
    const char *bin = NULL, *data = NULL, *filter = NULL;
    const char *suites[] = {"node", "pytorch-converted", "pytorch-operator", "simple"};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--bin") && i + 1 < argc) bin = argv[++i];
        else if (!strcmp(argv[i], "--data") && i + 1 < argc) data = argv[++i];
        else if (!strcmp(argv[i], "--skip") && i + 1 < argc) load_rules(argv[++i], 1);
        else if (!strcmp(argv[i], "--tolerances") && i + 1 < argc) load_rules(argv[++i], 0);
        else if (!strcmp(argv[i], "--filter") && i + 1 < argc) filter = argv[++i];
        else { fprintf(stderr, "usage: runner --bin DIR --data DIR [--skip FILE] [--tolerances FILE] [--filter REGEX]\n"); return 2; }
    }
    if (!bin || !data) { fprintf(stderr, "runner: --bin and --data are required\n"); return 2; }
    regex_t re;
    if (filter && regcomp(&re, filter, REG_EXTENDED | REG_NOSUB)) { fprintf(stderr, "runner: bad --filter\n"); return 2; }
    char work[] = "/tmp/parity-conf-XXXXXX";
    if (!mkdtemp(work)) { perror("mkdtemp"); return 3; }
    int passed = 0, failed = 0, skipped = 0, t = 0;
    perr_t e = {0};
    for (size_t s = 0; s < sizeof suites / sizeof *suites; s++) {
        char sdir[4096];
        snprintf(sdir, sizeof sdir, "%s/%s", data, suites[s]);
        char **tests;
        int n = list_dir(sdir, &tests, &e);
        if (n < 0) { fprintf(stderr, "runner: %s\n", e.msg); return 2; }
        for (int i = 0; i < n; i++) {
            char name[1024], dir[8192], tw[8192], why[2048] = "";
            snprintf(name, sizeof name, "%s/%s", suites[s], tests[i]);
            if (filter && regexec(&re, name, 0, NULL, 0)) continue;
            snprintf(dir, sizeof dir, "%s/%s", sdir, tests[i]);
            snprintf(tw, sizeof tw, "%s/%d", work, ++t);
            mkdir_p(tw, &e);
            const rule_t *tol = find_rule(name, 0);
            int ok = run_test(bin, dir, tw, tol ? tol->rtol : 1e-3, tol ? tol->atol : 1e-5, why, sizeof why);
            remove_tree(tw);
            const rule_t *skip = find_rule(name, 1);
            if (skip) {
                printf("ok %d - %s # SKIP %s\n", t, name, skip->reason);
                if (ok) printf("# note: %s passes now; its skip entry '%s' is stale\n", name, skip->pattern);
                skipped++;
            } else if (ok) {
                printf("ok %d - %s\n", t, name);
                passed++;
            } else {
                printf("not ok %d - %s\n#   %s\n", t, name, why);
                failed++;
            }
            fflush(stdout);
        }
        free_list(tests, n);
    }
    remove_tree(work);
    if (filter) regfree(&re);
    printf("1..%d\n", t);
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    return failed ? 1 : 0;
}
