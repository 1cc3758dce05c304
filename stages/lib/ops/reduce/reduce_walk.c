/* reduce_walk.c — the Reduce* kernels (reduce.c parses axes and shapes).
 *
 * The input's dims are first collapsed into groups: size-1 dims dropped and
 * neighbouring dims that are both reduced or both kept merged. The input is
 * then walked once in memory order, one innermost group ("run") at a time:
 * a reduced run folds into one output accumulator, a kept run updates a row
 * of consecutive accumulators. Reducing the last axis of a contiguous tensor
 * (LayerNorm's ReduceMean) is thus one tight loop per output element, and
 * reducing a leading axis is a vector update per row.
 *
 * Accumulation order (deterministic, independent of threads): every output
 * combines its terms in increasing input-index order, except that inside one
 * reduced run the terms of Sum/Mean/L1/L2/SumSquare/LogSum/LogSumExp are
 * added into four partial sums by index mod 4, combined as (s0+s1)+(s2+s3)
 * and then added to the output's running total.
 *
 * Accumulators: float inputs and the integer Mean, L2, LogSum and LogSumExp
 * accumulate in double (the reference computes those in floating point);
 * integer Sum, SumSquare, L1 and Prod accumulate in uint64 and wrap like the
 * reference's fixed-width integers (no signed overflow); Max and Min compare
 * in the input type, NaN propagating. Empty reductions give the identity:
 * 0 for sums, 1 for Prod, -inf (lowest) for Max, +inf (highest) for Min,
 * NaN for Mean, -inf for LogSum and LogSumExp.
 */
#include <math.h>
#include <string.h>
#include "ops/reduce/reduce_impl.h"
#include "ops/reduce/reduce_walk_impl.h"
#include "util/pool.h"

typedef enum { R_MAX, R_MIN, R_MEAN, R_SUM, R_PROD, R_L1, R_L2, R_LOGSUM, R_LOGSUMEXP, R_SUMSQ } red_kind_t;

typedef struct red_plan {
    int n;                                 /* collapsed groups, >= 1 */
    int64_t size[TENSOR_MAX_DIMS];
    unsigned char red[TENSOR_MAX_DIMS];
    int64_t ostride[TENSOR_MAX_DIMS];      /* output stride of a kept group, 0 if reduced */
    int64_t in_numel, out_numel, count;    /* count: terms per output */
} red_plan_t;

