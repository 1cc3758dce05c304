#!/usr/bin/python3
# The loader and the build passes on models made here with python3-onnx:
# model-local functions (nested, with attribute references), Constant forms,
# typed initializer fields, Shape->Gather->Concat folding, dead-node removal,
# --input-shape, --dump leaving outputs bit-identical, thread-count invariance.
import json
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done, run
from bounds import U32, sum_bound, fn_bound, within

tmp = tempfile.mkdtemp(prefix="parity-engine-graph-")


def build_and_run(name, model, inputs, *build_args, infer_args=()):
    path = os.path.join(tmp, name + ".onnx")
    onnx.save(model, path)
    eng = os.path.join(tmp, name + ".engine")
    layers = os.path.join(tmp, name + ".layers.json")
    rc, _, err = run("build-engine", path, "-o", eng, "--layers-out", layers, *build_args)
    if rc:
        return None, None, err
    d = os.path.join(tmp, name + ".in")
    os.makedirs(d, exist_ok=True)
    for k, v in inputs.items():
        np.save(os.path.join(d, k + ".npy"), v)
    out = os.path.join(tmp, name + ".out")
    rc, _, err = run("infer", eng, "-i", d, "-o", out, *infer_args)
    if rc:
        return None, None, err
    res = {f[:-4]: np.load(os.path.join(out, f)) for f in os.listdir(out)}
    return res, json.load(open(layers)), err


# 1. model-local functions: a function calling a function, with an attribute reference
inner = helper.make_function(
    "local", "ScaledRelu", ["X"], ["Y"],
    [helper.make_node("Constant", [], ["s"], value_float=2.0),
     helper.make_node("Mul", ["X", "s"], ["m"]),
     helper.make_node("LeakyRelu", ["m"], ["Y"], alpha=0.0)],
    [helper.make_opsetid("", 17)], [])
alpha_ref = onnx.AttributeProto(name="alpha", ref_attr_name="alpha", type=onnx.AttributeProto.FLOAT)
outer = helper.make_function(
    "local", "Block", ["X"], ["Y"],
    [helper.make_node("ScaledRelu", ["X"], ["r"], domain="local"),
     onnx.helper.make_node("LeakyRelu", ["r"], ["Y"])],
    [helper.make_opsetid("", 17), helper.make_opsetid("local", 1)], ["alpha"])
outer.node[1].attribute.append(alpha_ref)
g = helper.make_graph(
    [helper.make_node("Block", ["x"], ["y"], domain="local", alpha=0.5, name="blk")], "g",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
m = helper.make_model(g, functions=[inner, outer],
                      opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)])
x = np.array([-2, -0.5, 0.5, 3], np.float32)
res, layers, err = build_and_run("functions", m, {"x": x})
ok(res is not None and np.array_equal(res["y"], np.maximum(2 * x, 0)),
   "nested model-local functions are inlined with attribute references", err)

# 2. Constant forms and typed initializer fields (float16 in int32_data, int64 in int64_data)
# make_tensor stores float16 values as their bit patterns in int32_data
w16 = helper.make_tensor("w16", TensorProto.FLOAT16, [3], vals=[1.5, -2.25, 65504], raw=False)
assert list(w16.int32_data) == np.array([1.5, -2.25, 65504], np.float16).view(np.uint16).tolist()
nodes = [
    helper.make_node("Constant", [], ["c1"], value_floats=[1.0, 2.0, 3.0]),
    helper.make_node("Constant", [], ["c2"], value=numpy_helper.from_array(np.array([10, 20, 30], np.float32))),
    helper.make_node("Cast", ["w16"], ["w32"], to=TensorProto.FLOAT),
    helper.make_node("Add", ["c1", "c2"], ["s"]),
    helper.make_node("Add", ["s", "w32"], ["t"]),
    helper.make_node("Add", ["t", "x"], ["y"]),
]
g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])], [w16])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
x = np.array([0.25, 0.5, 0.75], np.float32)
res, layers, err = build_and_run("constants", m, {"x": x})
want = np.array([1, 2, 3], np.float32) + np.array([10, 20, 30], np.float32) + np.array([1.5, -2.25, 65504], np.float32) + x
ok(res is not None and np.array_equal(res["y"], want), "Constant forms and typed float16 initializers load exactly", err)
ok(layers is not None and [l["op"] for l in layers["layers"]] == ["Add"],
   "constant subgraph folds to one Add", layers and [l["op"] for l in layers["layers"]])

# 3. exporter shape arithmetic folds away: Shape -> Gather -> Unsqueeze -> Concat -> Reshape
nodes = [
    helper.make_node("Shape", ["x"], ["shp"]),
    helper.make_node("Gather", ["shp", "i0"], ["n"], axis=0),
    helper.make_node("Unsqueeze", ["n", "ax0"], ["n1"]),
    helper.make_node("Concat", ["n1", "minus1"], ["newshape"], axis=0),
    helper.make_node("Reshape", ["x", "newshape"], ["flat"]),
    helper.make_node("Relu", ["flat"], ["y"]),
    helper.make_node("Neg", ["x"], ["unused"]),           # dead: nobody reads it
]
inits = [numpy_helper.from_array(np.array(0, np.int64), "i0"),
         numpy_helper.from_array(np.array([0], np.int64), "ax0"),
         numpy_helper.from_array(np.array([-1], np.int64), "minus1")]
