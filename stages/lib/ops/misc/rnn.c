/* rnn.c — the recurrent layers RNN, GRU and LSTM (opsets 7 and 14; MISC
 * family, rows in misc.c).
 *
 * One engine for the three cells: G gates per direction (1, 3, 4), gate
 * pre-activations Xt W^T + H(t-1) R^T + Wb + Rb (GRU's candidate gate with
 * or without linear_before_reset; LSTM peepholes on i, f, o), optional clip,
 * per-direction activations with their alpha/beta (activation_alpha/beta
 * are consumed in order by the functions that take them, as onnxruntime
 * does). Directions forward, reverse, bidirectional; sequence_lens stops a
 * batch entry early (its Y rows past the end are 0, Y_h/Y_c hold its last
 * state); opset 14's layout = 1 makes X, Y and the states batch-major.
 *
 * Inputs are widened to double once and the recurrence runs in double; this
 * is a validation engine, and recurrent layers are rare in vision exports.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "ops/misc/misc_impl.h"

enum { CELL_RNN, CELL_GRU, CELL_LSTM };
enum { MAX_ACT = 6 };

typedef struct {
    int kind;
    double alpha, beta;
} rnn_act_t;

typedef struct {
    int cell, gates, nact;       /* activations per direction */
    int64_t seq, batch, in, hid, dirs;
    int layout, lbr, input_forget;
    double clip;                 /* 0: none */
    int reverse_only;
    rnn_act_t act[MAX_ACT];
} rnn_plan_t;

enum { A_SIGMOID, A_TANH, A_RELU, A_AFFINE, A_LEAKY, A_THRELU, A_STANH, A_HSIG, A_ELU, A_SOFTSIGN, A_SOFTPLUS };

static const struct { const char *name; int kind, n_alpha, n_beta; double alpha, beta; } act_names[] = {
    {"Sigmoid", A_SIGMOID, 0, 0, 0, 0},       {"Tanh", A_TANH, 0, 0, 0, 0},
    {"Relu", A_RELU, 0, 0, 0, 0},             {"Affine", A_AFFINE, 1, 1, 1.0, 0.0},
    {"LeakyRelu", A_LEAKY, 1, 0, 0.01, 0},    {"ThresholdedRelu", A_THRELU, 1, 0, 1.0, 0},
    {"ScaledTanh", A_STANH, 1, 1, 1.0, 1.0},  {"HardSigmoid", A_HSIG, 1, 1, 0.2, 0.5},
    {"Elu", A_ELU, 1, 0, 1.0, 0},             {"Softsign", A_SOFTSIGN, 0, 0, 0, 0},
    {"Softplus", A_SOFTPLUS, 0, 0, 0, 0},
};

static double act_apply(const rnn_act_t *a, double x)
{
    switch (a->kind) {
    case A_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case A_TANH: return tanh(x);
    case A_RELU: return x > 0 ? x : 0;
    case A_AFFINE: return a->alpha * x + a->beta;
    case A_LEAKY: return x >= 0 ? x : a->alpha * x;
    case A_THRELU: return x > a->alpha ? x : 0;
    case A_STANH: return a->alpha * tanh(a->beta * x);
    case A_HSIG: { double v = a->alpha * x + a->beta; return v < 0 ? 0 : v > 1 ? 1 : v; }
    case A_ELU: return x >= 0 ? x : a->alpha * (exp(x) - 1.0);
    case A_SOFTSIGN: return x / (1.0 + fabs(x));
    default: return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
    }
}