static int kind_of(const char *op)
{
    static const char *const names[] = {"ReduceMax", "ReduceMin", "ReduceMean", "ReduceSum",
        "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};
    for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
        if (!strcmp(op, names[i])) return i;
    return -1;
}

static void plan_build(const tensor_t *x, const unsigned char *red, red_plan_t *p)
{
    p->n = 0;
    p->count = 1;
    p->in_numel = tensor_numel(x);
    for (int d = 0; d < x->ndim; d++) {
        int64_t s = x->dims[d];
        unsigned char r = red[d];
        if (r) p->count *= s;
        if (s == 1) continue;
        if (p->n && p->red[p->n - 1] == r) {
            p->size[p->n - 1] *= s;
        } else {
            p->size[p->n] = s;
            p->red[p->n] = r;
            p->n++;
        }
    }
    if (p->n == 0) {           /* every dim is 1: one element, one output */
        p->size[0] = 1;
        p->red[0] = 0;
        p->n = 1;
    }
    int64_t s = 1;
    for (int g = p->n - 1; g >= 0; g--) {
        p->ostride[g] = p->red[g] ? 0 : s;
        if (!p->red[g]) s *= p->size[g];
    }
    p->out_numel = s;
}

/* Walks the input run by run: SEG sees i (input offset of the run), o (its
 * output offset), L (run length) and r (run is reduced). */
#define RED_WALK(p, SEG)                                                  \
    do {                                                                  \
        int64_t idx_[TENSOR_MAX_DIMS] = {0};                              \
        int64_t o = 0;                                                    \
        const int last_ = (p)->n - 1;                                     \
        const int64_t L = (p)->size[last_];                               \
        const int r = (p)->red[last_];                                    \
        for (int64_t i = 0; i < (p)->in_numel; i += L) {                  \
            SEG;                                                          \
            for (int d_ = last_ - 1; d_ >= 0; d_--) {                     \
                o += (p)->ostride[d_];                                    \
                if (++idx_[d_] < (p)->size[d_]) break;                    \
                o -= idx_[d_] * (p)->ostride[d_];                         \
                idx_[d_] = 0;                                             \
            }                                                             \
        }                                                                 \
    } while (0)

/* Sum of F(src[j]) over a run in four partial sums (see the header). */
#define SUM4(res, L, F)                                                   \
    do {                                                                  \
        double s_[4];                                                     \
        s_[0] = s_[1] = s_[2] = s_[3] = 0;                                \
        int64_t j_ = 0;                                                   \
        for (; j_ + 4 <= (L); j_ += 4) {                                  \
            s_[0] += F(src[j_]);                                          \
            s_[1] += F(src[j_ + 1]);                                      \
            s_[2] += F(src[j_ + 2]);                                      \
            s_[3] += F(src[j_ + 3]);                                      \
        }                                                                 \
        for (; j_ < (L); j_++) s_[j_ & 3] += F(src[j_]);                  \
        (res) = (s_[0] + s_[1]) + (s_[2] + s_[3]);                        \
    } while (0)

#define F_ID(v) ((double)(v))
#define F_ABS(v) fabs((double)(v))
#define F_SQ(v) ((double)(v) * (double)(v))
#define F_EXP(v) exp((double)(v) - sh)

/* One run of the double walk. acc[] holds an accumulator per output; shift[]
 * the LogSumExp shift per output (TR_EXP only). */
#define SEG_DOUBLE(T)                                                     \
    {                                                                     \
        const T *src = xs + i;                                            \
        double *a = acc + o;                                              \
        const double sh = tr == TR_EXP ? shift[o] : 0;                    \
        double t;                                                         \
        if (r) {                                                          \
            switch (tr) {                                                 \
            case TR_ID: SUM4(t, L, F_ID); *a += t; break;                 \
            case TR_ABS: SUM4(t, L, F_ABS); *a += t; break;               \
            case TR_SQ: SUM4(t, L, F_SQ); *a += t; break;                 \
            case TR_EXP: SUM4(t, L, F_EXP); *a += t; break;               \
            case TR_MUL: for (int64_t j = 0; j < L; j++) *a *= (double)src[j]; break; \
            case TR_MAX:                                                  \
                for (int64_t j = 0; j < L; j++) {                         \
                    double v = (double)src[j];                            \
                    if (v > *a || v != v) *a = v;                         \
                }                                                         \
                break;                                                    \
            }                                                             \
        } else {                                                          \
            const double *shv = shift + o;                                \
            switch (tr) {                                                 \
            case TR_ID: for (int64_t j = 0; j < L; j++) a[j] += (double)src[j]; break; \
            case TR_ABS: for (int64_t j = 0; j < L; j++) a[j] += F_ABS(src[j]); break; \
            case TR_SQ: for (int64_t j = 0; j < L; j++) a[j] += F_SQ(src[j]); break; \
            case TR_EXP:                                                  \
                for (int64_t j = 0; j < L; j++) a[j] += exp((double)src[j] - shv[j]); \
                break;                                                    \
            case TR_MUL: for (int64_t j = 0; j < L; j++) a[j] *= (double)src[j]; break; \
            case TR_MAX:                                                  \
                for (int64_t j = 0; j < L; j++) {                         \
                    double v = (double)src[j];                            \
                    if (v > a[j] || v != v) a[j] = v;                     \
                }                                                         \
                break;                                                    \
            }                                                             \
        }                                                                 \
    }

/* Only the innermost group reduced (a Reduce over the last axes): run q
 * is output q's only run, so runs are independent and the pool takes
 * RUNS_PER_TASK of them per task; each output's terms are the serial
 * walk's, in its order, so the bits are too. */
#define RUNS_PER_TASK 1024
typedef struct runs_job {
    const red_plan_t *p;
    dtype_t dt;
    const void *x;
    red_tr_t tr;
    double *acc;
    const double *shift;
} runs_job_t;

/* SUM4 of n float32 runs of L terms (xs: the first run's first term) added
 * into acc[0, n): the generic set (reduce_walk_impl.h). */
static void sum4_f32_generic(const float *xs, int64_t L, red_tr_t tr, double *acc, int64_t n)
{
    for (int64_t o = 0; o < n; o++) {
        const float *src = xs + o * L;
        double t;
        if (tr == TR_ABS) SUM4(t, L, F_ABS);
        else if (tr == TR_SQ) SUM4(t, L, F_SQ);
        else SUM4(t, L, F_ID);
        acc[o] += t;
    }
}

const reduce_walk_arch_t reduce_walk_arch_generic = {sum4_f32_generic};

/* The one selection point of the walk's vector code (docs/design.md, "ISA dispatch"). */
static const reduce_walk_arch_t *reduce_walk_arch(void)
{
    return isa_pick(&reduce_walk_arch_generic, ISA_TABLE(&reduce_walk_arch_avx2), NULL);
}

static void runs_task(void *ctx, int64_t t)
{
    const runs_job_t *j = ctx;
    const red_plan_t *p = j->p;
    const int64_t L = p->size[p->n - 1], q1 = (t + 1) * RUNS_PER_TASK < p->out_numel ? (t + 1) * RUNS_PER_TASK : p->out_numel;
    const int r = 1;
    const red_tr_t tr = j->tr;
    double *acc = j->acc;
    const double *shift = j->shift;
    DISPATCH_NUMERIC(j->dt, {
        const T *xs = j->x;
        for (int64_t o = t * RUNS_PER_TASK; o < q1; o++) {
            int64_t i = o * L;
            SEG_DOUBLE(T);
        }
    }, (void)0)
}

/* Only the last group reduced, and enough outputs for the pool. */
static int runs_alone(const red_plan_t *p)
{
    return p->red[p->n - 1] && p->count == p->size[p->n - 1] && p->out_numel > RUNS_PER_TASK;
}

static void walk_double(const red_plan_t *p, dtype_t dt, const void *x, red_tr_t tr,
                        double *acc, const double *shift)
{
    if (runs_alone(p)) {
        runs_job_t j = {p, dt, x, tr, acc, shift};
        pool_for((p->out_numel + RUNS_PER_TASK - 1) / RUNS_PER_TASK, runs_task, &j);
        return;
    }
    DISPATCH_NUMERIC(dt, {
        const T *xs = x;
        RED_WALK(p, SEG_DOUBLE(T));
    }, (void)0)
}

/* Lowest / highest value of T (float types: -inf / +inf). */
#define T_IS_FLOAT(T) ((T)0.5 != 0)
#define T_IS_SIGNED(T) ((T)-1 < (T)1)
#define T_HIGHEST(T) (T_IS_FLOAT(T) ? (T)INFINITY : T_IS_SIGNED(T)                     \
        ? (T)((((uint64_t)1) << (8 * sizeof(T) - 1)) - 1) : (T)~(uint64_t)0)
