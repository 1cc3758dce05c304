#!/usr/bin/env bash
# trtexec.sh — backend adapter for TensorRT through its trtexec tool. It
# builds a TensorRT engine from the ONNX model (or takes a plan file with
# --engine), feeds every sample's tensor set through --loadInputs raw files,
# and turns --dumpRawBindingsToFile files (exact) or the --exportOutput JSON
# (lossy, ~6 significant digits) back into tensor sets. The conversions are
# in trtexec_io.py beside this file. Contract: docs/backends.md.
#
#   TRTEXEC=/path/to/trtexec trtexec.sh run --model MODEL.onnx | --engine PLAN
#       --input IN --output OUT [--runs N] [--stats FILE] [--threads N]
#       [--input-shape NAME=DIMS]... [--precision fp32|tf32|fp16|bf16]
#
# TensorRT is not available where parity is developed: the conversions are
# tested on files written in trtexec's formats and the flow on a stand-in
# program (tests/stage/backend_trtexec.t), never against a real TensorRT.
set -u
prog=trtexec.sh
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-/usr/bin/python3}

usage() {
  cat <<'EOF'
usage: TRTEXEC=/path/to/trtexec trtexec.sh run --model MODEL.onnx --input IN --output OUT [options]
  --model MODEL.onnx       the ONNX model (trtexec --onnx, engine built once per run)
  --engine PLAN            a serialized TensorRT engine instead (trtexec --loadEngine)
  --input IN               a tensor set (folder of NAME.npy), or a folder of them, one per sample
  --output OUT             output tensor set(s), mirroring IN; appears only when complete
  --runs N                 timed iterations per sample (trtexec --iterations; default 1)
  --stats FILE             latency statistics (JSON; median of trtexec's latencyMs)
  --threads N              accepted for the contract; TensorRT runs on the GPU
  --input-shape NAME=DIMS  shape of a dynamic input (trtexec --shapes); repeatable
  --precision P            fp32 (--noTF32), tf32 (TensorRT's default), fp16 (--fp16), bf16 (--bf16)
  -h, --help | -V, --version
Environment: TRTEXEC (default: trtexec on PATH), TRTEXEC_ARGS (extra trtexec options).
Exit: 0 done, 2 bad usage or bad input, 3 internal error (trtexec missing or failed).
EOF
}

die() { echo "$prog: $2" >&2; exit "$1"; }

case "${1:-}" in
  -h|--help) usage; exit 0 ;;
  -V|--version) echo "trtexec.sh (parity backend)"; exit 0 ;;
  run) shift ;;
  *) die 2 "expected the command 'run' (see --help), got '${1:-}'" ;;
esac

model= engine= in= out= runs=1 stats= precision=fp32 shapes=
while [ $# -gt 0 ]; do
  opt=$1 val=
  case "$opt" in
    --*=*) val=${opt#*=}; opt=${opt%%=*} ;;
    -h|--help) usage; exit 0 ;;
    --*) [ $# -ge 2 ] || die 2 "$opt needs a value"; val=$2; shift ;;
    *) die 2 "unexpected argument '$opt' (see --help)" ;;
  esac
  shift
  case "$opt" in
    --model) model=$val ;;
    --engine) engine=$val ;;
    --input) in=$val ;;
    --output) out=$val ;;
    --runs) runs=$val ;;
    --stats) stats=$val ;;
    --threads) case "$val" in ''|*[!0-9]*) die 2 "--threads must be a positive integer" ;; esac ;;
    --input-shape)
      case "$val" in *=*) ;; *) die 2 "--input-shape '$val': expected NAME=1x3x320x320" ;; esac
      shapes="${shapes:+$shapes,}${val%=*}:${val##*=}" ;;
    --precision) precision=$val ;;
    *) die 2 "unknown option '$opt' (see --help)" ;;
  esac
done

[ -n "$in" ] && [ -n "$out" ] || die 2 "missing --input or --output"
if [ -n "$model" ] && [ -n "$engine" ]; then die 2 "give --model or --engine, not both"; fi
if [ -z "$model" ] && [ -z "$engine" ]; then die 2 "missing --model (or --engine)"; fi
case "$runs" in ''|0|*[!0-9]*) die 2 "--runs must be a positive integer, got '$runs'" ;; esac
[ -d "$in" ] || die 2 "$in: input is not a folder"
for f in $model $engine; do [ -f "$f" ] || die 2 "$f: no such file"; done
case "$precision" in
  fp32) pflags=(--noTF32) ;;
  tf32) pflags=() ;;
  fp16) pflags=(--fp16) ;;
  bf16) pflags=(--bf16) ;;
  *) die 2 "--precision must be fp32, tf32, fp16 or bf16, got '$precision'" ;;
