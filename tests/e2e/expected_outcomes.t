#!/bin/bash
# Expected outcomes (pytest's xfail), as a user meets them through make
# validate on the small nafnet-ln reproducer (its fp16 cell fails: FP16
# overflow in a decomposed LayerNorm; fp32 and mixed pass):
#   every expectation holds             -> PASS, exit 0, JUnit skipped
#   an expected failure passes (XPASS)  -> FAIL, exit 1, named as XPASS
#   a tightened threshold fails a cell  -> FAIL, exit 1
# and the judging itself on hand-made results: the reference cell failing
# min_map, grouped reasons, the verdict line; and the trained restorer
# nafnet-shapes (and its opset-17 export) with its declared fp16 failure.
cd "$(dirname "$0")/../.." || exit 2
n=0; failed=0
ok() { n=$((n+1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=$((failed+1)); fi; }
bin=${PARITY_BIN:-build/bin}
tmp=$(mktemp -d /tmp/parity-xfail-XXXXXX)
name=xfail-test-$$
cfg=configs/models/$name.yaml
trap 'rm -rf "$tmp" "$cfg" "build/$name" "reports/$name"' EXIT

config() {   # $1: expected_failures block, $2: compare atol, $3: rtol
  cat > "$cfg" <<YAML
description: nafnet-ln with expectations (tests/e2e/expected_outcomes.t)
model: build/models/nafnet_ln/nafnet_ln_op16.onnx
inputs: build/models/nafnet_ln/input
depends: [build/models/nafnet_ln/.done]
precisions: [fp32, fp16, mixed]
reference: {precision: fp32}
compare: {atol: $2, rtol: ${3:-2.0e-2}, check_error_stat: max}
$1
YAML
}
make -s build/models/nafnet_ln/.done >/dev/null 2>&1

# 1. the fp16 failure expected: PASS
config 'expected_failures:
  - precision: fp16
    reason: "FP16 overflow in the decomposed LayerNorm"' 1.0e-2
make -s validate MODEL=$name > "$tmp/o1" 2>&1; rc=$?
ok $([ $rc = 0 ] && grep -q "validate: $name: PASS — 1 expected failure: inputs/fp16" "$tmp/o1"; echo $?) \
   "an expected failure that fails: PASS, exit 0 ($(grep -m1 validate: "$tmp/o1"))"
ok $(grep -q '<skipped type="pytest.xfail" message="expected failure: FP16 overflow in the decomposed LayerNorm"' reports/$name/junit.xml \
     && grep -q 'failures="0" skipped="1"' reports/$name/junit.xml; echo $?) "JUnit marks it skipped with the reason, as pytest does"
ok $(/usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
c = {x["name"]: x for x in d["cells"]}
assert d["verdict"] == "PASS" and d["expected_failures"] == 1 and d["unexpected_passes"] == 0
assert c["inputs__fp16"]["outcome"] == "XFAIL" and c["inputs__mixed"]["outcome"] == "PASS"
' reports/$name/results.json; echo $?) "results.json: fp16 XFAIL, mixed PASS, verdict PASS"
ok $(grep -q "XFAIL" reports/$name/summary.md && grep -q 'class="xfail"' reports/$name/index.html; echo $?) \
   "summary.md and index.html mark the expected failure in the grid"

# 2. mixed expected to fail but passes: XPASS fails the run
config 'expected_failures:
  - precision: fp16
  - precision: mixed
    reason: "thought to overflow too"' 1.0e-2
make -s validate MODEL=$name > "$tmp/o2" 2>&1; rc=$?
ok $([ $rc != 0 ] && grep -q "FAIL — 1 unexpected pass (XPASS): inputs__mixed" "$tmp/o2" \
     && grep -q "XPASS: inputs/mixed was expected to fail (thought to overflow too)" "$tmp/o2"; echo $?) \
   "an expected failure that passes: FAIL (XPASS), exit $rc"

# 3. a tightened threshold fails a cell nobody expected to fail
config 'expected_failures:
  - precision: fp16' 1.0e-7 1.0e-7
make -s validate MODEL=$name > "$tmp/o3" 2>&1; rc=$?
ok $([ $rc != 0 ] && grep -q "FAIL — 1 check failed; 1 expected failure: inputs/fp16" "$tmp/o3" \
     && grep -q "inputs__mixed compare:" "$tmp/o3"; echo $?) "a threshold that fails mixed: FAIL, exit $rc"

# 4. a bad expectation is refused at plan time, one line, exit 2
for bad in 'expected_failures: [{precision: fp64}]' 'expected_failures: [{reason: "no cell"}]' \
           'expected_failures: [{variant: inputs, precision: fp32}]' 'expected_failures: [{precision: fp16, when: always}]'; do
  config "$bad" 1.0e-2
  "$bin/plan" "$cfg" -o "$tmp/plan" > "$tmp/bad" 2>&1; rc=$?
  ok $([ $rc = 2 ] && [ $(wc -l < "$tmp/bad") = 1 ]; echo $?) "refused: $bad ($(cat "$tmp/bad"))"
done

# 4b. the detection-matching keys never carry make or shell syntax into plan.mk
det() {   # $1: description, $2: detection/compare lines
  printf 'model: m.onnx\ndataset: {gt: g.json, images: i}\nvariants: [rtdetr-official]\nprecisions: [fp32, fp16]\n%s\n' "$2" > "$tmp/det.yaml"
  rm -f "$tmp/pwned"
  "$bin/plan" "$tmp/det.yaml" -o "$tmp/detplan" > "$tmp/det.out" 2>&1; rc=$?
  ok $([ $rc = 2 ] && [ ! -e "$tmp/pwned" ] && [ $(wc -l < "$tmp/det.out") = 1 ]; echo $?) "$1 ($(cat "$tmp/det.out"))"
}
det "a quoted command in detection.labels is refused" "detection: {labels: \"x'; touch $tmp/pwned; '\", boxes: b, scores: s}"
det "\$(shell) in compare.pre_postprocess is refused" "detection: {labels: l, boxes: b, scores: s}
compare: {pre_postprocess: [\"\$(shell touch $tmp/pwned)\"]}"
det "compare.match: detections without detection: is refused" "compare: {match: detections}"
det "a score floor outside [0, 1] is refused" "detection: {labels: l, boxes: b, scores: s}
compare: {score_floor: 2}"
printf 'model: m.onnx\ndataset: {gt: g.json, images: i}\nvariants: [rtdetr-official, {name: letterbox, detection: {box_coords: input}}]\nprecisions: [fp32]\ndetection: {labels: l, boxes: b, scores: s, box_coords: original}\n' > "$tmp/det.yaml"
"$bin/plan" "$tmp/det.yaml" -o "$tmp/detplan" > "$tmp/det.out" 2>&1
ok $(grep -q "decode '$tmp/detplan/detection-letterbox.yaml'" "$tmp/detplan/plan.mk" \
     && grep -q '"box_coords": "input"' "$tmp/detplan/detection-letterbox.yaml" \
     && grep -q "decode '$tmp/detplan/detection.yaml'" "$tmp/detplan/plan.mk" \
     && [ $(grep -c -- "--detection 'labels=l,boxes=b,scores=s" "$tmp/detplan/plan.mk") = 0 ]; echo $?) \
   "a variant's own decoding: its map-eval reads detection-VARIANT.yaml (box_coords: input), the reference's the model's"

# 5. judging on hand-made results: a detector whose reference misses min_map
mkdir -p "$tmp/j/c"
for c in ref lb16 lb32 ok; do mkdir -p "$tmp/j/c/$c"; done
map() { printf '{"stats": {"AP": %s, "AP50": %s}}' "$1" "$1" > "$tmp/j/c/$2/map.json"; }
map 0.55 ref; map 0.05 lb16; map 0.06 lb32; map 0.549 ok
cat > "$tmp/j/plan.json" <<JSON
{"model": "judge", "onnx": "m.onnx", "reference": "std__fp32", "variants": ["std", "lb"],
 "precisions": [{"name": "fp32"}, {"name": "fp16"}],
 "thresholds": {"max_map_drop": 2.0, "min_map": 0.60, "require_compare": false},
 "cells": [
  {"name": "std__fp32", "variant": "std", "precision": "fp32", "is_reference": true, "map": "$tmp/j/c/ref/map.json",
   "checks": ["min_map", "finite"], "expected_failure": null},
  {"name": "std__fp16", "variant": "std", "precision": "fp16", "is_reference": false, "map": "$tmp/j/c/ok/map.json",
   "checks": ["map_drop", "finite"], "expected_failure": null},
  {"name": "lb__fp32", "variant": "lb", "precision": "fp32", "is_reference": false, "map": "$tmp/j/c/lb32/map.json",
   "checks": ["map_drop", "finite"], "expected_failure": "boxes in letterboxed coordinates"},
  {"name": "lb__fp16", "variant": "lb", "precision": "fp16", "is_reference": false, "map": "$tmp/j/c/lb16/map.json",
   "checks": ["map_drop", "finite"], "expected_failure": "boxes in letterboxed coordinates"}]}
JSON
"$bin/report" --plan "$tmp/j/plan.json" -o "$tmp/j/out" > "$tmp/o5" 2>&1
"$bin/report" --verdict "$tmp/j/out/results.json" > "$tmp/v5"; rc=$?
ok $([ $rc = 1 ] && grep -q "validate: judge: FAIL — 1 check failed; 1 expected failure: lb (−50.0 AP)" "$tmp/v5" \
     && grep -q "std__fp32 min_map: reference AP 0.550 is below the required 0.600" "$tmp/v5"; echo $?) \
   "the reference cell below min_map fails the run; the expected failures stay listed ($(head -1 "$tmp/v5"))"
ok $(grep -c "^- expected failure, lb: −49.0 to −50.0 AP at every precision — boxes in letterboxed coordinates" "$tmp/j/out/summary.md" \
     | grep -qx 1; echo $?) "one reason per cause, not one per precision"
sed -i 's/"min_map": 0.60/"min_map": 0.50/' "$tmp/j/plan.json"
"$bin/report" --plan "$tmp/j/plan.json" -o "$tmp/j/out" > /dev/null 2>&1
"$bin/report" --verdict "$tmp/j/out/results.json" > "$tmp/v6"; rc=$?
ok $([ $rc = 0 ] && grep -qx "validate: judge: PASS — 1 expected failure: lb (−50.0 AP)" "$tmp/v6"; echo $?) \
   "with min_map met: PASS listing the expected failure ($(cat "$tmp/v6"))"
# 6. the trained restorer (configs/models/nafnet-shapes*.yaml, issue 36) as
# a user runs it: the opset-16 k=8 export's fp16 cell is the declared
# expected failure, losing >= 3 dB PSNR with its overflow found by parity's
# own diagnosis (not only the config's reason); fp32 gains >= 3 dB over the
# degraded input (task-eval on the input tensors themselves); mixed and
# fix-precision's answer pass; the opset-17 export passes at fp16
make -s validate MODEL=nafnet-shapes > "$tmp/n1" 2>&1; rc=$?
ok $([ $rc = 0 ] && grep -q "validate: nafnet-shapes: PASS — 1 expected failure: inputs/fp16 (−[0-9.]* dB PSNR)" "$tmp/n1"; echo $?) \
   "nafnet-shapes: PASS with its fp16 expected failure ($(grep -m1 validate: "$tmp/n1"))"
"$bin/task-eval" --task restoration --dt build/datasets/nafnet-shapes-val-32/input --output input --output-max 255 \
  --clean build/datasets/nafnet-shapes-val-32/clean -q --json "$tmp/degraded.json" > "$tmp/n2" 2>&1
ok $(/usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
c = {x["name"]: x for x in d["cells"]}
deg = json.load(open(sys.argv[2]))["metrics"]["psnr"]["value"]
lw = json.load(open(sys.argv[3]))["layerwise"]["samples"][0]["first_nonfinite"]
t = lambda n: c[n]["task"]["metrics"]["psnr"]
print("# degraded %.2f dB, fp32 %.2f, fp16 %+.2f, mixed %+.2f, fix %+.4f; first non-finite %s" % (
    deg, t("inputs__fp32")["value"], t("inputs__fp16")["delta"], t("inputs__mixed")["delta"],
    t("inputs__nafnet-shapes-fix-fp16")["delta"], lw["layer"]), file=sys.stderr)
assert t("inputs__fp32")["value"] >= deg + 3
assert c["inputs__fp16"]["outcome"] == "XFAIL" and t("inputs__fp16")["delta"] <= -3
assert lw["layer"] == "/encoders.0/encoders.0.0/norm1/Pow" and lw["precision"] == "fp16"
assert c["inputs__mixed"]["outcome"] == "PASS" and c["inputs__nafnet-shapes-fix-fp16"]["outcome"] == "PASS"
' reports/nafnet-shapes/results.json "$tmp/degraded.json" build/nafnet-shapes/cells/inputs__fp16/layerwise.json; echo $?) \
   "nafnet-shapes: fp32 >= 3 dB over the degraded input, fp16 >= 3 dB below fp32 with the overflow at norm1/Pow, mixed and fix-precision pass"
make -s validate MODEL=nafnet-shapes-op17 > "$tmp/n3" 2>&1; rc=$?
ok $([ $rc = 0 ] && grep -q "validate: nafnet-shapes-op17: PASS" "$tmp/n3"; echo $?) \
   "nafnet-shapes-op17 (LayerNormalization): fp16 passes ($(grep -m1 validate: "$tmp/n3"))"

echo "1..$n"
[ $failed = 0 ]