g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 4])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 12])], inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
x = np.random.default_rng(1).standard_normal((2, 3, 4)).astype(np.float32)
res, layers, err = build_and_run("fold", m, {"x": x}, "--input-shape", "x=2x3x4")
ops = layers and [l["op"] for l in layers["layers"]]
ok(res is not None and np.array_equal(res["y"], np.maximum(x.reshape(2, 12), 0)), "folded model computes the same", err)
ok(ops == ["Reshape", "Relu"], "Shape/Gather/Unsqueeze/Concat fold away and the dead Neg is removed", ops)
ok(layers is not None and layers["layers"][1]["outputs"][0]["shape"] == [2, 12], "shapes are inferred from --input-shape",
   layers and layers["layers"][1])

# without --input-shape the batch stays dynamic and any batch runs
res, layers, err = build_and_run("dynamic", m, {"x": np.ones((5, 3, 4), np.float32)})
ok(res is not None and res["y"].shape == (5, 12), "a symbolic batch dimension runs at any size", err)

# 4. --dump leaves outputs bit-identical; 1 and 2 threads give the same bytes
rng = np.random.default_rng(7)
W1 = numpy_helper.from_array(rng.standard_normal((64, 96)).astype(np.float32), "W1")
W2 = numpy_helper.from_array(rng.standard_normal((96, 32)).astype(np.float32), "W2")
nodes = [helper.make_node("MatMul", ["x", "W1"], ["h"]),
         helper.make_node("Tanh", ["h"], ["a"]),
         helper.make_node("MatMul", ["a", "W2"], ["y"])]
g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [128, 64])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [128, 32])], [W1, W2])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
x = rng.standard_normal((128, 64)).astype(np.float32)
r1, _, e1 = build_and_run("mlp1", m, {"x": x}, infer_args=("--threads", "1"))
r2, _, e2 = build_and_run("mlp2", m, {"x": x}, infer_args=("--threads", "2"))
r3, _, e3 = build_and_run("mlp3", m, {"x": x}, infer_args=("--dump", "all"))
ok(r1 is not None and r2 is not None and r1["y"].tobytes() == r2["y"].tobytes(), "1 and 2 threads give identical bytes", e1 + e2)
ok(r3 is not None and r1 is not None and r3["y"].tobytes() == r1["y"].tobytes() and "h" in r3 and "a" in r3,
   "--dump all writes intermediates and leaves the output bit-identical", e3)
x64, w1, w2 = x.astype(np.float64), numpy_helper.to_array(W1).astype(np.float64), numpy_helper.to_array(W2).astype(np.float64)
a64 = np.tanh(x64 @ w1)
ref = a64 @ w2
# bounds (bounds.py): the first product, tanh (slope <= 1, within 3 ulp:
# tests/unit/vmath.c), then the second product of values each off by da
da = fn_bound(sum_bound(64, np.abs(x64) @ np.abs(w1)), 1, 3, a64)
good, worst = within(r1["y"], ref, da @ np.abs(w2) + sum_bound(96, (np.abs(a64) + da) @ np.abs(w2))) if r1 else (False, None)
ok(good, "MatMul-Tanh-MatMul agrees with float64 numpy (error %s of its bound)" % worst)

# 5. views share their input's bytes in the memory plan (Reshape, Unsqueeze,
# Flatten, Identity): the input is read again after the views are done, a
# view of a view feeds a graph output, and a view's output is read twice
rng = np.random.default_rng(11)
nodes = [helper.make_node("Relu", ["x"], ["a"]),
         helper.make_node("Reshape", ["a", "s64"], ["v"]),
         helper.make_node("Unsqueeze", ["v", "ax0"], ["u"]),
         helper.make_node("Neg", ["u"], ["b"]),
         helper.make_node("Flatten", ["b"], ["bf"], axis=2),
         helper.make_node("Reshape", ["bf", "s46"], ["b46"]),
         helper.make_node("Add", ["b46", "a"], ["y"]),          # a read after its views
         helper.make_node("Identity", ["v"], ["w"]),
         helper.make_node("Mul", ["w", "v"], ["z"]),            # v read twice, through a view too
         helper.make_node("Sub", ["z", "w"], ["d"]),            # ... and after z is written
         helper.make_node("Reshape", ["d", "s46"], ["z46"])]    # a view as a graph output
inits = [numpy_helper.from_array(np.array([6, 4], np.int64), "s64"),
         numpy_helper.from_array(np.array([4, 6], np.int64), "s46"),
         numpy_helper.from_array(np.array([0], np.int64), "ax0")]
g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 6]),
                       helper.make_tensor_value_info("z46", TensorProto.FLOAT, [4, 6])], inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