esac
trt=${TRTEXEC:-$(command -v trtexec || true)}
[ -n "$trt" ] && [ -x "$trt" ] || die 3 "TensorRT's trtexec not found (set TRTEXEC=/path/to/trtexec)"
read -r -a extra <<<"${TRTEXEC_ARGS:-}"

abspath() { case "$1" in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
out=${out%/}
stage="$out.tmp.$$"
work=$(mktemp -d "${TMPDIR:-/tmp}/parity-trtexec.XXXXXX") || die 3 "cannot create a temporary folder"
cleanup() { rm -rf "$stage" "$work"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# The engine is built once; every sample then loads it.
if [ -n "$model" ]; then
  model=$(abspath "$model")
  engine="$work/model.plan"
  sh=()
  [ -n "$shapes" ] && sh=(--shapes="$shapes")
  (cd "$work" && "$trt" --onnx="$model" --saveEngine="$engine" --skipInference "${sh[@]}" "${pflags[@]}" "${extra[@]}") \
    >"$work/build.log" 2>&1 || die 3 "trtexec could not build an engine from $model (log: $(tail -n 1 "$work/build.log"))"
else
  engine=$(abspath "$engine")
fi

# Runs one sample: $1 input tensor set, $2 output folder; appends to stats.
samples=()
run_sample() {
  local sin=$1 sout=$2 name=$3 sw="$work/s$((${#samples[@]}))"
  mkdir -p "$sw" "$sout" || die 3 "$sout: cannot create"
  local load
  load=$("$py" "$here/trtexec_io.py" inputs "$sin" "$sw") || exit 2
  local sh=()
  [ -n "$shapes" ] && sh=(--shapes="$shapes")
  (cd "$sw" && "$trt" --loadEngine="$engine" "$load" "${sh[@]}" --iterations="$runs" --warmUp=0 --duration=0 \
      --exportOutput="$sw/out.json" --exportTimes="$sw/times.json" --dumpRawBindingsToFile "${extra[@]}") \
    >"$sw/run.log" 2>&1 || die 3 "trtexec failed on $sin (log: $(tail -n 1 "$sw/run.log"))"
  local mopt=()
  [ -n "$model" ] && mopt=(--model "$model")
  "$py" "$here/trtexec_io.py" outputs "$sw" "$sout" --json "$sw/out.json" "${mopt[@]}" || exit 2
  if [ -n "$stats" ]; then
    local t
    t=$("$py" "$here/trtexec_io.py" times "$sw/times.json" "$name") || exit 2
    samples+=("$t")
  else
    samples+=(x)
  fi
}

rm -rf "$stage"
if ls "$in" | grep -q -E '\.(npy|pb)$'; then
  run_sample "$in" "$stage" "."
else
  for d in "$in"/*/; do
    [ -d "$d" ] || continue
    n=$(basename "$d")
    run_sample "${d%/}" "$stage/$n" "$n"
  done
  [ ${#samples[@]} -gt 0 ] || die 2 "$in: no tensor set found (no .npy files, no sample folders)"
fi

# Swap the finished folder in whole, replacing an older OUT.
old="$out.old.$$"
if [ -e "$out" ]; then mv -T "$out" "$old" || die 3 "$out: cannot replace the existing folder"; fi
if ! mv -T "$stage" "$out"; then
  [ -e "$old" ] && mv -T "$old" "$out"
  die 3 "$out: cannot move the finished output into place"
fi
rm -rf "$old"
if [ -n "$stats" ]; then
  { printf '{\n "threads": 1,\n "samples": [\n'
    for i in "${!samples[@]}"; do printf '  %s%s\n' "${samples[$i]}" "$([ "$i" -lt $((${#samples[@]} - 1)) ] && echo ,)"; done
    printf ' ]\n}\n'; } >"$stats.tmp.$$" && mv -f "$stats.tmp.$$" "$stats" || { rm -f "$stats.tmp.$$"; die 3 "$stats: cannot write"; }
fi
exit 0
