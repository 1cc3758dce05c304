#!/bin/sh
# matrix16.sh — `make validate MODEL=rtdetr` at several job counts on a
# many-core host (issue 41: the matrix's `make -j` scaling on the lent GPU
# machine's 16-core Xeon). Run from the repository root with parity's stages
# already in build/bin (built elsewhere and carried with their libraries:
# bench/README.md, "16 cores"); make does not rebuild them (-o). The dataset
# is drawn first (gen-shapes), then for each job count the model's whole
# build folder is removed and the matrix runs from its plan: engines,
# preprocessing, every cell and the report, as the issue's 75 s goal counts
# it. Prints one line per job count; each run's timing table is kept in
# $OUT (or build/bench/matrix16/) as validate-jN.txt.
#
#   sh bench/remote/matrix16.sh [JOBS...]     (default: 1 2 4 8 16)
set -eu
model=${MODEL:-rtdetr}
jobs=${*:-1 2 4 8 16}
out=${OUT:-build/bench/matrix16}
mkdir -p "$out" build
touch build/.deps-ok
old=""
for b in build/bin/* build/libparity.a; do [ -e "$b" ] && old="$old -o $b"; done
# shellcheck disable=SC2086 # word splitting of $old is intended
make -s $old build/datasets/shapes-val-200/annotations.json
echo "host: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
for j in $jobs; do
    rm -rf "build/$model" "reports/$model"
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086
    make -s $old validate MODEL="$model" VALIDATE_JOBS="$j" >"$out/validate-j$j.txt" 2>&1 || true
    t1=$(date +%s.%N)
    busy=$(sed -n 's/.*CPU (\([0-9.]*\) cores busy.*/\1/p' "$out/validate-j$j.txt" | tail -1)
    cpu=$(sed -n 's/.*s from the first start to the last end; \([0-9.]*\) s of CPU.*/\1/p' "$out/validate-j$j.txt" | tail -1)
    verdict=$(grep -m1 "^validate: $model: [A-Z]" "$out/validate-j$j.txt" | sed 's/ — .*//')
    printf 'jobs %2s: %6.1f s wall, %s s CPU of stages, %s cores busy; %s\n' \
        "$j" "$(awk "BEGIN{print $t1 - $t0}")" "${cpu:-?}" "${busy:-?}" "$verdict"
done
