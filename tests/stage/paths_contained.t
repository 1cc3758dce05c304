#!/usr/bin/python3
# Files stay where they belong. External data cannot leave the model's folder
# (a '..' path, an absolute path, a symlink pointing outside: refused, for a
# model and for a TensorProto .pb; a symlink staying inside is followed), and
# names read from files never redirect outputs: tensor names with '/', '..'
# or a leading '.' — from the model, from .npz members, Polygraphy JSON keys
# and trtexec JSON names — become percent-encoded file names inside the
# requested folder, and nothing is written anywhere else.
import base64
import io
import json
import os
import shutil
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done, run, one_line_error

tmp = tempfile.mkdtemp(prefix="parity-paths-")
model_dir = os.path.join(tmp, "model")
os.makedirs(model_dir)
secret = os.path.join(tmp, "secret.bin")
open(secret, "wb").write((np.arange(6, dtype=np.float32) * 100).tobytes())
weights = (np.arange(6, dtype=np.float32) - 2.5)
open(os.path.join(model_dir, "weights.bin"), "wb").write(weights.tobytes())


def external(t, location):
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", "0"), ("length", "24")):
        e = t.external_data.add()
        e.key, e.value = k, v


def add_model(location):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    b = numpy_helper.from_array(weights.reshape(2, 3), "b")
    external(b, location)
    g = helper.make_graph([helper.make_node("Add", ["x", "b"], ["y"])], "g", [x], [y], [b])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


os.symlink(secret, os.path.join(model_dir, "link-out.bin"))
os.symlink(os.path.join(model_dir, "weights.bin"), os.path.join(model_dir, "link-in.bin"))
os.symlink(tmp, os.path.join(model_dir, "up"))
escapes = {"dotdot": "../secret.bin", "dotdot-inner": "sub/../../secret.bin", "absolute": secret,
           "symlink-file": "link-out.bin", "symlink-folder": "up/secret.bin"}
for name, loc in escapes.items():
    path = os.path.join(model_dir, name + ".onnx")
    onnx.save(add_model(loc), path)
    out = os.path.join(tmp, name + ".engine")
    rc, _, err = run("build-engine", path, "-o", out)
    ok(one_line_error(rc, err, "leaves the model's folder") and not os.path.exists(out),
       f"model external data '{loc}' ({name}) is refused", f"rc={rc} {err!r}")
    d = os.path.join(tmp, "pb-" + name)
    os.makedirs(d)
    t = numpy_helper.from_array(weights.reshape(2, 3), "b")
    external(t, loc)
    open(os.path.join(d, "input_0.pb"), "wb").write(t.SerializeToString())
    if name.startswith("symlink"):
        os.symlink(os.path.join(model_dir, loc.split("/")[0]), os.path.join(d, loc.split("/")[0]))
    rc, _, err = run("compare", d, d)
    ok(one_line_error(rc, err, "leaves the model's folder"), f".pb external data '{loc}' ({name}) is refused",
       f"rc={rc} {err!r}")

path = os.path.join(model_dir, "inside.onnx")
onnx.save(add_model("link-in.bin"), path)
rc, _, err = run("build-engine", path, "-o", os.path.join(tmp, "inside.engine"))
ok(rc == 0, "external data through a symlink that stays inside the folder loads", err)

# names that look like paths, from the model and from every input format
names = {"in": "../../in", "out": "/abs/out", "mid": "a/../../../mid", "dot": ".hidden"}
x = helper.make_tensor_value_info(names["in"], TensorProto.FLOAT, [2, 3])
y = helper.make_tensor_value_info(names["out"], TensorProto.FLOAT, [2, 3])
z = helper.make_tensor_value_info(names["dot"], TensorProto.FLOAT, [2, 3])
g = helper.make_graph([helper.make_node("Relu", [names["in"]], [names["mid"]]),
                       helper.make_node("Neg", [names["mid"]], [names["out"]]),
                       helper.make_node("Abs", [names["mid"]], [names["dot"]])], "g", [x], [y, z])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), os.path.join(tmp, "names.onnx"))
engine = os.path.join(tmp, "names.engine")
rc, _, err = run("build-engine", os.path.join(tmp, "names.onnx"), "-o", engine)
ok(rc == 0, "a model with path-like tensor names builds", err)

xv = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
def npy(a):
    b = io.BytesIO()
    np.save(b, a)
    return b.getvalue()
want = {"%2Fabs%2Fout.npy": -np.maximum(xv, 0), "%2Ehidden.npy": np.abs(np.maximum(xv, 0)),
        "a%2F..%2F..%2F..%2Fmid.npy": np.maximum(xv, 0)}
