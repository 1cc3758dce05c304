/* sequence.c — the SEQUENCE operator family: the sequence ops exporters emit
 * around control flow (SequenceEmpty, SequenceConstruct, SequenceInsert,
 * SequenceErase, SequenceAt, SequenceLength, SplitToSequence,
 * ConcatFromSequence), and the rows of the control-flow ops If, Loop and Scan,
 * which the executor runs itself (engine/control.c): their subgraphs need
 * the executor, not a kernel.
 *
 * A sequence is a DT_SEQUENCE tensor_t holding a tensor_seq_t (tensor.h). Its
 * contents exist only at run time, so every op here reports OP_DYNAMIC at
 * build time and none is folded. */
#include <stdlib.h>
#include <string.h>
#include "ops/ops.h"

static int set_seq_out(op_ctx_t *c, int i)
{
    if (i >= c->n_out || !c->out[i]) return 0;
    c->out[i]->dtype = DT_SEQUENCE;
    c->out[i]->ndim = 0;
    return 0;
}

/* The sequence input i with its data (OP_DYNAMIC at build time). */
static int seq_in(op_ctx_t *c, int i, const tensor_seq_t **s)
{
    const tensor_t *t = i < c->n_in ? c->in[i] : NULL;
    if (!t) return op_fail(c, "required input %d is missing", i);
    if (t->dtype != DT_SEQUENCE) return op_fail(c, "input %d must be a sequence, got a %s tensor", i, dtype_name(t->dtype));
    if (!t->data) return OP_DYNAMIC;
    *s = t->data;
    return 0;
}

/* An optional position input: a scalar int32/int64; dflt when omitted. */
static int seq_pos(op_ctx_t *c, int i, int64_t dflt, int64_t *pos)
{
    *pos = dflt;
    if (i >= c->n_in || !c->in[i]) return 0;
    const tensor_t *p = c->in[i];
    if (!p->data) return OP_DYNAMIC;
    if (tensor_numel(p) != 1 || (p->dtype != DT_INT64 && p->dtype != DT_INT32))
        return op_fail(c, "position must be one int32/int64 value");
    *pos = tensor_get_i64(p, 0);
    return 0;
}

static int any_input_dynamic(op_ctx_t *c)
{
    for (int i = 0; i < c->n_in; i++)
        if (c->in[i] && !c->in[i]->data) return 1;
    return 0;
}

/* Shape function of every op whose output 0 is a sequence. */
static int shape_seq_out(op_ctx_t *c)
{
    if (any_input_dynamic(c)) return OP_DYNAMIC;
    return set_seq_out(c, 0);
}

static int run_empty(op_ctx_t *c)
{
    tensor_seq(c->out[0])->elem = (dtype_t)attr_int(c->node, "dtype", DT_FLOAT);
    return 0;
}

static int run_construct(op_ctx_t *c)
{
    tensor_seq_t *o = tensor_seq(c->out[0]);
    for (int i = 0; i < c->n_in; i++)
        if (!c->in[i] || tensor_seq_insert(o, c->in[i], o->n, c->err))
            return perr_prefix(c->err, "node '%s' (SequenceConstruct): input %d: ", c->node->name, i);
    return 0;
}

static int copy_seq(op_ctx_t *c, const tensor_seq_t *s, tensor_seq_t *o)
{
    o->elem = s->elem;
    for (int i = 0; i < s->n; i++)
        if (tensor_seq_insert(o, &s->items[i], o->n, c->err)) return -1;
    return 0;
}

static int run_insert(op_ctx_t *c)
{
    const tensor_seq_t *s = NULL;
    int64_t pos;
    if (seq_in(c, 0, &s) || op_check_inputs(c, 2, 3)) return -1;
    if (seq_pos(c, 2, s->n, &pos)) return -1;
    tensor_seq_t *o = tensor_seq(c->out[0]);
    if (copy_seq(c, s, o) || tensor_seq_insert(o, c->in[1], pos, c->err))
        return perr_prefix(c->err, "node '%s' (SequenceInsert): ", c->node->name);
    return 0;
}

