/* fp32only.h — rows of the op table ("Op@since", "domain:Op@since") that no
 * case runs at FP16/BF16 storage (storage.c), one a line with the reason,
 * as {"Op@since", "why"}: coverage.c fails for a row that neither ran at
 * those storages nor is listed here, and for a listed row that ran. */
{"And@1", "bool inputs and output: no float tensor to store"},
{"BitShift@11", "unsigned integers only"},
{"ConvInteger@10", "8-bit integer inputs, int32 output: no float tensor"},
{"MatMulInteger@10", "8-bit integer inputs, int32 output: no float tensor"},
{"Not@1", "bool input and output: no float tensor to store"},
{"Or@1", "bool inputs and output: no float tensor to store"},
{"SequenceEmpty@11", "no input; its output is a sequence, which precision.c never gives a storage type (no float output)"},
{"Xor@1", "bool inputs and output: no float tensor to store"},