work = os.path.join(tmp, "run")
inp = os.path.join(work, "in")
os.makedirs(inp)
np.save(os.path.join(inp, "..%2F..%2Fin.npy"), xv)
out = os.path.join(work, "out")
before = set(os.listdir(tmp))
rc, _, err = run("infer", engine, "-i", inp, "-o", out, "--dump", "all")
files = sorted(os.listdir(out)) if os.path.isdir(out) else []
ok(rc == 0 and files == sorted(want) and all(np.array_equal(np.load(os.path.join(out, f)), v) for f, v in want.items()),
   "infer: outputs and dumps named '/abs/out', 'a/../../../mid', '.hidden' land percent-encoded inside -o",
   f"rc={rc} {err!r} {files}")
ok(sorted(os.listdir(work)) == ["in", "out"], "infer: nothing written beside -o", os.listdir(work))

# the same names read from .npz members, Polygraphy JSON keys and trtexec
# JSON names are only names: compare matches them and writes its one report
def npy(a):
    b = io.BytesIO()
    np.save(b, a)
    return b.getvalue()
b = io.BytesIO(); np.savez(b, **{"../../x": xv, "/abs": xv[0]})
open(os.path.join(tmp, "n.npz"), "wb").write(b.getvalue())
open(os.path.join(tmp, "p.json"), "w").write(json.dumps([{"../../x": {"array": base64.b64encode(npy(xv)).decode()},
                                                          "/abs": {"array": base64.b64encode(npy(xv[0])).decode()}}]))
# trtexec JSON and Polygraphy results: tensor names that look like paths are
# only names (compare reads them, converts them, writes inside its output)
trt = os.path.join(tmp, "trt.json")
open(trt, "w").write('[{"name": "../../x", "dimensions": "2x3", "values": [%s]}, '
                     '{"name": "/abs", "dimensions": "3", "values": [%s]}]'
                     % (", ".join(repr(float(v)) for v in xv.flat), ", ".join(repr(float(v)) for v in xv[0])))
conv = os.path.join(tmp, "conv", "poly.json")
os.makedirs(os.path.dirname(conv))
rc, _, err = run("compare", "--to-polygraphy", conv, trt)
ok(rc == 0 and os.listdir(os.path.dirname(conv)) == ["poly.json"], "trtexec names '../../x' and '/abs' convert into one file", err)
for a, b in (("n.npz", "p.json"), ("p.json", "trt.json"), ("trt.json", "conv/poly.json")):
    rep = os.path.join(tmp, "rep", "c.json")
    os.makedirs(os.path.dirname(rep))
    rc, _, err = run("compare", os.path.join(tmp, a), os.path.join(tmp, b), "--json", rep)
    ok(rc == 0 and os.listdir(os.path.dirname(rep)) == ["c.json"], f"compare {a} {b} matches '../../x' and '/abs' by name, writes only its report", err)
    shutil.rmtree(os.path.dirname(rep), ignore_errors=True)
ok(set(os.listdir(tmp)) - before <= {"trt.json", "conv", "n.npz", "p.json"}, "nothing appeared beside the inputs", set(os.listdir(tmp)) - before)
ok(not os.path.exists("/abs") and not os.path.exists(os.path.join(os.path.dirname(tmp), "in")),
   "no file at the absolute or '..' paths the names spell")

# image names from a --list file become sample folders: '..png' and '...'
# (stems '.' and '..') stay inside -o, percent-encoded
from PIL import Image
imgs = os.path.join(tmp, "imgs")
os.makedirs(imgs)
for f in ("..png", "..."):
    Image.new("RGB", (4, 4), 9).save(os.path.join(imgs, f), "PNG")
open(os.path.join(tmp, "list.txt"), "w").write("".join(os.path.join(imgs, f) + "\n" for f in ("..png", "...")))
pre = os.path.join(tmp, "pre", "out")
os.makedirs(os.path.dirname(pre))
cfg = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "configs", "preprocess", "bgr.yaml")
rc, _, err = run("preprocess", "--config", cfg, "-o", pre, "--list", os.path.join(tmp, "list.txt"), "-j", "1")
ok(rc == 0 and sorted(os.listdir(pre)) == ["%2E", "%2E.", "index.json"] and os.listdir(os.path.dirname(pre)) == ["out"],
   "preprocess: samples of images '..png' and '...' are folders '%2E' and '%2E.' inside -o", f"rc={rc} {err!r}")

shutil.rmtree(tmp)
done()