x = rng.standard_normal((4, 6)).astype(np.float32)
a = np.maximum(x, 0)
res, layers, err = build_and_run("views", m, {"x": x})
ok(res is not None and np.array_equal(res["y"], np.zeros_like(a)) and np.array_equal(res["z46"], (a * a - a).reshape(4, 6)),
   "views sharing bytes: every reader sees the right values", err)
r2, _, e2 = build_and_run("views2", m, {"x": x}, infer_args=("--dump", "all", "--threads", "2"))
ok(r2 is not None and np.array_equal(r2["v"], a.reshape(6, 4)) and np.array_equal(r2["b"], -a.reshape(1, 6, 4))
   and r2["z46"].tobytes() == res["z46"].tobytes(), "views: --dump all writes each view with its own shape", e2)

# 5b. an elementwise output takes the bytes of an input that dies there: a
# chain of five such layers needs one buffer (the arena the plan reports); an
# input read later, a broadcast input, and a view of a value read later keep
# their bytes (each would change a value below if overwritten)
N = 256
k = numpy_helper.from_array(rng.standard_normal(N).astype(np.float32), "k")
nodes = [helper.make_node("Relu", ["x"], ["a"]),
         helper.make_node("Add", ["a", "k"], ["b"]),
         helper.make_node("Mul", ["b", "b"], ["c"]),
         helper.make_node("Neg", ["c"], ["d"]),
         helper.make_node("Abs", ["d"], ["y"])]
g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [N, N])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [N, N])], [k])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
x = rng.standard_normal((N, N)).astype(np.float32)
b = np.maximum(x, 0) + numpy_helper.to_array(k)
res, layers, err = build_and_run("inplace_chain", m, {"x": x}, "--no-fusion")
ok(res is not None and np.array_equal(res["y"], np.abs(-(b * b))) and layers["arena_bytes"] == N * N * 4,
   "in place: five elementwise layers in a chain share one buffer (arena %s bytes for %d)"
   % (layers and layers["arena_bytes"], N * N * 4), err)
nodes = [helper.make_node("Relu", ["x"], ["a"]),
         helper.make_node("Neg", ["a"], ["s"]),                 # a is read again below
         helper.make_node("Sub", ["s", "a"], ["t"]),            # -2a
         helper.make_node("Relu", ["h"], ["hr"]),               # [N]: dies broadcast into a bigger output
         helper.make_node("Mul", ["hr", "t"], ["u"]),
         helper.make_node("Neg", ["x"], ["q"]),
         helper.make_node("Reshape", ["q", "flat"], ["qf"]),    # a view of q, which is read again below
         helper.make_node("Relu", ["qf"], ["r"]),
         helper.make_node("Reshape", ["r", "sq"], ["r2"]),
         helper.make_node("Add", ["r2", "q"], ["v"])]
g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [N, N]),
                                   helper.make_tensor_value_info("h", TensorProto.FLOAT, [N])],
                      [helper.make_tensor_value_info("u", TensorProto.FLOAT, [N, N]),
                       helper.make_tensor_value_info("v", TensorProto.FLOAT, [N, N])],
                      [numpy_helper.from_array(np.array([N * N], np.int64), "flat"),
                       numpy_helper.from_array(np.array([N, N], np.int64), "sq")])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
h = rng.standard_normal(N).astype(np.float32)
a = np.maximum(x, 0)
res, layers, err = build_and_run("inplace_not", m, {"x": x, "h": h}, "--no-fusion", infer_args=("--threads", "2"))
ok(res is not None and np.array_equal(res["u"], (-a - a) * np.maximum(h, 0)) and np.array_equal(res["v"], np.maximum(-x, 0) + -x),
   "in place only where the input dies: read later, broadcast, a view of a live value keep their bytes", err)

# a broadcast input that dies in a bigger output keeps its (smaller) bytes:
# the plan puts sv right after hr, so an output written over hr's bytes would
# run over sv before it is read
nodes = [helper.make_node("Relu", ["x"], ["big"]),
         helper.make_node("Relu", ["h"], ["hr"]),
         helper.make_node("Relu", ["h2"], ["sv"]),
         helper.make_node("Mul", ["hr", "big"], ["u"]),
         helper.make_node("Add", ["u", "big"], ["z"]),
         helper.make_node("Neg", ["sv"], ["nsv"])]
