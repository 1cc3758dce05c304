#!/usr/bin/python3
"""fp32_accuracy.py — `make bench`: how close parity's FP32 reference is to
the exact result, against ONNX Runtime's on the same inputs, in one run.

The layers where the order of a long sum shows (issue 38): a MatMul with k =
12544 (a 7x7 x 256-channel box head's fc6, 100 x 12544 x 64) and a 3x3
convolution with 256 input channels (k = 2304, 256 -> 256 at 40x40), with
realistic data: post-ReLU activations, weights ~ N(0, 1/k). Each engine runs
the layer in FP32 through its backend (pipeline/backends/: parity, and
onnxruntime through onnxruntime-node); numpy computes the exact result in
float64. The figure is the rms error normalised by the exact result's rms;
the row's ratio is parity's over ONNX Runtime's (the issue's goal: <= 1.5).

Usage: fp32_accuracy.py [--out DIR]   (results.json there; default build/bench/fp32_accuracy)
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

root = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(root, "pipeline", "backends", "lib"))
from names import name_encode  # noqa: E402


def save(path, nodes, inputs, outputs, inits):
    g = helper.make_graph(nodes, "acc", inputs, outputs, initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.save(m, path)


def case_matmul(rng, d):
    m, k, n = 100, 12544, 64
    x = np.maximum(rng.standard_normal((m, k)), 0).astype(np.float32)
    w = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
    save(os.path.join(d, "model.onnx"), [helper.make_node("MatMul", ["x", "w"], ["y"])],
         [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
         [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])], [numpy_helper.from_array(w, "w")])
    exact = x.astype(np.float64) @ w.astype(np.float64)
    return {"x": x}, exact


def case_conv(rng, d):
    c, m, h, w = 256, 256, 40, 40
    x = np.maximum(rng.standard_normal((1, c, h, w)), 0).astype(np.float32)
    wt = (rng.standard_normal((m, c, 3, 3)) / np.sqrt(c * 9)).astype(np.float32)
    save(os.path.join(d, "model.onnx"),
         [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1], kernel_shape=[3, 3])],
         [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, h, w])],
         [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, m, h, w])], [numpy_helper.from_array(wt, "w")])
    # exact: the 3x3 convolution as 9 shifted float64 products
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    exact = np.zeros((1, m, h, w))
    w64 = wt.astype(np.float64)
    for a in range(3):
        for b in range(3):
            exact[0] += np.einsum("oc,chw->ohw", w64[:, :, a, b], xp[0, :, a:a + h, b:b + w])
    return {"x": x}, exact


def run(backend, d, inputs):
    ind, outd = os.path.join(d, "in"), os.path.join(d, "out-" + backend)
    os.makedirs(ind, exist_ok=True)
    for name, a in inputs.items():
        np.save(os.path.join(ind, name_encode(name) + ".npy"), a)
    env = dict(os.environ, PARITY_BIN=os.environ.get("PARITY_BIN", os.path.join(root, "build", "bin")))
    p = subprocess.run([os.path.join(root, "pipeline", "backends", backend), "run", "--model",
                        os.path.join(d, "model.onnx"), "--input", ind, "--output", outd, "--threads", "1"],
                       capture_output=True, text=True, env=env)
    if p.returncode:
        sys.exit("fp32_accuracy: %s failed: %s" % (backend, p.stderr.strip()))
    return np.load(os.path.join(outd, "y.npy")).astype(np.float64)


def rel_rms(got, exact):
    return float(np.sqrt(np.mean((got - exact) ** 2)) / np.sqrt(np.mean(exact ** 2)))


def main():
    out = sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv else os.path.join(root, "build", "bench",
                                                                                         "fp32_accuracy")
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(38)
    rows = []
    for name, make in [("MatMul 100x12544x64 (box head fc6)", case_matmul),
                       ("Conv 3x3 256->256 at 40x40 (k 2304)", case_conv)]:
        with tempfile.TemporaryDirectory(prefix="parity-acc-") as d:
            inputs, exact = make(rng, d)
            ep, eo = rel_rms(run("parity", d, inputs), exact), rel_rms(run("onnxruntime", d, inputs), exact)
        rows.append({"case": name, "parity_rel_rms": ep, "ort_rel_rms": eo, "ratio": ep / eo})
    print("%-40s %14s %14s %8s" % ("FP32 error vs float64 (rms / rms)", "parity", "ONNX Runtime", "ratio"))
    for r in rows:
        print("%-40s %14.3e %14.3e %8.2f" % (r["case"], r["parity_rel_rms"], r["ort_rel_rms"], r["ratio"]))
    tmp = os.path.join(out, "results.json.tmp")
    with open(tmp, "w") as f:
        json.dump({"benchmark": "FP32 accuracy vs float64, parity against ONNX Runtime", "results": rows}, f,
                  indent=1)
        f.write("\n")
    os.replace(tmp, os.path.join(out, "results.json"))


if __name__ == "__main__":
    main()
