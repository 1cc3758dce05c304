/* einsum.c — Einsum (opset 12): any equation numpy accepts — explicit or
 * implicit output, ellipsis with broadcasting, repeated labels (diagonals),
 * any number of operands.
 *
 * The general path walks every combination of label values once, with
 * per-operand strides per label (a repeated label sums its strides, which
 * is how diagonals fall out). Two-operand contractions in float32/float64
 * without diagonals or lone summed labels become batched GEMMs: operands
 * are permuted to [batch, M, K] and [batch, K, N] (no copy when already in
 * that order), multiplied with BLAS, and the result permuted to the output. */
#include <stdlib.h>
#include <string.h>
#include "ops/nn/nn_impl.h"

#define ES_MAXIN 16
#define ES_LETTERS 52
#define ES_LABELS (ES_LETTERS + TENSOR_MAX_DIMS)

typedef struct es_plan {
    int nin, nout;                       /* operands, output rank */
    int nl;                              /* labels in use, ids 0..nl-1 after compaction */
    int64_t size[ES_LABELS];             /* size of each label */
    int out[TENSOR_MAX_DIMS];            /* output labels */
    int term[ES_MAXIN][TENSOR_MAX_DIMS]; /* label of each operand dim */
    int rank[ES_MAXIN];
} es_plan_t;

static int letter_id(char ch)
{
    if (ch >= 'a' && ch <= 'z') return ch - 'a';
    if (ch >= 'A' && ch <= 'Z') return 26 + ch - 'A';
    return -1;
}

/* Parses one term into raw label ids (ellipsis dims get ES_LETTERS + k,
 * right-aligned against ell_rank). Returns the term's rank or -1. */
static int parse_term(op_ctx_t *c, const char *s, size_t len, int rank_in, int ell_rank, int *labels,
                      int *n_ell_out)
{
    int n = 0, letters = 0, has_ell = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '.') {
            if (has_ell || i + 2 >= len || s[i + 1] != '.' || s[i + 2] != '.')
                return op_fail(c, "malformed ellipsis in equation");
            has_ell = 1;
            i += 2;
        } else if (letter_id(s[i]) >= 0) {
            letters++;
        } else {
            return op_fail(c, "invalid character '%c' in equation", s[i]);
        }
    }
    int ne = has_ell ? (rank_in >= 0 ? rank_in - letters : ell_rank) : 0;
    if (ne < 0 || (rank_in >= 0 && !has_ell && letters != rank_in))
        return op_fail(c, "equation term '%.*s' does not match an operand of rank %d", (int)len, s, rank_in);
    if (letters + ne > TENSOR_MAX_DIMS) return op_fail(c, "equation term has too many dimensions");
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '.') {
            for (int k = 0; k < ne; k++) labels[n++] = ES_LETTERS + (ell_rank - ne) + k;
            i += 2;
        } else {
            labels[n++] = letter_id(s[i]);
        }
    }
    if (n_ell_out) *n_ell_out = has_ell ? ne : -1;
    return n;
}