/* A position into a sequence of n (negative from the end), checked. */
static int seq_index(op_ctx_t *c, int64_t pos, int n, int *k)
{
    if (pos < -n || pos >= n) return op_fail(c, "position %lld is outside a sequence of %d", (long long)pos, n);
    *k = (int)(pos < 0 ? pos + n : pos);
    return 0;
}

static int run_erase(op_ctx_t *c)
{
    const tensor_seq_t *s = NULL;
    int64_t pos;
    int k = 0;
    if (seq_in(c, 0, &s) || seq_pos(c, 1, -1, &pos) || seq_index(c, pos, s->n, &k)) return -1;
    tensor_seq_t *o = tensor_seq(c->out[0]);
    o->elem = s->elem;
    for (int i = 0; i < s->n; i++)
        if (i != k && tensor_seq_insert(o, &s->items[i], o->n, c->err)) return -1;
    return 0;
}

static int shape_at(op_ctx_t *c)
{
    const tensor_seq_t *s = NULL;
    int64_t pos;
    int k = 0, r = seq_in(c, 0, &s);
    if (r) return r;
    if ((r = seq_pos(c, 1, 0, &pos))) return r;
    if (seq_index(c, pos, s->n, &k)) return -1;
    const tensor_t *x = &s->items[k];
    c->out[0]->dtype = x->dtype;
    c->out[0]->ndim = x->ndim;
    memcpy(c->out[0]->dims, x->dims, sizeof x->dims);
    return 0;
}

static int run_at(op_ctx_t *c)
{
    const tensor_seq_t *s = NULL;
    int64_t pos;
    int k = 0;
    if (seq_in(c, 0, &s) || seq_pos(c, 1, 0, &pos) || seq_index(c, pos, s->n, &k)) return -1;
    size_t n = tensor_nbytes(&s->items[k]);
    if (n) memcpy(c->out[0]->data, s->items[k].data, n);
    return 0;
}

static int shape_length(op_ctx_t *c)
{
    if (op_check_inputs(c, 1, 1)) return -1;
    return op_set_out(c, 0, DT_INT64, 0, NULL);
}

static int run_length(op_ctx_t *c)
{
    const tensor_seq_t *s = NULL;
    if (seq_in(c, 0, &s)) return -1;
    *(int64_t *)c->out[0]->data = s->n;
    return 0;
}

static int run_split_to_sequence(op_ctx_t *c)
{
    if (op_check_inputs(c, 1, 2)) return -1;
    const tensor_t *x = c->in[0], *sp = c->n_in > 1 ? c->in[1] : NULL;
    int axis = op_axis(c, attr_int(c->node, "axis", 0), x->ndim);
    if (axis < 0) return -1;
    int64_t len = x->dims[axis], count;
    /* piece sizes: ones (the axis dropped unless keepdims), a fixed size
     * (the last piece shorter), or the sizes given */
    int keep_axis = sp || attr_int(c->node, "keepdims", 1) != 0;
    if (!sp) count = len;
    else if (sp->ndim == 0) {
        int64_t n = tensor_get_i64(sp, 0);
        if (n <= 0) return op_fail(c, "split size %lld must be positive", (long long)n);
        count = (len + n - 1) / n;
    } else count = tensor_numel(sp);
    tensor_seq_t *o = tensor_seq(c->out[0]);
    o->elem = x->dtype;
    int64_t at = 0;
    for (int64_t i = 0; i < count; i++) {
        int64_t n = !sp ? 1 : sp->ndim == 0 ? tensor_get_i64(sp, 0) : tensor_get_i64(sp, i);
        if (sp && sp->ndim == 0 && at + n > len) n = len - at;
        if (n < 0 || at + n > len)
            return op_fail(c, "split sizes do not add up to the axis (%lld)", (long long)len);
        tensor_t piece = {0};
        if (tensor_slice_axis(x, axis, at, n, keep_axis, &piece, c->err)) return -1;
        int rc = tensor_seq_insert(o, &piece, o->n, c->err);
        tensor_free_data(&piece);
        if (rc) return -1;
        at += n;
    }
    if (at != len) return op_fail(c, "split sizes add up to %lld, the axis has %lld", (long long)at, (long long)len);
    return 0;
}

