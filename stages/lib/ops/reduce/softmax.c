/* softmax.c — Softmax, LogSoftmax and Hardmax (REDUCE family; rows in
 * reduce.c), and the log-softmax core SoftmaxCrossEntropyLoss reuses.
 *
 * The opset matters (ONNX changed the semantics at 13):
 *  - opset < 13: the input is coerced to 2-D [prod(dims[:axis]),
 *    prod(dims[axis:])] and each row of that matrix is normalised; the
 *    default axis is 1. So axis=1 on [N,C,H,W] normalises over C*H*W values.
 *  - opset >= 13: normalised along the single axis `axis`, default -1.
 * Both reduce to an [outer, n, inner] layout (inner = 1 before 13).
 *
 * Numerics: the row maximum is subtracted before exp (stable for large
 * inputs); exp is taken in the element type like the reference, the sum is
 * accumulated in double, and LogSoftmax computes (x - max) - log(sum) in
 * double. Hardmax sets 1 at the first maximum (numpy argmax: a NaN counts
 * as the maximum).
 *
 * float32 runs on vmath.h: contiguous rows (the last axis, attention's
 * case) take vectorised max, exp and sum (the sum in a fixed order of eight
 * double partials) and are spread over the pool a block of rows per task;
 * other layouts take vmath's exp a row of the block at a time and sum each
 * column in index order. Every row is computed whole by one task, so the
 * thread count never changes a result; neither does the CPU (vmath.h).
 * float64 and Hardmax keep the plain loops.
 */
#include <math.h>
#include <string.h>
#include "ops/reduce/reduce_impl.h"
#include "ops/elementwise/vmath.h"
#include "util/pool.h"

#define EXP_T(T, v) (sizeof(T) == sizeof(float) ? (T)expf((float)(v)) : (T)exp((double)(v)))
#define GREATER_OR_NAN(v, m) ((v) > (m) || (v) != (v))

static int softmax_layout(op_ctx_t *c, int64_t *outer, int64_t *n, int64_t *inner)
{
    const tensor_t *x = c->in[0];
    int r = x->ndim;
    if (c->node->opset >= 13) {
        int a = op_axis(c, attr_int(c->node, "axis", -1), r);
        if (a < 0) return -1;
        red_split_axis(x, a, outer, n, inner);
        return 0;
    }
    int64_t a = attr_int(c->node, "axis", 1);
    if (a < 0) a += r;
    if (a < 0 || a > r)
        return op_fail(c, "axis %lld out of range for rank %d",
                       (long long)attr_int(c->node, "axis", 1), r);
    *outer = 1;
    *n = 1;
    *inner = 1;
    for (int d = 0; d < r; d++) {
        if (d < a) *outer *= x->dims[d];
        else *n *= x->dims[d];
    }
    return 0;
}

int softmax_shape(op_ctx_t *c)
{
    int64_t outer, n, inner;
    if (op_check_inputs(c, 1, 1)) return -1;
    if (red_check_type(c, 0, c->in[0]->dtype, 0)) return -1;
    if (softmax_layout(c, &outer, &n, &inner)) return -1;
    return shape_same_as_input0(c);
}

size_t softmax_scratch_bytes(int64_t inner)
{
    return (size_t)inner * (sizeof(double) + 2 * sizeof(int64_t)) + 16;
}

/* One row of n contiguous elements (inner == 1). */
#define SOFTMAX_ROW(T)                                                        \
    {                                                                         \
        T m = xr[0];                                                          \
        int64_t mi = 0;                                                       \
        for (int64_t k = 1; k < n; k++)                                       \
            if (m == m && GREATER_OR_NAN(xr[k], m)) { m = xr[k]; mi = k; }    \
        double s = 0;                                                         \
        switch (kind) {                                                       \
        case SM_SOFTMAX:                                                      \
            for (int64_t k = 0; k < n; k++) {                                 \
                T e = EXP_T(T, xr[k] - m);                                    \
                yr[k] = e;                                                    \
                s += e;                                                       \
            }                                                                 \
            s = 1.0 / s;                                                      \
            for (int64_t k = 0; k < n; k++) yr[k] = (T)(yr[k] * s);           \
            break;                                                            \
        case SM_LOGSOFTMAX:                                                   \
            for (int64_t k = 0; k < n; k++) s += EXP_T(T, xr[k] - m);         \
            s = log(s);                                                       \
            for (int64_t k = 0; k < n; k++)                                   \
                yr[k] = (T)(((double)xr[k] - (double)m) - s);                 \
            break;                                                            \
        default:                                                              \
            for (int64_t k = 0; k < n; k++) yr[k] = 0;                        \
            yr[mi] = 1;                                                       \
            break;                                                            \
        }                                                                     \
    }