static int es_parse(op_ctx_t *c, es_plan_t *p)
{
    char eq[512], buf[512];
    const char *e = attr_string(c->node, "equation", NULL, buf, sizeof buf);
    if (!e) return op_fail(c, "attribute 'equation' is missing");
    size_t k = 0;
    for (const char *q = e; *q; q++)
        if (*q != ' ') eq[k++] = *q;
    eq[k] = 0;
    p->nin = c->n_in;
    if (p->nin < 1 || p->nin > ES_MAXIN) return op_fail(c, "%d operands are not supported", p->nin);
    for (int i = 0; i < p->nin; i++)
        if (!c->in[i]) return op_fail(c, "input %d is missing", i);
    const char *arrow = strstr(eq, "->");
    size_t lhs_len = arrow ? (size_t)(arrow - eq) : strlen(eq);

    /* operands: first pass finds the ellipsis rank (max over operands) */
    int ell_rank = 0, ell_seen = 0;
    const char *t = eq;
    for (int i = 0; i < p->nin; i++) {
        const char *end = memchr(t, ',', lhs_len - (size_t)(t - eq));
        if (!end) end = eq + lhs_len;
        if (i == p->nin - 1 && end != eq + lhs_len) return op_fail(c, "equation has more terms than inputs");
        if (i < p->nin - 1 && end == eq + lhs_len) return op_fail(c, "equation has fewer terms than inputs");
        int labels[TENSOR_MAX_DIMS * 2], ne;
        int r = parse_term(c, t, (size_t)(end - t), c->in[i]->ndim, 0, labels, &ne);
        if (r < 0) return -1;
        if (ne >= 0) {
            ell_seen = 1;
            if (ne > ell_rank) ell_rank = ne;
        }
        t = end + 1;
    }
    /* second pass: labels with the ellipsis right-aligned */
    t = eq;
    for (int i = 0; i < p->nin; i++) {
        const char *end = memchr(t, ',', lhs_len - (size_t)(t - eq));
        if (!end) end = eq + lhs_len;
        p->rank[i] = parse_term(c, t, (size_t)(end - t), c->in[i]->ndim, ell_rank, p->term[i], NULL);
        if (p->rank[i] < 0) return -1;
        t = end + 1;
    }
    int count[ES_LABELS] = {0};
    for (int l = 0; l < ES_LABELS; l++) p->size[l] = -1;
    for (int i = 0; i < p->nin; i++)
        for (int d = 0; d < p->rank[i]; d++) {
            int l = p->term[i][d];
            int64_t sz = c->in[i]->dims[d];
            count[l]++;
            if (p->size[l] < 0 || p->size[l] == 1) p->size[l] = sz;
            else if (sz != p->size[l] && sz != 1)
                return op_fail(c, "label sizes disagree (%lld and %lld)", (long long)p->size[l], (long long)sz);
        }
    /* output labels */
    if (arrow) {
        int ne;
        const char *rhs = arrow + 2;
        p->nout = parse_term(c, rhs, strlen(rhs), -1, ell_rank, p->out, &ne);
        if (p->nout < 0) return -1;
        if (ne < 0 && ell_seen && ell_rank > 0) return op_fail(c, "the output must keep the ellipsis dimensions");
        for (int d = 0; d < p->nout; d++) {
            if (count[p->out[d]] == 0) return op_fail(c, "output label does not appear in any input");
            for (int d2 = 0; d2 < d; d2++)
                if (p->out[d2] == p->out[d]) return op_fail(c, "output label repeated");
        }
    } else {
        p->nout = 0;
        for (int k2 = 0; k2 < ell_rank; k2++) p->out[p->nout++] = ES_LETTERS + k2;
        /* numpy's implicit order: labels seen once, sorted by character (A-Z before a-z) */
        for (int l = 26; l < 52; l++)
            if (count[l] == 1) p->out[p->nout++] = l;
        for (int l = 0; l < 26; l++)
            if (count[l] == 1) p->out[p->nout++] = l;
        if (p->nout > TENSOR_MAX_DIMS) return op_fail(c, "output has too many dimensions");
    }
    return 0;
}

int einsum_shape(op_ctx_t *c)
{
    es_plan_t p;
    if (es_parse(c, &p)) return -1;
    dtype_t dt = c->in[0]->dtype;
    for (int i = 1; i < p.nin; i++)
        if (c->in[i]->dtype != dt) return op_fail(c, "input types differ");
    if (!dtype_is_float(dt) && !dtype_is_signed_int(dt) && !dtype_is_unsigned_int(dt))
        return op_fail(c, "type %s is not supported", dtype_name(dt));
    int64_t dims[TENSOR_MAX_DIMS];
    for (int d = 0; d < p.nout; d++) dims[d] = p.size[p.out[d]];
    return op_set_out(c, 0, dt, p.nout, dims);
}

