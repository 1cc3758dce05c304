# Same bytes on a CPU without AVX-512 (issue 16), proved without parity's own
# knob: the same binaries run natively and under qemu-x86_64 -cpu EPYC-Rome
# (AVX2+FMA, no AVX-512: the hosted runners' class; Debian's qemu-user, TCG)
# must build byte-identical engines and give byte-identical outputs. Which
# instruction set each side picked is printed from infer's stats; the qemu
# side must have picked avx2, or this check proves nothing. About 1 minute
# (RT-DETR's one sample is ~30 s under TCG).
set -euo pipefail
make -s tools >/dev/null
command -v qemu-x86_64 >/dev/null || { echo "isa-qemu: qemu-x86_64 missing (tools/deps.sh installs qemu-user)"; exit 1; }
B=build/bin
T=$(mktemp -d /tmp/parity-isa-qemu.XXXXXX)
trap 'rm -rf "$T"' EXIT
qemu() {   # TCG names every EPYC-Rome feature it cannot emulate; those lines are noise
    qemu-x86_64 -cpu EPYC-Rome "$@" 2> >(grep -v "^qemu-x86_64: warning: TCG doesn't support" >&2)
}
$B/preprocess --config configs/preprocess/rtdetr-official.yaml --set resize.size=320x320 -o "$T/rtdetr-in" -j 1 \
    build/datasets/shapes-val-200/images/0000001.png >/dev/null
fail=0
check() {   # NAME ONNX INPUT PRECISION [build-engine options...]
    local name=$1 onnx=$2 in=$3 prec=$4
    shift 4
    $B/build-engine "$onnx" -o "$T/$name.native.engine" --config "configs/precisions/$prec.yaml" "$@" 2>/dev/null
    qemu $B/build-engine "$onnx" -o "$T/$name.qemu.engine" --config "configs/precisions/$prec.yaml" "$@" 2>/dev/null
    $B/infer "$T/$name.native.engine" -i "$in" -o "$T/$name.native" --stats "$T/$name.native.json"
    qemu $B/infer "$T/$name.native.engine" -i "$in" -o "$T/$name.qemu" --stats "$T/$name.qemu.json"
    local isa_n isa_q
    isa_n=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["isa"])' "$T/$name.native.json")
    isa_q=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["isa"])' "$T/$name.qemu.json")
    local verdict=identical
    if [ "$isa_q" != avx2 ]; then verdict="qemu picked $isa_q, not avx2: proves nothing"; fail=1
    elif ! cmp -s "$T/$name.native.engine" "$T/$name.qemu.engine"; then verdict="ENGINES DIFFER"; fail=1
    elif ! diff -r "$T/$name.native" "$T/$name.qemu" >/dev/null; then verdict="OUTPUTS DIFFER"; fail=1
    fi
    echo "isa-qemu: $name $prec: native $isa_n vs qemu EPYC-Rome $isa_q: $verdict"
}
check convclip build/models/convclip/convclip.onnx build/models/convclip/input fp32
check convclip build/models/convclip/convclip.onnx build/models/convclip/input fp16
check nafnet-ln-op17 build/models/nafnet_ln/nafnet_ln_op17.onnx build/models/nafnet_ln/input bf16
check rtdetr-op17 models/rtdetr/rtdetr_shapes_op17.onnx "$T/rtdetr-in" fp16 --input-shape images=1x3x320x320
exit $fail
