#!/usr/bin/python3
"""isa.py — the speed of parity's kernels at each instruction-set level
(issue 16: one arithmetic, the same bits at AVX-512, AVX2+FMA and portable
C), measured in one run on the same machine (the work of isa.sh).

For the trained RT-DETR (models/rtdetr, opsets 16 and 17, 320x320, the first
shapes-val image through the official preprocessing) at FP32 and FP16, one
thread: the engine is built once (untimed), then R rounds (BENCH_REPEAT,
default 5) that each run `infer --runs N --stats` once per level the CPU
supports, alternating, so that load from elsewhere hits every level alike.
Reported: each level's minimum latency over all rounds (the minimum of a
process's N runs, then the minimum over the rounds: on a shared machine the
minimum is the least disturbed figure), and its ratio to the best level's
(avx2 / avx512: the issue's goal is <= 1.6). The portable level runs
BENCH_GENERIC_RUNS (default 2) runs a round: it is the reference, not a
fast path. --kernels blas (OpenBLAS, not the same bits on every CPU) is
timed beside them for comparison.

Results: build/bench/results.json (section "isa") and a Markdown table on
stdout and in build/bench/isa.md. Environment: PARITY_BIN, BENCH_RUNS
(default 10), BENCH_REPEAT, BENCH_GENERIC_RUNS, BENCH_ISA_MODELS (names to
keep: rtdetr_op16 rtdetr_op17), BENCH_ISA_PRECISIONS (default "fp32 fp16").
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import results  # noqa: E402

root = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
bindir = os.environ.get("PARITY_BIN") or os.path.join(root, "build", "bin")
runs = int(os.environ.get("BENCH_RUNS", "10"))
repeat = int(os.environ.get("BENCH_REPEAT", "5"))
generic_runs = int(os.environ.get("BENCH_GENERIC_RUNS", "2"))
precisions = os.environ.get("BENCH_ISA_PRECISIONS", "fp32 fp16").split()
outdir = os.path.join(root, "build", "bench")
MODELS = [("rtdetr_op16", "models/rtdetr/rtdetr_shapes_op16.onnx"), ("rtdetr_op17", "models/rtdetr/rtdetr_shapes_op17.onnx")]
keep = os.environ.get("BENCH_ISA_MODELS")
if keep:
    MODELS = [m for m in MODELS if m[0] in keep.split()]


def fail(msg):
    print("bench isa: " + msg, file=sys.stderr)
    sys.exit(1)


def stage(*args):
    p = subprocess.run([os.path.join(bindir, args[0])] + [str(a) for a in args[1:]], capture_output=True, text=True)
    if p.returncode:
        fail("%s: %s" % (args[0], p.stderr.strip()))
    return p


def levels():
    """The levels this CPU supports, best first (infer refuses the others)."""
    out = []
    for lv in ("avx512", "avx2", "generic"):
        p = subprocess.run([os.path.join(bindir, "infer"), "--isa", lv, "x", "-i", "x", "-o", "x"],
                           capture_output=True, text=True)
        if "does not support" not in p.stderr:
            out.append(lv)
    return out


def main():
    tmp = tempfile.mkdtemp(prefix="parity-bench-isa-")
    val, pre = os.path.join(tmp, "val"), os.path.join(tmp, "pre")
    stage("gen-shapes", "--split", "val", "--seed", "2024", "--count", "1", "-o", val)
    stage("preprocess", "--config", os.path.join(root, "configs", "preprocess", "rtdetr-official.yaml"), "--set",
          "resize.size=320x320", "-o", pre, "-j", "1", os.path.join(val, "images", "0000001.png"))
    inp = os.path.join(pre, "0000001")
    lvs = levels()
    modes = [(lv, "own") for lv in lvs] + [(lvs[0], "blas")]
    result = {"levels": lvs, "runs": runs, "repeat": repeat, "generic_runs": generic_runs, "models": {}}
    table = ["| model | precision | " + " | ".join("%s ms" % (lv if k == "own" else "blas") for lv, k in modes) +
             " | " + " | ".join("%s / %s" % (lv, lvs[0]) for lv in lvs[1:]) + " |",
             "|---|---|" + "---:|" * (len(modes) + len(lvs) - 1)]
    for name, onnx in MODELS:
        for prec in precisions:
            eng = os.path.join(tmp, "%s.%s.engine" % (name, prec))
            stage("build-engine", os.path.join(root, onnx), "-o", eng, "--input-shape", "images=1x3x320x320",
                  "--config", os.path.join(root, "configs", "precisions", prec + ".yaml"))
            best = {}
            for r in range(repeat):
                for lv, k in modes:
                    st = os.path.join(tmp, "st.json")
                    n = generic_runs if lv == "generic" else runs
                    stage("infer", eng, "-i", inp, "-o", os.path.join(tmp, "out"), "--isa", lv, "--kernels", k,
                          "--runs", n, "--stats", st)
                    ms = json.load(open(st))["samples"][0]["min_ms"]
                    key = lv if k == "own" else "blas"
                    best[key] = min(best.get(key, ms), ms)
            ratios = {lv: best[lv] / best[lvs[0]] for lv in lvs[1:]}
            result["models"]["%s/%s" % (name, prec)] = {"min_ms": best, "ratio_to_" + lvs[0]: ratios}
            table.append("| %s | %s | " % (name, prec) +
                         " | ".join("%.1f" % best[lv if k == "own" else "blas"] for lv, k in modes) + " | " +
                         " | ".join("%.2f" % ratios[lv] for lv in lvs[1:]) + " |")
    load = os.getloadavg()
    md = "\n".join(table) + "\n\nOne thread; minimum latency over %d alternating rounds of %d runs (generic: %d), " \
        "load average at the end %.1f. blas = --kernels blas at %s (OpenBLAS: not the same bits on every CPU).\n" % (
            repeat, runs, generic_runs, load[0], lvs[0])
    results.save(outdir, "isa", result, md)
    shutil.rmtree(tmp, ignore_errors=True)
    print(md, end="")


main()
