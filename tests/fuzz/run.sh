#!/usr/bin/env bash
# run.sh BUILD SECONDS FLAGS NAME... — runs each libFuzzer harness built by
# `make fuzz` (BUILD/bin/fuzz-NAME) for SECONDS: the corpus grows in
# BUILD/corpus/NAME (seeded from tests/fuzz/corpus/NAME and the regression
# inputs), a crash lands in BUILD/crash/NAME/, the log in BUILD/log/NAME.log.
# Prints one line per harness (executions, rate, corpus size) and exits 1
# when any harness found something.
set -u
build=$1 seconds=$2 flags=$3
shift 3
failed=""
for name in "$@"; do
  corpus=$build/corpus/$name crash=$build/crash/$name log=$build/log/$name.log
  mkdir -p "$corpus" "$crash" "$build/log"
  seeds=(tests/fuzz/corpus/$name)
  [ -d tests/fuzz/regress/$name ] && seeds+=(tests/fuzz/regress/$name)
  # -timeout: a hang is a finding; -rss_limit_mb: so is allocating what the
  # input does not hold (libFuzzer counts malloc beyond it as a crash).
  # shellcheck disable=SC2086
  "$build/bin/fuzz-$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$crash/" $flags "$corpus" "${seeds[@]}" >"$log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  printf 'fuzz: %-18s %10s executions %7s/s  corpus %5s files  %s\n' "$name" "${execs:-?}" "${rate:-?}" \
      "$(ls "$corpus" | wc -l)" "$([ $rc = 0 ] && echo ok || echo "FOUND SOMETHING (exit $rc)")"
  if [ $rc != 0 ]; then
    failed="$failed $name"
    grep -E 'ERROR|SUMMARY|runtime error|Test unit written|code [0-9]' "$log" | head -20 | sed 's/^/    /'
  fi
done
if [ -n "$failed" ]; then
  echo "fuzz: findings in:$failed (inputs under $build/crash/; commit each, minimized, to tests/fuzz/regress/NAME/)"
  exit 1
fi
