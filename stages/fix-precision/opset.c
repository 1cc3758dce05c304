/* opset.c — the ONNX operator versions the strongly typed model needs.
 *
 * A reduced layer is written in FLOAT16 or BFLOAT16 only where its operator's
 * schema accepts that type. BFLOAT16 came late: Conv, pooling, GridSample,
 * InstanceNormalization, the trigonometric and several activation ops accept
 * it only from opset 22. So the typed model's default-domain opset is raised
 * to the lowest version where every reduced op has its reduced signature, and
 * the nodes whose operator changed its signature between the model's opset
 * and that one are rewritten (or the upgrade is refused, naming the node).
 * An op with no reduced signature up to opset 22 (Einsum and Celu have none
 * at all; TopK's BFLOAT16 is opset 24) computes in FP32 between Casts, which
 * is what parity's emulation computes for it.
 *
 * Where the tables come from: for opsets up to 17, python3-onnx 1.12's
 * schemas (onnx.defs.get_schema(op, v).type_constraints); from 18 to 22,
 * ONNX's operator_sets.h and the ONNX 1.17 release (opset 22: BFLOAT16 for
 * the ops listed with 22 below), confirmed against ONNX Runtime 1.30's
 * loader, whose type check rejects the reduced type one version earlier and
 * accepts it at the version given. tests/stage/fix_precision_bf16.t checks
 * both. */
#include <stdlib.h>
#include <string.h>
#include "search.h"
#include "tensor/tensor.h"

#define MAX_OPSET 22   /* the upgrade table below covers opsets up to this one */

