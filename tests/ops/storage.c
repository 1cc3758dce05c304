/* storage.c — every case at the storage precisions FP16 and BF16, the two
 * ways the engine stores a tensor in a half type (docs/precision.md):
 *
 * - typed: the model's own FLOAT16/BFLOAT16 tensors. Each float32 input is
 *   narrowed to the half type; node_run widens it again for a kernel that
 *   computes in float32 and narrows its float outputs back, while an
 *   any_type kernel (Cast, the ops that move bytes) takes the half bits
 *   itself and must move them exactly.
 * - emulated: a layer at precision fp16/bf16. Tensors stay float32; the
 *   node's round_inputs rounds every float32 input to the storage type
 *   (what precision.c marks for values from FP32 layers, graph inputs and
 *   weights) and node_run rounds its float outputs after the kernel.
 *
 * The reference sees exactly the stored values (the inputs rounded here,
 * independently of tensor/half.c), and the check follows from the
 * arithmetic: the kernel's float32 result k lies within the case's bound b
 * of the exact value v, and rounding to nearest is monotone, so the stored
 * result lies in [rnd(v - b), rnd(v + b)] -- half an ulp of the storage type
 * beyond b, a subnormal's quantum near zero, and inf past the largest
 * finite value (65504 in FP16) exactly when every result the bound allows
 * rounds there. An exact result must be rnd(v) bit for bit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"

/* Significand bits (the implicit one included), smallest normal exponent
 * and largest finite value of each storage type. */
static const struct storage {
    const char *name;
    dtype_t dt;
    precision_t prec;
    int bits, emin;
    double max;
} storages[OC_N_STORAGE] = {
    {"fp16", DT_FLOAT16, PREC_FP16, 11, -14, 65504.0},
    {"bf16", DT_BFLOAT16, PREC_BF16, 8, -126, 0x1.fep127},
};

const char *oc_storage_name(int s) { return storages[s].name; }

/* Stored results that overflowed to inf from a finite reference value, and
 * that are subnormal in the storage type, since the last TAP line. */
static int64_t n_inf[OC_N_STORAGE], n_sub[OC_N_STORAGE];

int oc_storage_line(const op_case_t *c, int s, int good, int ran, int levels, double worst)
{
    char extra[96] = "";
    if (n_inf[s] || n_sub[s])
        snprintf(extra, sizeof extra, " (%lld overflowed to inf, %lld subnormal)", (long long)n_inf[s], (long long)n_sub[s]);
    n_inf[s] = n_sub[s] = 0;
    if (!ran) return 0;
    const char *dom = c->domain && *c->domain ? c->domain : "";
    char msg[512];
    snprintf(msg, sizeof msg, "%s%s%s@%d %s at %s storage: %d/%d instances, same bytes at %d ISA levels, <= %.3g ulp "
             "from the correctly rounded value%s", dom, *dom ? ":" : "", c->op, c->opset, c->what, storages[s].name, good,
             ran, levels, worst, extra);
    oc_ok(good == ran, msg);
    return good != ran;
}

/* x rounded to nearest, ties to even, in storage st: the quantum q is the
 * place of the last significand bit of a value of x's binade (of the
 * smallest normal's below it: subnormals; of the largest binade for an
 * infinity), so x / q is exact and nearbyint rounds it as the hardware
 * would; beyond the largest finite value the result is infinite. */
static double quantum(double x, const struct storage *st)
{
    int e;
    frexp(isfinite(x) ? x : st->max, &e);
    return ldexp(1, (e - 1 < st->emin ? st->emin : e - 1) - (st->bits - 1));
}

static double round_to(double x, const struct storage *st)
{
    if (!isfinite(x) || x == 0) return x;
    double q = quantum(x, st), r = nearbyint(x / q) * q;
    return fabs(r) > st->max ? copysign(INFINITY, x) : r;
}

/* The value of element i of a half-typed tensor, decoded here from its
 * bits (FP16: sign, 5 exponent bits, 10 fraction bits; BF16: float32's
 * upper half). */
static double half_value(const tensor_t *x, int64_t i)
{
    uint16_t h = ((const uint16_t *)x->data)[i];
    if (x->dtype == DT_BFLOAT16) {
        uint32_t u = (uint32_t)h << 16;
        float f;
        memcpy(&f, &u, sizeof f);
        return f;
    }
    int ex = h >> 10 & 31, fr = h & 1023;
    double m = ex == 31 ? (fr ? NAN : INFINITY) : ex ? ldexp(1024 + fr, ex - 25) : ldexp(fr, -24);
    return h >> 15 ? -m : m;
}

static double value_of(const tensor_t *x, int64_t i)
{
    return x->dtype == DT_FLOAT16 || x->dtype == DT_BFLOAT16 ? half_value(x, i) : tensor_get_f64(x, i);
}

/* ---- the stored inputs ---- */

typedef struct stored {
    oc_inst_t typed, emulated, wide;   /* wide: the stored values as float32, for the reference */
    tensor_t *half[OC_MAX_IO], *round[OC_MAX_IO];
    int n_float;
} stored_t;

