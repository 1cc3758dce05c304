#!/bin/bash
# map_eval.sh — map-eval against pycocotools on a COCO-sized bbox evaluation:
# 5,000 images, the 80 COCO categories, ~34k ground-truth boxes, 100
# detections per image (500k), generated deterministically by gen_coco.py;
# with IOU_TYPE=segm the same for instance masks (compressed RLE, ~34k
# ground-truth masks, 500k result masks, gen_coco_segm.py).
#
#   bench/map_eval.sh                          map-eval's time, and how to get the reference
#   PYCOCOTOOLS_SECONDS=35.4 bench/map_eval.sh the ratio to a pycocotools time measured elsewhere
#   PYCOCOTOOLS_JSON=ref.json bench/map_eval.sh   the same from pycocotools_ref.py's output there,
#                                              with its 12 stats compared to map-eval's
#   IOU_TYPE=segm bench/map_eval.sh            the segm evaluation
#
# When the Python here can import pycocotools, the reference is measured in
# this run (and its 12 stats are compared with map-eval's). pycocotools is not
# a Debian package, so usually it is measured on another machine: see
# bench/README.md. Goal (issue 41): at least 100x faster (exit 1 below
# that, at any of the thread counts, when a reference is known).
#
# Environment: PARITY_BIN (map-eval's folder, default build/bin), PYTHON
# (default /usr/bin/python3; the data generators need only its standard
# library), BENCH_DIR (data, default build/bench/map-eval),
# RUNS (timed rounds, best taken, default 3), THREADS (a list of --threads
# values timed in alternation, e.g. "1 2 16"; default: map-eval's own,
# PARITY_THREADS or the CPUs up to 16), IMAGES (default 5000),
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

# Rounds alternate over the thread counts, so a load change hits each alike;
# per count the best wall time is kept, with the user+sys CPU of that run.
read -r -a tlist <<< "${THREADS:-default}"
declare -A best cpu
TIMEFORMAT='%R %U %S'
for i in $(seq "$runs"); do
    for t in "${tlist[@]}"; do
        topt=()
        [ "$t" = default ] || topt=(--threads "$t")
        r=$( { time "$bin/map-eval" --iou-type "$iou" --gt "$gt" --dt "$dt" "${topt[@]}" \
                   --json "$data/map-eval.json" -q >&2; } 2>&1 | tail -1)
        read -r w u s <<< "$r"
        if [ -z "${best[$t]:-}" ] || awk -v a="$w" -v b="${best[$t]}" 'BEGIN { exit !(a < b) }'; then
            best[$t]=$w
            cpu[$t]=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')
        fi
    done
done
for t in "${tlist[@]}"; do
    topt=()
    [ "$t" = default ] || topt=(--threads "$t")
    n=$("$bin/map-eval" --iou-type "$iou" --gt "$gt" --dt "$dt" "${topt[@]}" -q -v 2>&1 | sed -n 's/.* \([0-9]*\) threads$/\1/p')
    printf 'map-eval %s: %.3f s wall, %s s CPU (best of %d; %s threads; %s CPUs; %s)\n' "$iou" "${best[$t]}" \
        "${cpu[$t]}" "$runs" "$n" "$(nproc)" "$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
done
# pycocotools_ref.py's output ({"seconds", "stats"}): measured now, or a file
# from elsewhere (PYCOCOTOOLS_JSON); its stats are compared with map-eval's
ref=${PYCOCOTOOLS_SECONDS:-}
out=
if [ -n "${PYCOCOTOOLS_JSON:-}" ]; then
    out=$(cat "$PYCOCOTOOLS_JSON")
    how="PYCOCOTOOLS_JSON, measured elsewhere"
elif [ -z "$ref" ] && "$py" -c 'import pycocotools' 2>/dev/null; then
    out=$("$py" "$here/pycocotools_ref.py" "$gt" "$dt" "$iou")
    how="measured now"
fi
if [ -n "$out" ]; then
    [ -n "$ref" ] || ref=$(echo "$out" | "$py" -c 'import json,sys; print(json.load(sys.stdin)["seconds"])')
    echo "pycocotools: ${ref} s ($how)"
    echo "$out" | "$py" -c '
import json, sys
ref = json.load(sys.stdin)["stats"]
got = json.load(open(sys.argv[1]))["stats"]
tol = 1e-9 if sys.argv[2] == "bbox" else 0.0   # segm: the same doubles
diff = max(abs(ref[k] - got[k]) for k in ref)
bad = [k for k in ref if abs(ref[k] - got[k]) > tol]
print("stats: largest difference to pycocotools %g; %s" % (diff, "all %d within %g" % (len(ref), tol)
      if not bad else "DIFFER: %s" % bad))
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
fail=0
for t in "${tlist[@]}"; do
    ratio=$(awk -v r="$ref" -v b="${best[$t]}" 'BEGIN { printf "%.6f", r / b }')
    printf 'speed-up at %s threads: %.1fx (goal: at least 100x)\n' "$t" "$ratio"
    awk -v x="$ratio" 'BEGIN { exit !(x >= 100) }' || fail=1
done
exit $fail
