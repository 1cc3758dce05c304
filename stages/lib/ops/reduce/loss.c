/* loss.c — NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (opset 12,
 * 13; REDUCE family, rows in reduce.c).
 *
 * Input [N, C, d1..dk] (log-probabilities, or scores for SCE), target
 * [N, d1..dk] of int32/int64 class indices, optional per-class weight [C].
 * Each element's loss is -input[n, target, d...] * weight[target]; a target
 * equal to ignore_index contributes loss 0 and weight 0. reduction: "none"
 * keeps the [N, d1..dk] losses, "sum" adds them, "mean" (the default)
 * divides the sum by the sum of the weights used (the count of non-ignored
 * elements without weights; all ignored gives 0/0 = NaN, as the reference).
 * Sums are accumulated in double in index order. A target outside [0, C)
 * that is not ignore_index is an error. SCE first takes the log-softmax over
 * axis 1 (softmax.c) and optionally returns it as its second output.
 */
#include <string.h>
#include "ops/reduce/reduce_impl.h"

enum { RED_NONE, RED_SUM, RED_MEAN };

static int loss_reduction(op_ctx_t *c, int *red)
{
    char buf[16];
    const char *s = attr_string(c->node, "reduction", "mean", buf, sizeof buf);
    if (!strcmp(s, "none")) *red = RED_NONE;
    else if (!strcmp(s, "sum")) *red = RED_SUM;
    else if (!strcmp(s, "mean")) *red = RED_MEAN;
    else return op_fail(c, "reduction '%s' is not one of none, sum, mean", s);
    return 0;
}

/* Validates input, target and weight; sets output 0's shape. */
static int loss_shape(op_ctx_t *c)
{
    int red;
    char a[160], b[160];
    if (op_check_inputs(c, 2, 3) || loss_reduction(c, &red)) return -1;
    const tensor_t *x = c->in[0], *t = c->in[1], *w = c->n_in > 2 ? c->in[2] : NULL;
    if (red_check_type(c, 0, x->dtype, 0)) return -1;
    if (t->dtype != DT_INT32 && t->dtype != DT_INT64)
        return op_fail(c, "target must be int32 or int64, got %s", dtype_name(t->dtype));
    int ok = x->ndim >= 2 && t->ndim == x->ndim - 1 && t->dims[0] == x->dims[0];
    for (int d = 1; ok && d < t->ndim; d++) ok = t->dims[d] == x->dims[d + 1];
    if (!ok)
        return op_fail(c, "input %s and target %s do not match ([N, C, d...] and [N, d...])",
                       shape_str(x->ndim, x->dims, a, sizeof a), shape_str(t->ndim, t->dims, b, sizeof b));
    if (w && (w->ndim != 1 || w->dims[0] != x->dims[1] || w->dtype != x->dtype))
        return op_fail(c, "weight must be a %s vector of C = %lld values, got %s %s",
                       dtype_name(x->dtype), (long long)x->dims[1], dtype_name(w->dtype),
                       shape_str(w->ndim, w->dims, a, sizeof a));
    if (red == RED_NONE) return op_set_out(c, 0, x->dtype, t->ndim, t->dims);
    return op_set_out(c, 0, x->dtype, 0, NULL);
}

/* The loss of log-probabilities lp ([N, C, D] in x's type) into out. */
static int nll_core(op_ctx_t *c, const void *lp, void *out)
{
    int red;
    if (loss_reduction(c, &red)) return -1;
    const tensor_t *x = c->in[0], *tg = c->in[1], *wt = c->n_in > 2 ? c->in[2] : NULL;
    int64_t N = x->dims[0], C = x->dims[1], D = 1;
    for (int d = 2; d < x->ndim; d++) D *= x->dims[d];
    int has_ii = node_attr(c->node, "ignore_index") != NULL;
    int64_t ii = attr_int(c->node, "ignore_index", 0);
    const int32_t *t32 = tg->dtype == DT_INT32 ? tg->data : NULL;
    const int64_t *t64 = tg->dtype == DT_INT64 ? tg->data : NULL;
    DISPATCH_FLOAT(x->dtype, {
        const T *p = lp;
        const T *w = wt ? wt->data : NULL;
        T *y = out;
        double sum = 0;
        double wsum = 0;
        for (int64_t n = 0; n < N; n++)
            for (int64_t d = 0; d < D; d++) {
                int64_t e = n * D + d;
                int64_t t = t32 ? t32[e] : t64[e];
                if (has_ii && t == ii) {
                    if (red == RED_NONE) y[e] = 0;
                    continue;
                }
                if (t < 0 || t >= C)
                    return op_fail(c, "target value %lld at element %lld is outside [0, %lld)",
                                   (long long)t, (long long)e, (long long)C);
                T wv = w ? w[t] : (T)1;
                T l = -p[(n * C + t) * D + d] * wv;
                if (red == RED_NONE) {
                    y[e] = l;
                } else {
                    sum += l;
                    wsum += wv;
                }
            }
        if (red == RED_SUM) y[0] = (T)sum;
        else if (red == RED_MEAN) y[0] = (T)(sum / wsum);
    }, return op_fail(c, "unsupported element type %s", dtype_name(x->dtype)))
    return 0;
}

int nllloss_shape(op_ctx_t *c)
{
    return loss_shape(c);
}

int nllloss_run(op_ctx_t *c)
{
    return nll_core(c, c->in[0]->data, c->out[0]->data);
}

int sce_shape(op_ctx_t *c)
{
    if (loss_shape(c)) return -1;
    const tensor_t *x = c->in[0];
    return op_set_out(c, 1, x->dtype, x->ndim, x->dims);
}

int sce_run(op_ctx_t *c)
{
    const tensor_t *x = c->in[0];
    int64_t N = x->dims[0], C = x->dims[1], D = 1;
    for (int d = 2; d < x->ndim; d++) D *= x->dims[d];
    tensor_t *lpo = c->n_out > 1 ? c->out[1] : NULL;
    size_t lp_bytes = lpo ? 0 : tensor_nbytes(x);
    char *mem = c->scratch(c, lp_bytes + softmax_scratch_bytes(D) + 16);
    if (!mem) return op_fail(c, "out of scratch memory");
    void *lp = lpo ? lpo->data : mem;
    void *col = mem + ((lp_bytes + 15) & ~(size_t)15);
    softmax_axis(SM_LOGSOFTMAX, x->dtype, x->data, lp, N, C, D, col);
    return nll_core(c, lp, c->out[0]->data);
}
