#!/bin/sh
# kernels.sh — `make bench`: the convolution and GEMM kernels alone on the
# full-size RT-DETR's shapes (bench/kernels.c, built as build/bench/kernels by
# mk/bench.mk), at every instruction-set level this CPU has, GFLOP/s by the
# process's CPU clock; the table goes to build/bench/kernels.md.
set -eu
bin="${PARITY_BIN:-build/bin}/../bench/kernels"
[ -x "$bin" ] || { echo "kernels.sh: $bin is not built (make bench-tools)" >&2; exit 2; }
out="$(dirname "$bin")/kernels.md"
tmp="$out.tmp.$$"
trap 'rm -f "$tmp"' EXIT
for isa in avx512 avx2 generic; do
    "$bin" --isa "$isa" --reps "${BENCH_REPEAT:-3}" 2>/dev/null || true
done > "$tmp"
mv "$tmp" "$out"
cat "$out"
