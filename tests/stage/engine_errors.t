#!/usr/bin/python3
# Bad input to build-engine and infer: one clear line, exit 2, no partial output.
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done, run, one_line_error

tmp = tempfile.mkdtemp(prefix="parity-engine-errors-")


def model_add_relu(path, opset=17):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    b = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5, "b")
    nodes = [helper.make_node("Add", ["x", "b"], ["s"], name="add"),
             helper.make_node("Relu", ["s"], ["y"], name="relu")]
    g = helper.make_graph(nodes, "g", [x], [y], [b])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    onnx.save(m, path)
    return m


good = os.path.join(tmp, "good.onnx")
model_add_relu(good)
blob = open(good, "rb").read()
engine = os.path.join(tmp, "e.engine")

# the good model builds and runs, and agrees with numpy
rc, _, err = run("build-engine", good, "-o", engine)
ok(rc == 0 and os.path.exists(engine), "a valid model builds", err)
inp = os.path.join(tmp, "in")
os.makedirs(inp)
x = np.linspace(-3, 3, 6, dtype=np.float32).reshape(2, 3)
np.save(os.path.join(inp, "x.npy"), x)
rc, _, err = run("infer", engine, "-i", inp, "-o", os.path.join(tmp, "out"))
ok(rc == 0, "infer runs", err)
if rc == 0:
    y = np.load(os.path.join(tmp, "out", "y.npy"))
    want = np.maximum(x + (np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5), 0)
    ok(np.array_equal(y, want), "Add+Relu equals numpy", f"{y} vs {want}")
else:
    ok(False, "Add+Relu equals numpy", "infer failed")


def expect_build_error(name, data_or_path, *needles):
    path = data_or_path
    if isinstance(data_or_path, bytes):
        path = os.path.join(tmp, name + ".onnx")
        open(path, "wb").write(data_or_path)
    out = os.path.join(tmp, name + ".engine")
    rc, _, err = run("build-engine", path, "-o", out)
    ok(one_line_error(rc, err, *needles) and not os.path.exists(out), f"build-engine rejects {name}",
       f"rc={rc} stderr={err!r}")


expect_build_error("truncated", blob[: len(blob) // 2], "truncated.onnx")
expect_build_error("garbage", bytes(range(256)) * 4, "garbage.onnx", "not a valid ONNX model")
expect_build_error("empty", b"", "empty.onnx")
expect_build_error("missing-file", os.path.join(tmp, "nope.onnx"), "nope.onnx")

# an unsupported operator names the node, its op and opset
m = onnx.load(good)
m.graph.node[1].op_type = "NoSuchOp"
m.graph.node[1].name = "weird_node"
onnx.save(m, os.path.join(tmp, "unsupported.onnx"))
expect_build_error("unsupported", os.path.join(tmp, "unsupported.onnx"), "weird_node", "NoSuchOp", "opset 17")

# external data that leaves the model's folder
sub = os.path.join(tmp, "ext")
os.makedirs(sub)
open(os.path.join(tmp, "secret.bin"), "wb").write(b"\0" * 24)
m = onnx.load(good)
t = m.graph.initializer[0]
t.ClearField("raw_data")
t.data_location = TensorProto.EXTERNAL
for k, v in (("location", "../secret.bin"), ("offset", "0"), ("length", "24")):
    e = t.external_data.add()
    e.key, e.value = k, v
onnx.save(m, os.path.join(sub, "escape.onnx"))
expect_build_error("escape", os.path.join(sub, "escape.onnx"), "leaves the model's folder")

# external data inside the folder works
open(os.path.join(sub, "weights.bin"), "wb").write(
    (np.arange(6, dtype=np.float32) - 2.5).tobytes())
m.graph.initializer[0].external_data[0].value = "weights.bin"
onnx.save(m, os.path.join(sub, "inside.onnx"))
rc, _, err = run("build-engine", os.path.join(sub, "inside.onnx"), "-o", os.path.join(tmp, "inside.engine"))
ok(rc == 0, "external data inside the model's folder loads", err)

# an absurd declared size: a 2^40-element initializer with no data
m = onnx.load(good)
big = TensorProto(name="huge", data_type=TensorProto.FLOAT, dims=[1 << 40])
m.graph.initializer.append(big)
onnx.save(m, os.path.join(tmp, "huge.onnx"))
expect_build_error("huge", os.path.join(tmp, "huge.onnx"), "huge")

# infer: wrong dtype, wrong shape, missing input, garbage .npy
def expect_infer_error(name, arrays, *needles, raw=None):
    d = os.path.join(tmp, "in-" + name)
    os.makedirs(d)
    for k, v in arrays.items():
        np.save(os.path.join(d, k + ".npy"), v)
    if raw:
        open(os.path.join(d, "x.npy"), "wb").write(raw)
    out = os.path.join(tmp, "out-" + name)
    rc, _, err = run("infer", engine, "-i", d, "-o", out)
    ok(one_line_error(rc, err, *needles) and not os.path.exists(out), f"infer rejects {name}",
       f"rc={rc} stderr={err!r}")


expect_infer_error("wrong-dtype", {"x": x.astype(np.float64)}, "'x'", "float32", "float64")
expect_infer_error("wrong-shape", {"x": np.zeros((3, 2), np.float32)}, "'x'", "2x3", "3x2")
expect_infer_error("missing-input", {"z": x}, "z")
expect_infer_error("garbage-npy", {}, "x.npy", raw=b"\x93NUMPY\x01\x00\x10\x00{'descr': '<f4'")
rc, _, err = run("infer", os.path.join(tmp, "garbage.onnx"), "-i", inp, "-o", os.path.join(tmp, "o2"))
ok(one_line_error(rc, err, "garbage.onnx"), "infer rejects a file that is not an engine", err)
done()