g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [N, N]),
                                   helper.make_tensor_value_info("h", TensorProto.FLOAT, [N]),
                                   helper.make_tensor_value_info("h2", TensorProto.FLOAT, [N // 2])],
                      [helper.make_tensor_value_info("z", TensorProto.FLOAT, [N, N]),
                       helper.make_tensor_value_info("nsv", TensorProto.FLOAT, [N // 2])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
h2 = rng.standard_normal(N // 2).astype(np.float32)
res, layers, err = build_and_run("inplace_bcast", m, {"x": x, "h": h, "h2": h2}, "--no-fusion")
ok(res is not None and np.array_equal(res["z"], np.maximum(h, 0) * a + a) and np.array_equal(res["nsv"], -np.maximum(h2, 0)),
   "in place: never into the bytes of an input broadcast to a bigger output", err)

# Softmax in place (rows, a block with inner > 1, opset 11's 2-D coercion):
# the same bytes as when its input lives on as a graph output (own bytes)
for name, opset, axis, shape in (("rows", 13, -1, [64, 96]), ("block", 13, 1, [4, 24, 40]), ("coerced", 11, 1, [4, 24, 40])):
    xs = (3 * rng.standard_normal(shape)).astype(np.float32)
    kk = numpy_helper.from_array(rng.standard_normal(shape[-1]).astype(np.float32), "k")
    outs = {}
    for keep in (0, 1):
        nodes = [helper.make_node("Mul", ["x", "k"], ["s"]), helper.make_node("Softmax", ["s"], ["y"], axis=axis)]
        vis = [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)]
        if keep:
            vis.append(helper.make_tensor_value_info("s", TensorProto.FLOAT, shape))
        g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)], vis, [kk])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
        outs[keep] = build_and_run("softmax_%s_%d" % (name, keep), m, {"x": xs}, "--no-fusion")
    (r0, l0, e0), (r1, l1, e1) = outs[0], outs[1]
    nbytes = int(np.prod(shape)) * 4
    ok(r0 is not None and r1 is not None and r0["y"].tobytes() == r1["y"].tobytes()
       and l0["arena_bytes"] == (nbytes + 63) // 64 * 64 < l1["arena_bytes"],
       "Softmax (%s, opset %d) in its input's bytes: the bytes of the out-of-place run" % (name, opset), e0 + e1)

# 5c. a Concat's inputs are made in its output's bytes (no copy): one
# buffer for the Concat's inputs and output where they are its only use; an
# input read after the Concat, a view of one, a value that dies before the
# Concat while its inputs live, an input given twice, blocks that are not
# the output's (an inner axis), a misaligned place: every value as numpy's
N = 64
xa = rng.standard_normal((1, N, N)).astype(np.float32)
nodes = [helper.make_node("Neg", ["x"], ["a"]),
         helper.make_node("Mul", ["x", "x"], ["b"]),
         helper.make_node("Concat", ["a", "b"], ["c"], axis=1),
         helper.make_node("Abs", ["c"], ["y"])]
g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, N, N])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2 * N, N])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
res, layers, err = build_and_run("concat_place", m, {"x": xa}, "--no-fusion", infer_args=("--threads", "2"))
ok(res is not None and np.array_equal(res["y"], np.abs(np.concatenate([-xa, xa * xa], 1)))
   and layers["arena_bytes"] == 2 * N * N * 4,
   "Concat in place: its inputs made in its output's bytes, one buffer (arena %s bytes for %d)"
   % (layers and layers["arena_bytes"], 2 * N * N * 4), err)

kc = numpy_helper.from_array(rng.standard_normal(N).astype(np.float32), "kc")
consts = [kc, numpy_helper.from_array(np.array([N * N], np.int64), "flat"),
          numpy_helper.from_array(np.array([0, 0, 0], np.int64), "s0"),
          numpy_helper.from_array(np.array([1, 3, N], np.int64), "s1"),
          numpy_helper.from_array(np.array([0, 1, 2], np.int64), "s2")]
a, b = -xa, xa - (xa * xa).max()
# the first model: the Concat's output is the largest value, placed first;
# t lives only while a does, e only after a's last reader but while its view
# af does: either would be placed over a, were the bytes' lifetime short
nodes = [helper.make_node("Neg", ["x"], ["a"]),
         helper.make_node("Reshape", ["a", "flat"], ["af"]),    # a view of a, a graph output
         helper.make_node("Mul", ["x", "x"], ["t"]),
         helper.make_node("ReduceMax", ["t"], ["u"], keepdims=1),
         helper.make_node("Sub", ["x", "u"], ["b"]),
         helper.make_node("Concat", ["a", "b"], ["c"], axis=1),
         helper.make_node("Abs", ["c"], ["y"]),
         helper.make_node("Add", ["a", "kc"], ["z"]),           # a read after the Concat
         helper.make_node("Neg", ["x"], ["e"]),
         helper.make_node("Neg", ["e"], ["w"])]
outs = ("af", "y", "z", "w")
want = {"af": a.reshape(N * N), "y": np.abs(np.concatenate([a, b], 1)), "z": a + numpy_helper.to_array(kc), "w": xa}
# the second: an input given twice, blocks of an inner axis, a misaligned place
nodes2 = [helper.make_node("Neg", ["x"], ["a"]),
          helper.make_node("Abs", ["x"], ["q"]),
          helper.make_node("Concat", ["q", "a", "q"], ["cq"], axis=1),
          helper.make_node("Concat", ["a", "q"], ["ci"], axis=2),
          helper.make_node("Slice", ["x", "s0", "s1", "s2"], ["xs"]),   # [1, 3, N]: 3*N*4 bytes
          helper.make_node("Neg", ["xs"], ["p"]),
          helper.make_node("Concat", ["p", "a"], ["cm"], axis=1)]       # a's place after p: misaligned
