#!/bin/sh
# config.sh — the YAML config reader on large configs: plan refusing a
# config of N keys whose first key is repeated last (the whole file is read
# and every key checked for a duplicate), against PyYAML reading the same
# file (its C loader where built). Goal (issue 39): 80,000 keys (1 MB) in
# under 0.5 s; exit 1 above it. BENCH_KEYS ("10000 40000 80000") and
# BENCH_REPEAT (3, best taken) change the workload.
set -e
here=$(dirname "$0")
exec "${PYTHON:-/usr/bin/python3}" "$here/config_bench.py"
