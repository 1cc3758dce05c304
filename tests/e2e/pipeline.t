#!/bin/bash
# make validate as a user runs it, on the unet-attn and convclip reproducers:
# verdicts, the no-op rerun, the partial rerun after editing one precision
# config, an interrupted run (SIGINT) rerun to the same results, and configs
# that try to inject commands.
cd "$(dirname "$0")/../.." || exit 2
n=0; failed=0
ok() { n=$((n+1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=$((failed+1)); fi; }
bin=${PARITY_BIN:-build/bin}
tmp=$(mktemp -d /tmp/parity-pipeline-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
strip_timing() { /usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
d.pop("timing", None)
for c in d["cells"]: c.pop("median_ms", None)
print(json.dumps(d, sort_keys=True))' "$1"; }

# 1. verdicts: unet-attn passes, convclip fails at Polygraphy's default tolerances
rm -rf build/unet-attn reports/unet-attn build/convclip reports/convclip
make -s validate MODEL=unet-attn > "$tmp/u1" 2>&1; rc=$?
ok $([ $rc = 0 ] && grep -q "validate: unet-attn: PASS" "$tmp/u1"; echo $?) "unet-attn validates and passes"
make -s validate MODEL=convclip > "$tmp/c1" 2>&1; rc=$?
ok $([ $rc != 0 ] && grep -q "convclip: FAIL" "$tmp/c1" && grep -q "first failing tensor: output (Conv, layer /conv/Conv, tf32): precision issue" "$tmp/c1"; echo $?) \
   "convclip fails with the diagnosis naming the first diverging tensor (non-zero exit)"
for f in index.html summary.md junit.xml results.json; do
  ok $([ -s reports/convclip/$f ]; echo $?) "report writes reports/convclip/$f"
done
ok $(grep -q '<failure message="tf32: outputs differ' reports/convclip/junit.xml; echo $?) "junit.xml carries the failing check with its reason"
# the run's time by stage: printed at the end, carried by the report, summed from the log
ok $(grep -q "^validate: time by stage: .* stage runs in" "$tmp/u1" && grep -qE "^  infer +[0-9]+ " "$tmp/u1"; echo $?) \
   "validate ends with the time by stage"
ok $(/usr/bin/python3 -c '
import json, sys
log = [json.loads(l) for l in open("build/unet-attn/timing.jsonl")]
t = json.load(open("reports/unet-attn/results.json"))["timing"]
before = [r for r in log if r["stage"] != "report"]   # the report carries what ran before it
infer = [r for r in before if r["stage"] == "infer"]
row = [s for s in t["stages"] if s["stage"] == "infer"][0]
sys.exit(not (t["runs"] == len(before) and row["runs"] == len(infer) > 0
              and abs(row["wall_s"] - sum(r["wall_s"] for r in infer)) < 1e-6 and len(log) == len(before) + 1))'; echo $?) \
   "results.json's timing sums this run's log (every stage before the report)"
grep -q "### Time by stage" reports/unet-attn/summary.md && grep -q '<table id="timing">' reports/unet-attn/index.html
ok $? "summary.md and index.html carry the table"

# 2. nothing changed: the second run does nothing and says so
make validate MODEL=unet-attn > "$tmp/u2" 2>&1
r=$(grep -q "nothing changed since the last run" "$tmp/u2" && ! grep -qE "PLAN|ENGINE|INFER|BACKEND|COMPARE|REPORT" "$tmp/u2"; echo $?)
ok $r "a rerun with nothing changed runs no stage and says so"
ok $(grep -q "^validate: time by stage: no stage ran" "$tmp/u2" && [ ! -s build/unet-attn/timing.jsonl ]; echo $?) \
   "and its time by stage is empty: the earlier run's records are gone"
[ $r = 0 ] || sed 's/^/#   /' "$tmp/u2"

# 3. editing one precision config reruns only the cells that use it. fp16.yaml
# is every model's: a test that keeps cells' outputs across its runs
# (judged_nothing.t) holds build/.precisions.lock shared, so the touch waits
exec 8>build/.precisions.lock && flock 8
touch configs/precisions/fp16.yaml
flock -u 8
make validate MODEL=unet-attn > "$tmp/u3" 2>&1
ok $(grep -q "ENGINE  unet-attn fp16" "$tmp/u3" && ! grep -q "ENGINE  unet-attn fp32" "$tmp/u3" \
     && ! grep -q "INFER   unet-attn inputs__fp32" "$tmp/u3"; echo $?) "touching fp16.yaml rebuilds the fp16 cell only"
ok $(/usr/bin/python3 -c '
import json, sys
log = [json.loads(l) for l in open("build/unet-attn/timing.jsonl")]
sys.exit(not (log and all(r["stage"] == "report" or "fp16" in r["cell"] for r in log)))'; echo $?) \
   "the timing log holds this run's fp16 stages and the report only"

# 4. an interrupted run, rerun, gives the same results as an uninterrupted one
strip_timing reports/unet-attn/results.json > "$tmp/whole.json"
rm -rf build/unet-attn reports/unet-attn
set -m   # the background make gets its own process group, as a terminal's job would
make validate MODEL=unet-attn > "$tmp/u4" 2>&1 &
pid=$!
set +m
for i in $(seq 1 400); do grep -q "INFER" "$tmp/u4" && break; sleep 0.02; done
kill -INT -- -$pid 2>/dev/null; wait $pid; rc=$?
# interrupted before the report: no results.json may exist (a finished run is no test of this)
ok $([ $rc != 0 ] && [ ! -f reports/unet-attn/results.json ]; echo $?) "an interrupted run (exit $rc) leaves no report that looks done"
make -s validate MODEL=unet-attn > "$tmp/u5" 2>&1
strip_timing reports/unet-attn/results.json > "$tmp/again.json"
ok $(cmp -s "$tmp/whole.json" "$tmp/again.json"; echo $?) "rerun after SIGINT gives the same results"

# 5. configs cannot run commands: names and paths outside the safe alphabet are refused
inject() {
  printf '%s\n' "$2" > "$tmp/evil.yaml"
  rm -f "$tmp/pwned"
  "$bin/plan" "$tmp/evil.yaml" -o "$tmp/out" > "$tmp/evil.out" 2>&1; rc=$?
  ok $([ $rc = 2 ] && [ ! -e "$tmp/pwned" ] && [ ! -e "$tmp/out/plan.mk" ] && [ $(wc -l < "$tmp/evil.out") = 1 ]; echo $?) "$1"
}
inject "a \$(shell ...) model path is refused" "model: \$(shell touch $tmp/pwned)
inputs: x
precisions: [fp32]"
inject "a backquoted path is refused" "model: \`touch $tmp/pwned\`.onnx
inputs: x
precisions: [fp32]"
inject "'; rm' in a precision name is refused" "model: m.onnx
inputs: x
precisions: ['fp32; rm -rf $tmp']"
inject "a \$(shell) model name is refused" "name: \$(shell touch $tmp/pwned)
model: m.onnx
inputs: x
precisions: [fp32]"
inject "a path leaving the tree with .. is refused" "model: ../../etc/passwd
inputs: x
precisions: [fp32]"
# a preprocess value is YAML text for the step: it goes verbatim into the step's
# argument file, never into plan.mk (tests/stage/plan_injection.t probes every key)
printf '%s\n' "model: m.onnx
dataset: {gt: g.json, images: i}
variants: [rtdetr-official]
preprocess: {resize.size: \"320x320' ; touch $tmp/pwned; '\"}
precisions: [fp32]" > "$tmp/evil.yaml"
"$bin/plan" "$tmp/evil.yaml" -o "$tmp/out" > "$tmp/evil.out" 2>&1; rc=$?
ok $([ $rc = 0 ] && ! grep -q pwned "$tmp/out/plan.mk" && grep -qF "\"resize.size=320x320' ; touch $tmp/pwned; '\"" "$tmp/out/pre/rtdetr-official.args"; echo $?) \
   "a quote in a --set value goes verbatim into the argument file, not into plan.mk"
ok $([ ! -e "$tmp/pwned" ]; echo $?) "no injected command ever ran"
echo "1..$n"
[ $failed = 0 ]
