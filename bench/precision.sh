#!/bin/bash
# Precision emulation cost: parity's infer at tf32/fp16/bf16 against fp32 on
# the same model, same thread count, in one run (issue: at most 1.5x).
# Models: the RT-DETR fixtures (opset 16 and 17), the validated RT-DETR
# (320x320) and the nafnet-ln and unet-attn reproducers. Prints a table; writes build/bench/precision.json.
# COUNT=instructions measures executed instructions with callgrind instead of
# time: slower, but exact and independent of machine load (the 2-core dev
# and CI machines are often loaded, which makes millisecond ratios noisy).
set -eu
cd "$(dirname "$0")/.."
bin=${PARITY_BIN:-build/bin}
runs=${RUNS:-20}
threads=${THREADS:-1}
out=build/bench
mkdir -p "$out"
tmp=$(mktemp -d /tmp/parity-bench-precision-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# The validated RT-DETR (configs/models/rtdetr.yaml, 320x320): a fixed
# pseudo-random image, since its emulation cost is the validation matrix's
# (issue 41: its FP16 and mixed cells cost ~7% more than FP32).
/usr/bin/python3 -c '
import numpy as np, os, sys
d = sys.argv[1]; os.makedirs(d, exist_ok=True)
np.save(d + "/images.npy", np.random.default_rng(41).random((1, 3, 320, 320), dtype=np.float32))
np.save(d + "/orig_target_sizes.npy", np.array([[320, 320]], dtype=np.int64))' "$out/rtdetr320"
# MODELS (MODEL:INPUT lines) measures only those; the default needs `make models`
models=${MODELS:-"tests/fixtures/rtdetr-tiny/rtdetr_tiny_op16.onnx:tests/fixtures/rtdetr-tiny/input
tests/fixtures/rtdetr-tiny/rtdetr_tiny_op17.onnx:tests/fixtures/rtdetr-tiny/input
models/rtdetr/rtdetr_shapes_op16.onnx:$out/rtdetr320
build/models/nafnet_ln/nafnet_ln_op16.onnx:build/models/nafnet_ln/input
build/models/unet_attn/unet_attn.onnx:build/models/unet_attn/input"}
[ -n "${MODELS:-}" ] || make -s models >/dev/null
median() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["samples"][0]["median_ms"])' "$1"; }
echo "{\"threads\": $threads, \"runs\": $runs, \"models\": [" > "$tmp/json"
printf '%-24s %10s %10s %10s %10s   %s\n' model fp32_ms tf32 fp16 bf16 "(ratio to fp32)"
first=1
for entry in $models; do
  model=${entry%%:*}; input=${entry#*:}; name=$(basename "$model" .onnx)
  declare -A ms
  # alternate precisions in rounds so machine load hits all alike
  for round in 1 2; do
    for p in fp32 tf32 fp16 bf16; do
      [ -f "$tmp/$name.$p.engine" ] || "$bin/build-engine" "$model" -o "$tmp/$name.$p.engine" --precision $p
      if [ "${COUNT:-time}" = instructions ]; then
        [ $round = 2 ] || continue
        v=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin/infer" "$tmp/$name.$p.engine" -i "$input" \
              -o "$tmp/o" --threads 1 --runs 3 2>&1 | sed -n 's/.*I *refs: *//p' | tr -d ,)
        v=$(/usr/bin/python3 -c "print($v / 1e6)")   # millions of instructions, reported in the ms columns
      else
        "$bin/infer" "$tmp/$name.$p.engine" -i "$input" -o "$tmp/o" --threads "$threads" --runs "$runs" --stats "$tmp/s.json"
        v=$(median "$tmp/s.json")
      fi
      if [ $round = 2 ]; then ms[$p]=$v; fi
    done
  done
  r() { /usr/bin/python3 -c "print('%.2fx' % ($1 / $2))"; }
  printf '%-24s %10.2f %10s %10s %10s\n' "$name" "${ms[fp32]}" "$(r ${ms[tf32]} ${ms[fp32]})" "$(r ${ms[fp16]} ${ms[fp32]})" "$(r ${ms[bf16]} ${ms[fp32]})"
  [ $first = 1 ] || echo "," >> "$tmp/json"; first=0
  printf '{"model": "%s", "fp32_ms": %s, "tf32_ms": %s, "fp16_ms": %s, "bf16_ms": %s}' "$name" "${ms[fp32]}" "${ms[tf32]}" "${ms[fp16]}" "${ms[bf16]}" >> "$tmp/json"
done
echo "], \"loadavg\": \"$(cut -d' ' -f1-3 /proc/loadavg)\"}" >> "$tmp/json"
mv "$tmp/json" "$out/precision.json"
echo "load average during the run: $(cut -d' ' -f1-3 /proc/loadavg) (results: $out/precision.json)"