/* Per-operand element stride of each label (0 where absent or broadcast). */
static void label_strides(const es_plan_t *p, const tensor_t *t, int i, int64_t *ls)
{
    memset(ls, 0, ES_LABELS * sizeof *ls);
    int64_t s = 1;
    for (int d = p->rank[i] - 1; d >= 0; d--) {
        if (t->dims[d] != 1 || p->size[p->term[i][d]] == 1) ls[p->term[i][d]] += s;
        s *= t->dims[d];
    }
}

/* ---------------------------------------------------------- general path */

typedef struct es_walk {
    int nl, nred;
    int lab[ES_LABELS];                  /* output labels first, then reduced ones */
    int64_t size[ES_LABELS];
    int64_t str[ES_MAXIN][ES_LABELS];    /* per operand, in walk order */
} es_walk_t;

static void es_walk_init(const es_plan_t *p, const tensor_t *const *in, es_walk_t *w)
{
    int used[ES_LABELS] = {0};
    w->nl = 0;
    for (int d = 0; d < p->nout; d++) {
        w->lab[w->nl++] = p->out[d];
        used[p->out[d]] = 1;
    }
    for (int i = 0; i < p->nin; i++)
        for (int d = 0; d < p->rank[i]; d++)
            if (!used[p->term[i][d]]) {
                used[p->term[i][d]] = 1;
                w->lab[w->nl++] = p->term[i][d];
            }
    w->nred = w->nl - p->nout;
    for (int i = 0; i < p->nin; i++) {
        int64_t ls[ES_LABELS];
        label_strides(p, in[i], i, ls);
        for (int k = 0; k < w->nl; k++) w->str[i][k] = ls[w->lab[k]];
    }
    for (int k = 0; k < w->nl; k++) w->size[k] = p->size[w->lab[k]];
}

/* Advances the walk's labels [from, to) like an odometer, keeping each
 * operand's element offset in step. */
static void es_step(const es_walk_t *w, int nin, int64_t *idx, int64_t *off, int from, int to)
{
    for (int k = to - 1; k >= from; k--) {
        for (int i = 0; i < nin; i++) off[i] += w->str[i][k];
        if (++idx[k] < w->size[k]) return;
        for (int i = 0; i < nin; i++) off[i] -= w->str[i][k] * idx[k];
        idx[k] = 0;
    }
}

/* ACC is the accumulator type (double for floats, uint64_t for integers). */
#define DEFINE_ES_GENERAL(NAME, T, ACC)                                                  \
    static void NAME(const es_plan_t *p, const es_walk_t *w, const tensor_t *const *in, T *y) \
    {                                                                                    \
        int64_t nout = 1, nred = 1, idx[ES_LABELS] = {0}, off[ES_MAXIN] = {0};           \
        int no = p->nout;                                                                \
        for (int k = 0; k < no; k++) nout *= w->size[k];                                 \
        for (int k = no; k < w->nl; k++) nred *= w->size[k];                             \
        for (int64_t o = 0; o < nout; o++) {                                             \
            ACC acc = 0;                                                                 \
            for (int64_t r = 0; r < nred; r++) {                                         \
                ACC prod = 1;                                                            \
                for (int i = 0; i < p->nin; i++) prod *= (ACC)((const T *)in[i]->data)[off[i]]; \
                acc += prod;                                                             \
                es_step(w, p->nin, idx, off, no, w->nl);                                 \
            }                                                                            \
            y[o] = (T)acc;                                                               \
            es_step(w, p->nin, idx, off, 0, no);                                         \
        }                                                                                \
    }

DEFINE_ES_GENERAL(es_general_f, float, double)
DEFINE_ES_GENERAL(es_general_d, double, double)
DEFINE_ES_GENERAL(es_general_i8, int8_t, uint64_t)
DEFINE_ES_GENERAL(es_general_i16, int16_t, uint64_t)
DEFINE_ES_GENERAL(es_general_i32, int32_t, uint64_t)
DEFINE_ES_GENERAL(es_general_i64, int64_t, uint64_t)
DEFINE_ES_GENERAL(es_general_u8, uint8_t, uint64_t)
DEFINE_ES_GENERAL(es_general_u16, uint16_t, uint64_t)
DEFINE_ES_GENERAL(es_general_u32, uint32_t, uint64_t)
DEFINE_ES_GENERAL(es_general_u64, uint64_t, uint64_t)