static void stored_free(stored_t *p)
{
    for (int i = 0; i < OC_MAX_IO; i++) {
        tensor_free(p->half[i]);
        tensor_free(p->round[i]);
    }
}

/* x narrowed by the engine (tensor_cast) to *half, and rounded here to
 * *round (float32); -1 with a reason where the two disagree. */
static int store_tensor(const tensor_t *x, const struct storage *st, tensor_t **half, tensor_t **round, char *why,
                        size_t len)
{
    perr_t e = {0};
    *half = calloc(1, sizeof **half);
    *round = oc_tensor(DT_FLOAT, x->ndim, x->dims);
    if (tensor_cast(x, st->dt, *half, &e)) {
        snprintf(why, len, "cannot narrow an input: %s", e.msg);
        return -1;
    }
    for (int64_t k = 0; k < tensor_numel(x); k++) {
        double r = round_to(tensor_get_f64(x, k), st), h = half_value(*half, k);
        ((float *)(*round)->data)[k] = (float)r;
        if (!(r == h && signbit(r) == signbit(h)) && !(isnan(r) && isnan(h))) {
            snprintf(why, len, "input element %lld: %.9g narrows to %.9g, rounding says %.9g", (long long)k,
                     tensor_get_f64(x, k), h, r);
            return -1;
        }
    }
    return 0;
}

/* A sequence of float32 items stored as st: its items narrowed (*half)
 * and rounded (*round), new sequences. */
static int store_sequence(const tensor_t *x, const struct storage *st, tensor_t **half, tensor_t **round, char *why,
                          size_t len)
{
    const tensor_seq_t *q = tensor_seq(x);
    tensor_t *h[OC_MAX_VALS] = {0}, *r[OC_MAX_VALS] = {0};
    int rc = q->n > OC_MAX_VALS ? -1 : 0;
    for (int k = 0; !rc && k < q->n; k++) rc = store_tensor(&q->items[k], st, &h[k], &r[k], why, len);
    if (!rc) {
        *half = oc_sequence(q->n, (const tensor_t *const *)h);
        *round = oc_sequence(q->n, (const tensor_t *const *)r);
    }
    for (int k = 0; k < OC_MAX_VALS; k++) {
        tensor_free(h[k]);
        tensor_free(r[k]);
    }
    return rc;
}

/* Makes the three forms of t's inputs; 0, or -1 with a reason when the
 * engine's narrowing of an input differs from the rounding here. A float32
 * input of the emulated form keeps its values, which round_inputs rounds;
 * a sequence of float32 items holds them rounded already, as the engine's
 * FP16 layers would have stored them. */
static int store_inputs(const oc_inst_t *t, const struct storage *st, stored_t *p, char *why, size_t len)
{
    memset(p, 0, sizeof *p);
    p->typed = p->emulated = p->wide = *t;
    p->emulated.node.storage = st->dt;
    p->emulated.node.precision = st->prec;
    for (int i = 0; i < t->n_in; i++) {
        const tensor_t *x = t->in[i];
        int seq = x && x->dtype == DT_SEQUENCE && tensor_seq(x)->n && tensor_seq(x)->items[0].dtype == DT_FLOAT;
        if (!seq && (!x || x->dtype != DT_FLOAT)) continue;
        p->n_float++;
        if (!seq) p->emulated.node.round_inputs |= i < 64 ? (uint64_t)1 << i : 0;
        if ((seq ? store_sequence : store_tensor)(x, st, &p->half[i], &p->round[i], why, len)) return -1;
        p->typed.in[i] = p->half[i];
        p->wide.in[i] = p->round[i];
        if (seq) p->emulated.in[i] = p->round[i];
    }
    return 0;
}

/* ---- checking ---- */

/* Output got, whose float values the engine rounded to st, against the
 * reference w of a float32 output: each element in [rnd(v - b), rnd(v + b)]
 * (an exact reference: rnd(v), the sign of a zero included), or NaN where
 * v is. */
static int check_rounded(const tensor_t *got, const oc_want_t *w, const struct storage *st, double *worst, char *why,
                         size_t len)
{
    int same_shape = got->ndim == w->nd;
    for (int d = 0; same_shape && d < w->nd; d++) same_shape = got->dims[d] == w->dims[d];
    if (!same_shape) {
        snprintf(why, len, "shape differs from the reference's");
        return 0;
    }
    for (int64_t i = 0; i < tensor_numel(got); i++) {
        double g = value_of(got, i), v = w->bytes ? ((const float *)w->bytes)[i] : w->val[i];
        double b = w->bytes ? 0 : w->bound[i], lo = round_to(v - b, st), hi = round_to(v + b, st);
        if (isnan(g) && isnan(v)) continue;
        int in = w->bytes ? (g == lo && signbit(g) == signbit(lo)) : (lo <= g && g <= hi);
        /* what the TAP line reports: storage ulps from the correctly rounded v */
        double rv = round_to(v, st), r = g == rv ? 0 : fabs(g - rv) / quantum(rv, st);
        if (!(r <= *worst)) *worst = isnan(r) ? INFINITY : r;
        n_inf[st - storages] += isinf(g) && isfinite(v);
        n_sub[st - storages] += g != 0 && fabs(g) < ldexp(1, st->emin);
        if (in) continue;
        snprintf(why, len, "element %lld: got %.9g, want %.9g +- %.3g, stored in [%.9g, %.9g]", (long long)i, g, v, b,
                 lo, hi);
        return 0;
    }
    return 1;
}

