/* harness.c — the op-test runner (harness.h): turns a case into concrete
 * instances, runs each through node_run at every ISA level the CPU has (and
 * on the pool's threads where the case asks), requires the same output
 * bytes from every run, and checks them against the case's reference. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "tap.h"
#include "util/isa.h"
#include "util/pool.h"

/* ---- the random stream (xorshift64: the same draws on every machine) ---- */

static uint64_t rng = 0x9E3779B97F4A7C15ull;

uint64_t oc_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

double oc_uniform(double lo, double hi) { return lo + (hi - lo) * (double)(oc_rand() >> 11) / 0x1p53; }
int64_t oc_range(int64_t lo, int64_t hi) { return lo + (int64_t)(oc_rand() % (uint64_t)(hi - lo + 1)); }

int64_t oc_numel(int nd, const int64_t *dims)
{
    int64_t n = 1;
    for (int d = 0; d < nd; d++) n *= dims[d];
    return n;
}

void oc_unravel(int64_t lin, int nd, const int64_t *dims, int64_t *co)
{
    for (int d = nd - 1; d >= 0; d--) {
        co[d] = dims[d] ? lin % dims[d] : 0;
        lin = dims[d] ? lin / dims[d] : 0;
    }
}

/* ---- attributes ---- */

const oc_attr_t *oc_attr(const oc_inst_t *t, const char *nm)
{
    for (int k = 0; k < t->n_attr; k++)
        if (!strcmp(t->attr[k].name, nm)) return &t->attr[k];
    return NULL;
}

int64_t oc_int(const oc_inst_t *t, const char *nm, int64_t dflt)
{
    const oc_attr_t *a = oc_attr(t, nm);
    return a ? a->i[0] : dflt;
}

double oc_float(const oc_inst_t *t, const char *nm, double dflt)
{
    const oc_attr_t *a = oc_attr(t, nm);
    return a ? a->f[0] : dflt;
}

/* The slot for attribute nm: its own if set, else a new one. */
static oc_attr_t *attr_slot(oc_inst_t *t, const char *nm)
{
    oc_attr_t *a = (oc_attr_t *)oc_attr(t, nm);
    if (!a) a = &t->attr[t->n_attr++];
    memset(a, 0, sizeof *a);
    a->name = nm;
    return a;
}

void oc_set_int(oc_inst_t *t, const char *nm, int64_t v)
{
    oc_attr_t *a = attr_slot(t, nm);
    a->kind = 'i';
    a->n = 1;
    a->i[0] = v;
}

void oc_set_ints(oc_inst_t *t, const char *nm, int n, const int64_t *v)
{
    oc_attr_t *a = attr_slot(t, nm);
    a->kind = 'I';
    a->n = n;
    memcpy(a->i, v, (size_t)n * sizeof *v);
}

void oc_set_float(oc_inst_t *t, const char *nm, float v)
{
    oc_attr_t *a = attr_slot(t, nm);
    a->kind = 'f';
    a->n = 1;
    a->f[0] = v;
}

void oc_set_str(oc_inst_t *t, const char *nm, const char *s)
{
    oc_attr_t *a = attr_slot(t, nm);
    a->kind = 's';
    a->s = s;
}

oc_input_t *oc_input(oc_inst_t *t, int i) { return &t->spec[i]; }

/* The protobuf form node_run reads, of attribute a. */
static void attr_proto(const oc_attr_t *a, Onnx__AttributeProto *p)
{
    onnx__attribute_proto__init(p);
    p->name = (char *)a->name;
    switch (a->kind) {
    case 'i': p->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT; p->has_i = 1; p->i = a->i[0]; break;
    case 'f': p->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT; p->has_f = 1; p->f = a->f[0]; break;
    case 's':
        p->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
        p->has_s = 1;
        p->s.data = (uint8_t *)a->s;
        p->s.len = strlen(a->s);
        break;
    case 'I': p->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS; p->n_ints = a->n; p->ints = (int64_t *)a->i; break;
    case 'F': p->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS; p->n_floats = a->n; p->floats = (float *)a->f; break;
    }
}

/* ---- instances ---- */

tensor_t *oc_tensor(dtype_t dt, int nd, const int64_t *dims)
{
    perr_t e = {0};
    tensor_t *x = tensor_new(dt, nd, dims, &e);
    if (!x) {
        diag("cannot make an input: %s", e.msg);
        exit(3);
    }
    return x;
}