/* ConcatFromSequence: the output shape needs the elements, so the kernel
 * computes it and replaces the output the executor allocated. */
static int shape_concat_from_sequence(op_ctx_t *c)
{
    const tensor_seq_t *s = NULL;
    int r = seq_in(c, 0, &s);
    if (r) return r;
    if (!s->n) return op_fail(c, "the sequence is empty");
    const tensor_t **xs = xmalloc(s->n * sizeof *xs);
    for (int i = 0; i < s->n; i++) xs[i] = &s->items[i];
    tensor_t tmp = {0};
    int new_axis = attr_int(c->node, "new_axis", 0) != 0;
    int64_t axis = attr_int(c->node, "axis", 0);
    int rank = s->items[0].ndim + new_axis;
    r = op_axis(c, axis, rank) < 0 ? -1 : 0;
    if (!r && tensor_concat_axis(xs, s->n, (int)axis, new_axis, &tmp, c->err))
        r = perr_prefix(c->err, "node '%s' (ConcatFromSequence): ", c->node->name);
    if (!r) {
        c->out[0]->dtype = tmp.dtype;
        c->out[0]->ndim = tmp.ndim;
        memcpy(c->out[0]->dims, tmp.dims, sizeof tmp.dims);
    }
    tensor_free_data(&tmp);
    free(xs);
    return r;
}

static int run_concat_from_sequence(op_ctx_t *c)
{
    const tensor_seq_t *s = NULL;
    if (seq_in(c, 0, &s)) return -1;
    const tensor_t **xs = xmalloc(s->n * sizeof *xs);
    for (int i = 0; i < s->n; i++) xs[i] = &s->items[i];
    tensor_t tmp = {0};
    int rc = tensor_concat_axis(xs, s->n, (int)attr_int(c->node, "axis", 0), attr_int(c->node, "new_axis", 0) != 0,
                                &tmp, c->err);
    if (!rc) memcpy(c->out[0]->data, tmp.data, tensor_nbytes(&tmp));
    tensor_free_data(&tmp);
    free(xs);
    return rc;
}

/* If, Loop, Scan: the executor runs them (engine/control.c). Their outputs'
 * shapes are known only by running the subgraphs. */
static int shape_control(op_ctx_t *c)
{
    (void)c;
    return OP_DYNAMIC;
}

static int run_control(op_ctx_t *c)
{
    return op_fail(c, "control flow runs in the executor, not as a kernel");
}

#define SEQ(op, since, shape, run) {"", op, since, 0, shape, run, .no_fold = 1, .any_type = 1}
#define CONTROL(op, since) {"", op, since, 0, shape_control, run_control, .no_fold = 1, .any_type = 1, .control = 1}

const op_def_t ops_sequence[] = {
    SEQ("ConcatFromSequence", 11, shape_concat_from_sequence, run_concat_from_sequence),
    CONTROL("If", 1),
    CONTROL("Loop", 1),
    CONTROL("Scan", 8),
    SEQ("SequenceAt", 11, shape_at, run_at),
    SEQ("SequenceConstruct", 11, shape_seq_out, run_construct),
    SEQ("SequenceEmpty", 11, shape_seq_out, run_empty),
    SEQ("SequenceErase", 11, shape_seq_out, run_erase),
    SEQ("SequenceInsert", 11, shape_seq_out, run_insert),
    SEQ("SequenceLength", 11, shape_length, run_length),
    SEQ("SplitToSequence", 11, shape_seq_out, run_split_to_sequence),
};
const int ops_sequence_count = sizeof ops_sequence / sizeof ops_sequence[0];