/* op, first ai.onnx opset accepting FLOAT16, first accepting BFLOAT16 (0: none up to MAX_OPSET) */
static const struct sig { const char *op; unsigned char f16, bf16; } sigs[] = {
    /* BEGIN SIGNATURES */
    {"Abs", 1, 13}, {"Acos", 7, 22}, {"Acosh", 9, 22}, {"Add", 1, 13}, {"ArgMax", 1, 13}, {"ArgMin", 1, 13},
    {"Asin", 7, 22}, {"Asinh", 9, 22}, {"Atan", 7, 22}, {"Atanh", 9, 22}, {"AveragePool", 1, 22},
    {"BatchNormalization", 1, 14}, {"Bernoulli", 15, 15}, {"BlackmanWindow", 17, 17}, {"Cast", 1, 13},
    {"CastLike", 15, 15}, {"Ceil", 1, 13}, {"Celu", 0, 0}, {"Clip", 1, 13}, {"Compress", 9, 0}, {"Concat", 1, 13},
    {"ConcatFromSequence", 11, 0}, {"Constant", 1, 13}, {"ConstantOfShape", 9, 0}, {"Conv", 1, 22},
    {"ConvTranspose", 1, 22}, {"Cos", 7, 22}, {"Cosh", 9, 22}, {"CumSum", 14, 14}, {"DFT", 17, 17},
    {"DeformConv", 19, 22}, {"DepthToSpace", 1, 13}, {"Det", 11, 22}, {"Div", 1, 13}, {"Dropout", 1, 13},
    {"Einsum", 12, 0}, {"Elu", 1, 22}, {"Equal", 11, 13}, {"Erf", 9, 13}, {"Exp", 1, 13}, {"Expand", 8, 13},
    {"EyeLike", 9, 22}, {"Flatten", 1, 13}, {"Floor", 1, 13}, {"GRU", 1, 22}, {"Gather", 1, 13},
    {"GatherElements", 11, 13}, {"GatherND", 11, 13}, {"Gelu", 20, 20}, {"Gemm", 1, 13},
    {"GlobalAveragePool", 1, 22}, {"GlobalLpPool", 1, 22}, {"GlobalMaxPool", 1, 22}, {"Greater", 1, 13},
    {"GreaterOrEqual", 12, 16}, {"GridSample", 16, 22}, {"HammingWindow", 17, 17}, {"HannWindow", 17, 17},
    {"HardSigmoid", 1, 22}, {"HardSwish", 14, 22}, {"Hardmax", 1, 13}, {"Identity", 1, 13}, {"If", 1, 16},
    {"InstanceNormalization", 1, 22}, {"IsInf", 20, 20}, {"IsNaN", 9, 13}, {"LRN", 1, 13}, {"LSTM", 1, 22},
    {"LayerNormalization", 17, 17}, {"LeakyRelu", 1, 16}, {"Less", 1, 13}, {"LessOrEqual", 12, 16}, {"Log", 1, 13},
    {"LogSoftmax", 1, 13}, {"Loop", 1, 16}, {"LpNormalization", 1, 22}, {"LpPool", 1, 22}, {"MatMul", 1, 13},
    {"Max", 1, 13}, {"MaxPool", 1, 22}, {"MaxRoiPool", 1, 22}, {"MaxUnpool", 9, 22}, {"Mean", 1, 13},
    {"MeanVarianceNormalization", 9, 13}, {"MelWeightMatrix", 17, 17}, {"Min", 1, 13}, {"Mish", 18, 22},
    {"Mod", 10, 13}, {"Mul", 1, 13}, {"Multinomial", 7, 22}, {"Neg", 1, 13}, {"NegativeLogLikelihoodLoss", 12, 22},
    {"NonZero", 9, 13}, {"OneHot", 9, 0}, {"Optional", 15, 0}, {"OptionalGetElement", 15, 0}, {"PRelu", 1, 16},
    {"Pad", 1, 13}, {"Pow", 1, 13}, {"RNN", 1, 22}, {"RandomNormal", 1, 22}, {"RandomNormalLike", 1, 22},
    {"RandomUniform", 1, 22}, {"RandomUniformLike", 1, 22}, {"Range", 0, 0}, {"Reciprocal", 1, 13},
    {"ReduceL1", 1, 13}, {"ReduceL2", 1, 13}, {"ReduceLogSum", 1, 13}, {"ReduceLogSumExp", 1, 13},
    {"ReduceMax", 1, 13}, {"ReduceMean", 1, 13}, {"ReduceMin", 1, 13}, {"ReduceProd", 1, 13}, {"ReduceSum", 1, 13},
    {"ReduceSumSquare", 1, 13}, {"Relu", 1, 13}, {"Reshape", 1, 13}, {"Resize", 10, 13}, {"ReverseSequence", 10, 0},
    {"RoiAlign", 10, 22}, {"Round", 11, 22}, {"STFT", 17, 17}, {"Scan", 8, 16}, {"Scatter", 9, 0},
    {"ScatterElements", 11, 13}, {"ScatterND", 11, 13}, {"Selu", 1, 22}, {"SequenceAt", 11, 0},
    {"SequenceConstruct", 11, 0}, {"SequenceInsert", 11, 0}, {"SequenceMap", 17, 0}, {"Shape", 1, 13},
    {"Shrink", 9, 0}, {"Sigmoid", 1, 13}, {"Sign", 9, 13}, {"Sin", 7, 22}, {"Sinh", 9, 22}, {"Size", 1, 13},
    {"Slice", 1, 13}, {"Softmax", 1, 13}, {"SoftmaxCrossEntropyLoss", 12, 13}, {"Softplus", 1, 22},
    {"Softsign", 1, 22}, {"SpaceToDepth", 1, 13}, {"Split", 1, 13}, {"SplitToSequence", 11, 0}, {"Sqrt", 1, 13},
    {"Squeeze", 1, 13}, {"Sub", 1, 13}, {"Sum", 1, 13}, {"Tan", 7, 22}, {"Tanh", 1, 13}, {"ThresholdedRelu", 10, 22},
    {"Tile", 1, 13}, {"TopK", 1, 0}, {"Transpose", 1, 13}, {"Trilu", 14, 14}, {"Unique", 11, 0},
    {"Unsqueeze", 1, 13}, {"Upsample", 1, 0}, {"Where", 9, 16},
    /* END SIGNATURES */
};

int fp_first_signature(const char *op, int dtype)
{
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        if (!strcmp(sigs[i].op, op)) return dtype == DT_BFLOAT16 ? sigs[i].bf16 : sigs[i].f16;
    return 0;
}

