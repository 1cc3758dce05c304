#!/usr/bin/python3
"""infer_vs_ort.py — parity's FP32 infer against ONNX Runtime (onnxruntime-node,
CPU), measured in one run on the same machine (the work of infer_vs_ort.sh).

For every bundled model (the seed reproducers of `make models`, the
RT-DETR-tiny fixture, the trained RT-DETR of models/rtdetr and the full-size
RT-DETR R18-vd at 640x640 of bench/models, each at opset 16 and 17) and each
thread count (2 and 1 by default): parity's engine is built once (untimed),
then one untimed warm-up invocation of each engine, then R rounds
(BENCH_REPEAT, default 3) that each
run `infer --runs N --stats` and the onnxruntime backend with `--runs N
--stats`, alternating, each under /usr/bin/time -v, so that a burst of load
from elsewhere hits both. Reported per model: the median latency of each
(the median over the rounds of the median of N runs inside one process;
model loading and session creation are not timed), their ratio
(parity / onnxruntime: below 1 means parity is faster) and each process's
peak resident memory. The onnxruntime process is Node.js with the library
loaded; its bare footprint (node + onnxruntime-node, no session) is measured
and printed too, so the model's own share can be read off.

The trained RT-DETR ("rtdetr" in issue 9's speed goal: 320x320, inputs images
and orig_target_sizes) runs on a real validation image: the first image of
shapes-val (gen-shapes, seed 2024) through the official preprocessing
(configs/preprocess/rtdetr-official.yaml at 320x320), made in the temporary
folder by parity's own gen-shapes and preprocess. The full-size RT-DETR
(rtdetr_r18vd_640_op16/op17, issue 19: transformers' RT-DETR with
PekingU/rtdetr_r18vd's configuration, weights filled deterministically,
bench/fullsize.py) runs on the same image preprocessed at 640x640; its model
is made once into build/bench/models/.

Runs per process: each model has its own default (20; 5 for the full-size
RT-DETR, about 1 s an inference on one thread). BENCH_RUNS overrides it:
"10" for every model, "rtdetr_r18vd_640_op17=3" for one, both mixed
("10 rtdetr_r18vd_640_op17=3").

Results: build/bench/results.json (section "infer_vs_ort") and a Markdown
table on stdout and in build/bench/infer_vs_ort.md.

Environment: PARITY_BIN (stages; default build/bin), BENCH_RUNS (above),
BENCH_ISA (avx512, avx2 or generic: parity's `infer --isa`, ONNX Runtime
unchanged; results under the key infer_vs_ort_ISA and in
build/bench/infer_vs_ort_ISA.md), BENCH_REPEAT (default 3), BENCH_THREADS (default "2 1"), BENCH_MODELS (names to
keep, default all), BENCH_ORT=python (time ONNX Runtime through Python's
onnxruntime with bench/ort_time.py, same settings, on a host without Node.js),
BENCH_TASKSET (a CPU list, e.g. 0,1: pin both engines to those cores).
"""
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import results  # noqa: E402
from fullsize import fullsize_model, shapes_input  # noqa: E402

root = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
bindir = os.environ.get("PARITY_BIN") or os.path.join(root, "build", "bin")
ort_py = os.environ.get("BENCH_ORT") == "python"
ort = [sys.executable, os.path.join(root, "bench", "ort_time.py")] if ort_py else \
    [os.path.join(root, "pipeline", "backends", "onnxruntime")]
pin = ["taskset", "-c", os.environ["BENCH_TASKSET"]] if os.environ.get("BENCH_TASKSET") else []
isa = os.environ.get("BENCH_ISA") or None
repeat = int(os.environ.get("BENCH_REPEAT", "3"))
threads_list = [int(t) for t in os.environ.get("BENCH_THREADS", "2 1").split()]
outdir = os.path.join(root, "build", "bench")

# (name, model, input, runs per process). model None: the full-size model
# made from bench/models/NAME.onnx.xz; input a number: the shapes-val image
# preprocessed at that size.
MODELS = [
    ("convclip", "build/models/convclip/convclip.onnx", "build/models/convclip/input", 20),
    ("nafnet_ln_op16", "build/models/nafnet_ln/nafnet_ln_op16.onnx", "build/models/nafnet_ln/input", 20),
    ("nafnet_ln_op17", "build/models/nafnet_ln/nafnet_ln_op17.onnx", "build/models/nafnet_ln/input", 20),
    ("mixed_cast_fp32", "build/models/mixed_cast/mixed_cast_fp32.onnx", "build/models/mixed_cast/input", 20),
    ("unet_attn", "build/models/unet_attn/unet_attn.onnx", "build/models/unet_attn/input", 20),
    ("rtdetr_tiny_op16", "tests/fixtures/rtdetr-tiny/rtdetr_tiny_op16.onnx", "tests/fixtures/rtdetr-tiny/input", 20),
    ("rtdetr_tiny_op17", "tests/fixtures/rtdetr-tiny/rtdetr_tiny_op17.onnx", "tests/fixtures/rtdetr-tiny/input", 20),
    ("rtdetr_shapes_op16", "models/rtdetr/rtdetr_shapes_op16.onnx", 320, 20),
    ("rtdetr_shapes_op17", "models/rtdetr/rtdetr_shapes_op17.onnx", 320, 20),
    ("rtdetr_r18vd_640_op16", None, 640, 5),
    ("rtdetr_r18vd_640_op17", None, 640, 5),
    # the graph users deploy (issue 41): lyuwenyu/RT-DETR's own deploy export of r18vd at opset 17 (1,158
    # nodes, 3 explicit Pad, 57 Transpose, 4 Gemm), bench/models/README.md; the benchmark that decides
    ("rtdetr_r18vd_official_op17", None, 640, 5),
]


