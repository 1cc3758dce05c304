/* misc.c — the MISC operator family's rows: detection post-processing
 * (NonMaxSuppression, RoiAlign), quantization, Unique and the recurrent
 * layers. Kernels live in nms.c, quant.c, unique.c, roialign.c, rnn.c. */
#include "ops/misc_impl.h"

const op_def_t ops_misc[] = {
    {"", "NonMaxSuppression", 10, 0, nms_shape, nms_run, .no_fold = 0},
};
const int ops_misc_count = sizeof ops_misc / sizeof ops_misc[0];
