#!/bin/bash
# The layerwise search dumps every layer of ONE sample: a dump is about 100 MB per
# image on RT-DETR, so dumping a 200-image data set filled the disk. plan's rules
# take the configured layerwise_sample, else the first sample folder in sorted
# order (resolved by make when the dump runs), else the set itself.
cd "$(dirname "$0")/../.." || exit 2
bin=${PARITY_BIN:-build/bin}
tmp=$(mktemp -d /tmp/parity-plan-dump-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
n=0
ok() { n=$((n+1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi; }

"$bin/plan" configs/models/rtdetr.yaml -o "$tmp/plan" 2>"$tmp/err"
ok $? "plan writes the rtdetr plan"
dumps=$(grep -c -- "--dump all" "$tmp/plan/plan.mk")
sampled=$(grep -- "--dump all" "$tmp/plan/plan.mk" | grep -c "parity_first_sample,$tmp/plan/pre/rtdetr-official)")
ok $([ "$dumps" -gt 0 ] && [ "$dumps" = "$sampled" ]; echo $?) "every dump rule ($dumps) runs on the first sample of the set, none on the whole set"

# the make function itself, on folders as preprocess writes them
mkdir -p "$tmp/sets/10" "$tmp/sets/2" "$tmp/sets/1" "$tmp/single"
: > "$tmp/single/images.npy"
{ grep '^parity_first_sample' "$tmp/plan/plan.mk"
  printf 'all:\n\t@echo $(call parity_first_sample,%s) $(call parity_first_sample,%s)\n' "$tmp/sets" "$tmp/single"; } > "$tmp/t.mk"
got=$(make -s -f "$tmp/t.mk")
ok $([ "$got" = "$tmp/sets/1 $tmp/single" ]; echo $?) "first sample folder in sorted order, or the set itself without sample folders (got: $got)"

sed 's/^reference:/layerwise_sample: "139"\nreference:/' configs/models/rtdetr.yaml > "$tmp/rtdetr.yaml"
sed -i "s|models/rtdetr/|$PWD/models/rtdetr/|; s|build/datasets/|$PWD/build/datasets/|g" "$tmp/rtdetr.yaml"
"$bin/plan" "$tmp/rtdetr.yaml" -o "$tmp/plan2" 2>"$tmp/err2"
rc=$?
ok $([ $rc = 0 ] && grep -- "--dump all" "$tmp/plan2/plan.mk" | grep -q "pre/rtdetr-official/139'"; echo $?) "a configured layerwise_sample is used as given"
[ $rc = 0 ] || sed 's/^/#   /' "$tmp/err2"
echo "1..$n"
