#!/bin/bash
# One training round of the bundled RT-DETR on the lent GPU machine.
#
#   models/rtdetr/round.sh INIT TRAIN_START TRAIN_IMAGES BUDGET_S TRIAL...
#
# INIT is a folder with model.pt and ema.pt (and opt.pt, optional) to resume from.
# The round draws its training images once (train.py --prep-only), then runs the
# TRIALs side by side on the one GPU -- the training step is bound by the host's
# Python, not the GPU, so trials in parallel cost little -- and copies the best
# trial (PyTorch CPU fp32 AP on val-200) to $OUT, with every trial's log in
# $OUT/logs.tgz.  Everything stays in /root/keep for the next round while the
# machine is warm.
#
# TRIAL is NAME:RANKS:ARGS, ARGS train.py's options with commas for spaces; a trial
# of RANKS > 1 is data-parallel (torch.distributed.run, gloo, gradients averaged).
set -eu
init=$1 start=$2 count=$3 budget=$4
shift 4
keep=/root/keep
work=/tmp/shapes-work
mkdir -p "$keep" "$OUT"
common=(--gen .carry/gen-shapes --map-eval .carry/map-eval --data-seed 2024 --work "$work"
        --train-start "$start" --train-images "$count" --time-budget "$budget" --resume "$init")
python3 models/rtdetr/train.py --out "$keep/prep" --prep-only --jobs 15 "${common[@]}"

pids=()
names=()
for spec in "$@"; do
    name=${spec%%:*}; rest=${spec#*:}; ranks=${rest%%:*}; args=${rest#*:}
    IFS=, read -r -a extra <<<"$args"
    rm -rf "${keep:?}/$name"
    if [ "$ranks" -gt 1 ]; then
        launch=(python3 -m torch.distributed.run --standalone --nproc_per_node="$ranks")
    else
        launch=(python3)
    fi
    OMP_NUM_THREADS=2 "${launch[@]}" models/rtdetr/train.py --out "$keep/$name" --no-smoke \
        --jobs 1 "${common[@]}" "${extra[@]}" >"$keep/$name.stdout" 2>&1 &
    pids+=($!)
    names+=("$name")
done
for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || echo "trial ${names[$i]} failed (exit $?); see its stdout in logs.tgz"
done

best=$(python3 - "$keep" "${names[@]}" <<'EOF'
import json, os, sys
keep, names = sys.argv[1], sys.argv[2:]
scored = []
for n in names:
    try:
        with open(os.path.join(keep, n, "report.json")) as f:
            r = json.load(f)
        scored.append((r["ap_torch_cpu_fp32"][0], n))
        print(f"trial {n}: AP {r['ap_torch_cpu_fp32'][0]:.4f} AP50 {r['ap_torch_cpu_fp32'][1]:.4f} "
              f"steps {r['steps']} x {r['ranks']} ranks, samples {r['samples']}", file=sys.stderr)
    except (OSError, KeyError, ValueError) as err:
        print(f"trial {n}: no report ({err})", file=sys.stderr)
print(max(scored)[1] if scored else "")
EOF
)
tar czf "$OUT/logs.tgz" -C "$keep" --exclude='*.pt' --exclude='*.onnx' --exclude='*.npy' .
[ -n "$best" ] || { echo "no trial finished"; exit 1; }
echo "best trial: $best"
for f in ema.pt model.pt opt.pt rtdetr_shapes_op16.onnx rtdetr_shapes_op17.onnx torch_val200.json; do
    cp "$keep/$best/$f" "$OUT/"
done
echo "$best" >"$keep/BEST"
