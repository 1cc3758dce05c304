#!/bin/bash
# Sharded validation on one machine (LAUNCHER=local SHARDS=3, docs/scale-out.md)
# on configs/models/rtdetr-mini.yaml: the merged results.json, summary.md and
# junit.xml equal the unsharded run's byte for byte (timings masked); the
# shards split the samples as FNV-1a-32(id) mod 3 computed here in Python,
# disjoint and complete; a missing shard is named and never merged; bad
# SHARDS values are refused before anything runs.
cd "$(dirname "$0")/../.." || exit 2
n=0; failed=0
ok() { n=$((n+1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=$((failed+1)); fi; }
tmp=$(mktemp -d /tmp/parity-shard-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
M=rtdetr-mini D=build/rtdetr-mini R=reports/rtdetr-mini
mkdir -p build && exec 9>build/.$M.lock && flock 9   # tests/e2e/slurm.t uses the same folders
. tests/e2e/same_reports.sh   # mask, same_reports

# 1. the unsharded run: the reference
rm -rf $D $R
make -s validate MODEL=$M > "$tmp/one.log" 2>&1; rc=$?
ok $([ $rc = 0 ] && [ -f $R/results.json ]; echo $?) "unsharded validate of $M runs (rc $rc)"
cp -r $R "$tmp/one"

# 2. three shards, nothing of the unsharded run reused but the engines
rm -rf $D/pre/*.done $D/pre/rtdetr-official $D/pre/bgr $D/cells $D/shards $R
make -s -j2 validate MODEL=$M SHARDS=3 > "$tmp/three.log" 2>&1; rc=$?
ok $([ $rc = 0 ]; echo $?) "SHARDS=3 validate runs (rc $rc)"
ok $(grep -c 'INFER .* shard 3/[012]$' "$tmp/three.log" | grep -qx 12; echo $?) "every one of the 4 cells ran on each of the 3 shards"
same_reports "$tmp/one" $R; ok $? "merged results.json, summary.md, junit.xml equal the unsharded run's (timings aside)"

# 3. the split: FNV-1a-32 of the sample id mod 3, computed independently
/usr/bin/python3 - $D build/datasets/shapes-val-12/annotations.json > "$tmp/split" <<'PY'
import json, os, sys
d, gt = sys.argv[1], sys.argv[2]
def fnv(s):
    h = 2166136261
    for b in s.encode(): h = ((h ^ b) * 16777619) & 0xffffffff
    return h
ids = sorted(str(im["id"]) for im in json.load(open(gt))["images"])
bad = 0
for cell in ("rtdetr-official__fp32", "bgr__fp16"):
    got = {i: sorted(os.listdir(f"{d}/shards/3/{i}/cells/{cell}/out")) for i in range(3)}
    want = {i: sorted(s for s in ids if fnv(s) % 3 == i) for i in range(3)}
    if got != want: print("# %s: shards %s, expected %s" % (cell, got, want)); bad = 1
    if any(not v for v in got.values()): print("# an empty shard"); bad = 1
    merged = sorted(os.listdir(f"{d}/cells/{cell}/out"))
    if merged != ids: print("# %s: merged %s" % (cell, merged)); bad = 1
print(bad)
PY
ok $(tail -1 "$tmp/split" | grep -qx 0; echo $?) "shards hold FNV-1a-32(id) mod 3 of the 12 samples, disjoint, merged back complete"
grep '^#' "$tmp/split"

# 4. rerun: nothing to do
make -s validate MODEL=$M SHARDS=3 > "$tmp/again.log" 2>&1
ok $(grep -q 'nothing changed' "$tmp/again.log" && ! grep -q 'INFER\|MERGE' "$tmp/again.log"; echo $?) "a sharded rerun does nothing"

# 5. a missing shard: named, never merged; running it alone completes the merge
make -s shard-missing-$M MODEL=$M SHARDS=3 > "$tmp/miss0" 2> "$tmp/miss0.err"   # stdout: one shard a line (a make warning may go to stderr)
ok $([ ! -s "$tmp/miss0" ]; echo $?) "shard-missing lists nothing when every shard is done"
sed 's/^/#   listed: /' "$tmp/miss0" >&2
if [ -s "$tmp/miss0" ]; then   # why make thinks so
    i=$(head -1 "$tmp/miss0")
    make -q -d SHARDS=3 $D/shards/3/$i/cells/rtdetr-official__fp32/out.done 2>&1 | grep -E 'Must remake|newer than|does not exist' | head -8 | sed 's/^/#   /' >&2
fi
rm -rf $D/shards/3/1/cells/bgr__fp32
touch $D/shards/3/1/pre/bgr.done    # and one made stale: its cells rerun
make -s shard-missing-$M MODEL=$M SHARDS=3 > "$tmp/miss1" 2> "$tmp/miss1.err"
ok $(grep -qx 1 "$tmp/miss1"; echo $?) "shard-missing names shard 1 ($(cat "$tmp/miss1" | tr '\n' ' '))"
cp $R/results.json "$tmp/before.json"
make -s validate MODEL=$M SHARDS=3 PARITY_SHARD_MERGE=1 > "$tmp/merge.log" 2>&1; rc=$?
ok $([ $rc != 0 ] && grep -q 'shard 1 of 3 did not finish' "$tmp/merge.log" && ! grep -q 'INFER\|REPORT' "$tmp/merge.log"; echo $?) \
   "the merge alone refuses a missing shard, names it and runs nothing (rc $rc)"
grep -v '^  ' "$tmp/merge.log" | head -3 | sed 's/^/# /'
ok $(cmp -s $R/results.json "$tmp/before.json"; echo $?) "the last results are untouched by the refused merge"
make -s shard-$M MODEL=$M SHARDS=3 SHARD=1 > "$tmp/s1.log" 2>&1; rc=$?
ok $([ $rc = 0 ] && ! grep -q 'shard 3/[02]' "$tmp/s1.log"; echo $?) "make shard-$M SHARD=1 reruns shard 1 alone (rc $rc)"
make -s validate MODEL=$M SHARDS=3 PARITY_SHARD_MERGE=1 > "$tmp/merge2.log" 2>&1; rc=$?
ok $([ $rc = 0 ]; echo $?) "then the merge runs (rc $rc)"
same_reports "$tmp/one" $R; ok $? "and its reports still equal the unsharded run's"

# 6. SHARDS and SHARD are make syntax: only numbers pass
for bad in '0' 'abc' '3;touch x' '1 2' '07' '5000'; do
    make -s plan MODEL=$M SHARDS="$bad" > "$tmp/bad.log" 2>&1; rc=$?
    ok $([ $rc != 0 ] && grep -q 'SHARDS=' "$tmp/bad.log" && [ ! -e x ] && [ ! -d "$D/shards/$bad" ]; echo $?) "SHARDS='$bad' is refused"
done
make -s shard-$M MODEL=$M SHARDS=3 SHARD='1;x' > "$tmp/bad.log" 2>&1; rc=$?
ok $([ $rc != 0 ] && grep -q "SHARD='1;x'" "$tmp/bad.log"; echo $?) "SHARD='1;x' is refused"
make -s shard-$M MODEL=$M SHARDS=3 SHARD=3 > "$tmp/bad.log" 2>&1; rc=$?
ok $([ $rc != 0 ] && grep -q "not one of 0..2" "$tmp/bad.log"; echo $?) "SHARD=3 of 3 is refused"

# 7. the shard stage's bad input: one line naming the file, exit 2, no output
bin=${PARITY_BIN:-build/bin}
echo '{"images":[{"id":"x"}]}' > "$tmp/bad.json"
"$bin/shard" select --count 2 --index 1 --dataset "$tmp/bad.json" -o "$tmp/l" 2> "$tmp/e"; rc=$?
ok $([ $rc = 2 ] && [ "$(wc -l < "$tmp/e")" = 1 ] && grep -q 'bad.json: images\[0\]' "$tmp/e" && [ ! -e "$tmp/l" ]; echo $?) "shard select: a bad dataset is named, exit 2"
"$bin/shard" select --count 20 --index 19 --dataset build/datasets/shapes-val-12/annotations.json -o "$tmp/l" 2> "$tmp/e"; rc=$?
ok $([ $rc = 2 ] && grep -q 'shard 19 of 20 holds no image' "$tmp/e" && [ ! -e "$tmp/l" ]; echo $?) "shard select: an empty shard is refused"
"$bin/shard" merge -o "$tmp/mrg" $D/shards/3/0/cells/bgr__fp32/out "$tmp/none" 2> "$tmp/e"; rc=$?
ok $([ $rc = 2 ] && grep -q 'none: no such shard output' "$tmp/e" && [ -z "$(ls -d "$tmp"/mrg* 2>/dev/null)" ]; echo $?) "shard merge: a missing shard leaves no output"
"$bin/shard" merge -o "$tmp/mrg" $D/shards/3/0/cells/bgr__fp32/out $D/shards/3/0/cells/bgr__fp32/out 2> "$tmp/e"; rc=$?
ok $([ $rc = 2 ] && grep -q 'shards overlap' "$tmp/e" && [ -z "$(ls -d "$tmp"/mrg* 2>/dev/null)" ]; echo $?) "shard merge: overlapping shards are refused"

echo "1..$n"
exit $((failed > 0))
