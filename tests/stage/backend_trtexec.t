#!/usr/bin/python3
# The trtexec adapter (pipeline/backends/trtexec.sh, trtexec_io.py). TensorRT
# is not available here, so: (1) the conversions are tested on files written
# in trtexec's formats by this test (raw binding dumps named
# "<safe name>.output.<d0>.<d1>....<type>.raw", --exportOutput JSON with
# 6-significant-digit values and nan/inf, --exportTimes JSON), and (2) the
# adapter's flow runs against a stand-in trtexec that computes y = x + 1 with
# numpy and writes those same files. Nothing here claims to test TensorRT.
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done
from backend_lib import backends, name_encode, read_set, write_set, tmpdir, run_backend

tmp = tmpdir("backend-trtexec")
io = os.path.join(backends, "trtexec_io.py")


def trtio(*args):
    p = subprocess.run(["/usr/bin/python3", io] + [str(a) for a in args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def one_line(rc, err, *needles):
    lines = [l for l in err.splitlines() if l.strip()]
    return rc == 2 and len(lines) == 1 and all(n in lines[0] for n in needles)


rng = np.random.default_rng(9)

# ---- inputs: tensor set -> --loadInputs raw files ----------------------------
inputs = {
    "images": rng.random((1, 3, 4, 5), dtype=np.float32),
    "orig/target:sizes": np.array([[640, 480]], np.int64),
    "mask": np.array([True, False, True]),
    "half": rng.random((2, 2)).astype(np.float16),
}
src = os.path.join(tmp, "in_set")
write_set(src, inputs)
work = os.path.join(tmp, "work_in")
os.makedirs(work)
rc, out, err = trtio("inputs", src, work)
spec = out.strip()
ok(rc == 0 and spec.startswith("--loadInputs="), "inputs: prints one --loadInputs option", err)
pairs = {}
for item in spec[len("--loadInputs="):].split(","):
    name, _, path = item.rpartition(":")          # trtexec splits on the last ':'
    pairs[name[1:-1] if name.startswith("'") else name] = path
ok(sorted(pairs) == sorted(inputs), "inputs: every tensor named in --loadInputs (names with ':' quoted)", spec)
ok(all(open(os.path.join(work, pairs[n]), "rb").read() == np.ascontiguousarray(a).tobytes()
       for n, a in inputs.items() if n in pairs),
   "inputs: raw files hold the tensors' C-order bytes exactly")
bad_src = os.path.join(tmp, "in_f64")
write_set(bad_src, {"x": np.zeros(3)})
rc, _, err = trtio("inputs", bad_src, work)
ok(one_line(rc, err, "x.npy", "float64"), "inputs: a float64 tensor is refused with one line, exit 2", err)

# ---- outputs from raw binding dumps (exact) --------------------------------
outs = {
    "/model/boxes": rng.standard_normal((1, 5, 4)).astype(np.float32),
    "labels": rng.integers(0, 80, (1, 5)).astype(np.int64),
    "scores.sigmoid": rng.random((1, 5), dtype=np.float32),
    "keep": np.array([[True, False, True, True, False]]),
    "h16": rng.standard_normal((3,)).astype(np.float16),
    "count": np.array(7, np.int32),
}
# File names written here by hand, as trtexec's dumpRawBindingToFiles makes them.
raw_names = {
    "/model/boxes": "_model_boxes.output.1.5.4.fp32.raw",
    "labels": "labels.output.1.5.int64.raw",
    "scores.sigmoid": "scores.sigmoid.output.1.5.fp32.raw",
    "keep": "keep.output.1.5.bool.raw",
    "h16": "h16.output.3.fp16.raw",
    "count": "count.output..int32.raw",
}
wr = os.path.join(tmp, "work_raw")
os.makedirs(wr)
for n, a in outs.items():
    with open(os.path.join(wr, raw_names[n]), "wb") as f:
        f.write(a.tobytes())
with open(os.path.join(wr, "images.input.1.3.4.5.fp32.raw"), "wb") as f:      # inputs are dumped too
    f.write(inputs["images"].tobytes())


def export_json(path, tensors, dims_style="x"):
    """--exportOutput as trtexec writes it: values with 6 significant digits."""
    lines, sep = ["["], "  "
    for n, a in tensors.items():
        d = "x".join(str(x) for x in a.shape) if dims_style == "x" else "(" + ", ".join(str(x) for x in a.shape) + ")"
        vals = ", ".join(("%g" % v) if a.dtype.kind == "f" else str(int(v)) for v in a.ravel())
        lines.append('%s{ "name" : "%s"' % (sep, n))
        sep = ", "
        lines.append('  , "dimensions" : "%s"' % d)
        lines.append('  , "values" : [ %s ]' % vals)
        lines.append("  }")
    lines.append("]")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


export_json(os.path.join(wr, "out.json"), {n: outs[n] for n in ("/model/boxes", "labels", "scores.sigmoid")})
res = os.path.join(tmp, "res_raw")
os.makedirs(res)
rc, _, err = trtio("outputs", wr, res, "--json", os.path.join(wr, "out.json"))
got = read_set(res) if rc == 0 else {}
ok(rc == 0 and sorted(got) == sorted(outs),
   "outputs (raw): every output binding, names recovered from the JSON ('/model/boxes', not '_model_boxes')",
   err or sorted(got))
ok(all(n in got and got[n].dtype == a.dtype and got[n].shape == a.shape and got[n].tobytes() == a.tobytes()
       for n, a in outs.items()),
   "outputs (raw): values, types (fp32, fp16, int64, int32 scalar, bool) and shapes exact")
ok("images" not in got, "outputs (raw): input bindings are not outputs")
f = os.path.join(res, name_encode("/model/boxes") + ".npy")
ok(os.path.exists(f) and open(f, "rb").read() == (lambda p: (np.save(p, outs["/model/boxes"]), open(p, "rb").read())[1])(
    os.path.join(tmp, "ref.npy")), "outputs: .npy bytes identical to numpy.save's")

# ---- outputs from --exportOutput JSON only (lossy), typed by the model -------
wj = os.path.join(tmp, "work_json")
os.makedirs(wj)
special = np.array([[1.0, np.nan, np.inf, -np.inf, 1234567.8, 1e-30]], np.float32)
export_json(os.path.join(wj, "out.json"), {"/model/boxes": outs["/model/boxes"], "labels": outs["labels"],
                                            "special": special}, dims_style="paren")
with open(os.path.join(wj, "out.json")) as fh:
    text = fh.read().replace("nan", "-nan", 1)          # glibc prints some NaNs as -nan
with open(os.path.join(wj, "out.json"), "w") as fh:
    fh.write(text)
m = helper.make_model(helper.make_graph(
    [helper.make_node("Identity", ["a"], ["/model/boxes"]), helper.make_node("Identity", ["b"], ["labels"]),
     helper.make_node("Identity", ["c"], ["special"])], "g",
    [helper.make_tensor_value_info(n, t, None) for n, t in (("a", 1), ("b", 7), ("c", 1))],
    [helper.make_tensor_value_info("/model/boxes", TensorProto.FLOAT, [1, 5, 4]),
     helper.make_tensor_value_info("labels", TensorProto.INT64, [1, 5]),
     helper.make_tensor_value_info("special", TensorProto.FLOAT, [1, 6])]))
mpath = os.path.join(tmp, "typed.onnx")
onnx.save(m, mpath)
res = os.path.join(tmp, "res_json")
os.makedirs(res)
rc, _, err = trtio("outputs", wj, res, "--json", os.path.join(wj, "out.json"), "--model", mpath)
got = read_set(res) if rc == 0 else {}
ok(rc == 0 and sorted(got) == ["/model/boxes", "labels", "special"], "outputs (JSON): every output", err)
b = got.get("/model/boxes")
ok(b is not None and b.dtype == np.float32 and b.shape == (1, 5, 4)
   and np.array_equal(b, np.array(["%g" % v for v in outs["/model/boxes"].ravel()], np.float64)
                      .astype(np.float32).reshape(1, 5, 4)),
   "outputs (JSON): float values are the printed 6-digit decimals, shape from \"dimensions\" (\"(1, 5, 4)\" form)")
ok(b is not None and np.max(np.abs(b - outs["/model/boxes"]) / np.maximum(np.abs(outs["/model/boxes"]), 1e-30)) < 1e-5,
   "outputs (JSON): within 6 significant digits of the true values (lossy, as documented)")
lab = got.get("labels")
ok(lab is not None and lab.dtype == np.int64 and np.array_equal(lab, outs["labels"]),
   "outputs (JSON): int64 output typed from the ONNX model, exact")
s = got.get("special")
ok(s is not None and np.isnan(s[0, 1]) and s[0, 2] == np.inf and s[0, 3] == -np.inf and s[0, 0] == 1.0,
   "outputs (JSON): nan, -nan, inf, -inf as trtexec prints them")

# ---- names over 150 bytes: newer trtexec shortens the file name --------------
long = "/encoder/" + "layers.0/" * 20 + "out"
wl = os.path.join(tmp, "work_long")
os.makedirs(wl)
safe = long.replace("/", "_")
safe = safe[:73] + "..." + safe[-73:]
v = rng.random(4, dtype=np.float32)
with open(os.path.join(wl, safe + ".output.4.fp32.raw"), "wb") as f:
    f.write(v.tobytes())
export_json(os.path.join(wl, "out.json"), {long: v})
res = os.path.join(tmp, "res_long")
os.makedirs(res)
rc, _, err = trtio("outputs", wl, res, "--json", os.path.join(wl, "out.json"))
got = read_set(res) if rc == 0 else {}
ok(list(got) == [long] and got[long].tobytes() == v.tobytes(),
   "outputs: a %d-byte name shortened to 73 + '...' + 73 in the file name is matched back" % len(long),
   err or list(got))

# ---- bad files: one line, exit 2 ----------------------------------------------
wb = os.path.join(tmp, "work_bad")
os.makedirs(wb)
with open(os.path.join(wb, "y.output.2.3.fp32.raw"), "wb") as f:
    f.write(b"\0" * 20)
res = os.path.join(tmp, "res_bad")
os.makedirs(res)
rc, _, err = trtio("outputs", wb, res)
ok(one_line(rc, err, "y.output.2.3.fp32.raw", "20 bytes", "24"), "outputs: a raw file of the wrong size: one line, exit 2",
   err)
ok(os.listdir(res) == [], "outputs: nothing written for the bad file")
with open(os.path.join(wb, "broken.json"), "w") as f:
    f.write('[ { "name" : "y", "values" : [ 1, 2')
os.remove(os.path.join(wb, "y.output.2.3.fp32.raw"))
rc, _, err = trtio("outputs", wb, res, "--json", os.path.join(wb, "broken.json"))
ok(one_line(rc, err, "broken.json"), "outputs: truncated JSON: one line, exit 2", err)

# ---- --exportTimes -------------------------------------------------------------
tpath = os.path.join(tmp, "times.json")
lat = [3.5, 1.25, 2.0, 9.0]
with open(tpath, "w") as f:
    f.write("[\n" + "\n".join('%s{ "startEnqMs" : 0, "endEnqMs" : 0.1, "computeMs" : 1, "latencyMs" : %g, '
                               '"endToEndMs" : 4 }' % ("  " if i == 0 else ", ", x) for i, x in enumerate(lat)) + "\n]\n")
rc, out, err = trtio("times", tpath, "s0")
st = json.loads(out) if rc == 0 else {}
ok(st == {"min_ms": 1.25, "median_ms": float(np.median(lat)), "max_ms": 9.0, "runs": 4, "sample": "s0"},
   "times: min/median/max of latencyMs, as infer --stats keys", err or st)

# ---- the adapter's flow against a stand-in trtexec --------------------------------
fake = os.path.join(tmp, "fake-trtexec")
log = os.path.join(tmp, "fake.log")
with open(fake, "w") as f:
    f.write(r'''#!/usr/bin/python3
# Stand-in for trtexec: computes y = x + 1 for the float32 [2,3] input "in:x",
# writing the files trtexec writes (raw dumps in the working folder, JSON).
import json, os, shutil, sys
import numpy as np
args = sys.argv[1:]
with open(%r, "a") as log:
    log.write(json.dumps(args) + "\n")
opt = dict(a[2:].split("=", 1) if "=" in a else (a[2:], "") for a in args)
if "skipInference" in opt:
    shutil.copy(opt["onnx"], opt["saveEngine"]); sys.exit(0)
name, _, path = opt["loadInputs"].rpartition(":")
x = np.fromfile(path, np.float32).reshape(2, 3)
y = x + 1
json.dump([{"name": "out/y", "dimensions": "2x3", "values": [float("%%g" %% v) for v in y.ravel()]}],
          open(opt["exportOutput"], "w"))
n = int(opt["iterations"])
json.dump([{"latencyMs": 1.0 + i} for i in range(n)], open(opt["exportTimes"], "w"))
y.tofile("out_y.output.2.3.fp32.raw"); x.tofile("in_x.input.2.3.fp32.raw")
''' % log)
os.chmod(fake, 0o755)
model = os.path.join(tmp, "add1.onnx")
one = numpy_helper.from_array(np.ones((2, 3), np.float32), "one")
onnx.save(helper.make_model(helper.make_graph(
    [helper.make_node("Add", ["in:x", "one"], ["out/y"])], "g",
    [helper.make_tensor_value_info("in:x", TensorProto.FLOAT, [2, 3])],
    [helper.make_tensor_value_info("out/y", TensorProto.FLOAT, [2, 3])], [one])), model)
samples = os.path.join(tmp, "samples")
xs = {s: rng.standard_normal((2, 3)).astype(np.float32) for s in ("a", "b")}
for s, x in xs.items():
    write_set(os.path.join(samples, s), {"in:x": x})
outdir = os.path.join(tmp, "trt_out")
stats = os.path.join(tmp, "trt_stats.json")
rc, _, err = run_backend("trtexec.sh", "run", "--model", model, "--input", samples, "--output", outdir,
                         "--runs", 3, "--stats", stats, env={"TRTEXEC": fake})
ok(rc == 0, "trtexec.sh run over two samples with the stand-in: exit 0", err)
ok(all(np.array_equal(read_set(os.path.join(outdir, s)).get("out/y"), x + 1) for s, x in xs.items())
   if rc == 0 else False, "trtexec.sh: each sample's output set holds y = x + 1 exactly (from the raw dump, not the 6-digit JSON) under its name 'out/y'")
calls = [json.loads(l) for l in open(log)] if os.path.exists(log) else []
ok(len(calls) == 3 and "--skipInference" in calls[0] and "--noTF32" in calls[0]
   and all(any(a.startswith("--loadEngine=") for a in c) and "--dumpRawBindingsToFile" in c
           and "--iterations=3" in c and "--loadInputs='in:x':in/0.bin" in c for c in calls[1:]),
   "trtexec.sh: builds once (--noTF32 for fp32), then --loadEngine, --loadInputs, raw dumps, --iterations per sample",
   calls)
st = json.load(open(stats)) if os.path.exists(stats) else {}
ok([s.get("sample") for s in st.get("samples", [])] == ["a", "b"] and all(
    s["median_ms"] == 2.0 and s["runs"] == 3 for s in st["samples"]), "trtexec.sh: --stats per sample, median of latencyMs",
   st)
ok(not [f for f in os.listdir(tmp) if ".tmp." in f or ".old." in f], "trtexec.sh: no staging folder left behind")
open(log, "w").close()
rc, _, err = run_backend("trtexec.sh", "run", "--model", model, "--input", os.path.join(samples, "a"), "--output",
                         os.path.join(tmp, "trt16"), "--precision", "fp16", "--input-shape", "in:x=2x3",
                         env={"TRTEXEC": fake})
calls = [json.loads(l) for l in open(log)]
ok(rc == 0 and "--fp16" in calls[0] and "--shapes=in:x:2x3" in calls[0] and "--shapes=in:x:2x3" in calls[1],
   "trtexec.sh: --precision fp16 -> --fp16; --input-shape -> --shapes at build and run", err or calls)
rc, _, err = run_backend("trtexec.sh", "run", "--model", model, "--input", samples, "--output", os.path.join(tmp, "x"),
                         env={"TRTEXEC": os.path.join(tmp, "no-such-trtexec"), "PATH": "/usr/bin:/bin"})
ok(rc == 3 and "TRTEXEC" in err and len(err.strip().splitlines()) == 1 and not os.path.exists(os.path.join(tmp, "x")),
   "trtexec.sh: without trtexec: one line naming TRTEXEC, exit 3, no output", err)

done()