outs2 = ("cq", "ci", "cm")
want2 = {"cq": np.concatenate([np.abs(xa), a, np.abs(xa)], 1), "ci": np.concatenate([a, np.abs(xa)], 2),
         "cm": np.concatenate([-xa[:, :3, :], a], 1)}
for name, nn, oo, ww in (("concat_not", nodes, outs, want), ("concat_not2", nodes2, outs2, want2)):
    g = helper.make_graph(nn, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, N, N])],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in oo], consts)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    for threads in ("1", "2"):
        res, layers, err = build_and_run(name, m, {"x": xa}, "--no-fusion", infer_args=("--threads", threads))
        bad = [k for k in ww if res is None or not np.array_equal(res.get(k), ww[k])]
        ok(res is not None and not bad, "Concat in place (%s): %s (%s threads)%s" % (
           name, "values read later, views, lifetimes" if name == "concat_not" else "twice, inner axis, misaligned",
           threads, ": wrong " + ", ".join(bad) if bad else ""), err)

# an input stored in another type than the Concat's (an FP32 layer before
# an FP16 Concat, which rounds it on the way in) keeps its own bytes: its
# FP32 reader after the Concat reads it unrounded
cfg = os.path.join(tmp, "concat_mixed.yaml")
with open(cfg, "w") as f:
    f.write("precision: fp16\nconstraints: obey\nlayers:\n  - op: [Neg]\n    precision: fp32\n")
nodes = [helper.make_node("Neg", ["x"], ["a"]),
         helper.make_node("Abs", ["x"], ["b"]),
         helper.make_node("Concat", ["a", "b"], ["c"], axis=1),
         helper.make_node("Neg", ["a"], ["w"])]
g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, N, N])],
                      [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("c", "w")])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
res, layers, err = build_and_run("concat_mixed", m, {"x": xa}, "--no-fusion", "--config", cfg)
want_c = np.concatenate([-xa, np.abs(xa)], 1).astype(np.float16).astype(np.float32)
ok(res is not None and np.array_equal(res["w"], xa) and np.array_equal(res["c"].astype(np.float32), want_c),
   "Concat in place: an FP32 input of an FP16 Concat keeps its bytes (its FP32 reader sees it unrounded)", err)

# with --reference, the Concat reads a reference input (a copy into its
# output's bytes) and every later reader of that input reads the reference too
d = os.path.join(tmp, "concat_not.in")
rc, _, err = run("infer", os.path.join(tmp, "concat_not.engine"), "-i", d, "-o", os.path.join(tmp, "concat_dump"),
                 "--dump", "all")
ref = os.path.join(tmp, "concat_ref")
os.makedirs(ref, exist_ok=True)
for n in ("a", "b"):
    np.save(os.path.join(ref, n + ".npy"), (a + 1.0 if n == "a" else b).astype(np.float32))
rc2, _, err2 = run("infer", os.path.join(tmp, "concat_not.engine"), "-i", d, "-o", os.path.join(tmp, "concat_refout"),
                   "--reference", ref)
got = {} if rc2 else {f[:-4]: np.load(os.path.join(tmp, "concat_refout", f))
                      for f in os.listdir(os.path.join(tmp, "concat_refout")) if f.endswith(".npy")}
ar = a + 1.0
ok(rc == 0 and rc2 == 0 and np.array_equal(got.get("y"), np.abs(np.concatenate([ar, b], 1)))
   and np.array_equal(got.get("z"), ar + numpy_helper.to_array(kc)),
   "Concat in place with --reference: the reference input in the output and for its later readers", err + err2)

# 5d. a Slice that is one run of its input's bytes is a view of them (no
# copy): one buffer for input and slice; two overlapping slices of one
# input added (never in place over one of them), a slice read after its
# input's other readers, a step, an inner axis, a misaligned run: numpy's
def sl(name, src, out, starts, ends, axes, steps=None):
    ins = [src, name + "_s", name + "_e", name + "_a"] + ([name + "_p"] if steps else [])
    consts = [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in
              ((name + "_s", starts), (name + "_e", ends), (name + "_a", axes)) + (((name + "_p", steps),) if steps else ())]
    return helper.make_node("Slice", ins, [out], name=name), consts

xs8 = rng.standard_normal((1, 8, N)).astype(np.float32)
n1, c1 = sl("mid", "a", "s", [2], [6], [1])
g = helper.make_graph([helper.make_node("Neg", ["x"], ["a"]), n1, helper.make_node("Abs", ["s"], ["y"])], "g",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, N])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, N])], c1)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
res, layers, err = build_and_run("slice_view", m, {"x": xs8}, "--no-fusion")
ok(res is not None and np.array_equal(res["y"], np.abs(-xs8[:, 2:6])) and layers["arena_bytes"] == 8 * N * 4,
   "Slice as a view: one buffer for the input and its slice (arena %s bytes for %d)"
   % (layers and layers["arena_bytes"], 8 * N * 4), err)

parts = [sl("lo", "a", "s1", [0], [6], [1]), sl("hi", "a", "s2", [2], [8], [1]), sl("tail", "a", "s6", [4], [8], [1]),
         sl("step", "a", "s3", [0], [8], [1], [2]), sl("inner", "a", "s4", [16], [48], [2]),
         sl("odd", "b", "s5", [1], [3], [1])]
