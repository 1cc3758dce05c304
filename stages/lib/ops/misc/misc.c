/* misc.c — the MISC operator family's rows: detection post-processing
 * (NonMaxSuppression, RoiAlign), quantization, Unique and the recurrent
 * layers. Kernels live in nms.c, quant.c, qlinear.c, unique.c, roialign.c,
 * rnn.c (declared in misc_impl.h). */
#include "ops/misc/misc_impl.h"

const op_def_t ops_misc[] = {
    {"", "ConvInteger", 10, 0, convint_shape, convint_run},
    {"", "DequantizeLinear", 10, 0, dequantize_shape, dequantize_run},
    {"", "DynamicQuantizeLinear", 11, 0, dynquant_shape, dynquant_run},
    {"", "GRU", 7, 0, rnn_shape, rnn_run},
    {"", "LSTM", 7, 0, rnn_shape, rnn_run},
    {"", "MatMulInteger", 10, 0, matmulint_shape, matmulint_run, .cache_in1 = 1},
    {"", "NonMaxSuppression", 10, 0, nms_shape, nms_run},
    {"", "QLinearConv", 10, 0, qlinearconv_shape, qlinearconv_run},
    {"", "QLinearMatMul", 10, 0, qlinearmatmul_shape, qlinearmatmul_run},
    {"", "QuantizeLinear", 10, 0, quantize_shape, quantize_run},
    {"", "RNN", 7, 0, rnn_shape, rnn_run},
    {"", "RoiAlign", 10, 0, roialign_shape, roialign_run},
    {"", "Unique", 11, 0, unique_shape, unique_run},
};
const int ops_misc_count = sizeof ops_misc / sizeof ops_misc[0];