#define T_LOWEST(T) (T_IS_FLOAT(T) ? (T)-INFINITY : T_IS_SIGNED(T) ? (T)(-T_HIGHEST(T) - 1) : (T)0)

/* Integer terms as uint64 (two's complement: wraps like fixed-width ints). */
#define U_ABS(v) (T_IS_SIGNED(T) && (int64_t)(v) < 0 ? (uint64_t)0 - (uint64_t)(v) : (uint64_t)(v))

#define SEG_U64(T)                                                        \
    {                                                                     \
        const T *src = xs + i;                                            \
        uint64_t *a = acc + o;                                            \
        for (int64_t j = 0; j < L; j++) {                                 \
            uint64_t u = (uint64_t)src[j];                                \
            uint64_t *d = r ? a : a + j;                                  \
            switch (tr) {                                                 \
            case TR_ABS: *d += U_ABS(src[j]); break;                      \
            case TR_SQ: *d += u * u; break;                               \
            case TR_MUL: *d *= u; break;                                  \
            default: *d += u; break;                                      \
            }                                                             \
        }                                                                 \
    }

static void walk_u64(const red_plan_t *p, dtype_t dt, const void *x, red_tr_t tr, uint64_t *acc)
{
    DISPATCH_INT(dt, {
        const T *xs = x;
        RED_WALK(p, SEG_U64(T));
    }, (void)0)
}