/* Reads activations (defaults per cell) with their alpha/beta lists. */
static int rnn_acts(op_ctx_t *c, rnn_plan_t *p)
{
    static const char *defaults[3][3] = {{"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}};
    const Onnx__AttributeProto *at = node_attr(c->node, "activations");
    int want = p->nact * (int)p->dirs;
    if (at && (int)at->n_strings != want)
        return op_fail(c, "activations lists %d functions, expected %d", (int)at->n_strings, want);
    const float *al = NULL, *be = NULL;
    int nal = attr_floats(c->node, "activation_alpha", &al), nbe = attr_floats(c->node, "activation_beta", &be);
    int ia = 0, ib = 0;
    for (int i = 0; i < want; i++) {
        char name[64];
        if (at) {
            size_t len = at->strings[i].len < sizeof name - 1 ? at->strings[i].len : sizeof name - 1;
            memcpy(name, at->strings[i].data, len);
            name[len] = 0;
        } else {
            strcpy(name, defaults[p->cell][i % p->nact]);
        }
        size_t k = 0;
        while (k < sizeof act_names / sizeof act_names[0] && strcasecmp(name, act_names[k].name)) k++;
        if (k == sizeof act_names / sizeof act_names[0]) return op_fail(c, "unsupported activation '%s'", name);
        rnn_act_t *a = &p->act[i];
        a->kind = act_names[k].kind;
        a->alpha = act_names[k].alpha;
        a->beta = act_names[k].beta;
        if (act_names[k].n_alpha && ia < nal) a->alpha = al[ia++];
        if (act_names[k].n_beta && ib < nbe) a->beta = be[ib++];
    }
    return 0;
}

static int rnn_plan(op_ctx_t *c, rnn_plan_t *p)
{
    const char *op = c->node->op_type;
    memset(p, 0, sizeof *p);
    p->cell = !strcmp(op, "RNN") ? CELL_RNN : !strcmp(op, "GRU") ? CELL_GRU : CELL_LSTM;
    p->gates = p->cell == CELL_RNN ? 1 : p->cell == CELL_GRU ? 3 : 4;
    p->nact = p->cell == CELL_RNN ? 1 : p->cell == CELL_GRU ? 2 : 3;
    if (op_check_inputs(c, 3, p->cell == CELL_LSTM ? 8 : 6)) return -1;
    const tensor_t *x = c->in[0], *w = c->in[1], *r = c->in[2];
    if (x->dtype != DT_FLOAT && x->dtype != DT_DOUBLE)
        return op_fail(c, "type %s is not supported", dtype_name(x->dtype));
    p->layout = c->node->opset >= 14 ? (int)attr_int(c->node, "layout", 0) : 0;
    if (p->layout != 0 && p->layout != 1) return op_fail(c, "layout must be 0 or 1");
    if (x->ndim != 3 || w->ndim != 3 || r->ndim != 3) return op_fail(c, "X, W and R must have rank 3");
    p->seq = x->dims[p->layout ? 1 : 0];
    p->batch = x->dims[p->layout ? 0 : 1];
    p->in = x->dims[2];
    p->hid = attr_int(c->node, "hidden_size", 0);
    if (p->hid <= 0) p->hid = r->dims[2];
    char buf[32];
    const char *dir = attr_string(c->node, "direction", "forward", buf, sizeof buf);
    if (!strcmp(dir, "bidirectional")) p->dirs = 2;
    else if (!strcmp(dir, "forward") || !strcmp(dir, "reverse")) p->dirs = 1;
    else return op_fail(c, "unknown direction '%s'", dir);
    p->reverse_only = !strcmp(dir, "reverse");
    int64_t gh = p->gates * p->hid;
    if (w->dims[0] != p->dirs || w->dims[1] != gh || w->dims[2] != p->in)
        return op_fail(c, "W must be [%lld, %lld, %lld]", (long long)p->dirs, (long long)gh, (long long)p->in);
    if (r->dims[0] != p->dirs || r->dims[1] != gh || r->dims[2] != p->hid)
        return op_fail(c, "R must be [%lld, %lld, %lld]", (long long)p->dirs, (long long)gh, (long long)p->hid);
    for (int i = 1; i < c->n_in; i++)
        if (c->in[i] && i != 4 && c->in[i]->dtype != x->dtype) return op_fail(c, "input %d has another type", i);
    const tensor_t *b = c->n_in > 3 ? c->in[3] : NULL, *sl = c->n_in > 4 ? c->in[4] : NULL;
    if (b && (b->ndim != 2 || b->dims[0] != p->dirs || b->dims[1] != 2 * gh))
        return op_fail(c, "B must be [%lld, %lld]", (long long)p->dirs, (long long)(2 * gh));
    if (sl && (sl->ndim != 1 || sl->dims[0] != p->batch || (sl->dtype != DT_INT32 && sl->dtype != DT_INT64)))
        return op_fail(c, "sequence_lens must be int32 [%lld]", (long long)p->batch);
    if (sl && sl->data)
        for (int64_t i = 0; i < p->batch; i++) {
            int64_t v = tensor_get_i64(sl, i);
            if (v < 0 || v > p->seq) return op_fail(c, "sequence_lens[%lld] = %lld is outside [0, %lld]",
                                                     (long long)i, (long long)v, (long long)p->seq);
        }
    int64_t sd0 = p->layout ? p->batch : p->dirs, sd1 = p->layout ? p->dirs : p->batch;
    for (int i = 5; i < c->n_in && i < 7; i++) {
        const tensor_t *h = c->in[i];
        if (h && (h->ndim != 3 || h->dims[0] != sd0 || h->dims[1] != sd1 || h->dims[2] != p->hid))
            return op_fail(c, "initial state %d must be [%lld, %lld, %lld]", i, (long long)sd0, (long long)sd1,
                           (long long)p->hid);
    }
    const tensor_t *pp = c->n_in > 7 ? c->in[7] : NULL;
    if (pp && (pp->ndim != 2 || pp->dims[0] != p->dirs || pp->dims[1] != 3 * p->hid))
        return op_fail(c, "P must be [%lld, %lld]", (long long)p->dirs, (long long)(3 * p->hid));
    p->clip = node_attr(c->node, "clip") ? attr_float(c->node, "clip", 0) : 0;
    if (p->clip < 0) return op_fail(c, "clip must be positive");
    p->lbr = (int)attr_int(c->node, "linear_before_reset", 0);
    p->input_forget = (int)attr_int(c->node, "input_forget", 0);
    return rnn_acts(c, p);
}

int rnn_shape(op_ctx_t *c)
{
    rnn_plan_t p;
    if (rnn_plan(c, &p)) return -1;
    dtype_t dt = c->in[0]->dtype;
    int64_t y[4] = {p.seq, p.dirs, p.batch, p.hid}, yb[4] = {p.batch, p.seq, p.dirs, p.hid};
    int64_t h[3] = {p.dirs, p.batch, p.hid}, hb[3] = {p.batch, p.dirs, p.hid};
    if (op_set_out(c, 0, dt, 4, p.layout ? yb : y)) return -1;
    for (int i = 1; i < 3; i++)
        if (op_set_out(c, i, dt, 3, p.layout ? hb : h)) return -1;
    return 0;
}

/* A tensor widened to a fresh double array (NULL if absent). */
static double *rnn_widen(const tensor_t *t)
{
    if (!t) return NULL;
    int64_t n = tensor_numel(t);
    double *d = xmalloc((size_t)n * sizeof *d + 8);
    for (int64_t i = 0; i < n; i++) d[i] = tensor_get_f64(t, i);
    return d;
}

static double rnn_clip(const rnn_plan_t *p, double v)
{
    if (p->clip > 0) v = v < -p->clip ? -p->clip : v > p->clip ? p->clip : v;
    return v;
}


/* Gate pre-activation: x.W[row] + h.R[row] + biases (h may be NULL). */
static double rnn_pre(const rnn_plan_t *p, const double *x, const double *h, const double *w, const double *r,
                      const double *b, int64_t row)
{
    double v = 0;
    const double *wr = w + row * p->in, *rr = r + row * p->hid;
    for (int64_t k = 0; k < p->in; k++) v += x[k] * wr[k];
    if (h)
        for (int64_t k = 0; k < p->hid; k++) v += h[k] * rr[k];
    if (b) v += b[row] + b[p->gates * p->hid + row];
    return v;
}

/* One time step of one batch entry: updates h (and cs for LSTM) in place. */
static void rnn_step(const rnn_plan_t *p, const rnn_act_t *act, const double *x, double *h, double *cs,
                     const double *w, const double *r, const double *b, const double *pp, double *tmp)
{
    int64_t H = p->hid;
    if (p->cell == CELL_RNN) {
        for (int64_t j = 0; j < H; j++) tmp[j] = act_apply(&act[0], rnn_clip(p, rnn_pre(p, x, h, w, r, b, j)));
        memcpy(h, tmp, (size_t)H * sizeof *h);
    } else if (p->cell == CELL_GRU) {
        double *z = tmp, *rg = tmp + H, *rh = tmp + 2 * H, *hn = tmp + 3 * H;
        for (int64_t j = 0; j < H; j++) {
            z[j] = act_apply(&act[0], rnn_clip(p, rnn_pre(p, x, h, w, r, b, j)));
            rg[j] = act_apply(&act[0], rnn_clip(p, rnn_pre(p, x, h, w, r, b, H + j)));
        }
        for (int64_t j = 0; j < H; j++) rh[j] = rg[j] * h[j];
        for (int64_t j = 0; j < H; j++) {
            int64_t row = 2 * H + j;
            double xv = rnn_pre(p, x, NULL, w, r, NULL, row) + (b ? b[row] : 0);
            double rb = b ? b[3 * H + row] : 0, hv = 0;
            const double *rr = r + row * H;
            if (p->lbr) {
                for (int64_t k = 0; k < H; k++) hv += h[k] * rr[k];
                hv = rg[j] * (hv + rb);
            } else {
                for (int64_t k = 0; k < H; k++) hv += rh[k] * rr[k];
                hv += rb;
            }
            hn[j] = act_apply(&act[1], rnn_clip(p, xv + hv));
        }
        for (int64_t j = 0; j < H; j++) h[j] = (1 - z[j]) * hn[j] + z[j] * h[j];
    } else {
        double *ig = tmp, *og = tmp + H, *fg = tmp + 2 * H, *cg = tmp + 3 * H;
        for (int64_t j = 0; j < H; j++) {
            double pi = pp ? pp[j] : 0, pf = pp ? pp[2 * H + j] : 0;
            ig[j] = act_apply(&act[0], rnn_clip(p, rnn_pre(p, x, h, w, r, b, j) + pi * cs[j]));
            fg[j] = act_apply(&act[0], rnn_clip(p, rnn_pre(p, x, h, w, r, b, 2 * H + j) + pf * cs[j]));
            if (p->input_forget) fg[j] = 1 - ig[j];
            cg[j] = act_apply(&act[1], rnn_clip(p, rnn_pre(p, x, h, w, r, b, 3 * H + j)));
            og[j] = rnn_pre(p, x, h, w, r, b, H + j);   /* clipped once the peephole is in */
        }
        for (int64_t j = 0; j < H; j++) {
            cs[j] = fg[j] * cs[j] + ig[j] * cg[j];
            double o = act_apply(&act[0], rnn_clip(p, og[j] + (pp ? pp[H + j] : 0) * cs[j]));
            h[j] = o * act_apply(&act[2], cs[j]);
        }
    }
}

int rnn_run(op_ctx_t *c)
{
    rnn_plan_t p;
    if (rnn_plan(c, &p)) return -1;
    int lstm = p.cell == CELL_LSTM;
    const tensor_t *at[8] = {0};
    for (int i = 0; i < c->n_in && i < 8; i++) at[i] = c->in[i];
    double *x = rnn_widen(at[0]), *w = rnn_widen(at[1]), *r = rnn_widen(at[2]), *b = rnn_widen(at[3]);
    double *h0 = rnn_widen(at[5]), *c0 = lstm ? rnn_widen(at[6]) : NULL, *pp = lstm ? rnn_widen(at[7]) : NULL;
    int64_t H = p.hid, G = p.gates, B = p.batch, S = p.seq, D = p.dirs;
    double *h = xmalloc((size_t)(2 + 4) * (size_t)H * sizeof *h + 8), *cs = h + H, *tmp = h + 2 * H;
    tensor_t *y = c->n_out > 0 ? c->out[0] : NULL, *yh = c->n_out > 1 ? c->out[1] : NULL;
    tensor_t *yc = c->n_out > 2 ? c->out[2] : NULL;
    if (y) memset(y->data, 0, tensor_nbytes(y));   /* steps past a sequence's end stay 0 */
    for (int64_t d = 0; d < D; d++) {
        int rev = d == 1 || p.reverse_only;
        const double *wd = w + d * G * H * p.in, *rd = r + d * G * H * H;
        const double *bd = b ? b + d * 2 * G * H : NULL, *pd = pp ? pp + d * 3 * H : NULL;
        for (int64_t bi = 0; bi < B; bi++) {
            int64_t st = (p.layout ? bi * D + d : d * B + bi) * H;   /* state offset */
            for (int64_t j = 0; j < H; j++) {
                h[j] = h0 ? h0[st + j] : 0;
                cs[j] = c0 ? c0[st + j] : 0;
            }
            int64_t len = c->n_in > 4 && at[4] ? tensor_get_i64(at[4], bi) : S;
            for (int64_t s = 0; s < len; s++) {
                int64_t t = rev ? len - 1 - s : s;
                const double *xt = x + (p.layout ? bi * S + t : t * B + bi) * p.in;
                rnn_step(&p, p.act + d * p.nact, xt, h, cs, wd, rd, bd, pd, tmp);
                if (!y) continue;
                int64_t yo = (p.layout ? (bi * S + t) * D + d : (t * D + d) * B + bi) * H;
                for (int64_t j = 0; j < H; j++) tensor_set_f64(y, yo + j, h[j]);
            }
            for (int64_t j = 0; j < H; j++) {
                if (yh) tensor_set_f64(yh, st + j, h[j]);
                if (yc) tensor_set_f64(yc, st + j, cs[j]);
            }
        }
    }
    free(x); free(w); free(r); free(b); free(h0); free(c0); free(pp); free(h);
    return 0;
}
