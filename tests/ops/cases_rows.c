/* cases_rows.c — one small case for each remaining row of the op table
 * (data movement, shapes, quantisation, the simpler norms and pools), so
 * that every kernel runs at every ISA level and thread count with the same
 * bytes. Each checks its output against values worked out by hand from the
 * ONNX spec on a few elements (the comment beside a case shows the
 * arithmetic), or, for ops that only re-shape, against the input's bytes.
 * ONNX's own node tests (tests/conformance/) check these ops in depth. */
#include <string.h>
#include "harness.h"

/* Output 0: the listed values (param[0] of them) in the case's output
 * shape and type; exact, or within steps roundings of the values' size. */
static int ref_listed(const oc_inst_t *t, oc_want_t *w)
{
    const op_case_t *c = t->c;
    oc_want_shape(w, c->out_dt ? c->out_dt : t->in[0]->dtype, c->out_nd, c->out_dims, 0);
    if (oc_numel(c->out_nd, c->out_dims) != (int64_t)c->param[0]) return -1;
    for (int64_t i = 0; i < (int64_t)c->param[0]; i++) {
        w->val[i] = c->expect[i];
        w->bound[i] = c->steps * STEP_ULPS * 2 * U_FLOAT * fmax(1, fabs(c->expect[i]));
    }
    return 0;
}

/* Output 0: input 0's bytes in the case's output shape (views). */
static int ref_view(const oc_inst_t *t, oc_want_t *w)
{
    const tensor_t *x = t->in[0];
    oc_want_shape(w, x->dtype, t->c->out_nd, t->c->out_dims, 1);
    if (oc_numel(t->c->out_nd, t->c->out_dims) != tensor_numel(x)) return -1;
    memcpy(w->bytes, x->data, tensor_nbytes(x));
    return 0;
}

/* Split: output i is a listed run of the values (param[i + 1] long each),
 * one axis. */
static int ref_split(const oc_inst_t *t, oc_want_t *w)
{
    const double *v = t->c->expect;
    for (int i = 0; i < t->n_out; i++) {
        int64_t n = (int64_t)t->c->param[i + 1];
        oc_want_shape(&w[i], t->in[0]->dtype, 1, &n, 0);
        for (int64_t k = 0; k < n; k++) w[i].val[k] = *v++;
    }
    return 0;
}

/* ---- sequences ---- */

/* Input 0: the sequence ([1, 2], [3]) of float32 */
static void gen_seq12(oc_inst_t *t, int v)
{
    (void)v;
    tensor_t *a = oc_tensor(DT_FLOAT, 1, (int64_t[]){2}), *b = oc_tensor(DT_FLOAT, 1, (int64_t[]){1});
    ((float *)a->data)[0] = 1, ((float *)a->data)[1] = 2, ((float *)b->data)[0] = 3;
    t->in[0] = oc_sequence(2, (const tensor_t *[]){a, b});
    tensor_free(a), tensor_free(b);
}

static void want_seq(oc_want_t *w, int n, const tensor_t *const *items)
{
    w->dt = DT_SEQUENCE;
    w->seq = oc_sequence(n, items);
}

/* the inputs, in order */
static int ref_construct(const oc_inst_t *t, oc_want_t *w)
{
    want_seq(w, t->n_in, (const tensor_t *const *)t->in);
    return 0;
}

/* the input sequence's items with input 1 after them (no position: append) */
static int ref_insert(const oc_inst_t *t, oc_want_t *w)
{
    const tensor_seq_t *s = tensor_seq(t->in[0]);
    const tensor_t *items[8];
    for (int i = 0; i < s->n; i++) items[i] = &s->items[i];
    items[s->n] = t->in[1];
    want_seq(w, s->n + 1, items);
    return 0;
}

/* the input sequence without its first item (position 0) */
static int ref_erase_first(const oc_inst_t *t, oc_want_t *w)
{
    const tensor_seq_t *s = tensor_seq(t->in[0]);
    const tensor_t *items[8];
    for (int i = 1; i < s->n; i++) items[i - 1] = &s->items[i];
    want_seq(w, s->n - 1, items);
    return 0;
}

/* an empty float32 sequence */
static int ref_empty(const oc_inst_t *t, oc_want_t *w)
{
    (void)t;
    want_seq(w, 0, NULL);
    tensor_seq(w->seq)->elem = DT_FLOAT;
    return 0;
}

