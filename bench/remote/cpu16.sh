#!/bin/sh
# cpu16.sh — infer_vs_ort at 1, 2, 4, 8 and 16 threads on a many-core host
# where ONNX Runtime is Python's (the lent GPU machine's 16-core Xeon: no
# Node.js there). Run from the repository root with parity's stages in
# PARITY_BIN (built here, carried with their libraries: bench/README.md,
# "16 cores") and a python3 holding numpy, onnx and onnxruntime in
# PARITY_PYTHON. The full-size graphs get their weights there (fullsize.py).
: "${BENCH_MODELS:=rtdetr_r18vd_official_op17 rtdetr_r18vd_640_op17}"
: "${BENCH_THREADS:=1 2 4 8 16}"
: "${BENCH_REPEAT:=3}"
export BENCH_MODELS BENCH_THREADS BENCH_REPEAT BENCH_ORT=python
exec "${PARITY_PYTHON:-python3}" "$(dirname "$0")/../infer_vs_ort.py" "$@"
