#!/bin/sh
# infer_vs_ort.sh — `make bench`: parity's FP32 infer against ONNX Runtime on
# the bundled models, same machine, same thread count, one run; the work is
# in infer_vs_ort.py beside this file (results in build/bench/).
exec /usr/bin/python3 "$(dirname "$0")/infer_vs_ort.py" "$@"
