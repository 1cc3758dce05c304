#!/usr/bin/python3
# The transformer-side products on parity's kernels, through build-engine
# and infer: a Gemm of the form a Linear layer exports (alpha 1, B constant
# and transposed, C one value per column) runs as a MatMul does, with B
# packed at the first run and kept (ops/nn/gemm.c: gemm_linear); batched
# MatMuls (attention heads) run their heads' row blocks as the pool's tasks;
# short Softmax rows go to the pool in small pieces. Each output is checked
# against a float64 reference within the summation bound, the second sample
# (which reads the kept packing) against the first byte for byte, and every
# instruction-set level and thread count against the others byte for byte.
import os
import sys
import tempfile

import numpy as np
from onnx import TensorProto, helper, numpy_helper
import onnx

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done, run, cpu_levels
from bounds import U32, sum_bound, fn_bound, within

tmp = tempfile.mkdtemp(prefix="parity-engine-linear-")
rng = np.random.default_rng(41)
R, K, N, N2 = 70, 24, 40, 33        # rows (two 64-row blocks), inner, columns
H, L, D, L2 = 3, 150, 20, 37        # heads, rows a head (three 64-row blocks), inner, columns

w1 = rng.uniform(-1, 1, (N, K)).astype(np.float32)      # transB: N x K
c1 = rng.uniform(-1, 1, (N,)).astype(np.float32)
w2 = rng.uniform(-1, 1, (K, N2)).astype(np.float32)     # untransposed, C as [1, N2]
c2 = rng.uniform(-1, 1, (1, N2)).astype(np.float32)
w3 = rng.uniform(-1, 1, (K, N)).astype(np.float32)      # alpha 0.5: the general path
c3 = rng.uniform(-1, 1, (N,)).astype(np.float32)
inits = [numpy_helper.from_array(v, n) for v, n in ((w1, "w1"), (c1, "c1"), (w2, "w2"), (c2, "c2"), (w3, "w3"),
                                                    (c3, "c3"))]
nodes = [
    helper.make_node("Gemm", ["x", "w1", "c1"], ["g1"], transB=1, name="linear"),
    helper.make_node("Relu", ["g1"], ["y1"], name="linear_relu"),
    helper.make_node("Gemm", ["x", "w2", "c2"], ["y2"], name="linear_untransposed"),
    helper.make_node("Gemm", ["x", "w3", "c3"], ["y3"], alpha=0.5, name="scaled"),
    helper.make_node("MatMul", ["q", "k"], ["y4"], name="heads"),
    helper.make_node("Softmax", ["s"], ["y5"], axis=-1, name="short_rows"),
]
g = helper.make_graph(nodes, "linear", [
    helper.make_tensor_value_info("x", TensorProto.FLOAT, [R, K]),
    helper.make_tensor_value_info("q", TensorProto.FLOAT, [H, L, D]),
    helper.make_tensor_value_info("k", TensorProto.FLOAT, [H, D, L2]),
    helper.make_tensor_value_info("s", TensorProto.FLOAT, [300, 8, 12])],
    [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y1", "y2", "y3", "y4", "y5")], inits)
model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
path = os.path.join(tmp, "linear.onnx")
onnx.save(model, path)
eng = os.path.join(tmp, "linear.engine")
rc, _, err = run("build-engine", path, "-o", eng)
ok(rc == 0, "build-engine", err)

feed = {"x": rng.uniform(-1, 1, (R, K)).astype(np.float32),
        "q": rng.uniform(-1, 1, (H, L, D)).astype(np.float32),
        "k": rng.uniform(-1, 1, (H, D, L2)).astype(np.float32),
        "s": rng.uniform(-12, 12, (300, 8, 12)).astype(np.float32)}
ind = os.path.join(tmp, "in")
for sample in ("1", "2"):   # the same inputs twice: the second run reads the kept packing
    os.makedirs(os.path.join(ind, sample))
    for k, v in feed.items():
        np.save(os.path.join(ind, sample, k + ".npy"), v)


def infer(tag, *args):
    out = os.path.join(tmp, "out-" + tag)
    rc, _, err = run("infer", eng, "-i", ind, "-o", out, *args)
    if rc:
        return None, err
    return {s: {f[:-4]: open(os.path.join(out, s, f), "rb").read() for f in os.listdir(os.path.join(out, s))}
            for s in ("1", "2")}, err


def arr(raw):
    import io
    return np.load(io.BytesIO(raw))


base, err = infer("base")
ok(base is not None, "infer runs", err)
ok(base is not None and base["1"] == base["2"], "the second sample (kept packing) gives the first's bytes")

x = feed["x"].astype(np.float64)
want = {"y1": np.maximum(x @ w1.T.astype(np.float64) + c1, 0),
        "y2": x @ w2.astype(np.float64) + c2,
        "y3": 0.5 * (x @ w3.astype(np.float64)) + c3,
        "y4": feed["q"].astype(np.float64) @ feed["k"].astype(np.float64)}
mags = {"y1": np.abs(x) @ np.abs(w1.T) + np.abs(c1), "y2": np.abs(x) @ np.abs(w2) + np.abs(c2),
        "y3": 0.5 * (np.abs(x) @ np.abs(w3)) + np.abs(c3),
        "y4": np.abs(feed["q"].astype(np.float64)) @ np.abs(feed["k"].astype(np.float64))}
for name, extra in (("y1", 1), ("y2", 1), ("y3", 3), ("y4", 0)):
    got = arr(base["1"][name]) if base else None
    # K (or D) products and sums, then the bias's addition (alpha's product and beta's too for y3)
    n = (K if name != "y4" else D) + extra
    res = within(got, want[name], sum_bound(n, mags[name])) if got is not None else (False, None)
    ok(res[0], f"{name} within the summation bound of the float64 product", f"worst {res[1]}")

s = feed["s"].astype(np.float64)
e = np.exp(s - s.max(-1, keepdims=True))
sm = e / e.sum(-1, keepdims=True)
got = arr(base["1"]["y5"]) if base else None
# exp within a few ulps, a sum of 12, a division: a generous 16 ulps of each value
res = within(got, sm, 32 * U32 * sm + 1e-30) if got is not None else (False, None)
ok(res[0], "Softmax of 2,400 rows of 12 within 16 ulps of float64", f"worst {res[1]}")

for level in cpu_levels():
    for threads in ("1", "3"):
        other, err = infer(f"{level}-{threads}", "--isa", level, "--threads", threads)
        ok(other == base, f"the same bytes at {level}, {threads} thread(s)", err)
done()
