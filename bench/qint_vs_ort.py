#!/usr/bin/python3
"""qint_vs_ort.py — the integer ops of dynamically quantized models alone,
parity (ops/gemm/qgemm.c) against ONNX Runtime, by CPU time (the work of
qint_vs_ort.sh).

Each row is a model of one op at a shape a quantized transformer or CNN
gives (random 8-bit values, fixed seed): MatMulInteger with A (uint8) and
its zero point as inputs and B (int8, or uint8 where the row says so) and
its zero point as initializers, as onnxruntime.quantization.quantize_dynamic
writes them (A's zero point comes from DynamicQuantizeLinear at run time);
ConvInteger likewise; and the whole chain quantize_dynamic writes for a
MatMul (DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul by the
scales) from float32 input. One thread each; a run's cost is the CPU time
of N runs less that of 1, over N - 1, minimum over BENCH_REPEAT rounds
(default 2) that alternate parity and ONNX Runtime (conv_shapes.py's
per_run_ms): session creation and B's one-time packing drop out of both.

Results: build/bench/results.json ("qint_vs_ort") and qint_vs_ort.md.
Environment: PARITY_BIN, BENCH_REPEAT, BENCH_ISA (parity's --isa).
"""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import conv_shapes  # noqa: E402
import fullsize  # noqa: E402
import results  # noqa: E402

root = fullsize.root
bindir = conv_shapes.bindir
ort = conv_shapes.ort
isa = os.environ.get("BENCH_ISA")

# (label, kind, shape, B / weight type): matmul shape (M, K, N); conv
# (cin, cout, h, w, k, pad)
ROWS = [
    ("ViT-B attention/MLP projection", "matmul", (196, 768, 768), np.int8),
    ("same, uint8 weights", "matmul", (196, 768, 768), np.uint8),
    ("one token, MLP up-projection", "matmul", (1, 768, 3072), np.int8),
    ("1024 tokens, 1024 -> 256", "matmul", (1024, 1024, 256), np.int8),
    ("quantize_dynamic chain, 196x768x768", "chain", (196, 768, 768), np.int8),
    ("ConvInteger 64 -> 64, 56x56, 3x3", "conv", (64, 64, 56, 56, 3, 1), np.int8),
    ("ConvInteger 256 -> 64, 56x56, 1x1", "conv", (256, 64, 56, 56, 1, 0), np.int8),
    ("ConvInteger 128 -> 128, 28x28, 3x3", "conv", (128, 128, 28, 28, 3, 1), np.int8),
]


def q8(rng, shape, dt):
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max + 1, shape).astype(dt)


def vi(name, dt, shape):
    return helper.make_tensor_value_info(name, dt, shape)