nodes = [helper.make_node("Neg", ["x"], ["a"]), helper.make_node("Neg", ["x3"], ["b"])]
nodes += [p[0] for p in parts]
nodes += [helper.make_node("Add", ["s1", "s2"], ["u"]),      # overlapping slices of a, both die here
          helper.make_node("Abs", ["a"], ["e"]),             # would take a's bytes if s6 were not read below
          helper.make_node("Neg", ["s6"], ["w"])]
outs = ("u", "e", "w", "s3", "s4", "s5")
g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, N]),
                                   helper.make_tensor_value_info("x3", TensorProto.FLOAT, [1, 8, 3])],
                      [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outs],
                      [c for p in parts for c in p[1]])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
x3 = rng.standard_normal((1, 8, 3)).astype(np.float32)
a8 = -xs8
want = {"u": a8[:, 0:6] + a8[:, 2:8], "e": np.abs(a8), "w": -a8[:, 4:8], "s3": a8[:, 0:8:2], "s4": a8[:, :, 16:48],
        "s5": -x3[:, 1:3]}
# two overlapping slices of one input that dies with them in an Add: its
# output may not be written over either (the other is read from those bytes)
p1, p2 = sl("lo", "a", "s1", [0], [6], [1]), sl("hi", "a", "s2", [2], [8], [1])
g = helper.make_graph([helper.make_node("Neg", ["x"], ["a"]), p1[0], p2[0], helper.make_node("Add", ["s2", "s1"], ["u"])],
                      "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, N])],
                      [helper.make_tensor_value_info("u", TensorProto.FLOAT, [1, 6, N])], p1[1] + p2[1])
res, layers, err = build_and_run("slice_overlap", helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
                                 {"x": xs8}, "--no-fusion")
ok(res is not None and np.array_equal(res["u"], a8[:, 2:8] + a8[:, 0:6]),
   "Slice as a view: an Add of two overlapping slices is not written over either", err)
for threads in ("1", "2"):
    res, layers, err = build_and_run("slice_not", m, {"x": xs8, "x3": x3}, "--no-fusion", infer_args=("--threads", threads))
    bad = [k for k in want if res is None or not np.array_equal(res.get(k), want[k])]
    ok(res is not None and not bad, "Slice as a view: overlapping slices, read later, step, inner axis, misaligned "
       "(%s threads)%s" % (threads, ": wrong " + ", ".join(bad) if bad else ""), err)

# 6. MatMul + per-column bias Add (+ Relu) fuse into one layer at float32
# storage, bit-identical to the unfused graph; a bias that is not
# per-column stays an Add, and fp16 storage keeps the Add (it rounds the
# product first)
rng = np.random.default_rng(5)
W1 = numpy_helper.from_array(rng.standard_normal((16, 32)).astype(np.float32), "W1")
b1 = numpy_helper.from_array(rng.standard_normal(32).astype(np.float32), "b1")
W2 = numpy_helper.from_array(rng.standard_normal((32, 8)).astype(np.float32), "W2")
b2 = numpy_helper.from_array(rng.standard_normal((1, 8)).astype(np.float32), "b2")
W3 = numpy_helper.from_array(rng.standard_normal((16, 8)).astype(np.float32), "W3")
c3 = numpy_helper.from_array(rng.standard_normal((5, 8)).astype(np.float32), "c3")
nodes = [helper.make_node("MatMul", ["x", "W1"], ["p1"], name="fc1"),
         helper.make_node("Add", ["p1", "b1"], ["h1"], name="fc1_bias"),
         helper.make_node("Relu", ["h1"], ["r1"], name="fc1_relu"),
         helper.make_node("MatMul", ["r1", "W2"], ["p2"], name="fc2"),
         helper.make_node("Add", ["b2", "p2"], ["y"], name="fc2_bias"),       # bias on the left
         helper.make_node("MatMul", ["x", "W3"], ["p3"], name="fc3"),
         helper.make_node("Add", ["p3", "c3"], ["z"], name="fc3_full")]       # [5,8]: per row and column
g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5, 16])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5, 8]),
                       helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 5, 8])], [W1, b1, W2, b2, W3, c3])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
x = rng.standard_normal((2, 5, 16)).astype(np.float32)
fused, lf, ef = build_and_run("mmbias", m, {"x": x})
plain, lp, ep = build_and_run("mmbias_nofuse", m, {"x": x}, "--no-fusion")
ok(fused is not None and plain is not None and all(fused[k].tobytes() == plain[k].tobytes() for k in ("y", "z")),
   "MatMul + bias (+ Relu) fused: the same bytes as unfused", ef + ep)
names = lf and [(l["name"], ",".join(l.get("fused_from", []))) for l in lf["layers"]]
ok(names is not None and ("fc1", "fc1,fc1_bias,fc1_relu") in names and ("fc2", "fc2,fc2_bias") in names
   and any(n == "fc3_full" for n, _ in names), "layer report: fc1 holds its bias and Relu, fc2 its bias, fc3's Add stays", names)
