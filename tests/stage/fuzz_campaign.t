#!/bin/bash
# tests/fuzz/run.sh's campaign mode (issue 39): with FUZZ_EXECS=N each
# harness runs until it has N executions on the current code, counting what
# BUILD/campaign.tsv already records for that code (a campaign in parts),
# asks libFuzzer for just the remainder (-runs), records every run, skips a
# harness that is done, and --summary prints the per-harness table
# docs/fuzzing.md quotes. A stand-in fuzzer (a script that reports the runs
# it was asked for, as libFuzzer's final stats do) keeps this to a second.
cd "$(dirname "$0")/../.." || exit 2
n=0; failed=0
ok() { n=$((n+1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=$((failed+1)); fi; }
tmp=$(mktemp -d /tmp/parity-campaign-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin"
for h in alpha beta; do
cat > "$tmp/bin/fuzz-$h" <<'SH'
#!/bin/sh
# stand-in: reports -runs (or 700 under a time limit) as executed units
runs=700
for a in "$@"; do case $a in -runs=*) runs=${a#-runs=};; esac; done
echo "$0 $*" >> "$(dirname "$0")/../calls"
echo "stat::number_of_executed_units: $runs"
echo "stat::average_exec_per_sec:     $runs"
SH
chmod +x "$tmp/bin/fuzz-$h"
done
code=$(tests/fuzz/run.sh --summary "$tmp" 2>/dev/null; true)   # no ledger yet: refused
ok $([ -z "$code" ]; echo $?) "--summary without a ledger prints nothing (and exits 2)"

tests/fuzz/run.sh "$tmp" 5 '' alpha > "$tmp/short.out"
ok $(grep -q -- '-max_total_time=5' "$tmp/calls" && ! grep -q -- '-runs=' "$tmp/calls" && [ "$(wc -l < "$tmp/campaign.tsv")" = 1 ]; echo $?) \
   "a short run (SECONDS) is timed (no -runs) and recorded in the ledger"
FUZZ_EXECS=1000 tests/fuzz/run.sh "$tmp" 0 '' alpha beta > "$tmp/c1.out"
ok $(grep -q 'fuzz-alpha -runs=300 ' "$tmp/calls" && grep -q 'fuzz-beta -runs=1000 ' "$tmp/calls"; echo $?) \
   "FUZZ_EXECS=1000: alpha (700 recorded on this code) asks for the 300 left, beta for 1000"
: > "$tmp/calls"
FUZZ_EXECS=1000 tests/fuzz/run.sh "$tmp" 0 '' alpha beta > "$tmp/c2.out"
ok $([ ! -s "$tmp/calls" ] && [ "$(grep -c 'already' "$tmp/c2.out")" = 2 ]; echo $?) "run again: both are done, nothing runs"
FUZZ_EXECS=2500 tests/fuzz/run.sh "$tmp" 60 '' beta > "$tmp/c3.out"
ok $(grep -q 'fuzz-beta -runs=1500 -max_total_time=60 ' "$tmp/calls"; echo $?) "a larger target resumes: 1500 more, capped at SECONDS"
tests/fuzz/run.sh --summary "$tmp" > "$tmp/sum"
ok $(grep -q '^| alpha | 1000 | 2 |' "$tmp/sum" && grep -q '^| beta | 2500 | 2 |' "$tmp/sum"; echo $?) \
   "--summary: alpha 1000 executions in 2 runs, beta 2500 in 2 ($(grep -c '^| [ab]' "$tmp/sum") rows)"
sed 's/^/# /' "$tmp/sum"
# a run that found something is recorded but not counted
printf '#!/bin/sh\necho "stat::number_of_executed_units: 50"\nexit 77\n' > "$tmp/bin/fuzz-gamma"; chmod +x "$tmp/bin/fuzz-gamma"
FUZZ_EXECS=100 tests/fuzz/run.sh "$tmp" 0 '' gamma > "$tmp/c4.out"; rc=$?
ok $([ $rc = 1 ] && grep -q 'finding-exit-77' "$tmp/campaign.tsv" && tests/fuzz/run.sh --summary "$tmp" | grep -q '^| gamma | 0 | 1 | .* | 1 |$'; echo $?) \
   "a run with a finding: exit 1, recorded as a finding, its executions not counted"
# FUZZ_PROCS: processes side by side, each asked for its share, rounded up
: > "$tmp/calls"
FUZZ_EXECS=1001 FUZZ_PROCS=2 FUZZ_CODE=abc123 tests/fuzz/run.sh "$tmp" 0 '' alpha > "$tmp/c5.out"
ok $([ "$(grep -c 'fuzz-alpha -runs=501 ' "$tmp/calls")" = 2 ] && [ "$(grep -c $'\tabc123\talpha\t501\t' "$tmp/campaign.tsv")" = 2 ] \
     && grep -q 'alpha  *1002 of 1001 executions on abc123' "$tmp/c5.out"; echo $?) \
   "FUZZ_PROCS=2 FUZZ_EXECS=1001: two processes of 501 runs, two ledger lines under FUZZ_CODE's code"
FUZZ_PROCS=0 tests/fuzz/run.sh "$tmp" 0 '' alpha 2>/dev/null; rc=$?
ok $([ $rc = 2 ]; echo $?) "FUZZ_PROCS=0: exit 2"
FUZZ_EXECS=lots tests/fuzz/run.sh "$tmp" 0 '' alpha 2>/dev/null; rc=$?
ok $([ $rc = 2 ]; echo $?) "FUZZ_EXECS that is not a number: exit 2"
# the seed writer is run by hand, rarely: a broken merge of it once went unnoticed
"${PYTHON:-python3}" -c 'import ast, sys; ast.parse(open(sys.argv[1]).read())' tests/fuzz/seeds.py 2>/dev/null
ok $? "tests/fuzz/seeds.py parses"
echo "1..$n"
[ $failed = 0 ]
