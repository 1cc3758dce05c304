#!/bin/sh
# preprocess.sh — decode + resize + normalise: parity's preprocess against
# cv2.imread + cv2.resize + numpy on the same images; prints the ratio.
# BENCH_IMAGES (24) and BENCH_REPEAT (3) change the workload.
set -e
here=$(dirname "$0")
exec "${PYTHON:-/usr/bin/python3}" "$here/preprocess_bench.py"