f64 = lambda t: numpy_helper.to_array(t).astype(np.float64)
r64 = np.maximum(x @ f64(W1) + f64(b1), 0)
want = r64 @ f64(W2) + f64(b2)
# bounds: 16 products and the bias, Relu (exact, slope 1), 8 products and the bias
dr = sum_bound(17, np.abs(x) @ np.abs(f64(W1)) + np.abs(f64(b1)))
bound = dr @ np.abs(f64(W2)) + sum_bound(9, (r64 + dr) @ np.abs(f64(W2)) + np.abs(f64(b2)))
good, worst = within(fused["y"], want, bound) if fused else (False, None)
ok(good, "fused MatMul bias agrees with float64 numpy (error %s of its bound)" % worst)
h16, l16, e16 = build_and_run("mmbias_fp16", m, {"x": x}, "--precision", "fp16")
ok(l16 is not None and any(l["name"] == "fc1_bias" for l in l16["layers"]), "fp16 storage: the bias Add stays a layer", e16)
# 7. SiLU (Conv -> Sigmoid, Mul of both) fuses into the Conv, and a Sigmoid
# that is the Conv's only reader fuses as before: both bit-identical to
# the unfused layers (the fused Sigmoid is the standalone one, vmath.h)
rng = np.random.default_rng(9)
Wc = numpy_helper.from_array(rng.standard_normal((12, 3, 3, 3)).astype(np.float32), "Wc")
bc = numpy_helper.from_array(rng.standard_normal(12).astype(np.float32), "bc")
Wd = numpy_helper.from_array(rng.standard_normal((5, 12, 1, 1)).astype(np.float32), "Wd")
nodes = [helper.make_node("Conv", ["x", "Wc", "bc"], ["c"], name="conv", pads=[1, 1, 1, 1]),
         helper.make_node("Sigmoid", ["c"], ["s"], name="silu_sig"),
         helper.make_node("Mul", ["s", "c"], ["h"], name="silu_mul"),
         helper.make_node("Conv", ["h", "Wd"], ["d"], name="conv2"),
         helper.make_node("Sigmoid", ["d"], ["y"], name="sig")]
g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 20, 30])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5, 20, 30])], [Wc, bc, Wd])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
x = (4 * rng.standard_normal((1, 3, 20, 30))).astype(np.float32)
fused, lf, ef = build_and_run("silu", m, {"x": x}, infer_args=("--dump", "h", "--threads", "2"))
plain, lp, ep = build_and_run("silu_nofuse", m, {"x": x}, "--no-fusion", infer_args=("--dump", "h"))
ok(fused is not None and plain is not None and fused["y"].tobytes() == plain["y"].tobytes()
   and fused["h"].tobytes() == plain["h"].tobytes(), "SiLU and Sigmoid fused: the same bytes as unfused", ef + ep)
names = lf and [(l["name"], ",".join(l.get("fused_from", []))) for l in lf["layers"]]
ok(names == [("conv", "conv,silu_sig,silu_mul"), ("conv2", "conv2,sig")], "layer report: two layers, SiLU and Sigmoid inside", names)
c64, mag = np.zeros((12, 20, 30)), np.zeros((12, 20, 30))
xp = np.pad(x[0].astype(np.float64), ((0, 0), (1, 1), (1, 1)))
for o in range(12):
    c64[o] = numpy_helper.to_array(bc)[o] + sum(numpy_helper.to_array(Wc)[o, i, u, v] * xp[i, u:u + 20, v:v + 30]
                                                for i in range(3) for u in range(3) for v in range(3))
    mag[o] = abs(numpy_helper.to_array(bc)[o]) + sum(abs(numpy_helper.to_array(Wc)[o, i, u, v] * xp[i, u:u + 20, v:v + 30])
                                                    for i in range(3) for u in range(3) for v in range(3))
# bounds: 27 taps and the bias, then SiLU (slope <= 1.1, sigmoid's 3 ulp and the product's rounding)
silu = c64 / (1 + np.exp(-c64))
good, worst = within(fused["h"][0], silu, fn_bound(sum_bound(28, mag), 1.1, 3.5, silu)) if fused else (False, None)
ok(good, "fused SiLU agrees with float64 numpy (error %s of its bound)" % worst)
# 8. SiLU after elementwise arithmetic (a residual Add) becomes one layer
# (one pass over the Add's output), and SiLU after a MatMul with a bias
# runs on each finished tile of the kernel: both bit-identical to unfused
rng = np.random.default_rng(10)
Wm = numpy_helper.from_array((0.2 * rng.standard_normal((48, 40))).astype(np.float32), "Wm")
bm = numpy_helper.from_array(rng.standard_normal(40).astype(np.float32), "bm")
nodes = [helper.make_node("Add", ["a", "b"], ["r"], name="res_add"),
         helper.make_node("Sigmoid", ["r"], ["rs"], name="res_sig"),
         helper.make_node("Mul", ["r", "rs"], ["h"], name="res_mul"),
         helper.make_node("MatMul", ["h", "Wm"], ["mm"], name="fc"),
         helper.make_node("Add", ["mm", "bm"], ["mb"], name="fc_bias"),
         helper.make_node("Sigmoid", ["mb"], ["ms"], name="fc_sig"),
         helper.make_node("Mul", ["ms", "mb"], ["y"], name="fc_mul")]
