#!/bin/sh
# qint_vs_ort.sh — `make bench`: the integer ops of dynamically quantized
# models (MatMulInteger, ConvInteger, and quantize_dynamic's whole
# DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul chain) alone,
# parity against ONNX Runtime by CPU time; the work is in qint_vs_ort.py.
exec /usr/bin/python3 "$(dirname "$0")/qint_vs_ort.py" "$@"