/* One run of Max (OP >) or Min (OP <); a NaN replaces, and then stays. A
 * reduced run keeps four lanes (the extreme does not depend on the order)
 * and a flag that sends it back for the first NaN. */
#define SEG_MINMAX(OP)                                                    \
    {                                                                     \
        const T *src = xs + i;                                            \
        T *a = acc + o;                                                   \
        if (r) {                                                          \
            T m0 = *a;                                                    \
            T m1 = m0;                                                    \
            T m2 = m0;                                                    \
            T m3 = m0;                                                    \
            int64_t j = 0;                                                \
            int nan = 0;                                                  \
            for (; j + 4 <= L; j += 4) {                                  \
                m0 = src[j] OP m0 ? src[j] : m0;                          \
                m1 = src[j + 1] OP m1 ? src[j + 1] : m1;                  \
                m2 = src[j + 2] OP m2 ? src[j + 2] : m2;                  \
                m3 = src[j + 3] OP m3 ? src[j + 3] : m3;                  \
                nan |= (src[j] != src[j]) | (src[j + 1] != src[j + 1]) |  \
                       (src[j + 2] != src[j + 2]) | (src[j + 3] != src[j + 3]); \
            }                                                             \
            for (; j < L; j++) {                                          \
                m0 = src[j] OP m0 ? src[j] : m0;                          \
                nan |= src[j] != src[j];                                  \
            }                                                             \
            m0 = m1 OP m0 ? m1 : m0;                                      \
            m0 = m2 OP m0 ? m2 : m0;                                      \
            m0 = m3 OP m0 ? m3 : m0;                                      \
            for (j = 0; nan && j < L; j++)                                \
                if (src[j] != src[j]) { m0 = src[j]; nan = 0; }           \
            *a = m0;                                                      \
        } else {                                                          \
            for (int64_t j = 0; j < L; j++)                               \
                if (src[j] OP a[j] || src[j] != src[j]) a[j] = src[j];    \
        }                                                                 \
    }

typedef struct minmax_job {
    const red_plan_t *p;
    dtype_t dt;
    const void *x;
    void *out;
    int is_max;
} minmax_job_t;

/* RUNS_PER_TASK outputs of a reduction over the last group alone, each its
 * run's SEG_MINMAX as the serial walk computes it: the same bits. */
static void minmax_task(void *ctx, int64_t t)
{
    const minmax_job_t *j = ctx;
    const red_plan_t *p = j->p;
    const int64_t L = p->size[p->n - 1], q1 = (t + 1) * RUNS_PER_TASK < p->out_numel ? (t + 1) * RUNS_PER_TASK : p->out_numel;
    const int r = 1;
    DISPATCH_NUMERIC(j->dt, {
        const T *xs = j->x;
        T *acc = j->out;
        const T init = j->is_max ? T_LOWEST(T) : T_HIGHEST(T);
        for (int64_t o = t * RUNS_PER_TASK; o < q1; o++) {
            int64_t i = o * L;
            acc[o] = init;
            if (j->is_max) SEG_MINMAX(>)
            else SEG_MINMAX(<)
        }
    }, (void)0)
}