tensor_t *oc_sequence(int n, const tensor_t *const *items)
{
    perr_t e = {0};
    tensor_t *s = calloc(1, sizeof *s);
    tensor_alloc(s, DT_SEQUENCE, 0, NULL, &e);
    for (int i = 0; i < n; i++)
        if (tensor_seq_insert(tensor_seq(s), items[i], i, &e)) {
            diag("cannot make a sequence: %s", e.msg);
            exit(3);
        }
    return s;
}

static tensor_t *draw_input(const oc_input_t *s)
{
    tensor_t *x = oc_tensor(s->dt, s->nd, s->dims);
    int64_t n = tensor_numel(x);
    if (s->gen == GEN_BYTES) {
        unsigned char *p = x->data;
        for (size_t i = 0; i < tensor_nbytes(x); i++) p[i] = (unsigned char)oc_rand();
    }
    for (int64_t i = 0; s->gen == GEN_INT64S && i < n; i++) {
        int64_t v = s->iv[s->nv ? i % s->nv : 0];
        if (s->dt == DT_INT32) ((int32_t *)x->data)[i] = v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v;
        else ((int64_t *)x->data)[i] = v;
    }
    for (int64_t i = 0; s->gen != GEN_BYTES && s->gen != GEN_INT64S && i < n; i++) {
        double v = s->gen == GEN_VALUES ? s->v[s->nv ? i % s->nv : 0]
                 : s->gen == GEN_INTS   ? (double)oc_range((int64_t)s->lo, (int64_t)s->hi)
                                        : oc_uniform(s->lo, s->hi);
        tensor_set_f64(x, i, v);
    }
    return x;
}

static void inst_init(oc_inst_t *t, const op_case_t *c, int v)
{
    memset(t, 0, sizeof *t);
    t->c = c;
    t->variant = v;
    t->n_in = c->n_in;
    t->n_out = c->n_out ? c->n_out : 1;
    memcpy(t->spec, c->in, sizeof t->spec);
    memcpy(t->param, c->param, sizeof t->param);
    for (int k = 0; k < OC_MAX_ATTRS && c->attr[k].name; k++) t->attr[t->n_attr++] = c->attr[k];
    if (c->gen) c->gen(t, v);
    for (int i = 0; i < t->n_in; i++)
        if (t->spec[i].gen != GEN_NONE && !t->in[i]) t->in[i] = draw_input(&t->spec[i]);
    for (int k = 0; k < t->n_attr; k++) {
        attr_proto(&t->attr[k], &t->ap[k]);
        t->app[k] = &t->ap[k];
    }
    node_t *n = &t->node;
    n->name = "under_test";
    n->op_type = (char *)c->op;
    n->domain = (char *)(c->domain ? c->domain : "");
    n->opset = c->opset;
    n->n_in = t->n_in;
    n->n_out = t->n_out;
    n->n_attr = t->n_attr;
    n->attr = t->app;
    n->op = op_lookup(n->domain, c->op, c->opset, NULL);
}

static void inst_free(oc_inst_t *t)
{
    for (int i = 0; i < t->n_in; i++) tensor_free(t->in[i]);
}

/* ---- running and comparing ---- */

static scratch_pool_t scratch;

void oc_outs_free(oc_outs_t *o)
{
    for (int i = 0; i < OC_MAX_IO; i++) {
        tensor_free_data(&o->t[i]);
        free(o->garbage[i]);
    }
}

/* Runs the node once on threads threads. With like (an earlier run's
 * outputs), each output comes preset to a buffer of like's size filled with
 * 0xA5, as the executor's arena presets them: an element the kernel fails
 * to write then differs from the earlier run's bytes. */
static void run_once(const oc_inst_t *t, int threads, const oc_outs_t *like, oc_outs_t *o)
{
    memset(o, 0, sizeof *o);
    tensor_t *out[OC_MAX_IO];
    for (int i = 0; i < OC_MAX_IO; i++) {
        out[i] = &o->t[i];
        if (!like || i >= t->n_out || like->t[i].dtype == DT_SEQUENCE) continue;
        size_t n = tensor_nbytes(&like->t[i]) + 16;
        o->garbage[i] = memset(malloc(n), 0xA5, n);
        o->t[i].data = o->garbage[i];
        o->t[i].cap = n;
    }
    pool_set_threads(threads);
    o->rc = node_run(&t->node, (const tensor_t *const *)t->in, out, threads, &scratch, NULL, &o->e);
    pool_set_threads(1);
}

