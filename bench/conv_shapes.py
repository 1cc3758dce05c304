#!/usr/bin/python3
"""conv_shapes.py — every distinct convolution of the full-size RT-DETR
alone, parity against ONNX Runtime, timed by CPU time (the work of
conv_shapes.sh).

For each distinct Conv shape of bench/models/rtdetr_r18vd_640_op17 (input
channels, output channels, input size, kernel, stride, pads; with the number
of layers of that shape), a model of that one Conv (random weights and bias,
fixed seed) is run by parity's `infer` and by the onnxruntime backend, one
thread each. A process's CPU time (user + system, from the kernel's
accounting of the child) for N runs less that for 1 run, over N - 1, is the
cost of one run: model loading and session creation drop out, and a
process descheduled by other load on a shared machine is not charged for
the time it waited, so the figures hold where wall-clock latencies swing.
The minimum over BENCH_REPEAT rounds (default 2). N is chosen per shape for
about 0.4 s of work.

Read the totals with care: a one-Conv model costs ONNX Runtime a layout
change (NCHW to its blocked NCHWc and back) that it does not pay between
two convolutions inside a model, so the per-shape ratios favour parity by
that much; `profile_vs_ort.sh` measures the convolutions inside the model.
What this table gives is each kernel's own speed, shape by shape, steady on
a busy machine.

Results: build/bench/results.json ("conv_shapes") and conv_shapes.md.
Environment: PARITY_BIN, BENCH_REPEAT, BENCH_ISA (parity's --isa).
"""
import collections
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fullsize  # noqa: E402
import results  # noqa: E402

root = fullsize.root
bindir = os.environ.get("PARITY_BIN") or os.path.join(root, "build", "bin")
ort = os.path.join(root, "pipeline", "backends", "onnxruntime")
repeat = int(os.environ.get("BENCH_REPEAT", "2"))
isa = os.environ.get("BENCH_ISA")
MODEL = "rtdetr_r18vd_640_op17"


def conv_shapes(path):
    """Distinct (cin, cout, h, w, k, stride, pad) of the model's Convs, with counts."""
    import onnx
    m = onnx.load(path, load_external_data=False)
    inferred = onnx.shape_inference.infer_shapes(m)
    dims = {vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim]
            for vi in list(inferred.graph.value_info) + list(inferred.graph.input)}
    weights = {i.name: list(i.dims) for i in m.graph.initializer}
    count = collections.Counter()
    for n in m.graph.node:
        if n.op_type != "Conv":
            continue
        a = {x.name: onnx.helper.get_attribute_value(x) for x in n.attribute}
        w, x = weights[n.input[1]], dims[n.input[0]]
        if len(set(a.get("pads", [0]))) != 1 or a.get("group", 1) != 1:
            fullsize.fail("%s: Conv %s has uneven pads or groups (not a shape this script builds)" % (path, n.name))
        count[(w[1], w[0], x[2], x[3], w[2], a.get("strides", [1, 1])[0], a.get("pads", [0])[0])] += 1
    return sorted(count.items())


