#!/bin/bash
# One training round of both new shapes models on a lent GPU machine (one GPU):
# yolo-shapes (models/yolo-shapes/train.py) and nafnet-shapes at input scale
# 0..255 (the committed one, with its k=4 rescaled twin exported beside it) and
# at 0..1 (measured only: the LayerNorm scales a 0..1 model reaches), side by
# side on the one GPU.  Needs static builds of gen-shapes, preprocess and
# map-eval in BIN (models/yolo-shapes/README.md says how).  Each model's folder
# goes to $OUT as a .tgz.
#
#   models/shapes-round.sh BIN YOLO_BUDGET_S NAFNET_BUDGET_S
set -u
bin=$1 ybudget=$2 nbudget=$3
here=$(cd "$(dirname "$0")" && pwd)
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=4
mkdir -p "$OUT" /root/y /root/n255 /root/n1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 "$here/yolo-shapes/train.py" --out /root/y --work /tmp/yw --gen "$bin/gen-shapes" \
    --preprocess "$bin/preprocess" --map-eval "$bin/map-eval" --train-images 20000 \
    --time-budget "$ybudget" --eval-every 0 --jobs 11 --seed 0 >/root/y.stdout 2>&1 &
ypid=$!
python3 "$here/nafnet-shapes/train.py" --out /root/n255 --work /tmp/nw --gen "$bin/gen-shapes" \
    --input-scale 255 --train-images 4000 --time-budget "$nbudget" --jobs 3 --alt-k 4 --seed 0 \
    >/root/n255.stdout 2>&1 &
npid=$!
python3 "$here/nafnet-shapes/train.py" --out /root/n1 --work /tmp/nw1 --gen "$bin/gen-shapes" \
    --input-scale 1 --train-images 4000 --train-start 4000 --time-budget "$nbudget" --jobs 2 \
    --no-export --seed 0 >/root/n1.stdout 2>&1 &
n1pid=$!
wait $ypid; echo "yolo exit $?"
wait $npid; echo "nafnet-255 exit $?"
wait $n1pid; echo "nafnet-1 exit $?"
cp /root/y.stdout /root/y/stdout.log; cp /root/n255.stdout /root/n255/stdout.log; cp /root/n1.stdout /root/n1/stdout.log
mv /root/y/yolo_shapes_op16.onnx /root/y/yolo_shapes_op17.onnx "$OUT/"
tar czf "$OUT/yolo.tgz" -C /root/y --exclude=model.pt .
tar czf "$OUT/nafnet255.tgz" -C /root/n255 .
tar czf "$OUT/nafnet1.tgz" -C /root/n1 --exclude='*.pt' --exclude='*.npz' .
ls -la "$OUT"
grep -h "timing\|trained\|PyTorch\|ort opset\|PSNR (dB)\|k=4\|export\|data:" /root/y/train.log /root/n255/train.log /root/n1/train.log
grep -h "LN encoders.0.0.norm1\|LN decoders.2.0.norm2" /root/n255/train.log /root/n1/train.log
