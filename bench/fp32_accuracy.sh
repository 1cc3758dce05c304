#!/bin/sh
# fp32_accuracy.sh — `make bench`: parity's FP32 error against float64 on a
# long MatMul (k = 12544) and a 256-channel 3x3 convolution, against ONNX
# Runtime's on the same inputs, in one run (fp32_accuracy.py beside this file).
exec /usr/bin/python3 "$(dirname "$0")/fp32_accuracy.py" "$@"