def fail(msg):
    print("infer_vs_ort: " + msg, file=sys.stderr)
    sys.exit(2)


def timed(cmd, tmp):
    """Runs cmd under /usr/bin/time -v; returns its peak RSS in MiB. Where GNU
    time is absent, the kernel's own count for the child (wait4) is used."""
    if os.access("/usr/bin/time", os.X_OK):
        tv = os.path.join(tmp, "time.txt")
        p = subprocess.run(["/usr/bin/time", "-v", "-o", tv] + pin + cmd, capture_output=True, text=True)
        err, rc = p.stderr, p.returncode
    else:
        p = subprocess.Popen(pin + cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        err = p.stderr.read()
        _, status, ru = os.wait4(p.pid, 0)
        rc = os.waitstatus_to_exitcode(status)
    if rc:
        fail("%s failed (exit %d): %s" % (os.path.basename(cmd[1] if ort_py and cmd[0] == sys.executable else cmd[0]),
                                          rc, err.strip()[-400:]))
    if not os.access("/usr/bin/time", os.X_OK):
        return ru.ru_maxrss / 1024.0
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", open(tv).read())
    return int(m.group(1)) / 1024.0


def runs_for(name, default):
    """The runs per process for a model: BENCH_RUNS's NAME=N, else its plain
    N, else the model's own default."""
    plain = None
    for word in os.environ.get("BENCH_RUNS", "").split():
        key, eq, val = word.rpartition("=")
        if not re.fullmatch(r"[1-9][0-9]{0,5}", val) or (eq and not key):
            fail("BENCH_RUNS: '%s' is neither N nor NAME=N (N a positive integer)" % word)
        if not eq:
            plain = int(val)
        elif key == name:
            return int(val)
    return plain or default


def median_of(stats):
    s = json.load(open(stats))["samples"][0]
    return s["median_ms"], s["min_ms"]


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def versions():
    v = {}
    if ort_py:
        import onnxruntime
        v["onnxruntime"] = "%s (Python)" % onnxruntime.__version__
        v["node"] = "-"
    else:
        try:
            v["onnxruntime"] = json.load(open(os.path.join(root, "node_modules", "onnxruntime-node",
                                                           "package.json")))["version"]
        except OSError:
            fail("onnxruntime-node is not installed (run tools/deps.sh)")
        v["node"] = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    v["parity"] = subprocess.run([os.path.join(bindir, "infer"), "--version"], capture_output=True,
                                 text=True).stdout.strip()
    return v


def main():
    for exe in ("build-engine", "infer", "gen-shapes", "preprocess"):
        if not os.access(os.path.join(bindir, exe), os.X_OK):
            fail("%s/%s is not built (run make)" % (bindir, exe))
    if isa not in (None, "avx512", "avx2", "generic"):
        fail("BENCH_ISA must be avx512, avx2 or generic, got '%s'" % isa)
    keep = set(os.environ.get("BENCH_MODELS", "").split())
    tmp = tempfile.mkdtemp(prefix="parity-bench-")
    load0 = os.getloadavg()
    ver = versions()
    base_rss = timed([sys.executable, "-c", "import onnxruntime"] if ort_py else
                     ["node", "-e", "require(%r)" % os.path.join(root, "node_modules", "onnxruntime-node")], tmp)
    rows = []
    unknown = keep - {m[0] for m in MODELS}
    if unknown:
        fail("BENCH_MODELS: no model named %s" % ", ".join(sorted(unknown)))
    for name, model, inp, runs in MODELS:
        if keep and name not in keep:
            continue
        runs = runs_for(name, runs)
        model = os.path.join(root, model) if model else fullsize_model(name)
        inp = shapes_input(tmp, bindir, inp) if isinstance(inp, int) else os.path.join(root, inp)
        if not os.path.exists(model):
            fail("%s missing (run make models)" % model)
        engine = os.path.join(tmp, name + ".engine")
        p = subprocess.run([os.path.join(bindir, "build-engine"), model, "-o", engine, "--precision", "fp32"],
                           capture_output=True, text=True)
        if p.returncode:
            fail("build-engine %s: %s" % (name, p.stderr.strip()))
        for th in threads_list:
            ps, os_ = os.path.join(tmp, "p.json"), os.path.join(tmp, "o.json")
            pcmd = [os.path.join(bindir, "infer"), engine, "-i", inp, "-o", os.path.join(tmp, "pout"),
                    "--threads", str(th), "--stats", ps] + (["--isa", isa] if isa else [])
            ocmd = ort + ["run", "--model", model, "--input", inp, "--output", os.path.join(tmp, "oout"),
                    "--threads", str(th), "--stats", os_]
            timed(pcmd + ["--runs", "1"], tmp)              # warm-up: file cache, lazy loading
            timed(ocmd + ["--runs", "1"], tmp)
            pm, om, prss, orss = [], [], 0.0, 0.0
            for _ in range(repeat):
                prss = max(prss, timed(pcmd + ["--runs", str(runs)], tmp))
                pm.append(median_of(ps))
                orss = max(orss, timed(ocmd + ["--runs", str(runs)], tmp))
                om.append(median_of(os_))
            p_med, o_med = statistics.median(m for m, _ in pm), statistics.median(m for m, _ in om)
            rows.append({"model": name, "threads": th, "runs": runs, "rounds": repeat, "parity_isa": isa or "best",
                         "parity": {"median_ms": p_med, "min_ms": min(m for _, m in pm),
                                    "round_medians_ms": [m for m, _ in pm], "peak_rss_mib": round(prss, 1)},
                         "onnxruntime": {"median_ms": o_med, "min_ms": min(m for _, m in om),
                                         "round_medians_ms": [m for m, _ in om], "peak_rss_mib": round(orss, 1)},
                         "ratio": round(p_med / o_med, 3),
                         # each round's pair, parity's median over ORT's: how far the host moved the ratio
                         "round_ratios": [round(a / b, 3) for (a, _), (b, _) in zip(pm, om)]})
            r = rows[-1]
            print("  %-18s threads %d: parity %8.2f ms  onnxruntime %8.2f ms  ratio %.2f (rounds %.2f-%.2f)" %
                  (name, th, p_med, o_med, r["ratio"], min(r["round_ratios"]), max(r["round_ratios"])),
                  file=sys.stderr)

    machine = {"cpu": cpu_name(), "cpus": os.cpu_count(), "pinned_to": os.environ.get("BENCH_TASKSET"),
               "system": platform.platform(),
               "load_average_at_start": [round(x, 2) for x in load0],
               "load_average_at_end": [round(x, 2) for x in os.getloadavg()]}
    result = {"benchmark": "parity FP32 infer vs ONNX Runtime (onnxruntime-node, CPU)", "machine": machine,
              "versions": ver, "parity_isa": isa or "the CPU's best", "rounds": repeat, "node_onnxruntime_bare_rss_mib": round(base_rss, 1), "results": rows}
    table = ["| model | threads | runs | parity median (ms) | ONNX Runtime median (ms) | ratio parity/ORT | "
             "ratio by round (min-max) | parity peak RSS (MiB) | ORT peak RSS (MiB) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        table.append("| %s | %d | %d | %.2f | %.2f | %.2f | %.2f-%.2f | %.1f | %.1f |" % (
            r["model"], r["threads"], r["runs"], r["parity"]["median_ms"], r["onnxruntime"]["median_ms"], r["ratio"],
            min(r["round_ratios"]), max(r["round_ratios"]), r["parity"]["peak_rss_mib"], r["onnxruntime"]["peak_rss_mib"]))
    notes = ("Latency: median over %d alternating rounds of the median of the runs in one process (load and "
             "session creation untimed), after one untimed warm-up invocation; same thread count for both; ratio "
             "below 1 means parity is faster; by round: each round's parity median over the ORT median measured "
             "right after it (the spread is the machine's). parity's kernels at %s. %s, %d CPUs%s, load average %s at the start "
             "and %s at the end; ONNX Runtime %s%s. ORT's peak RSS includes the %s runtime and the library: %.1f "
             "MiB with no session loaded."
             % (repeat, "--isa " + isa if isa else "the CPU's best instruction set", machine["cpu"], machine["cpus"],
                " (both pinned to CPUs %s)" % machine["pinned_to"] if machine["pinned_to"] else "",
                " / ".join("%.1f" % x for x in load0),
                " / ".join("%.1f" % x for x in machine["load_average_at_end"]), ver["onnxruntime"],
                "" if ort_py else " (onnxruntime-node) on Node.js " + ver["node"], "Python" if ort_py else "Node.js",
                base_rss))
    md = "\n".join(table) + "\n\n" + notes + "\n"
    results.save(outdir, "infer_vs_ort" + ("_" + isa if isa else ""), result, md)
    shutil.rmtree(tmp, ignore_errors=True)
    print(md, end="")


if __name__ == "__main__":
    main()
