#!/bin/sh
# isa.sh — `make bench`: parity's kernels at each instruction-set level
# (PARITY_ISA avx2 and generic against avx512) on the trained RT-DETR, in
# one run; the work is in isa.py beside this file (results in build/bench/).
exec /usr/bin/python3 "$(dirname "$0")/isa.py" "$@"