def build(kind, shape, wt, folder, seed):
    """folder/m.onnx and folder/in/*.npy; returns the multiply-adds of one run."""
    rng = np.random.default_rng(seed)
    wtp = TensorProto.INT8 if wt == np.int8 else TensorProto.UINT8
    feeds, inits = {}, [numpy_helper.from_array(np.array(3 if wt == np.int8 else 128, wt), "wz")]
    if kind in ("matmul", "chain"):
        m, k, n = shape
        macs = m * k * n
        inits.append(numpy_helper.from_array(q8(rng, (k, n), wt), "w"))
        if kind == "matmul":
            nodes = [helper.make_node("MatMulInteger", ["a", "w", "az", "wz"], ["y"])]
            ins = [vi("a", TensorProto.UINT8, [1, m, k]), vi("az", TensorProto.UINT8, [])]
            feeds = {"a": q8(rng, (1, m, k), np.uint8), "az": np.array(117, np.uint8)}
            out = vi("y", TensorProto.INT32, [1, m, n])
        else:
            inits.append(numpy_helper.from_array(np.array(0.013, np.float32), "ws"))
            nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["a", "as", "az"]),
                     helper.make_node("MatMulInteger", ["a", "w", "az", "wz"], ["acc"]),
                     helper.make_node("Cast", ["acc"], ["accf"], to=TensorProto.FLOAT),
                     helper.make_node("Mul", ["as", "ws"], ["s"]),
                     helper.make_node("Mul", ["accf", "s"], ["y"])]
            ins = [vi("x", TensorProto.FLOAT, [1, m, k])]
            feeds = {"x": rng.standard_normal((1, m, k)).astype(np.float32)}
            out = vi("y", TensorProto.FLOAT, [1, m, n])
    else:
        ci, co, h, w, kk, p = shape
        macs = ci * co * kk * kk * h * w
        inits.append(numpy_helper.from_array(q8(rng, (co, ci, kk, kk), wt), "w"))
        nodes = [helper.make_node("ConvInteger", ["a", "w", "az", "wz"], ["y"], pads=[p] * 4)]
        ins = [vi("a", TensorProto.UINT8, [1, ci, h, w]), vi("az", TensorProto.UINT8, [])]
        feeds = {"a": q8(rng, (1, ci, h, w), np.uint8), "az": np.array(117, np.uint8)}
        out = vi("y", TensorProto.INT32, [1, co, h, w])
    g = helper.make_graph(nodes, kind, ins, [out], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    os.makedirs(os.path.join(folder, "in"))
    onnx.save(model, os.path.join(folder, "m.onnx"))
    for name, arr in feeds.items():
        np.save(os.path.join(folder, "in", name + ".npy"), arr)
    return macs


def main():
    for exe in ("build-engine", "infer"):
        if not os.access(os.path.join(bindir, exe), os.X_OK):
            fullsize.fail("%s/%s is not built (run make)" % (bindir, exe))
    tmp = tempfile.mkdtemp(prefix="parity-qint-")
    rows = []
    try:
        for i, (label, kind, shape, wt) in enumerate(ROWS):
            d = os.path.join(tmp, "r%02d" % i)
            macs = build(kind, shape, wt, d, i)
            eng = os.path.join(d, "e.engine")
            p = subprocess.run([os.path.join(bindir, "build-engine"), os.path.join(d, "m.onnx"), "-o", eng],
                               capture_output=True, text=True)
            if p.returncode:
                fullsize.fail("build-engine (%s): %s" % (label, p.stderr.strip()))
            runs = max(11, int(0.4 / (macs / 40e9)))
            extra = ["--isa", isa] if isa else []
            pm = conv_shapes.per_run_ms(lambda n: [os.path.join(bindir, "infer"), eng, "-i", os.path.join(d, "in"),
                                                   "-o", os.path.join(d, "po"), "--threads", "1", "--runs", str(n)]
                                        + extra, runs)
            om = conv_shapes.per_run_ms(lambda n: [ort, "run", "--model", os.path.join(d, "m.onnx"), "--input",
                                                   os.path.join(d, "in"), "--output", os.path.join(d, "oo"),
                                                   "--threads", "1", "--runs", str(n)], runs)
            same = all(np.array_equal(np.load(os.path.join(d, "po", f)), np.load(os.path.join(d, "oo", f)))
                       for f in os.listdir(os.path.join(d, "oo")))
            rows.append({"label": label, "kind": kind, "shape": list(shape), "weights": np.dtype(wt).name,
                         "gmac": round(macs * 1e-9, 4), "parity_ms": round(pm, 3), "ort_ms": round(om, 3),
                         "ratio": round(pm / om, 3) if om > 0 else None, "bit_identical": same})
            print("  %s: parity %.3f ms, onnxruntime %.3f ms%s" % (label, pm, om, "" if same else " (outputs differ)"),
                  file=sys.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    table = ["| op, shape | weights | GMAC | parity ms | ORT ms | ratio parity/ORT | same bytes |",
             "|---|---|---:|---:|---:|---:|---|"]
    for r in rows:
        table.append("| %s (%s) | %s | %.3f | %.3f | %.3f | %.2f | %s |" % (
            r["label"], "x".join(map(str, r["shape"])), r["weights"], r["gmac"], r["parity_ms"], r["ort_ms"],
            r["ratio"] or 0, "yes" if r["bit_identical"] else "no"))
    notes = ("CPU ms of one run (user + system; (T(N) - T(1)) / (N - 1), min over %d rounds), one thread each, "
             "one op (or quantize_dynamic's chain) per model; parity at %s (qgemm kernels). 'same bytes': the "
             "outputs are identical (the chain's float32 output may differ in the last place: ORT fuses it into "
             "DynamicQuantizeMatMul, which scales in another order). Load average %s." % (
                 conv_shapes.repeat, isa or "the CPU's best ISA", " / ".join("%.1f" % x for x in os.getloadavg())))
    md = "\n".join(table) + "\n\n" + notes + "\n"
    results.save(os.path.join(root, "build", "bench"), "qint_vs_ort", {"rounds": conv_shapes.repeat, "isa": isa,
                                                                      "rows": rows}, md)
    print(md, end="")


if __name__ == "__main__":
    main()