/* How a node's meaning carries from one opset to a later one. */
enum up_action { UP_SAME, UP_AXES_INPUT, UP_SPLIT_NUM, UP_GRID_MODES, UP_ROI_MODE, UP_ONE_OUTPUT, UP_REFUSE };

/* Every ai.onnx operator version from 14 to MAX_OPSET of an operator older
 * than it (new operators cannot occur in an older model). UP_SAME: only
 * types were added, or attributes/inputs whose defaults keep the old
 * meaning. */
static const struct change { const char *op; int version; enum up_action act; const char *why; } changes[] = {
    /* BEGIN CHANGES */
    {"Add", 14, UP_SAME, 0}, {"Sub", 14, UP_SAME, 0}, {"Mul", 14, UP_SAME, 0}, {"Div", 14, UP_SAME, 0},
    {"Relu", 14, UP_SAME, 0}, {"CumSum", 14, UP_SAME, 0}, {"Identity", 14, UP_SAME, 0}, {"Reshape", 14, UP_SAME, 0},
    {"GRU", 14, UP_SAME, 0}, {"LSTM", 14, UP_SAME, 0}, {"RNN", 14, UP_SAME, 0},
    {"BatchNormalization", 14, UP_ONE_OUTPUT, "its training-mode outputs changed at opset 14"},
    {"BatchNormalization", 15, UP_SAME, 0}, {"Pow", 15, UP_SAME, 0}, {"Shape", 15, UP_SAME, 0},
    {"Identity", 16, UP_SAME, 0}, {"If", 16, UP_SAME, 0}, {"Loop", 16, UP_SAME, 0}, {"Scan", 16, UP_SAME, 0},
    {"Where", 16, UP_SAME, 0}, {"LeakyRelu", 16, UP_SAME, 0}, {"PRelu", 16, UP_SAME, 0},
    {"LessOrEqual", 16, UP_SAME, 0}, {"GreaterOrEqual", 16, UP_SAME, 0}, {"ScatterND", 16, UP_SAME, 0},
    {"ScatterElements", 16, UP_SAME, 0}, {"RoiAlign", 16, UP_ROI_MODE, 0},
    {"Pad", 18, UP_SAME, 0}, {"Resize", 18, UP_SAME, 0}, {"Split", 18, UP_SPLIT_NUM, 0},
    {"ScatterND", 18, UP_SAME, 0}, {"ScatterElements", 18, UP_SAME, 0}, {"LpPool", 18, UP_SAME, 0},
    {"OptionalGetElement", 18, UP_SAME, 0}, {"OptionalHasElement", 18, UP_SAME, 0},
    {"ReduceSumSquare", 18, UP_AXES_INPUT, 0}, {"ReduceLogSum", 18, UP_AXES_INPUT, 0},
    {"ReduceLogSumExp", 18, UP_AXES_INPUT, 0}, {"ReduceL1", 18, UP_AXES_INPUT, 0}, {"ReduceL2", 18, UP_AXES_INPUT, 0},
    {"ReduceMax", 18, UP_AXES_INPUT, 0}, {"ReduceMin", 18, UP_AXES_INPUT, 0}, {"ReduceMean", 18, UP_AXES_INPUT, 0},
    {"ReduceProd", 18, UP_AXES_INPUT, 0},
    {"Equal", 19, UP_SAME, 0}, {"AveragePool", 19, UP_SAME, 0}, {"Cast", 19, UP_SAME, 0}, {"CastLike", 19, UP_SAME, 0},
    {"Constant", 19, UP_SAME, 0}, {"DequantizeLinear", 19, UP_SAME, 0}, {"QuantizeLinear", 19, UP_SAME, 0},
    {"Identity", 19, UP_SAME, 0}, {"If", 19, UP_SAME, 0}, {"Loop", 19, UP_SAME, 0}, {"Pad", 19, UP_SAME, 0},
    {"Resize", 19, UP_SAME, 0}, {"Reshape", 19, UP_SAME, 0}, {"Scan", 19, UP_SAME, 0}, {"Shape", 19, UP_SAME, 0},
    {"Size", 19, UP_SAME, 0},
    {"ConstantOfShape", 20, UP_SAME, 0}, {"IsInf", 20, UP_SAME, 0}, {"IsNaN", 20, UP_SAME, 0},
    {"ReduceMax", 20, UP_SAME, 0}, {"ReduceMin", 20, UP_SAME, 0}, {"GridSample", 20, UP_GRID_MODES, 0},
    {"DFT", 20, UP_REFUSE, "its axis became an input and its onesided/inverse handling changed at opset 20"},
    {"Cast", 21, UP_SAME, 0}, {"CastLike", 21, UP_SAME, 0}, {"Constant", 21, UP_SAME, 0},
    {"ConstantOfShape", 21, UP_SAME, 0}, {"DequantizeLinear", 21, UP_SAME, 0}, {"QuantizeLinear", 21, UP_SAME, 0},
    {"QLinearMatMul", 21, UP_SAME, 0}, {"Flatten", 21, UP_SAME, 0}, {"Identity", 21, UP_SAME, 0},
    {"If", 21, UP_SAME, 0}, {"Loop", 21, UP_SAME, 0}, {"Pad", 21, UP_SAME, 0}, {"Reshape", 21, UP_SAME, 0},
    {"Scan", 21, UP_SAME, 0}, {"Shape", 21, UP_SAME, 0}, {"Size", 21, UP_SAME, 0}, {"Squeeze", 21, UP_SAME, 0},
    {"Transpose", 21, UP_SAME, 0}, {"Unsqueeze", 21, UP_SAME, 0},
    {"GroupNormalization", 21, UP_REFUSE, "its scale and bias became per channel instead of per group at opset 21"},
    /* opset 22 added BFLOAT16 to every op listed with 22 in the signatures above: types only */
    /* END CHANGES */
};