/* Max / Min in the input type, written straight into the output; on the
 * pool where only the last group is reduced (RT-DETR's decoder: the
 * maximum of 80 scores for each of 8400 anchors). */
static void walk_minmax(const red_plan_t *p, dtype_t dt, const void *x, void *out, int is_max)
{
    if (runs_alone(p)) {
        minmax_job_t j = {p, dt, x, out, is_max};
        pool_for((p->out_numel + RUNS_PER_TASK - 1) / RUNS_PER_TASK, minmax_task, &j);
        return;
    }
    DISPATCH_NUMERIC(dt, {
        const T *xs = x;
        T *acc = out;
        const T init = is_max ? T_LOWEST(T) : T_HIGHEST(T);
        for (int64_t k = 0; k < p->out_numel; k++) acc[k] = init;
        if (is_max) RED_WALK(p, SEG_MINMAX(>));
        else RED_WALK(p, SEG_MINMAX(<));
    }, (void)0)
}

/* Double -> T: floats round; integers truncate and saturate (NaN -> 0). */
static void store_double(dtype_t dt, const double *acc, int64_t n, void *out)
{
    DISPATCH_NUMERIC(dt, {
        T *y = out;
        if (T_IS_FLOAT(T)) {
            for (int64_t k = 0; k < n; k++) y[k] = (T)acc[k];
        } else {
            const double hi = (double)T_HIGHEST(T);
            const double lo = (double)T_LOWEST(T);
            for (int64_t k = 0; k < n; k++) {
                double v = acc[k];
                y[k] = v != v ? (T)0 : v >= hi ? T_HIGHEST(T) : v <= lo ? T_LOWEST(T) : (T)v;
            }
        }
    }, (void)0)
}

static void store_u64(dtype_t dt, const uint64_t *acc, int64_t n, void *out)
{
    /* conversion to a narrower or signed type keeps the low bits (wraps) */
    DISPATCH_INT(dt, {
        T *y = out;
        for (int64_t k = 0; k < n; k++) y[k] = (T)acc[k];
    }, (void)0)
}

static void fill(double *a, int64_t n, double v)
{
    for (int64_t k = 0; k < n; k++) a[k] = v;
}

/* A kind's last step on an output's accumulated double. */
static double finish_kind(int kind, double v, double count, double shift)
{
    switch (kind) {
    case R_MEAN: return v / count;
    case R_L2: return sqrt(v);
    case R_LOGSUM: return log(v);
    case R_LOGSUMEXP: return shift + log(v);
    default: return v;
    }
}

/* float32 Sum, Mean, L1, L2 and SumSquare over the last axes only (runs_alone):
 * each task takes its outputs from the zeroed accumulator to the stored
 * float -- reduce_double's steps (0, + the run's SUM4, the kind's finish,
 * rounding) without its serial passes over the outputs before and after,
 * which kept MSDeformAttn's sums over 12 terms from scaling past a thread. */
typedef struct f32_runs_job {
    const float *x;
    float *y;
    int64_t L, no;
    red_tr_t tr;
    int kind;
    double count;
} f32_runs_job_t;

static void f32_runs_task(void *ctx, int64_t t)
{
    const f32_runs_job_t *j = ctx;
    int64_t o0 = t * RUNS_PER_TASK, n = j->no - o0 < RUNS_PER_TASK ? j->no - o0 : RUNS_PER_TASK;
    double acc[RUNS_PER_TASK];
    for (int64_t o = 0; o < n; o++) acc[o] = 0.0;
    reduce_walk_arch()->sum4_f32(j->x + o0 * j->L, j->L, j->tr, acc, n);
    for (int64_t o = 0; o < n; o++) j->y[o0 + o] = (float)finish_kind(j->kind, acc[o], j->count, 0);
}