def one_conv(shape, folder, seed):
    """folder/m.onnx (the one Conv) and folder/in/x.npy."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    ci, co, h, w, k, s, p = shape
    rng = np.random.default_rng(seed)
    oh, ow = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    inits = [numpy_helper.from_array((0.05 * rng.standard_normal((co, ci, k, k))).astype(np.float32), "W"),
             numpy_helper.from_array(rng.standard_normal(co).astype(np.float32), "B")]
    node = helper.make_node("Conv", ["x", "W", "B"], ["y"], pads=[p] * 4, strides=[s, s])
    g = helper.make_graph([node], "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, ci, h, w])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, co, oh, ow])], inits)
    os.makedirs(os.path.join(folder, "in"))
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), os.path.join(folder, "m.onnx"))
    np.save(os.path.join(folder, "in", "x.npy"), rng.random((1, ci, h, w)).astype(np.float32))
    return 2.0 * co * ci * k * k * oh * ow * 1e-9


def cpu_seconds(cmd):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        fullsize.fail("%s failed (exit %d): %s" % (os.path.basename(cmd[0]), p.returncode, p.stderr.strip()[-300:]))
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def per_run_ms(cmd_of, runs):
    """CPU ms of one run: min over the rounds of (T(runs) - T(1)) / (runs - 1)."""
    best = {}
    for _ in range(repeat):
        for n in (1, runs):
            t = cpu_seconds(cmd_of(n))
            best[n] = min(best.get(n, t), t)
    return max(best[runs] - best[1], 0.0) / (runs - 1) * 1e3


def main():
    for exe in ("build-engine", "infer"):
        if not os.access(os.path.join(bindir, exe), os.X_OK):
            fullsize.fail("%s/%s is not built (run make)" % (bindir, exe))
    model = fullsize.fullsize_model(MODEL)
    tmp = tempfile.mkdtemp(prefix="parity-conv-shapes-")
    rows, tot_p, tot_o = [], 0.0, 0.0
    try:
        for i, (shape, count) in enumerate(conv_shapes(model)):
            d = os.path.join(tmp, "s%02d" % i)
            gflop = one_conv(shape, d, i)
            eng = os.path.join(d, "e.engine")
            p = subprocess.run([os.path.join(bindir, "build-engine"), os.path.join(d, "m.onnx"), "-o", eng,
                                "--precision", "fp32"], capture_output=True, text=True)
            if p.returncode:
                fullsize.fail("build-engine (conv %s): %s" % (shape, p.stderr.strip()))
            runs = max(11, int(0.4 / (gflop / 100.0)))
            extra = ["--isa", isa] if isa else []
            pm = per_run_ms(lambda n: [os.path.join(bindir, "infer"), eng, "-i", os.path.join(d, "in"), "-o",
                                       os.path.join(d, "po"), "--threads", "1", "--runs", str(n)] + extra, runs)
            om = per_run_ms(lambda n: [ort, "run", "--model", os.path.join(d, "m.onnx"), "--input",
                                       os.path.join(d, "in"), "--output", os.path.join(d, "oo"), "--threads", "1",
                                       "--runs", str(n)], runs)
            tot_p += pm * count
            tot_o += om * count
            rows.append({"shape": dict(zip(("cin", "cout", "h", "w", "k", "stride", "pad"), shape)), "layers": count,
                         "gflop": round(gflop, 4), "parity_ms": round(pm, 3), "ort_ms": round(om, 3),
                         "ratio": round(pm / om, 3) if om > 0 else None})
            print("  conv %s x%d: parity %.3f ms, onnxruntime %.3f ms" % (shape, count, pm, om), file=sys.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    table = ["| Conv (cin -> cout, input, kernel / stride) | layers | GFLOP | parity ms | ORT ms | ratio | "
             "parity GFLOP/s | ORT GFLOP/s |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        s = r["shape"]
        table.append("| %d -> %d, %dx%d, %dx%d / %d | %d | %.3f | %.3f | %.3f | %.2f | %.0f | %.0f |" % (
            s["cin"], s["cout"], s["h"], s["w"], s["k"], s["k"], s["stride"], r["layers"], r["gflop"],
            r["parity_ms"], r["ort_ms"], r["ratio"] or 0, r["gflop"] / r["parity_ms"] * 1e3 if r["parity_ms"] else 0,
            r["gflop"] / r["ort_ms"] * 1e3 if r["ort_ms"] else 0))
    table.append("| **all %d layers, weighted** | | | %.1f | %.1f | %.3f | | |" % (
        sum(r["layers"] for r in rows), tot_p, tot_o, tot_p / tot_o if tot_o else 0))
    notes = ("CPU ms of one run (user + system; (T(N) - T(1)) / (N - 1), min over %d rounds), one thread each, "
             "one Conv per model; parity at %s. A one-Conv model costs ONNX Runtime a layout change it does not pay "
             "inside a model. Load average %s." % (repeat, isa or "the CPU's best ISA",
                                                   " / ".join("%.1f" % x for x in os.getloadavg())))
    md = "\n".join(table) + "\n\n" + notes + "\n"
    results.save(os.path.join(root, "build", "bench"), "conv_shapes",
                 {"model": MODEL, "rounds": repeat, "isa": isa, "rows": rows, "parity_total_ms": round(tot_p, 1),
                  "ort_total_ms": round(tot_o, 1)}, md)
    print(md, end="")


if __name__ == "__main__":
    main()
