#!/bin/bash
# map_eval.sh — map-eval against pycocotools on a COCO-sized bbox evaluation:
# 5,000 images, the 80 COCO categories, ~34k ground-truth boxes, 100
# detections per image (500k), generated deterministically by gen_coco.py;
# with IOU_TYPE=segm the same for instance masks (compressed RLE, ~34k
# ground-truth masks, 500k result masks, gen_coco_segm.py).
#
#   bench/map_eval.sh                          map-eval's time, and how to get the reference
#   PYCOCOTOOLS_SECONDS=24.1 bench/map_eval.sh the ratio to a pycocotools time measured elsewhere
#   IOU_TYPE=segm bench/map_eval.sh            the segm evaluation
#
# When the Python here can import pycocotools, the reference is measured in
# this run (and its 12 stats are compared with map-eval's). pycocotools is not
# a Debian package, so usually it is measured on another machine: see
# bench/README.md. Goal: at least 20x faster (exit 1 below that when a
# reference is known).
#
# Environment: PARITY_BIN (map-eval's folder, default build/bin), PYTHON
# (default /usr/bin/python3), BENCH_DIR (data, default build/bench/map-eval),
# RUNS (timed runs of map-eval, best taken, default 3), IMAGES (default 5000),
# IOU_TYPE (bbox or segm, default bbox; segm data goes to build/bench/map-eval-segm).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
bin=${PARITY_BIN:-$repo/build/bin}
py=${PYTHON:-/usr/bin/python3}
iou=${IOU_TYPE:-bbox}
case $iou in
bbox) gen=gen_coco.py; suffix= ;;
segm) gen=gen_coco_segm.py; suffix=-segm ;;
*) echo "map_eval.sh: IOU_TYPE must be bbox or segm" >&2; exit 2 ;;
esac
data=${BENCH_DIR:-$repo/build/bench/map-eval$suffix}
runs=${RUNS:-3}
images=${IMAGES:-5000}

[ -x "$bin/map-eval" ] || { echo "map_eval.sh: no $bin/map-eval (run make first)" >&2; exit 2; }

stamp="$data/.gen-$images"
if [ ! -f "$stamp" ] || [ "$here/$gen" -nt "$stamp" ]; then
    mkdir -p "$data"
    "$py" "$here/$gen" "$data" --images "$images" --dets-per-image 100 >&2
    touch "$stamp"
fi
gt="$data/gt.json"
dt="$data/dt.json"

now() { date +%s.%N; }
best=
for i in $(seq "$runs"); do
    t0=$(now)
    "$bin/map-eval" --iou-type "$iou" --gt "$gt" --dt "$dt" --json "$data/map-eval.json" -q
    t=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.6f", b - a }')
    if [ -z "$best" ] || awk -v t="$t" -v b="$best" 'BEGIN { exit !(t < b) }'; then best=$t; fi
done
threads=$("$bin/map-eval" --iou-type "$iou" --gt "$gt" --dt "$dt" -q -v 2>&1 | sed -n 's/.* \([0-9]*\) threads$/\1/p')
printf 'map-eval %s: %.3f s (best of %d; %s threads; %s CPUs; %s)\n' "$iou" "$best" "$runs" "$threads" \
    "$(nproc)" "$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"

ref=${PYCOCOTOOLS_SECONDS:-}
if [ -z "$ref" ] && "$py" -c 'import pycocotools' 2>/dev/null; then
    out=$("$py" "$here/pycocotools_ref.py" "$gt" "$dt" "$iou")
    ref=$(echo "$out" | "$py" -c 'import json,sys; print(json.load(sys.stdin)["seconds"])')
    echo "pycocotools: ${ref} s (measured now)"
    echo "$out" | "$py" -c '
import json, sys
ref = json.load(sys.stdin)["stats"]
got = json.load(open(sys.argv[1]))["stats"]
tol = 1e-9 if sys.argv[2] == "bbox" else 0.0   # segm: the same doubles
bad = [k for k in ref if abs(ref[k] - got[k]) > tol]
print("stats: %s" % ("all 12 equal to pycocotools within %g" % tol if not bad else "DIFFER: %s" % bad))
sys.exit(1 if bad else 0)' "$data/map-eval.json" "$iou"
elif [ -n "$ref" ]; then
    echo "pycocotools: ${ref} s (PYCOCOTOOLS_SECONDS, measured elsewhere)"
fi

if [ -z "$ref" ]; then
    cat <<EOF
pycocotools: not installed here (it is not a Debian package). To get the ratio,
on a machine with pip:  pip install pycocotools numpy
  $py bench/$gen DATA --images $images --dets-per-image 100
  $py bench/pycocotools_ref.py DATA/gt.json DATA/dt.json $iou
then here:  PYCOCOTOOLS_SECONDS=<seconds> IOU_TYPE=$iou bench/map_eval.sh
(For context only, not measured here: faster-coco-eval publishes 22.7 s for
pycocotools on COCO val2017 bbox.)
EOF
    exit 0
fi
ratio=$(awk -v r="$ref" -v b="$best" 'BEGIN { printf "%.6f", r / b }')
printf 'speed-up: %.1fx (goal: at least 20x)\n' "$ratio"
awk -v x="$ratio" 'BEGIN { exit !(x >= 20) }'