/* Sum, Mean, L1, L2, LogSum, LogSumExp, SumSquare, Prod through doubles. */
static int reduce_double(op_ctx_t *c, int kind, const red_plan_t *p)
{
    const tensor_t *x = c->in[0];
    int64_t no = p->out_numel;
    static const red_tr_t tr_of[] = {
        [R_MEAN] = TR_ID, [R_SUM] = TR_ID, [R_PROD] = TR_MUL, [R_L1] = TR_ABS, [R_L2] = TR_SQ,
        [R_LOGSUM] = TR_ID, [R_LOGSUMEXP] = TR_EXP, [R_SUMSQ] = TR_SQ,
    };
    if (x->dtype == DT_FLOAT && runs_alone(p) &&
        (kind == R_SUM || kind == R_MEAN || kind == R_L1 || kind == R_L2 || kind == R_SUMSQ)) {
        f32_runs_job_t j = {x->data, c->out[0]->data, p->size[p->n - 1], no, tr_of[kind], kind, (double)p->count};
        pool_for((no + RUNS_PER_TASK - 1) / RUNS_PER_TASK, f32_runs_task, &j);
        return 0;
    }
    double *acc = c->scratch(c, (size_t)(2 * no + 1) * sizeof(double));
    double *shift = acc + no;
    if (!acc) return op_fail(c, "out of scratch memory");
    if (kind == R_LOGSUMEXP) {
        fill(shift, no, -INFINITY);
        walk_double(p, x->dtype, x->data, TR_MAX, shift, shift);
        for (int64_t k = 0; k < no; k++)
            if (!isfinite(shift[k])) shift[k] = 0;   /* inf/NaN/empty: exp() propagates */
    }
    fill(acc, no, kind == R_PROD ? 1.0 : 0.0);
    walk_double(p, x->dtype, x->data, tr_of[kind], acc, shift);
    for (int64_t k = 0; k < no; k++)
        acc[k] = finish_kind(kind, acc[k], (double)p->count, kind == R_LOGSUMEXP ? shift[k] : 0);
    store_double(x->dtype, acc, no, c->out[0]->data);
    return 0;
}

static int reduce_int(op_ctx_t *c, int kind, const red_plan_t *p)
{
    const tensor_t *x = c->in[0];
    int64_t no = p->out_numel;
    uint64_t *acc = c->scratch(c, (size_t)(no + 1) * sizeof(uint64_t));
    if (!acc) return op_fail(c, "out of scratch memory");
    red_tr_t tr = kind == R_PROD ? TR_MUL : kind == R_L1 ? TR_ABS : kind == R_SUMSQ ? TR_SQ : TR_ID;
    for (int64_t k = 0; k < no; k++) acc[k] = kind == R_PROD;
    walk_u64(p, x->dtype, x->data, tr, acc);
    store_u64(x->dtype, acc, no, c->out[0]->data);
    return 0;
}

int reduce_kernel(op_ctx_t *c, const char *op, const unsigned char *red)
{
    const tensor_t *x = c->in[0];
    int kind = kind_of(op);
    red_plan_t p;
    if (kind < 0) return op_fail(c, "not a Reduce operator");
    plan_build(x, red, &p);
    if (p.out_numel != tensor_numel(c->out[0]))
        return op_fail(c, "internal: output has %lld elements, expected %lld",
                       (long long)tensor_numel(c->out[0]), (long long)p.out_numel);
    if (p.out_numel == 0) return 0;
    if (kind == R_MAX || kind == R_MIN) {
        walk_minmax(&p, x->dtype, x->data, c->out[0]->data, kind == R_MAX);
        return 0;
    }
    int exact_int = !dtype_is_float(x->dtype) &&
        (kind == R_SUM || kind == R_SUMSQ || kind == R_L1 || kind == R_PROD);
    return exact_int ? reduce_int(c, kind, &p) : reduce_double(c, kind, &p);
}