/* [1, 2, 3] split into chunks of one along axis 0: [1], [2], [3] */
static int ref_split_ones(const oc_inst_t *t, oc_want_t *w)
{
    const tensor_t *x = t->in[0];
    tensor_t *items[8];
    for (int64_t i = 0; i < tensor_numel(x); i++) {
        items[i] = oc_tensor(x->dtype, 1, (int64_t[]){1});
        tensor_set_f64(items[i], 0, tensor_get_f64(x, i));
    }
    want_seq(w, (int)tensor_numel(x), (const tensor_t *const *)items);
    for (int64_t i = 0; i < tensor_numel(x); i++) tensor_free(items[i]);
    return 0;
}

#define LISTED(...) .ref = ref_listed, .expect = (const double[]){__VA_ARGS__}, .param = {OC_NARGS(double, __VA_ARGS__)}
#define VIEW(op_, set, shape_in, ...) {.op = op_, .opset = set, .what = "bytes kept, shape changed", .n_in = 1, \
        .in = {IN_B(DT_FLOAT, shape_in)}, .ref = ref_view, __VA_ARGS__}

const op_case_t cases_rows[] = {
    VIEW("Flatten", 13, DIMS(2, 3, 2), OUT_DIMS(2, 6)),
    VIEW("Identity", 16, DIMS(2, 3), OUT_DIMS(2, 3)),
    {.op = "Reshape", .opset = 14, .what = "2x3 to 3x2 (a -1)", .n_in = 2, .in = {IN_B(DT_FLOAT, DIMS(2, 3)), IN_L(DT_INT64, DIMS(2), 3, -1)},
     .ref = ref_view, OUT_DIMS(3, 2)},
    VIEW("Squeeze", 11, DIMS(1, 3, 1), OUT_DIMS(3, 1), .attr = {AIS("axes", 0)}),
    VIEW("Unsqueeze", 11, DIMS(3), OUT_DIMS(1, 3), .attr = {AIS("axes", 0)}),
    VIEW("Dropout", 7, DIMS(2, 3), OUT_DIMS(2, 3)),
    /* [[1,2],[3,4]] and [[5],[6]] along axis 1 */
    {.op = "Concat", .opset = 13, .what = "2x2 and 2x1 along axis 1", .n_in = 2,
     .in = {IN_V(DT_FLOAT, DIMS(2, 2), 1, 2, 3, 4), IN_V(DT_FLOAT, DIMS(2, 1), 5, 6)}, .attr = {AI("axis", 1)}, OUT_DIMS(2, 3), LISTED(1, 2, 5, 3, 4, 6)},
    {.op = "ConstantOfShape", .opset = 9, .what = "shape [2, 3], default value 0.0f", .n_in = 1, .in = {IN_L(DT_INT64, DIMS(2), 2, 3)},
     .out_dt = DT_FLOAT, OUT_DIMS(2, 3), LISTED(0, 0, 0, 0, 0, 0)},
    /* DCR: out[c][2h+i][2w+j] = x[(2i+j) C_out + c]: c 0 takes 0, 2, 4, 6; c 1 takes 1, 3, 5, 7 */
    {.op = "DepthToSpace", .opset = 13, .what = "1x8x1x1, blocksize 2 (DCR)", .n_in = 1,
     .in = {IN_V(DT_FLOAT, DIMS(1, 8, 1, 1), 0, 1, 2, 3, 4, 5, 6, 7)}, .attr = {AI("blocksize", 2)}, OUT_DIMS(1, 2, 2, 2),
     LISTED(0, 2, 4, 6, 1, 3, 5, 7)},
    /* out[(2i+j) C + c] = x[c][i][j] */
    {.op = "SpaceToDepth", .opset = 13, .what = "1x2x2x2, blocksize 2", .n_in = 1,
     .in = {IN_V(DT_FLOAT, DIMS(1, 2, 2, 2), 0, 1, 2, 3, 4, 5, 6, 7)}, .attr = {AI("blocksize", 2)}, OUT_DIMS(1, 8, 1, 1),
     LISTED(0, 4, 1, 5, 2, 6, 3, 7)},
    {.op = "Expand", .opset = 13, .what = "3x1 to 3x2", .n_in = 2, .in = {IN_V(DT_FLOAT, DIMS(3, 1), 1, 2, 3), IN_L(DT_INT64, DIMS(2), 3, 2)},
     OUT_DIMS(3, 2), LISTED(1, 1, 2, 2, 3, 3)},
    {.op = "EyeLike", .opset = 9, .what = "2x3", .n_in = 1, .in = {IN_U(DT_FLOAT, -1, 1, DIMS(2, 3))}, OUT_DIMS(2, 3),
     LISTED(1, 0, 0, 0, 1, 0)},
    /* indices [0, 0] and [1, 1] of [[0, 1], [2, 3]] */
    {.op = "GatherND", .opset = 13, .what = "two full indices", .n_in = 2,
     .in = {IN_V(DT_FLOAT, DIMS(2, 2), 0, 1, 2, 3), IN_L(DT_INT64, DIMS(2, 2), 0, 0, 1, 1)}, OUT_DIMS(2), LISTED(0, 3)},
    /* means and maxima of 1..4 and 5..8 */
    {.op = "GlobalAveragePool", .opset = 1, .what = "1x2x2x2", .n_in = 1, .in = {IN_V(DT_FLOAT, DIMS(1, 2, 2, 2), 1, 2, 3, 4, 5, 6, 7, 8)},
     OUT_DIMS(1, 2, 1, 1), LISTED(2.5, 6.5)},
    {.op = "GlobalMaxPool", .opset = 1, .what = "1x2x2x2", .n_in = 1, .in = {IN_V(DT_FLOAT, DIMS(1, 2, 2, 2), 1, 2, 3, 4, 5, 6, 7, 8)},
     OUT_DIMS(1, 2, 1, 1), LISTED(4, 8)},
    /* sqrt(3^2 + 4^2) = 5 */
    {.op = "GlobalLpPool", .opset = 2, .what = "p 2 of [3, 4]", .n_in = 1, .in = {IN_V(DT_FLOAT, DIMS(1, 1, 1, 2), 3, 4)},
     OUT_DIMS(1, 1, 1, 1), LISTED(5), .steps = 3},
    {.op = "LpPool", .opset = 11, .what = "p 2, kernel 1x2 over [3, 4]", .n_in = 1, .in = {IN_V(DT_FLOAT, DIMS(1, 1, 1, 2), 3, 4)},
     .attr = {AIS("kernel_shape", 1, 2), AI("p", 2)}, OUT_DIMS(1, 1, 1, 1), LISTED(5), .steps = 3},
    /* [3, 4] / 5 */
    {.op = "LpNormalization", .opset = 1, .what = "p 2 over [3, 4]", .n_in = 1, .in = {IN_V(DT_FLOAT, DIMS(1, 2), 3, 4)},
     OUT_DIMS(1, 2), LISTED(0.6, 0.8), .steps = 4},
    /* [1, 3]: mean 2, variance 1, (x - 2) / sqrt(1 + 1e-5f), in double */
    {.op = "InstanceNormalization", .opset = 6, .what = "one channel of [1, 3]", .n_in = 3,
     .in = {IN_V(DT_FLOAT, DIMS(1, 1, 2), 1, 3), IN_V(DT_FLOAT, DIMS(1), 1), IN_V(DT_FLOAT, DIMS(1), 0)}, OUT_DIMS(1, 1, 2),
     LISTED(-0.9999950000376261, 0.9999950000376261), .steps = 6},
    /* 2 / (1 + 1e-4f / 1 * 2^2)^0.75, in double */
    {.op = "LRN", .opset = 13, .what = "size 1 of a single 2", .n_in = 1, .in = {IN_V(DT_FLOAT, DIMS(1, 1, 1, 1), 2)}, .attr = {AI("size", 1)},
     OUT_DIMS(1, 1, 1, 1), LISTED(1.9994002099381758), .steps = 5},
    {.op = "NonZero", .opset = 13, .what = "[0, 1, 0, 2]", .n_in = 1, .in = {IN_V(DT_FLOAT, DIMS(4), 0, 1, 0, 2)}, .out_dt = DT_INT64,
     OUT_DIMS(1, 2), LISTED(1, 3)},
    {.op = "OneHot", .opset = 11, .what = "indices [0, 2], depth 3, values [0, 1]", .n_in = 3,
     .in = {IN_L(DT_INT64, DIMS(2), 0, 2), IN_L(DT_INT64, SCALAR, 3), IN_V(DT_FLOAT, DIMS(2), 0, 1)}, .out_dt = DT_FLOAT, OUT_DIMS(2, 3), LISTED(1, 0, 0, 0, 0, 1)},
    {.op = "Pad", .opset = 2, .what = "[1, 2] padded by 1 each side (constant 0)", .n_in = 1, .in = {IN_V(DT_FLOAT, DIMS(2), 1, 2)},
     .attr = {AIS("pads", 1, 1)}, OUT_DIMS(4), LISTED(0, 1, 2, 0)},
    {.op = "Range", .opset = 11, .what = "0 to 5 step 2", .n_in = 3, .in = {IN_V(DT_FLOAT, SCALAR, 0), IN_V(DT_FLOAT, SCALAR, 5), IN_V(DT_FLOAT, SCALAR, 2)},
     OUT_DIMS(3), LISTED(0, 2, 4)},
    /* time x batch [[1, 2], [3, 4]]: batch 0 (length 2) reversed to 3, 1; batch 1 (length 1) kept */
    {.op = "ReverseSequence", .opset = 10, .what = "lengths 2 and 1", .n_in = 2, .in = {IN_V(DT_FLOAT, DIMS(2, 2), 1, 2, 3, 4), IN_L(DT_INT64, DIMS(2), 2, 1)},
     .attr = {AI("time_axis", 0), AI("batch_axis", 1)}, OUT_DIMS(2, 2), LISTED(3, 2, 1, 4)},
    {.op = "Scatter", .opset = 9, .what = "updates 5, 6 at columns 0, 2", .n_in = 3,
     .in = {IN_V(DT_FLOAT, DIMS(1, 3), 0, 0, 0), IN_L(DT_INT64, DIMS(1, 2), 0, 2), IN_V(DT_FLOAT, DIMS(1, 2), 5, 6)}, .attr = {AI("axis", 1)}, OUT_DIMS(1, 3),
     LISTED(5, 0, 6)},
    {.op = "ScatterElements", .opset = 13, .what = "updates 5, 6 at columns 0, 2", .n_in = 3,
     .in = {IN_V(DT_FLOAT, DIMS(1, 3), 0, 0, 0), IN_L(DT_INT64, DIMS(1, 2), 0, 2), IN_V(DT_FLOAT, DIMS(1, 2), 5, 6)}, .attr = {AI("axis", 1)}, OUT_DIMS(1, 3),
     LISTED(5, 0, 6)},
    {.op = "ScatterND", .opset = 13, .what = "updates 9, 8 at 1 and 3", .n_in = 3,
     .in = {IN_V(DT_FLOAT, DIMS(4), 1, 2, 3, 4), IN_L(DT_INT64, DIMS(2, 1), 1, 3), IN_V(DT_FLOAT, DIMS(2), 9, 8)}, OUT_DIMS(4), LISTED(1, 9, 3, 8)},
    {.op = "Shape", .opset = 13, .what = "of a 2x3", .n_in = 1, .in = {IN_B(DT_FLOAT, DIMS(2, 3))}, .out_dt = DT_INT64,
     OUT_DIMS(2), LISTED(2, 3)},
    {.op = "Size", .opset = 13, .what = "of a 2x3", .n_in = 1, .in = {IN_B(DT_FLOAT, DIMS(2, 3))}, .out_dt = DT_INT64,
     .out_nd = 0, LISTED(6)},
    {.op = "Split", .opset = 11, .what = "[1, 2, 3] into 1 and 2", .n_in = 1, .n_out = 2, .in = {IN_V(DT_FLOAT, DIMS(3), 1, 2, 3)},
     .attr = {AIS("split", 1, 2)}, .ref = ref_split, .expect = (const double[]){1, 2, 3}, .param = {0, 1, 2}},
    {.op = "Tile", .opset = 13, .what = "[1, 2] twice", .n_in = 2, .in = {IN_V(DT_FLOAT, DIMS(2), 1, 2), IN_L(DT_INT64, DIMS(1), 2)}, OUT_DIMS(4),
     LISTED(1, 2, 1, 2)},
    {.op = "Trilu", .opset = 14, .what = "upper of 1..9", .n_in = 1, .in = {IN_V(DT_FLOAT, DIMS(3, 3), 1, 2, 3, 4, 5, 6, 7, 8, 9)},
     OUT_DIMS(3, 3), LISTED(1, 2, 3, 0, 5, 6, 0, 0, 9)},
    {.op = "Unique", .opset = 11, .what = "sorted values of [2, 1, 2, 3]", .n_in = 1, .in = {IN_V(DT_FLOAT, DIMS(4), 2, 1, 2, 3)},
     OUT_DIMS(3), LISTED(1, 2, 3)},
    {.op = "Upsample", .opset = 7, .what = "nearest, scales 1, 1, 1, 2", .n_in = 1, .in = {IN_V(DT_FLOAT, DIMS(1, 1, 1, 2), 1, 2)},
     .attr = {AS("mode", "nearest"), AFS("scales", 1, 1, 1, 2)}, OUT_DIMS(1, 1, 1, 4), LISTED(1, 1, 2, 2)},
    {.op = "Compress", .opset = 11, .what = "[1, 2, 3] by [1, 0, 1] (flattened)", .n_in = 2,
     .in = {IN_V(DT_FLOAT, DIMS(3), 1, 2, 3), IN_V(DT_BOOL, DIMS(3), 1, 0, 1)}, OUT_DIMS(2), LISTED(1, 3)},
    /* 1 * 4 - 2 * 3 */
    {.op = "Det", .opset = 11, .what = "[[1, 2], [3, 4]]", .n_in = 1, .in = {IN_V(DT_FLOAT, DIMS(2, 2), 1, 2, 3, 4)}, .out_nd = 0,
     LISTED(-2), .steps = 8},
    /* round(x / 0.5) + 10, saturated: 0, 3, -4, 600 -> 10, 13, 6, 255 */
    {.op = "QuantizeLinear", .opset = 13, .what = "to uint8, scale 0.5, zero point 10", .n_in = 3,
     .in = {IN_V(DT_FLOAT, DIMS(4), 0, 1.5, -2, 300), IN_V(DT_FLOAT, SCALAR, 0.5), IN_V(DT_UINT8, SCALAR, 10)}, .out_dt = DT_UINT8, OUT_DIMS(4),
     LISTED(10, 13, 6, 255)},
    {.op = "DequantizeLinear", .opset = 13, .what = "uint8, scale 0.5, zero point 10", .n_in = 3,
     .in = {IN_V(DT_UINT8, DIMS(3), 10, 13, 255), IN_V(DT_FLOAT, SCALAR, 0.5), IN_V(DT_UINT8, SCALAR, 10)}, .out_dt = DT_FLOAT,
     OUT_DIMS(3), LISTED(0, 1.5, 122.5)},
    /* 1 * 3 + 2 * 4 */
    {.op = "MatMulInteger", .opset = 10, .what = "uint8 1x2 by 2x1", .n_in = 2,
     .in = {IN_V(DT_UINT8, DIMS(1, 2), 1, 2), IN_V(DT_UINT8, DIMS(2, 1), 3, 4)}, .out_dt = DT_INT32, OUT_DIMS(1, 1),
     LISTED(11)},
    {.op = "SequenceConstruct", .opset = 11, .what = "of [1, 2] and [3]", .n_in = 2,
     .in = {IN_V(DT_FLOAT, DIMS(2), 1, 2), IN_V(DT_FLOAT, DIMS(1), 3)}, .ref = ref_construct},
    {.op = "SequenceEmpty", .opset = 11, .what = "float32", .n_in = 0, .ref = ref_empty},
    {.op = "SequenceInsert", .opset = 11, .what = "[4, 5] appended to ([1, 2], [3])", .n_in = 2,
     .in = {IN_GEN, IN_V(DT_FLOAT, DIMS(2), 4, 5)}, .gen = gen_seq12, .ref = ref_insert},
    {.op = "SequenceErase", .opset = 11, .what = "position 0 of ([1, 2], [3])", .n_in = 2,
     .in = {IN_GEN, IN_L(DT_INT64, SCALAR, 0)}, .gen = gen_seq12, .ref = ref_erase_first},
    {.op = "SequenceAt", .opset = 11, .what = "position -1 of ([1, 2], [3])", .n_in = 2,
     .in = {IN_GEN, IN_L(DT_INT64, SCALAR, -1)}, .gen = gen_seq12, .out_dt = DT_FLOAT, OUT_DIMS(1), LISTED(3)},
    {.op = "SequenceLength", .opset = 11, .what = "of ([1, 2], [3])", .n_in = 1, .in = {IN_GEN}, .gen = gen_seq12,
     .out_dt = DT_INT64, .out_nd = 0, LISTED(2)},
    {.op = "ConcatFromSequence", .opset = 11, .what = "([1, 2], [3]) along axis 0", .n_in = 1, .in = {IN_GEN},
     .gen = gen_seq12, .attr = {AI("axis", 0)}, .out_dt = DT_FLOAT, OUT_DIMS(3), LISTED(1, 2, 3)},
    {.op = "SplitToSequence", .opset = 11, .what = "[1, 2, 3] into ones", .n_in = 1,
     .in = {IN_V(DT_FLOAT, DIMS(3), 1, 2, 3)}, .ref = ref_split_ones},
    /* 1 2 3 4 times 2 */
    {.op = "ConvInteger", .opset = 10, .what = "uint8 1x1 kernel", .n_in = 2,
     .in = {IN_V(DT_UINT8, DIMS(1, 1, 2, 2), 1, 2, 3, 4), IN_V(DT_UINT8, DIMS(1, 1, 1, 1), 2)}, .out_dt = DT_INT32,
     OUT_DIMS(1, 1, 2, 2), LISTED(2, 4, 6, 8)},
    /* (2 * 0.5) * 1 + (4 * 0.5) * 1 = 3, scale 1, zero point 0 */
    {.op = "QLinearMatMul", .opset = 10, .what = "uint8 1x2 by 2x1", .n_in = 8,
     .in = {IN_V(DT_UINT8, DIMS(1, 2), 2, 4), IN_V(DT_FLOAT, SCALAR, 0.5), IN_V(DT_UINT8, SCALAR, 0),
            IN_V(DT_UINT8, DIMS(2, 1), 1, 1), IN_V(DT_FLOAT, SCALAR, 1), IN_V(DT_UINT8, SCALAR, 0),
            IN_V(DT_FLOAT, SCALAR, 1), IN_V(DT_UINT8, SCALAR, 0)},
     .out_dt = DT_UINT8, OUT_DIMS(1, 1), LISTED(3)},
    /* [2, 4] * 0.5 = [1, 2], times 2: [2, 4] at scale 1 */
    {.op = "QLinearConv", .opset = 10, .what = "uint8 1x1 kernel", .n_in = 8,
     .in = {IN_V(DT_UINT8, DIMS(1, 1, 1, 2), 2, 4), IN_V(DT_FLOAT, SCALAR, 0.5), IN_V(DT_UINT8, SCALAR, 0),
            IN_V(DT_UINT8, DIMS(1, 1, 1, 1), 2), IN_V(DT_FLOAT, SCALAR, 1), IN_V(DT_UINT8, SCALAR, 0),
            IN_V(DT_FLOAT, SCALAR, 1), IN_V(DT_UINT8, SCALAR, 0)},
     .out_dt = DT_UINT8, OUT_DIMS(1, 1, 1, 2), LISTED(2, 4)},
    /* range [0, 2.55]: scale 0.01, zero point 0, 2.55 -> 255 */
    {.op = "DynamicQuantizeLinear", .opset = 11, .what = "[0, 2.55] (y checked)", .n_in = 1, .n_out = 3,
     .in = {IN_V(DT_FLOAT, DIMS(2), 0, 2.55)}, .out_dt = DT_UINT8, OUT_DIMS(2), LISTED(0, 255)},
    /* [5, 6] to flat positions 1 and 2 of a 1x4 (kernel 1x2, stride 2) */
    {.op = "MaxUnpool", .opset = 11, .what = "two values back to their positions", .n_in = 2,
     .in = {IN_V(DT_FLOAT, DIMS(1, 1, 1, 2), 5, 6), IN_L(DT_INT64, DIMS(1, 1, 1, 2), 1, 2)},
     .attr = {AIS("kernel_shape", 1, 2), AIS("strides", 1, 2)}, OUT_DIMS(1, 1, 1, 4), LISTED(0, 5, 6, 0)},
    /* [1, 3]: mean 2, standard deviation 1 */
    {.op = "MeanVarianceNormalization", .opset = 13, .what = "[1, 3]", .n_in = 1, .in = {IN_V(DT_FLOAT, DIMS(1, 1, 1, 2), 1, 3)},
     OUT_DIMS(1, 1, 1, 2), LISTED(-1, 1), .steps = 6},
    /* -(log-probability of class 2) = 3 */
    {.op = "NegativeLogLikelihoodLoss", .opset = 13, .what = "one sample, mean", .n_in = 2,
     .in = {IN_V(DT_FLOAT, DIMS(1, 3), -1, -2, -3), IN_L(DT_INT64, DIMS(1), 2)}, .out_nd = 0, LISTED(3)},
    /* -log(softmax([0, 0])[0]) = log 2 */
    {.op = "SoftmaxCrossEntropyLoss", .opset = 13, .what = "two equal scores", .n_in = 2,
     .in = {IN_V(DT_FLOAT, DIMS(1, 2), 0, 0), IN_L(DT_INT64, DIMS(1), 0)}, .out_nd = 0, LISTED(0.6931471805599453),
     .steps = 4},
    /* one 1x1 bin at the centre (0.5, 0.5) of [[1, 2], [3, 4]]: 2.5 */
    {.op = "RoiAlign", .opset = 10, .what = "one bin, one sample", .n_in = 3,
     .in = {IN_V(DT_FLOAT, DIMS(1, 1, 2, 2), 1, 2, 3, 4), IN_V(DT_FLOAT, DIMS(1, 4), 0, 0, 1, 1), IN_L(DT_INT64, DIMS(1), 0)},
     .attr = {AI("output_height", 1), AI("output_width", 1), AI("sampling_ratio", 1)}, OUT_DIMS(1, 1, 1, 1),
     LISTED(2.5), .steps = 4},
    /* the second box is the first again (IoU 1): only box 0 of class 0 of batch 0 */
    {.op = "NonMaxSuppression", .opset = 11, .what = "a duplicate box suppressed", .n_in = 4,
     .in = {IN_V(DT_FLOAT, DIMS(1, 2, 4), 0, 0, 1, 1, 0, 0, 1, 1), IN_V(DT_FLOAT, DIMS(1, 1, 2), 0.9, 0.8),
            IN_L(DT_INT64, DIMS(1), 10), IN_V(DT_FLOAT, DIMS(1), 0.5)},
     .out_dt = DT_INT64, OUT_DIMS(1, 3), LISTED(0, 0, 0)},
    /* hidden size 1, one step of x = 1, weights 0.5, no recurrence (h0 = 0):
     * RNN tanh(0.5); GRU (1 - sigmoid(0.5)) tanh(0.5); LSTM
     * sigmoid(0.5) tanh(sigmoid(0.5) tanh(0.5)) (values in double) */
    {.op = "RNN", .opset = 14, .what = "one step", .n_in = 3, .attr = {AI("hidden_size", 1)},
     .in = {IN_V(DT_FLOAT, DIMS(1, 1, 1), 1), IN_V(DT_FLOAT, DIMS(1, 1, 1), 0.5), IN_V(DT_FLOAT, DIMS(1, 1, 1), 0)},
     OUT_DIMS(1, 1, 1, 1), LISTED(0.46211715726000974), .steps = 3},
    {.op = "GRU", .opset = 14, .what = "one step", .n_in = 3, .attr = {AI("hidden_size", 1)},
     .in = {IN_V(DT_FLOAT, DIMS(1, 1, 1), 1), IN_V(DT_FLOAT, DIMS(1, 3, 1), 0.5), IN_V(DT_FLOAT, DIMS(1, 3, 1), 0)},
     OUT_DIMS(1, 1, 1, 1), LISTED(0.17446802061504182), .steps = 6},
    {.op = "LSTM", .opset = 14, .what = "one step", .n_in = 3, .attr = {AI("hidden_size", 1)},
     .in = {IN_V(DT_FLOAT, DIMS(1, 1, 1), 1), IN_V(DT_FLOAT, DIMS(1, 4, 1), 0.5), IN_V(DT_FLOAT, DIMS(1, 4, 1), 0)},
     OUT_DIMS(1, 1, 1, 1), LISTED(0.17426971865610508), .steps = 8},
};
const int cases_rows_n = sizeof cases_rows / sizeof cases_rows[0];
