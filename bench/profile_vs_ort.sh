#!/bin/sh
# profile_vs_ort.sh — `make bench`: where the time goes on the full-size
# RT-DETR, parity's per-layer profile beside ONNX Runtime's, by kind of layer
# (Conv shapes, MatMul, LayerNorm, ...) with GFLOP/s; the work is in
# profile_vs_ort.py beside this file (results in build/bench/).
exec /usr/bin/python3 "$(dirname "$0")/profile_vs_ort.py" "$@"