/* Whether the node makes a float32 output: the reference says so, or
 * (a case without one) a run does. */
static int makes_float(const oc_inst_t *t, const oc_want_t *want)
{
    int any = 0;
    for (int i = 0; t->c->ref && i < t->n_out; i++) any |= want[i].dt == DT_FLOAT && !want[i].seq;
    if (t->c->ref) return any;
    oc_outs_t first;
    int levels;
    char why[320];
    if (!oc_run_levels(t, &first, &levels, why, sizeof why)) return 0;
    for (int i = 0; i < t->n_out; i++) any |= first.t[i].dtype == DT_FLOAT;
    oc_outs_free(&first);
    return any;
}

/* Runs one form of the instance (run) at every ISA level and checks its
 * outputs against the reference of inst: the float32 outputs the engine
 * rounds, arriving as type rounded, through check_rounded (strict: they
 * must arrive so; else only those that do, as the half outputs of an
 * any_type kernel, whose reference reads the half inputs and whose other
 * outputs, Cast's to float32, are not rounded); the others exactly as at
 * float32. With only_float, -1 where the node makes no float32 output (a
 * layer precision.c leaves at fp32). */
static int check_form(const oc_inst_t *run, const oc_inst_t *inst, dtype_t rounded, int strict, int only_float,
                      const struct storage *st, double *worst, char *why, size_t len)
{
    oc_want_t want[OC_MAX_IO];
    memset(want, 0, sizeof want);
    int pass = 1;
    if (run->c->ref && run->c->ref(inst, want)) {
        snprintf(why, len, "the reference cannot check the stored inputs");
        pass = 0;
    }
    if (pass && only_float && !makes_float(inst, want)) {
        oc_want_free(want, OC_MAX_IO);
        return -1;
    }
    oc_outs_t first;
    int levels, ran = pass && oc_run_levels(run, &first, &levels, why, len);
    pass = ran;
    for (int i = 0; pass && i < run->n_out; i++) {
        const tensor_t *g = &first.t[i];
        if (!want[i].dt) continue;
        if (rounded && want[i].dt == DT_FLOAT && !want[i].seq && (strict || g->dtype == rounded)) {
            if (g->dtype != rounded) {
                snprintf(why, len, "type %s, want %s", dtype_name(g->dtype), dtype_name(rounded));
                pass = 0;
            } else {
                pass = check_rounded(g, &want[i], st, worst, why, len);
            }
        } else {
            pass = oc_check_want(g, &want[i], worst, why, len);
        }
        if (!pass) {
            size_t l = strlen(why);
            snprintf(why + l, len - l, " (output %d)", i);
        }
    }
    if (ran) oc_outs_free(&first);
    oc_want_free(want, OC_MAX_IO);
    return pass;
}

int oc_check_storage(const oc_inst_t *t, int s, double *worst, char *why, size_t len)
{
    const struct storage *st = &storages[s];
    if (t->c->fail) return -1;
    stored_t p;
    int rc = store_inputs(t, st, &p, why, len) ? 0 : -1;
    const char *mode = "narrowing";
    if (rc == -1 && p.n_float) {
        /* any_type kernels take the half bits: their reference reads them too */
        int moves = t->node.op->any_type;
        mode = "typed";
        rc = check_form(&p.typed, moves ? &p.typed : &p.wide, st->dt, !moves, 0, st, worst, why, len);
    }
    if (rc != 0) {
        int e = check_form(&p.emulated, &p.wide, DT_FLOAT, 1, 1, st, worst, why, len);
        if (e >= 0) mode = "emulated", rc = e;
    }
    if (rc == 0) {
        size_t l = strlen(why);
        snprintf(why + l, len - l, " [%s]", mode);
    }
    stored_free(&p);
    return rc;
}

/* ---- which rows ran ---- */

#define MAX_ROWS 512
static const op_def_t *swept[OC_N_STORAGE][MAX_ROWS];
static int n_swept[OC_N_STORAGE];

int oc_storage_swept(const op_def_t *row, int s)
{
    for (int i = 0; i < n_swept[s]; i++)
        if (swept[s][i] == row) return 1;
    return 0;
}

void oc_storage_mark(const op_def_t *row, int s)
{
    if (!row || oc_storage_swept(row, s) || n_swept[s] == MAX_ROWS) return;
    swept[s][n_swept[s]++] = row;
}