g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("a", TensorProto.FLOAT, [300, 48]),
                                   helper.make_tensor_value_info("b", TensorProto.FLOAT, [300, 48])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [300, 40])], [Wm, bm])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
a = (3 * rng.standard_normal((300, 48))).astype(np.float32)
b = (3 * rng.standard_normal((300, 48))).astype(np.float32)
fused, lf, ef = build_and_run("silu_add", m, {"a": a, "b": b}, infer_args=("--threads", "2"))
plain, lp, ep = build_and_run("silu_add_nofuse", m, {"a": a, "b": b}, "--no-fusion")
ok(fused is not None and plain is not None and fused["y"].tobytes() == plain["y"].tobytes(),
   "SiLU after Add and after MatMul + bias fused: the same bytes as unfused", ef + ep)
names = lf and [(l["name"], ",".join(l.get("fused_from", []))) for l in lf["layers"]]
ok(names == [("res_add", "res_add,res_sig,res_mul"), ("fc", "fc,fc_bias,fc_sig,fc_mul")],
   "layer report: the Add holds its SiLU, the MatMul its bias and SiLU", names)

# --warmup: untimed runs first, outside --stats and --profile (written to 6
# significant digits, hence the relative 1e-5 between sum and mean); the outputs
# are those of a plain run
prof, st, out = (os.path.join(tmp, n) for n in ("prof.json", "stats.json", "warm.out"))
d = os.path.join(tmp, "silu_add.in")
rc, _, err = run("infer", os.path.join(tmp, "silu_add.engine"), "-i", d, "-o", out, "--runs", 3, "--warmup", 2,
                 "--profile", prof, "--stats", st)
pj = json.load(open(prof)) if rc == 0 else None
sj = json.load(open(st)) if rc == 0 else None
ok(rc == 0 and pj[0] == {"count": 3} and [l["name"] for l in pj[1:]] == ["res_add", "fc"]
   and all(abs(l["averageMs"] * 3 - l["timeMs"]) <= 1e-5 * l["timeMs"] for l in pj[1:])
   and sj["samples"][0]["runs"] == 3,
   "infer --runs 3 --warmup 2: the profile and the statistics count the 3 timed runs, one entry per layer", err or pj)
ok(rc == 0 and np.load(os.path.join(out, "y.npy")).tobytes() == fused["y"].tobytes(),
   "infer --warmup: the outputs of a plain run", err)
# 5e. a Pad whose pads are all 0 (PyTorch's export of ResNet-vd's ceil_mode
# AvgPool shortcut) is a view: one buffer for its input and output, nothing
# copied; its input read again afterwards keeps its values; a Pad that pads
# something, or whose pads come at run time, gets bytes of its own.
def padnode(name, src, out, pads):
    return helper.make_node("Pad", [src, name + "_p"], [out], name=name), numpy_helper.from_array(np.array(pads, np.int64), name + "_p")

NP = 4096
xp = rng.standard_normal((1, 4, NP)).astype(np.float32)
pz, cz = padnode("padzero", "a", "p", [0] * 6)
g = helper.make_graph([helper.make_node("Neg", ["x"], ["a"]), pz, helper.make_node("Abs", ["p"], ["y"])], "g",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, NP])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, NP])], [cz])
res, layers, err = build_and_run("pad_view", helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
                                 {"x": xp}, "--no-fusion")
ok(res is not None and np.array_equal(res["y"], np.abs(-xp)) and layers["arena_bytes"] == 4 * NP * 4,
   "Pad of zero pads as a view: one buffer (arena %s bytes for %d)" % (layers and layers["arena_bytes"], 4 * NP * 4), err)
pz, cz = padnode("padzero", "a", "p", [0] * 6)
pn, cn = padnode("padone", "a", "q", [0, 0, 1, 0, 0, 2])
g = helper.make_graph([helper.make_node("Neg", ["x"], ["a"]), pz, pn, helper.make_node("Neg", ["p"], ["u"]),
                       helper.make_node("Abs", ["a"], ["v"]), helper.make_node("Pad", ["a", "dyn"], ["w"])], "g",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, NP]),
                       helper.make_tensor_value_info("dyn", TensorProto.INT64, [6])],
                      [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("u", "v", "q", "w")], [cz, cn])
res, layers, err = build_and_run("pad_view2", helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
                                 {"x": xp, "dyn": np.zeros(6, np.int64)}, "--no-fusion")
a = -xp
ok(res is not None and np.array_equal(res["u"], -a) and np.array_equal(res["v"], np.abs(a)) and
   np.array_equal(res["q"], np.pad(a, [(0, 0), (0, 0), (1, 2)])) and np.array_equal(res["w"], a),
   "Pad views: the input read after the view, a Pad that pads and one with pads at run time give numpy's values", err)

done()