int fp_model_opset(const Onnx__ModelProto *m)
{
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const char *d = m->opset_import[i]->domain ? m->opset_import[i]->domain : "";
        if (!*d || !strcmp(d, "ai.onnx")) return (int)m->opset_import[i]->version;
    }
    return 0;
}

static Onnx__AttributeProto *attr(Onnx__NodeProto *n, const char *name, size_t *at)
{
    for (size_t i = 0; i < n->n_attribute; i++)
        if (!strcmp(n->attribute[i]->name, name)) { if (at) *at = i; return n->attribute[i]; }
    return NULL;
}

static Onnx__AttributeProto *new_attr(Onnx__NodeProto *n, const char *name, Onnx__AttributeProto__AttributeType type)
{
    Onnx__AttributeProto *a = xmalloc(sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = xstrdup(name);
    a->has_type = 1;
    a->type = type;
    n->attribute = xrealloc(n->attribute, (n->n_attribute + 1) * sizeof *n->attribute);
    n->attribute[n->n_attribute++] = a;
    return a;
}

static void set_string(Onnx__AttributeProto *a, const char *s)
{
    free(a->s.data);
    a->has_s = 1;
    a->s.len = strlen(s);
    a->s.data = (uint8_t *)xstrdup(s);
}

/* Reduce*-18: the axes attribute becomes an INT64 initializer input. */
static void axes_to_input(Onnx__GraphProto *g, Onnx__NodeProto *n)
{
    size_t at;
    Onnx__AttributeProto *a = attr(n, "axes", &at);
    if (!a) return;   /* no axes: every axis, then and now */
    size_t l = strlen(n->output[0]) + 8;
    char *name = xmalloc(l);
    snprintf(name, l, "%s/axes", n->output[0]);
    int64_t dim = (int64_t)a->n_ints;
    fp_add_initializer(g, name, DT_INT64, &dim, 1, a->ints, a->n_ints * sizeof(int64_t));
    n->input = xrealloc(n->input, 2 * sizeof *n->input);
    n->n_input = 2;
    n->input[1] = name;
    onnx__attribute_proto__free_unpacked(a, NULL);
    memmove(&n->attribute[at], &n->attribute[at + 1], (n->n_attribute - at - 1) * sizeof *n->attribute);
    n->n_attribute--;
}

/* Applies one change to one node; 0 or a refusal in e. */
static int apply(Onnx__GraphProto *g, Onnx__NodeProto *n, const struct change *ch, int from, int to, perr_t *e)
{
    Onnx__AttributeProto *a;
    switch (ch->act) {
    case UP_SAME: return 0;
    case UP_AXES_INPUT: axes_to_input(g, n); return 0;
    case UP_SPLIT_NUM:   /* Split-18 wants num_outputs when no split sizes are given */
        if ((n->n_input < 2 || !*n->input[1]) && !attr(n, "split", NULL) && !attr(n, "num_outputs", NULL)) {
            a = new_attr(n, "num_outputs", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
            a->has_i = 1;
            a->i = (int64_t)n->n_output;
        }
        return 0;
    case UP_GRID_MODES:  /* GridSample-20 renamed bilinear/bicubic to linear/cubic */
        if ((a = attr(n, "mode", NULL)) && a->has_s) {
            if (a->s.len == 8 && !memcmp(a->s.data, "bilinear", 8)) set_string(a, "linear");
            else if (a->s.len == 7 && !memcmp(a->s.data, "bicubic", 7)) set_string(a, "cubic");
        }
        return 0;
    case UP_ROI_MODE:    /* RoiAlign-16's default half_pixel is not RoiAlign-10's behaviour */
        if (!attr(n, "coordinate_transformation_mode", NULL))
            set_string(new_attr(n, "coordinate_transformation_mode", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING),
                       "output_half_pixel");
        return 0;
    case UP_ONE_OUTPUT:
        if (n->n_output <= 1) return 0;
        /* fall through */
    case UP_REFUSE:
        return BAD(e, "node '%s' (%s): %s; the typed model's upgrade from opset %d to %d cannot rewrite it",
                   n->name ? n->name : "", n->op_type, ch->why, from, to);
    }
    return 0;
}

static int upgrade_graph(Onnx__GraphProto *g, int from, int to, perr_t *e)
{
    for (size_t i = 0; i < g->n_node; i++) {
        Onnx__NodeProto *n = g->node[i];
        if (n->domain && *n->domain && strcmp(n->domain, "ai.onnx")) continue;
        for (size_t k = 0; k < sizeof changes / sizeof changes[0]; k++)
            if (changes[k].version > from && changes[k].version <= to && !strcmp(changes[k].op, n->op_type) &&
                apply(g, n, &changes[k], from, to, e))
                return -1;
        for (size_t k = 0; k < n->n_attribute; k++) {
            Onnx__AttributeProto *a = n->attribute[k];
            if (a->g && upgrade_graph(a->g, from, to, e)) return -1;
            for (size_t s = 0; s < a->n_graphs; s++)
                if (upgrade_graph(a->graphs[s], from, to, e)) return -1;
        }
    }
    return 0;
}

int fp_upgrade_opset(Onnx__ModelProto *m, int to, perr_t *e)
{
    int from = fp_model_opset(m);
    if (to <= from) return 0;
    if (from < 13)
        return BAD(e, "opset %d: the typed model needs opset %d, and the upgrade covers models from opset 13 on "
                      "(Softmax, Split, Squeeze, Unsqueeze, ReduceSum and others changed at 13)", from, to);
    if (to > MAX_OPSET) return BAD(e, "opset %d: the upgrade table ends at opset %d", to, MAX_OPSET);
    if (upgrade_graph(m->graph, from, to, e)) return -1;
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const char *d = m->opset_import[i]->domain ? m->opset_import[i]->domain : "";
        if (!*d || !strcmp(d, "ai.onnx")) m->opset_import[i]->version = to;
    }
    /* opsets 19-20 came with IR version 9, 21-22 with 10 */
    int ir = to >= 21 ? 10 : to >= 19 ? 9 : 8;
    if (!m->has_ir_version || m->ir_version < ir) { m->has_ir_version = 1; m->ir_version = ir; }
    return 0;
}

int fp_needed_opset(const char *op, int dtype, int from)
{
    int f = fp_first_signature(op, dtype);
    return f > from && f <= MAX_OPSET ? f : from;
}