static int es_general(op_ctx_t *c, const es_plan_t *p)
{
    es_walk_t w;
    es_walk_init(p, c->in, &w);
    void *y = c->out[0]->data;
    switch (c->in[0]->dtype) {
    case DT_FLOAT: es_general_f(p, &w, c->in, y); break;
    case DT_DOUBLE: es_general_d(p, &w, c->in, y); break;
    case DT_INT8: es_general_i8(p, &w, c->in, y); break;
    case DT_INT16: es_general_i16(p, &w, c->in, y); break;
    case DT_INT32: es_general_i32(p, &w, c->in, y); break;
    case DT_INT64: es_general_i64(p, &w, c->in, y); break;
    case DT_UINT8: es_general_u8(p, &w, c->in, y); break;
    case DT_UINT16: es_general_u16(p, &w, c->in, y); break;
    case DT_UINT32: es_general_u32(p, &w, c->in, y); break;
    case DT_UINT64: es_general_u64(p, &w, c->in, y); break;
    default: return op_fail(c, "type %s is not supported", dtype_name(c->in[0]->dtype));
    }
    return 0;
}

/* ------------------------------------------------------------- GEMM path */

/* Copies src (label strides ls) into dst laid out by labels[0..n) in
 * order; returns 1 if src already has that layout (nothing copied). */
static int es_gather(const void *src, const int64_t *ls, const int *labels, int n, const int64_t *size,
                     size_t es, void *dst, int check_only)
{
    int64_t s = 1, total = 1;
    int same = 1;
    for (int k = n - 1; k >= 0; k--) {
        if (size[labels[k]] != 1 && ls[labels[k]] != s) same = 0;
        s *= size[labels[k]];
    }
    total = s;
    if (same || check_only) return same;
    int64_t idx[ES_LABELS] = {0}, off = 0;
    for (int64_t o = 0; o < total; o++) {
        memcpy((char *)dst + o * es, (const char *)src + off * es, es);
        for (int k = n - 1; k >= 0; k--) {
            off += ls[labels[k]];
            if (++idx[k] < size[labels[k]]) break;
            off -= ls[labels[k]] * idx[k];
            idx[k] = 0;
        }
    }
    return 0;
}

