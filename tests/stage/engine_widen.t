#!/usr/bin/python3
# FP16-storage models carried as float32 rounded to float16 (passes/widen.c):
# the float16 converter's rewrite of a Conv/Relu net (exported_models.py)
# must give the same bits as running its float16 tensors as float16
# (build-engine --no-widen) at every precision policy, while its Relus fuse
# into the Convs across the converter's Casts and the layer report's storage
# column says float16 (the model's type). Graphs the widening must leave
# alone (a float16 graph input, a float16 value made by ConstantOfShape) run
# as before, and their layers' storage still says float16.
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done, run
from backend_lib import write_set, read_set, tmpdir
from exported_models import conv_net, to_fp16_weights

tmp = tmpdir("engine-widen")
inp = os.path.join(tmp, "in")
write_set(inp, {"input": np.random.default_rng(3).standard_normal((1, 3, 16, 16)).astype(np.float32) * 4})
model = os.path.join(tmp, "fp16w.onnx")
onnx.save(to_fp16_weights(conv_net()), model)
configs = os.path.join(os.path.dirname(__file__), "..", "..", "configs", "precisions")


def build_run(tag, path, inputs, *args):
    eng, lay, out = (os.path.join(tmp, tag + s) for s in (".engine", ".layers.json", ".out"))
    rc, _, err = run("build-engine", path, "-o", eng, "--layers-out", lay, *args)
    if rc == 0:
        rc, _, err = run("infer", eng, "-i", inputs, "-o", out)
    return (read_set(out), json.load(open(lay)), err) if rc == 0 else (None, None, err)


def widened(lay):
    return any("carried as float32" in n for n in lay.get("notes", []))


# the residual fold is off for the bit-identity: fused into a Conv at FP16
# storage it rounds the sum once, a change of numerics on purpose
# (engine_fold.t), which float16 tensors never get
for pol in ("fp32", "tf32", "fp16", "bf16", "strongly-typed"):
    cfg = os.path.join(tmp, pol + ".yaml")
    open(cfg, "w").write(("strongly_typed: true\n" if pol == "strongly-typed" else "precision: %s\n" % pol)
                         + "fold: {residual: false}\n")
    a, la, err = build_run("w-" + pol, model, inp, "--config", cfg)
    b, lb, err2 = build_run("nw-" + pol, model, inp, "--config", cfg, "--no-widen")
    same = a is not None and b is not None and sorted(a) == sorted(b) and all(
        a[k].dtype == b[k].dtype and a[k].tobytes() == b[k].tobytes() for k in b)
    ok(same and widened(la) and not widened(lb),
       "%s: float16 carried as float32 gives the same bits as float16 tensors (--no-widen)" % pol, err + err2)
    if pol == "fp32":
        relus = [r for r in la["layers"] if r["op"] == "Relu"] if la else [1]
        fused = [r["name"] for r in la["layers"] if any(f.endswith("/Relu") for f in r["fused_from"])] if la else []
        ok(len(relus) == 3 and all(r["name"].endswith("Relu_1") for r in relus) and len(fused) == 4,
           "fp32: the 4 Relus after a Conv fuse into it across the converter's Casts (%s); the 3 after an Add "
           "stay layers without the residual fold" % fused, json.dumps(la and la["layers"])[:2000])
        convs = [r for r in la["layers"] if r["op"] == "Conv"] if la else []
        ok(convs and all(r["storage"] == "float16" and r["precision"] == "fp32" for r in convs) and
           all(r["storage"] == "float16" for r in lb["layers"] if r["op"] == "Conv"),
           "fp32: the layer report says fp32 compute, float16 storage on the model's float16 layers (both builds)",
           [(r["name"], r["precision"], r["storage"]) for r in convs])
a, la, err = build_run("w-default", model, inp)
left = [r["op"] for r in la["layers"] if r["op"] in ("Relu", "Add")] if la else ["?"]
ok(a is not None and not left and sum(len(r["fused_from"]) == 3 for r in la["layers"]) == 3,
   "default folds: every Relu and residual Add of the FP16-weight net fuses into a Conv", err)

# left alone: a float16 graph input; a float16 value from ConstantOfShape
x16 = helper.make_tensor_value_info("x", TensorProto.FLOAT16, [4])
w = numpy_helper.from_array(np.array([1, -2, 3, -4], np.float16), "w")
g = helper.make_graph([helper.make_node("Mul", ["x", "w"], ["m"], name="mul"),
                       helper.make_node("Relu", ["m"], ["r"], name="relu"),
                       helper.make_node("Cast", ["r"], ["y"], name="out", to=TensorProto.FLOAT)], "in16",
                      [x16], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], initializer=[w])
path = os.path.join(tmp, "in16.onnx")
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
d16 = os.path.join(tmp, "in16.in")
x = np.array([0.5, 1.5, -2.25, 3.0], np.float16)
write_set(d16, {"x": x})
out, lay, err = build_run("in16", path, d16)
want = np.maximum(x.astype(np.float32) * np.array([1, -2, 3, -4], np.float32), 0).astype(np.float16).astype(np.float32)
ok(out is not None and not widened(lay) and np.array_equal(out["y"], want) and
   [r["storage"] for r in lay["layers"]][:2] == ["float16", "float16"],
   "a float16 graph input: left as float16 tensors, the same result, storage float16 in the report", err)
g = helper.make_graph([helper.make_node("Shape", ["x"], ["s"], name="shape"),
                       helper.make_node("ConstantOfShape", ["s"], ["c"], name="c16",
                                        value=numpy_helper.from_array(np.array([0.1], np.float16))),
                       helper.make_node("Cast", ["x"], ["x16"], name="to16", to=TensorProto.FLOAT16),
                       helper.make_node("Add", ["x16", "c"], ["a"], name="add"),
                       helper.make_node("Cast", ["a"], ["y"], name="out", to=TensorProto.FLOAT)], "cos",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n"])])
path = os.path.join(tmp, "cos.onnx")
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
dx = os.path.join(tmp, "cos.in")
xf = np.array([1.0, 2.0, 1000.0], np.float32)
write_set(dx, {"x": xf})
want = (xf.astype(np.float16) + np.float16(0.1)).astype(np.float32)
out, lay, err = build_run("cos", path, dx)
ok(out is not None and not widened(lay) and np.array_equal(out["y"], want),
   "a float16 value ConstantOfShape makes at run time (no float16 input): left as float16 tensors, the same result",
   err)
out, lay, err = build_run("cos3", path, dx, "--input-shape", "x=3")
ok(out is not None and widened(lay) and np.array_equal(out["y"], want),
   "the same with a static shape (ConstantOfShape folded into a float16 constant): widened, the same result", err)
done()
