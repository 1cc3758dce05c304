#!/bin/bash
# A config error is a failed run (issue 34): when plan refuses an edited
# config, make validate stops before any cell with plan's one line and
# exit 2 -- never "nothing changed since the last run" and the verdict of
# the config as it was. A new config that does not plan is said so too,
# not make's "No rule to make target 'validate-NAME'".
cd "$(dirname "$0")/../.." || exit 2
n=0; failed=0
ok() { n=$((n+1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=$((failed+1)); fi; }
tmp=$(mktemp -d /tmp/parity-cfgerr-XXXXXX)
name=cfgerr-test-$$
cfg=configs/models/$name.yaml
trap 'rm -rf "$tmp" "$cfg" "build/$name" "reports/$name"' EXIT
make -s build/models/convclip/.done >/dev/null 2>&1
good() {
  cat > "$cfg" <<YAML
model: build/models/convclip/convclip.onnx
inputs: build/models/convclip/input
depends: [build/models/convclip/.done]
precisions: [fp32, fp16]
compare: {atol: 1.0, rtol: 1.0}
YAML
}

# 1. a config that plans: a verdict
good
make -s validate MODEL=$name > "$tmp/o1" 2>&1; rc=$?
ok $([ $rc = 0 ] && grep -q "validate: $name: PASS" "$tmp/o1"; echo $?) "a good config validates (rc $rc)"
cp reports/$name/results.json "$tmp/results.before"

# 2. the config edited into one plan refuses: exit 2, plan's line, nothing run, no old verdict
printf 'compare: {atol: 1.0, rtoll: 1.0}\n' >> "$cfg"
sed -i '/^compare: {atol: 1.0, rtol: 1.0}$/d' "$cfg"
make -s validate MODEL=$name > "$tmp/o2" 2>&1; rc=$?
ok $([ $rc = 2 ]; echo $?) "make validate exits 2 on a config plan refuses (rc $rc)"
ok $(grep -q "^plan: $cfg:[0-9]*:[0-9]*: unknown key 'compare.rtoll'" "$tmp/o2" \
     && grep -q "validate: $name: $cfg does not plan (above): nothing was run" "$tmp/o2"; echo $?) \
   "plan's one line names the file, line and key, then that nothing was run"
ok $(! grep -qE "nothing changed|PASS|FAIL|INFER|COMPARE|REPORT" "$tmp/o2"; echo $?) \
   "no stale verdict, no 'nothing changed', no step ran"
[ $failed = 0 ] || sed 's/^/#   /' "$tmp/o2"
ok $([ ! -e build/$name/plan.mk ] && cmp -s reports/$name/results.json "$tmp/results.before"; echo $?) \
   "the stale plan.mk is gone (no later make can use it); the last report is left as it was"
make -s validate MODEL=$name > "$tmp/o3" 2>&1; rc=$?
ok $([ $rc = 2 ] && ! grep -qE "nothing changed|PASS|FAIL" "$tmp/o3"; echo $?) "a second try fails the same way (rc $rc)"

# 3. fixed again: it plans and validates
good
make -s validate MODEL=$name > "$tmp/o4" 2>&1; rc=$?
ok $([ $rc = 0 ] && grep -q "validate: $name: PASS" "$tmp/o4"; echo $?) "the fixed config validates again (rc $rc)"

# 4. a new config that never planned: plan's error, not "No rule to make target"
rm -rf build/$name reports/$name
printf 'model: build/models/convclip/convclip.onnx\nprecisions: [fp32]\n' > "$cfg"
make -s validate MODEL=$name > "$tmp/o5" 2>&1; rc=$?
ok $([ $rc = 2 ] && grep -q "^plan: $cfg: give either inputs" "$tmp/o5" && ! grep -q "No rule to make target" "$tmp/o5"; echo $?) \
   "a new config that does not plan: plan's line and exit 2, not make's 'No rule' (rc $rc)"
[ $failed = 0 ] || sed 's/^/#   /' "$tmp/o5"
echo "1..$n"
[ $failed = 0 ]