int oc_same_tensor(const tensor_t *a, const tensor_t *b)
{
    if (a->dtype != b->dtype || a->ndim != b->ndim) return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->dims[d] != b->dims[d]) return 0;
    if (a->dtype == DT_SEQUENCE) {
        const tensor_seq_t *x = tensor_seq(a), *y = tensor_seq(b);
        if (x->n != y->n) return 0;
        for (int i = 0; i < x->n; i++)
            if (!oc_same_tensor(&x->items[i], &y->items[i])) return 0;
        return 1;
    }
    size_t n = tensor_nbytes(a);
    return n == tensor_nbytes(b) && (!n || !memcmp(a->data, b->data, n));
}

/* Compares output i with the reference; a reason in why on a mismatch. */
int oc_check_want(const tensor_t *got, const oc_want_t *w, double *worst, char *why, size_t len)
{
    if (got->dtype != w->dt) {
        snprintf(why, len, "type %s, want %s", dtype_name(got->dtype), dtype_name(w->dt));
        return 0;
    }
    if (w->seq) {
        if (oc_same_tensor(got, w->seq)) return 1;
        snprintf(why, len, "the sequence differs from the reference's");
        return 0;
    }
    if (w->bytes) {
        tensor_t ref = {.dtype = w->dt, .ndim = w->nd, .data = w->bytes};
        memcpy(ref.dims, w->dims, sizeof ref.dims);
        if (oc_same_tensor(got, &ref)) return 1;
        snprintf(why, len, "bytes differ from the reference (or the shape)");
        return 0;
    }
    int same_shape = got->ndim == w->nd;
    for (int d = 0; same_shape && d < w->nd; d++) same_shape = got->dims[d] == w->dims[d];
    if (!same_shape) {
        snprintf(why, len, "shape differs from the reference's");
        return 0;
    }
    double r = bound_ratio(got, w->val, w->bound, w->nd, w->dims);
    if (r > *worst) *worst = r;
    if (r <= 1) return 1;
    int64_t n = tensor_numel(got), at = 0;
    for (int64_t i = 0; i < n; i++) {
        double g = tensor_get_f64(got, i);
        if (!(fabs(g - w->val[i]) <= w->bound[i]) && !(isnan(g) && isnan(w->val[i]))) { at = i; break; }
    }
    snprintf(why, len, "error/bound %.3g (element %lld: got %.9g, want %.9g +- %.3g)", r, (long long)at,
             tensor_get_f64(got, at), w->val[at], w->bound[at]);
    return 0;
}

void oc_want_shape(oc_want_t *w, dtype_t dt, int nd, const int64_t *dims, int exact)
{
    w->dt = dt;
    w->nd = nd;
    memcpy(w->dims, dims, (size_t)nd * sizeof *dims);
    size_t n = (size_t)oc_numel(nd, dims);
    if (exact) w->bytes = calloc(n ? n : 1, dtype_size(dt));
    else {
        w->val = calloc(n ? n : 1, sizeof *w->val);
        w->bound = calloc(n ? n : 1, sizeof *w->bound);
    }
}

void oc_want_free(oc_want_t *w, int n)
{
    for (int i = 0; i < n; i++) {
        free(w[i].val);
        free(w[i].bound);
        free(w[i].bytes);
        tensor_free(w[i].seq);
    }
}