/* One [n, inner] block, processed a row at a time so memory is read in
 * order; per-column max, sum and argmax live in col. */
#define SOFTMAX_BLOCK(T)                                                      \
    {                                                                         \
        double *sum = col;                                                    \
        int64_t *mi = (int64_t *)(sum + inner);                               \
        T *m = (T *)(mi + inner);                                             \
        memcpy(m, xb, (size_t)inner * sizeof(T));                             \
        for (int64_t i = 0; i < inner; i++) { mi[i] = 0; sum[i] = 0; }        \
        for (int64_t k = 1; k < n; k++)                                       \
            for (int64_t i = 0; i < inner; i++) {                             \
                T v = xb[k * inner + i];                                      \
                if (m[i] == m[i] && GREATER_OR_NAN(v, m[i])) { m[i] = v; mi[i] = k; } \
            }                                                                 \
        switch (kind) {                                                       \
        case SM_SOFTMAX:                                                      \
            for (int64_t k = 0; k < n; k++)                                   \
                for (int64_t i = 0; i < inner; i++) {                         \
                    T e = EXP_T(T, xb[k * inner + i] - m[i]);                 \
                    yb[k * inner + i] = e;                                    \
                    sum[i] += e;                                              \
                }                                                             \
            for (int64_t i = 0; i < inner; i++) sum[i] = 1.0 / sum[i];        \
            for (int64_t k = 0; k < n; k++)                                   \
                for (int64_t i = 0; i < inner; i++)                           \
                    yb[k * inner + i] = (T)(yb[k * inner + i] * sum[i]);      \
            break;                                                            \
        case SM_LOGSOFTMAX:                                                   \
            for (int64_t k = 0; k < n; k++)                                   \
                for (int64_t i = 0; i < inner; i++)                           \
                    sum[i] += EXP_T(T, xb[k * inner + i] - m[i]);             \
            for (int64_t i = 0; i < inner; i++) sum[i] = log(sum[i]);         \
            for (int64_t k = 0; k < n; k++)                                   \
                for (int64_t i = 0; i < inner; i++)                           \
                    yb[k * inner + i] =                                       \
                        (T)(((double)xb[k * inner + i] - (double)m[i]) - sum[i]); \
            break;                                                            \
        default:                                                              \
            for (int64_t k = 0; k < n * inner; k++) yb[k] = 0;                \
            for (int64_t i = 0; i < inner; i++) yb[mi[i] * inner + i] = 1;    \
            break;                                                            \
        }                                                                     \
    }

/* float32 Softmax / LogSoftmax of one contiguous row. */
static void row_f32(int kind, const float *xr, float *yr, int64_t n)
{
    float m = vm_max_f32(xr, n);
    if (kind == SM_SOFTMAX) {
        double s = vm_exp_shift_sum_f32(xr, m, yr, n);
        if (s == s) {
            vm_scale_f32(yr, n, 1.0 / s);
        } else {
            /* a NaN in the row, or inf - inf: all NaN, one NaN for every CPU */
            for (int64_t k = 0; k < n; k++) yr[k] = NAN;
        }
        return;
    }
    double l = log(vm_exp_shift_sum_f32(xr, m, NULL, n));
    for (int64_t k = 0; k < n; k++) yr[k] = (float)(((double)xr[k] - (double)m) - l);
}

/* float32 Softmax / LogSoftmax of one [n, inner] block: y's rows hold
 * x - max, then exp of it, while sum gathers each column in index order. */
