#!/usr/bin/env bash
# run.sh BUILD SECONDS FLAGS NAME... — runs each libFuzzer harness built by
# `make fuzz` (BUILD/bin/fuzz-NAME) for SECONDS: the corpus grows in
# BUILD/corpus/NAME (seeded from tests/fuzz/corpus/NAME and the regression
# inputs), a crash lands in BUILD/crash/NAME/, the log in BUILD/log/NAME.log.
# Prints one line per harness (executions, rate, corpus size) and exits 1
# when any harness found something.
#
# A campaign (FUZZ_EXECS=N in the environment, `make fuzz-campaign`): each
# harness runs until it has N executions on the current code, counting the
# runs already recorded for that code, so a campaign can be run in parts;
# SECONDS then caps one run (0: no cap). Every run, short or not, appends a
# line to BUILD/campaign.tsv (date, code, harness, executions, seconds,
# exec/s, corpus files, result); the code is the commit of the tree, with
# "+dirty" when stages/, tests/fuzz/ or the Makefile differ from it, or
# FUZZ_CODE where the tree is a copy without git (a campaign run on another
# machine names the commit its binaries were built from). FUZZ_PROCS=N runs
# N processes per harness side by side on one corpus (each its own log,
# BUILD/log/NAME.I.log, and ledger line).
# `run.sh --summary BUILD [CODE]` prints, per harness, the executions
# recorded for CODE (default: the current code) as the Markdown table
# docs/fuzzing.md quotes.
set -u

code_id() {
  local c
  c=$(git rev-parse --short=12 HEAD 2>/dev/null) || { echo unknown; return; }
  [ -n "$(git status --porcelain -- stages tests/fuzz Makefile mk 2>/dev/null)" ] && c="$c+dirty"
  echo "$c"
}

# executions recorded for harness $2 on code $3 in ledger $1, without findings
done_execs() {
  [ -f "$1" ] || { echo 0; return; }
  awk -F'\t' -v h="$2" -v c="$3" '$2 == c && $3 == h && $8 == "ok" { s += $4 } END { printf "%d\n", s }' "$1"
}

if [ "${1:-}" = --summary ]; then
  build=$2 code=${3:-$(code_id)} ledger=$2/campaign.tsv
  [ -f "$ledger" ] || { echo "run.sh: no $ledger (run a campaign first)" >&2; exit 2; }
  echo "Executions per harness on code $code ($ledger):"
  echo
  echo "| harness | executions | runs | seconds | exec/s | corpus | findings |"
  echo "|---|---:|---:|---:|---:|---:|---|"
  awk -F'\t' -v c="$code" '$2 == c {
      n[$3] += ($8 == "ok") ? $4 : 0; r[$3]++; t[$3] += $5; k[$3] = $7; if ($8 != "ok") f[$3]++ }
    END { for (h in n) printf "| %s | %d | %d | %d | %d | %s | %s |\n", h, n[h], r[h], t[h], t[h] ? n[h] / t[h] : 0, k[h], f[h] ? f[h] : "none" }' \
    "$ledger" | sort
  exit 0
fi

build=$1 seconds=$2 flags=$3
shift 3
target=${FUZZ_EXECS:-}
case $target in ''|[1-9]|[1-9][0-9]*) ;; *) echo "run.sh: FUZZ_EXECS='$target': a number of executions" >&2; exit 2;; esac
procs=${FUZZ_PROCS:-1}
case $procs in [1-9]|[1-9][0-9]) ;; *) echo "run.sh: FUZZ_PROCS='$procs': a number of processes, 1-99" >&2; exit 2;; esac
ledger=$build/campaign.tsv
code=${FUZZ_CODE:-$(code_id)}

# fuzz_once NAME LOG ARGS...: one libFuzzer process; appends its ledger line
# (one short write, so processes running side by side do not interleave) and
# prints its summary line; returns the fuzzer's exit code.
fuzz_once() {
  local name=$1 log=$2 t0 rc secs execs rate files result
  shift 2
  t0=$(date +%s)
  # -timeout: a hang is a finding; -rss_limit_mb: so is allocating what the
  # input does not hold (libFuzzer counts malloc beyond it as a crash).
  # shellcheck disable=SC2086
  "$build/bin/fuzz-$name" "$@" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$build/crash/$name/" $flags \
      "$build/corpus/$name" "${seeds[@]}" >"$log" 2>&1
  rc=$?
  secs=$(( $(date +%s) - t0 ))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  files=$(ls "$build/corpus/$name" | wc -l)
  result=$([ $rc = 0 ] && echo ok || echo "finding-exit-$rc")
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$code" "$name" "${execs:-0}" "$secs" \
      "${rate:-0}" "$files" "$result" >> "$ledger"
  printf 'fuzz: %-18s %10s executions %7s/s  corpus %5s files  %s\n' "$name" "${execs:-?}" "${rate:-?}" \
      "$files" "$([ $rc = 0 ] && echo ok || echo "FOUND SOMETHING (exit $rc)")"
  if [ $rc != 0 ]; then
    grep -E 'ERROR|SUMMARY|runtime error|Test unit written|code [0-9]' "$log" | head -20 | sed 's/^/    /'
  fi
  return $rc
}

failed=""
for name in "$@"; do
  mkdir -p "$build/corpus/$name" "$build/crash/$name" "$build/log"
  seeds=(tests/fuzz/corpus/$name)
  [ -d tests/fuzz/regress/$name ] && seeds+=(tests/fuzz/regress/$name)
  limit=(-max_total_time="$seconds")
  if [ -n "$target" ]; then
    have=$(done_execs "$ledger" "$name" "$code")
    if [ "$have" -ge "$target" ]; then
      printf 'fuzz: %-18s %10s executions on %s already (target %s)\n' "$name" "$have" "$code" "$target"
      continue
    fi
    # FUZZ_PROCS processes share the corpus, each asked for its part of
    # what is left (rounded up), as libFuzzer's -jobs would run them.
    limit=(-runs=$(( (target - have + procs - 1) / procs )))
    [ "$seconds" != 0 ] && limit+=(-max_total_time="$seconds")
  fi
  if [ "$procs" = 1 ]; then
    fuzz_once "$name" "$build/log/$name.log" "${limit[@]}" || failed="$failed $name"
  else
    pids=()
    for i in $(seq 1 "$procs"); do
      fuzz_once "$name" "$build/log/$name.$i.log" "${limit[@]}" & pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || failed="$failed $name"; done
  fi
  [ -n "$target" ] && printf 'fuzz: %-18s %10s of %s executions on %s\n' "$name" "$(done_execs "$ledger" "$name" "$code")" "$target" "$code"
done
if [ -n "$failed" ]; then
  echo "fuzz: findings in:$failed (inputs under $build/crash/; commit each, minimized, to tests/fuzz/regress/NAME/)"
  exit 1
fi