/* (harness.h) On a failure nothing is left in first. */
int oc_run_levels(const oc_inst_t *t, oc_outs_t *first, int *levels, char *why, size_t len)
{
    const op_case_t *c = t->c;
    oc_outs_t o;
    int pass = 1, have = 0;
    *levels = 0;
    for (int l = isa_cpu(); pass && l >= ISA_GENERIC; l--) {
        isa_set_cap((isa_t)l);
        ++*levels;
        for (int th = 1; pass && th <= (c->threads > 1 ? c->threads : 1); th += c->threads > 1 ? c->threads - 1 : 1) {
            run_once(t, th, have ? first : NULL, &o);
            if (c->fail) {
                pass = o.rc != 0 && strstr(o.e.msg, c->fail) && strstr(o.e.msg, "under_test");
                if (!pass) snprintf(why, len, "%s at %s: %s", o.rc ? "wrong message" : "no error", isa_name((isa_t)l), o.e.msg);
                oc_outs_free(&o);
                continue;
            }
            if (o.rc) {
                snprintf(why, len, "failed at %s, %d threads: %s", isa_name((isa_t)l), th, o.e.msg);
                pass = 0;
            }
            for (int i = 0; pass && have && i < t->n_out; i++)
                if (!oc_same_tensor(&o.t[i], &first->t[i])) {
                    snprintf(why, len, "output %d at %s, %d threads differs from %s's bytes", i, isa_name((isa_t)l), th,
                             isa_name(isa_cpu()));
                    pass = 0;
                }
            if (pass && !have) *first = o, have = 1;
            else oc_outs_free(&o);
        }
    }
    isa_set_cap(isa_cpu());
    if (!pass && have) oc_outs_free(first);
    return pass;
}

/* Runs one instance everywhere; 1 if it passed, else 0 with a reason. */
static int check_inst(const oc_inst_t *t, int *levels, double *worst, char *why, size_t len)
{
    const op_case_t *c = t->c;
    if (!t->node.op) {
        snprintf(why, len, "no row of the op table at opset %d", c->opset);
        return 0;
    }
    oc_outs_t first;
    int pass = oc_run_levels(t, &first, levels, why, len);
    if (pass && !c->fail && c->ref) {
        oc_want_t want[OC_MAX_IO];
        memset(want, 0, sizeof want);
        if (c->ref(t, want)) {
            snprintf(why, len, "the reference cannot check this instance");
            pass = 0;
        }
        for (int i = 0; pass && i < t->n_out; i++)
            if (want[i].dt && !oc_check_want(&first.t[i], &want[i], worst, why, len)) pass = 0;
        oc_want_free(want, OC_MAX_IO);
    }
    if (pass && !c->fail) oc_outs_free(&first);
    return pass;
}

/* The TAP stream lives in this file (tap.h's counters are per file). */
void oc_ok(int pass, const char *msg)
{
    ok(pass, "%s", msg);
}

int oc_done(void) { return done_testing(); }

void oc_diag(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("# ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
}

int oc_run_table(const op_case_t *cases, int n)
{
    int failed = 0;
    for (int k = 0; k < n; k++) {
        const op_case_t *c = &cases[k];
        int variants = c->variants > 1 ? c->variants : 1, good = 0, levels = 0, shown = 0;
        int sgood[OC_N_STORAGE] = {0}, sran[OC_N_STORAGE] = {0};
        double worst = 0, sworst[OC_N_STORAGE] = {0};
        for (int v = 0; v < variants; v++) {
            oc_inst_t t;
            char why[320] = "";
            inst_init(&t, c, v);
            int pass = check_inst(&t, &levels, &worst, why, sizeof why);
            good += pass;
            if (!pass && shown++ < 3) diag("%s@%d %s, variant %d: %s", c->op, c->opset, c->what, v, why);
            for (int st = 0; pass && !c->fail && st < OC_N_STORAGE; st++) {
                int r = oc_check_storage(&t, st, &sworst[st], why, sizeof why);
                if (r < 0) continue;
                sran[st]++;
                sgood[st] += r;
                oc_storage_mark(t.node.op, st);
                if (!r && shown++ < 3)
                    diag("%s@%d %s, variant %d at %s storage: %s", c->op, c->opset, c->what, v, oc_storage_name(st), why);
            }
            inst_free(&t);
        }
        const char *dom = c->domain && *c->domain ? c->domain : "";
        if (c->fail)
            ok(good == variants, "%s%s%s@%d %s: %d/%d instances fail naming the node ('%s') at %d ISA levels", dom,
               *dom ? ":" : "", c->op, c->opset, c->what, good, variants, c->fail, levels);
        else
            ok(good == variants, "%s%s%s@%d %s: %d/%d instances, same bytes at %d ISA levels%s, error/bound <= %.3g",
               dom, *dom ? ":" : "", c->op, c->opset, c->what, good, variants, levels,
               c->threads > 1 ? " and 1/N threads" : "", worst);
        failed += good != variants;
        for (int st = 0; st < OC_N_STORAGE; st++) failed += oc_storage_line(c, st, sgood[st], sran[st], levels, sworst[st]);
    }
    scratch_pool_free(&scratch);
    return failed;
}