static void block_f32(int kind, const float *xb, float *yb, int64_t n, int64_t inner, void *col)
{
    double *sum = col;
    float *m = (float *)(sum + inner);
    memcpy(m, xb, (size_t)inner * sizeof *m);
    for (int64_t i = 0; i < inner; i++) sum[i] = 0;
    for (int64_t k = 1; k < n; k++) vm_max_acc_f32(m, xb + k * inner, inner);
    for (int64_t k = 0; k < n; k++) {
        const float *xr = xb + k * inner;
        float *yr = yb + k * inner;
        for (int64_t i = 0; i < inner; i++) yr[i] = xr[i] - m[i];
        vm_exp_f32(yr, yr, inner);
        for (int64_t i = 0; i < inner; i++) sum[i] += yr[i];
    }
    if (kind == SM_SOFTMAX) {
        for (int64_t i = 0; i < inner; i++) sum[i] = 1.0 / sum[i];
        for (int64_t k = 0; k < n; k++)
            for (int64_t i = 0; i < inner; i++) yb[k * inner + i] = (float)(yb[k * inner + i] * sum[i]);
        return;
    }
    for (int64_t i = 0; i < inner; i++) sum[i] = log(sum[i]);
    for (int64_t k = 0; k < n; k++)
        for (int64_t i = 0; i < inner; i++)
            yb[k * inner + i] = (float)(((double)xb[k * inner + i] - (double)m[i]) - sum[i]);
}

void softmax_axis(int kind, dtype_t dt, const void *x, void *y,
                  int64_t outer, int64_t n, int64_t inner, void *col)
{
    if (n == 0 || inner == 0) return;
    if (dt == DT_FLOAT && kind != SM_HARDMAX) {
        for (int64_t o = 0; o < outer; o++) {
            const float *xo = (const float *)x + o * n * inner;
            float *yo = (float *)y + o * n * inner;
            if (inner == 1) row_f32(kind, xo, yo, n);
            else block_f32(kind, xo, yo, n, inner, col);
        }
        return;
    }
    DISPATCH_FLOAT(dt, {
        const T *xs = x;
        T *ys = y;
        for (int64_t o = 0; o < outer; o++) {
            if (inner == 1) {
                const T *xr = xs + o * n;
                T *yr = ys + o * n;
                SOFTMAX_ROW(T);
            } else {
                const T *xb = xs + o * n * inner;
                T *yb = ys + o * n * inner;
                SOFTMAX_BLOCK(T);
            }
        }
    }, (void)0)
}

/* Contiguous float32 rows spread over the pool, ROWS_WORK elements a task
 * (16384 left RT-DETR's decoder 2 tasks for its 2,400 rows of 12 weights,
 * as slow at 16 threads as at one; a task of 2048 still costs far more
 * than the pool's hand-out). */
#define ROWS_WORK 2048
typedef struct rows_job {
    int kind;
    const float *x;
    float *y;
    int64_t rows, n, per_task;
} rows_job_t;

static void rows_task(void *arg, int64_t t)
{
    const rows_job_t *j = arg;
    int64_t r0 = t * j->per_task, r1 = r0 + j->per_task < j->rows ? r0 + j->per_task : j->rows;
    for (int64_t r = r0; r < r1; r++) row_f32(j->kind, j->x + r * j->n, j->y + r * j->n, j->n);
}

int softmax_run(op_ctx_t *c)
{
    int64_t outer, n, inner;
    if (softmax_layout(c, &outer, &n, &inner)) return -1;
    const char *op = c->node->op_type;
    int kind = !strcmp(op, "Softmax") ? SM_SOFTMAX : !strcmp(op, "LogSoftmax") ? SM_LOGSOFTMAX
                                                                             : SM_HARDMAX;
    if (c->in[0]->dtype == DT_FLOAT && kind != SM_HARDMAX && inner == 1 && n > 0 && outer > 1) {
        rows_job_t j = {kind, c->in[0]->data, c->out[0]->data, outer, n, 0};
        j.per_task = n >= ROWS_WORK ? 1 : ROWS_WORK / n;
        pool_for((outer + j.per_task - 1) / j.per_task, rows_task, &j);
        return 0;
    }
    void *col = NULL;
    if (inner > 1 && !(col = c->scratch(c, softmax_scratch_bytes(inner))))
        return op_fail(c, "out of scratch memory");
    softmax_axis(kind, c->in[0]->dtype, c->in[0]->data, c->out[0]->data, outer, n, inner, col);
    return 0;
}
