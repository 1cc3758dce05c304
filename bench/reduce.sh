#!/bin/bash
# reduce on the trained 320x320 RT-DETR (issue 40's goal: under a minute on
# 2 cores). Input: shapes-val image 1 (gen-shapes, seed 2024) through the
# official preprocessing at 320x320; reference dump: the FP32 engine's
# `infer --dump all` of it. Cells timed (wall clock, /usr/bin/time):
#   planted  every layer FP32 but one Conv at BF16 (the planted fault of
#            tests/stage/reduce.t), rtdetr.yaml's tolerances (1e-3, max)
#   fp16     the whole model at FP16 under the same tolerances (no layer SNR
#            floor: with rtdetr.yaml's 30 dB nothing fails, exit 1)
# at 1 and 2 threads. Prints a table; writes build/bench/reduce.json.
set -eu
cd "$(dirname "$0")/.."
bin=${PARITY_BIN:-build/bin}
out=build/bench
mkdir -p "$out"
tmp=$(mktemp -d /tmp/parity-bench-reduce-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
model=models/rtdetr/rtdetr_shapes_op16.onnx
"$bin/gen-shapes" --split val --seed 2024 --count 1 -o "$tmp/val" >/dev/null
"$bin/preprocess" --config configs/preprocess/rtdetr-official.yaml --set resize.size=320x320 -o "$tmp/pre" -j 1 \
  "$tmp/val/images/0000001.png" >/dev/null
in="$tmp/pre/0000001"
"$bin/build-engine" "$model" -o "$tmp/fp32.engine" --input-shape images=1x3x320x320 2>/dev/null
"$bin/infer" "$tmp/fp32.engine" -i "$in" -o "$tmp/dump" --dump all
printf 'precision: fp32\nlayers:\n  - match: %s\n    precision: bf16\n' \
  "'/model/model/encoder/fpn_blocks.1/bottlenecks/bottlenecks.1/conv1/conv/Conv'" > "$tmp/planted.yaml"
cp configs/precisions/fp16.yaml "$tmp/fp16.yaml"
rule="--atol 1e-3 --rtol 1e-3 --check-error-stat max"
printf '%-8s %7s %8s %7s %9s %6s  %s\n' cell threads wall_s rss_MB evals nodes verdict
echo "{\"model\": \"$model\", \"cells\": [" > "$tmp/json"
first=1
for cell in planted fp16; do
  for t in 1 2; do
    o="$tmp/out.$cell.$t"
    /usr/bin/time -f '%e %M' -o "$tmp/time" "$bin/reduce" "$model" --inputs "$in" --reference "$tmp/dump" \
      --config "$tmp/$cell.yaml" $rule --threads $t -q -o "$o" 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
    read -r wall rss < "$tmp/time"
    read -r evals nodes verdict < <(/usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))
print(r["evaluations"], "%d/%d" % (r["nodes_after"], r["nodes_before"]), r["verdict"])' "$o/report.json")
    printf '%-8s %7s %8s %7d %9s %6s  %s\n' $cell $t "$wall" $((rss / 1024)) "$evals" "$nodes" "$verdict"
    [ $first = 1 ] || echo "," >> "$tmp/json"; first=0
    printf '{"cell": "%s", "threads": %s, "wall_s": %s, "rss_kb": %s, "evaluations": %s, "nodes": "%s", "verdict": "%s"}' \
      $cell $t "$wall" "$rss" "$evals" "$nodes" "$verdict" >> "$tmp/json"
  done
done
echo "], \"nproc\": $(nproc), \"loadavg\": \"$(cut -d' ' -f1-3 /proc/loadavg)\"}" >> "$tmp/json"
mv "$tmp/json" "$out/reduce.json"
echo "load average during the run: $(cut -d' ' -f1-3 /proc/loadavg) (results: $out/reduce.json)"