static int es_try_gemm(op_ctx_t *c, const es_plan_t *p)
{
    dtype_t dt = c->in[0]->dtype;
    if (p->nin != 2 || (dt != DT_FLOAT && dt != DT_DOUBLE)) return 1;
    int in_a[ES_LABELS] = {0}, in_b[ES_LABELS] = {0}, in_o[ES_LABELS] = {0};
    for (int i = 0; i < 2; i++)
        for (int d = 0; d < p->rank[i]; d++) {
            int *cnt = i ? in_b : in_a;
            if (cnt[p->term[i][d]]++) return 1;                         /* diagonal */
            if (c->in[i]->dims[d] != p->size[p->term[i][d]]) return 1;  /* broadcast */
        }
    for (int d = 0; d < p->nout; d++) in_o[p->out[d]] = 1;
    int bl[ES_LABELS], ml[ES_LABELS], nl[ES_LABELS], kl[ES_LABELS], nb = 0, nm = 0, nn = 0, nk = 0;
    /* batch and M/N labels in output order; K in the order of A */
    for (int d = 0; d < p->nout; d++) {
        int l = p->out[d];
        if (in_a[l] && in_b[l]) bl[nb++] = l;
        else if (in_a[l]) ml[nm++] = l;
        else nl[nn++] = l;
    }
    for (int d = 0; d < p->rank[0]; d++) {
        int l = p->term[0][d];
        if (!in_o[l]) {
            if (!in_b[l]) return 1;                                     /* summed in A alone */
            kl[nk++] = l;
        }
    }
    for (int d = 0; d < p->rank[1]; d++)
        if (!in_o[p->term[1][d]] && !in_a[p->term[1][d]]) return 1;     /* summed in B alone */

    int64_t B = 1, M = 1, N = 1, K = 1;
    for (int i = 0; i < nb; i++) B *= p->size[bl[i]];
    for (int i = 0; i < nm; i++) M *= p->size[ml[i]];
    for (int i = 0; i < nn; i++) N *= p->size[nl[i]];
    for (int i = 0; i < nk; i++) K *= p->size[kl[i]];
    int la[ES_LABELS], lb[ES_LABELS], lc[ES_LABELS], na = 0, nbb = 0, nc = 0;
    for (int i = 0; i < nb; i++) la[na++] = lb[nbb++] = lc[nc++] = bl[i];
    for (int i = 0; i < nm; i++) la[na++] = lc[nc++] = ml[i];
    for (int i = 0; i < nk; i++) la[na++] = kl[i];
    for (int i = 0; i < nk; i++) lb[nbb++] = kl[i];
    for (int i = 0; i < nn; i++) lb[nbb++] = lc[nc++] = nl[i];

    size_t es = dtype_size(dt);
    int64_t lsa[ES_LABELS], lsb[ES_LABELS], lsc[ES_LABELS];
    label_strides(p, c->in[0], 0, lsa);
    label_strides(p, c->in[1], 1, lsb);
    /* output strides by label, to tell whether C's layout is the output's */
    memset(lsc, 0, sizeof lsc);
    int64_t s = 1;
    for (int d = p->nout - 1; d >= 0; d--) {
        lsc[p->out[d]] = s;
        s *= p->size[p->out[d]];
    }
    int a_ok = es_gather(NULL, lsa, la, na, p->size, es, NULL, 1);
    int b_ok = es_gather(NULL, lsb, lb, nbb, p->size, es, NULL, 1);
    int c_ok = es_gather(NULL, lsc, lc, nc, p->size, es, NULL, 1);
    size_t bytes = ((a_ok ? 0 : B * M * K) + (b_ok ? 0 : B * K * N) + (c_ok ? 0 : B * M * N)) * es;
    void *owned;
    char *mem = nn_scratch(c, bytes, &owned), *at = mem;
    const char *A = c->in[0]->data, *Bm = c->in[1]->data;
    char *C = c->out[0]->data;
    if (!a_ok) {
        es_gather(A, lsa, la, na, p->size, es, at, 0);
        A = at;
        at += B * M * K * es;
    }
    if (!b_ok) {
        es_gather(Bm, lsb, lb, nbb, p->size, es, at, 0);
        Bm = at;
        at += B * K * N * es;
    }
    char *Cw = c_ok ? C : at;
    int rc = 0;
    for (int64_t b = 0; b < B && !rc; b++)
        rc = nn_gemm(dt, 0, 0, M, N, K, 1.0, A + b * M * K * es, K, Bm + b * K * N * es, N, 0.0,
                     Cw + b * M * N * es, N);
    if (!rc && !c_ok) {
        /* C holds labels lc in order; scatter into the output's layout */
        int64_t lsw[ES_LABELS];
        memset(lsw, 0, sizeof lsw);
        s = 1;
        for (int k = nc - 1; k >= 0; k--) {
            lsw[lc[k]] = s;
            s *= p->size[lc[k]];
        }
        es_gather(Cw, lsw, p->out, p->nout, p->size, es, C, 0);
    }
    free(owned);
    if (rc) return op_fail(c, "operands too large for BLAS");
    return 0;
}

int einsum_run(op_ctx_t *c)
{
    es_plan_t p;
    if (es_parse(c, &p)) return -1;
    if (tensor_numel(c->out[0]) == 0) return 0;
    int rc = es_try_gemm(c, &p);
    if (rc <= 0) return rc;
    return es_general(c, &p);
}
