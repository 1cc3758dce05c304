#!/usr/bin/python3
# fix-precision (issue 20) on the planted fixture (models/reproducers/planted.py:
# /bad2/Sub and the /bad1 Mul/Div pair are FP16-bad by construction): the
# search finds exactly them, every output works (precision YAML through
# build-engine, the strongly typed ONNX through parity and ONNX Runtime, the
# trtexec line, the report), bad input ends with one line and exit 2.
# SNRs here are numpy's, on the held-out samples, against the FP32 outputs.
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from tap import skip, ok, done, run, one_line_error

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
cfg = os.path.join(root, "configs", "models", "planted.yaml")
samples = os.path.join(root, "build", "models", "planted", "samples")
model = os.path.join(root, "build", "models", "planted", "planted.onnx")
tmp = tempfile.mkdtemp(prefix="parity-fixp-")
held = ["s04", "s05", "s06", "s07"]          # --samples 4 --holdout 4: the last four
PLANTED = {"/bad2/Sub", "/bad1/Mul", "/bad1/Div"}


def snr(a, b):
    a, b = a.astype(np.float64), b.astype(np.float64)
    if not np.all(np.isfinite(a)):
        return -np.inf
    return 10 * np.log10(np.sum(b * b) / np.sum((a - b) ** 2))


def infer(model_or_engine, cfg_yaml, tag):
    eng = os.path.join(tmp, tag + ".engine")
    args = ["--config", cfg_yaml] if cfg_yaml else ["--precision", "fp32"]
    rc, _, err = run("build-engine", model_or_engine, "-o", eng, *args)
    if rc:
        return None
    out = os.path.join(tmp, tag)
    rc, _, err = run("infer", eng, "-i", samples, "-o", out)
    return None if rc else {s: np.load(os.path.join(out, s, "y.npy")) for s in held}


out = os.path.join(tmp, "fp16")
rc, _, err = run("fix-precision", cfg, "--precision", "fp16", "--criterion", "snr=40", "-o", out, "--threads", 2,
           "--samples", 4, "--holdout", 4)
ok(rc == 0, "planted fp16, snr=40: criterion met (exit 0)", err)
rep = json.load(open(os.path.join(out, "report.json")))
ours = rep["answers"]["fix_precision"]
ok(set(ours["layers"]) == PLANTED, "the search finds exactly the planted layers", ours["layers"])
ok(rep["answers"]["reduced"]["search"]["pass"] is False, "everything in fp16 fails the criterion")
ok(ours["holdout"]["pass"] and ours["holdout"]["worst_snr_db"] >= 40, "verified on the held-out samples", ours)
ok(rep["samples"] == {"search": 4, "holdout": 4}, "4 search and 4 held-out samples", rep["samples"])
ok(all(k in rep["answers"] for k in ("autocast", "bisect")), "both baselines are in the report")
md = open(os.path.join(out, "report.md")).read()
ok("**fix-precision** | 3 |" in md and "AutoCast" in md and "bisection" in md, "report.md: the three answers side by side")

ref = infer(model, None, "fp32")
ours_out = infer(model, os.path.join(out, "precision.yaml"), "yaml")
low = infer(model, os.path.join(root, "configs", "precisions", "fp16.yaml"), "all16")
worst = min(snr(ours_out[s], ref[s]) for s in held)
ok(worst >= 40 and abs(worst - ours["holdout"]["worst_snr_db"]) < 1e-6,
   "precision.yaml through build-engine: held-out SNR %.2f dB = the report's" % worst)
ok(min(snr(low[s], ref[s]) for s in held) < 40, "plain fp16 misses 40 dB on the same samples")

# the strongly typed ONNX
import onnx
from onnx import TensorProto
m = onnx.load(os.path.join(out, "model.onnx"))
onnx.checker.check_model(m)
ok(all(v.type.tensor_type.elem_type == TensorProto.FLOAT for v in list(m.graph.input) + list(m.graph.output)),
   "typed ONNX: graph inputs and outputs stay FLOAT")
types = {i.name: i.data_type for i in m.graph.initializer}
ok(types["/conv1.weight"] == TensorProto.FLOAT16 and types["/conv2.bias"] == TensorProto.FLOAT16 and
   types["big"] == TensorProto.FLOAT, "typed ONNX: reduced layers' weights FLOAT16, FP32 layers' weights FLOAT", types)
casts = [n for n in m.graph.node if n.op_type == "Cast"]
ok(len(casts) == rep["typed_onnx_casts"] and len(casts) >= 3, "typed ONNX: Casts at the islands' boundaries (%d)" % len(casts))
st = os.path.join(tmp, "st.yaml")
open(st, "w").write("strongly_typed: true\n")
typed = infer(os.path.join(out, "model.onnx"), st, "typed")
ok(typed is not None and all(np.array_equal(typed[s], ours_out[s]) for s in held),
   "parity's strongly typed build of model.onnx equals the search's configuration bit for bit")
ortdir = os.path.join(tmp, "ort")
p = subprocess.run([os.path.join(root, "pipeline", "backends", "onnxruntime"), "run", "--model",
                    os.path.join(out, "model.onnx"), "--input", os.path.join(samples, held[0]), "--output", ortdir],
                   capture_output=True, text=True)
ok(p.returncode == 0, "ONNX Runtime loads and runs model.onnx", p.stderr)
if p.returncode == 0:
    y = np.load(os.path.join(ortdir, "y.npy"))
    ok(snr(y, ref[held[0]]) >= 40, "ONNX Runtime's result meets the criterion too (%.1f dB)" % snr(y, ref[held[0]]))

trt = open(os.path.join(out, "trtexec.txt")).read()
line = [l for l in trt.splitlines() if l.startswith("trtexec ")][0]
spec = line.split("--layerPrecisions=")[1].strip("'")
ok("--fp16" in line and "--precisionConstraints=obey" in line and
   set(x.rsplit(":", 1)[0] for x in spec.split(",")) == PLANTED and all(x.endswith(":fp32") for x in spec.split(",")),
   "trtexec.txt: --fp16 --precisionConstraints=obey --layerPrecisions=<the three>:fp32", line)
y = open(os.path.join(out, "precision.yaml")).read()
ok("precision: fp16" in y and "constraints: obey" in y and "'/bad1/Mul'" in y, "precision.yaml names the layers exactly")

# nafnet-ln (a Conv whose per-channel Mul build-engine folds into its weights):
# the typed ONNX still reproduces the searched configuration bit for bit
naf = os.path.join(root, "build", "models", "nafnet_ln")
nout = os.path.join(tmp, "naf")
rc, _, err = run("fix-precision", os.path.join(root, "configs", "models", "nafnet-ln.yaml"), "--precision", "fp16",
                 "--inputs", os.path.join(naf, "samples"), "-q", "-o", nout)
ok(rc == 0, "nafnet-ln fp16: criterion met on the held-out samples", err)
rep = json.load(open(os.path.join(nout, "report.json")))
a = rep["answers"]
ok(a["fix_precision"]["fp32_layers"] < a["autocast"]["fp32_layers"] and a["fix_precision"]["fp32_layers"] < a["bisect"]["fp32_layers"]
   and a["fix_precision"]["holdout"]["pass"], "nafnet-ln: fewer FP32 layers than both baselines, held-out PASS",
   {k: (v["fp32_layers"], v["holdout"]["pass"]) for k, v in a.items()})
res = []
for tag, mdl, cf in (("nt", os.path.join(nout, "model.onnx"), st),
                     ("ne", os.path.join(naf, "nafnet_ln_op16.onnx"), os.path.join(nout, "precision.yaml"))):
    eng = os.path.join(tmp, tag + ".engine")
    r1 = run("build-engine", mdl, "-o", eng, "--config", cf)[0]
    r2 = run("infer", eng, "-i", os.path.join(naf, "samples"), "-o", os.path.join(tmp, tag))[0]
    res.append(None if r1 or r2 else [np.load(os.path.join(tmp, tag, "s%02d" % i, "output.npy")) for i in range(16)])
ok(res[0] is not None and res[1] is not None and all(np.array_equal(x, y) for x, y in zip(*res)),
   "nafnet-ln: strongly typed model.onnx equals precision.yaml bit for bit on all 16 samples")

# --margin: the search's own evaluations must beat snr=40 by 30 dB; the
# planted three give 68 dB on the search samples, so the answer must grow
mg = os.path.join(tmp, "margin")
rc, _, err = run("fix-precision", cfg, "--precision", "fp16", "-c", "snr=40", "--margin", 30, "-q", "-o", mg,
                 "--samples", 4, "--holdout", 4)
rep = json.load(open(os.path.join(mg, "report.json")))
a = rep["answers"]["fix_precision"]
ok(rc == 0 and a["search"]["worst_snr_db"] >= 70 and PLANTED < set(a["layers"]) and rep["criterion"]["search_margin"] == 30
   and a["holdout"]["pass"], "--margin 30: the answer reaches 70 dB on the search samples (a superset of the planted three)",
   a)

# the search samples are tame, the held-out ones overflow /amp/Mul (x * 1000
# beyond FP16's 65504): the search keeps nothing, which fails the held-out
# samples; AutoCast, seeing 1e4 > data_max 512 on the search samples, keeps
# /amp/Mul and /amp/Div and passes both, so its answer is handed back
from onnx import helper
amp = os.path.join(tmp, "amp")
os.makedirs(amp)
g = helper.make_graph([helper.make_node("Mul", ["x", "k"], ["m"], name="/amp/Mul"),
                       helper.make_node("Div", ["m", "k"], ["d"], name="/amp/Div"),
                       helper.make_node("Relu", ["d"], ["y"], name="/out/Relu")], "amp",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])],
                      [helper.make_tensor("k", TensorProto.FLOAT, [], [1000.0])])
mm = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
mm.ir_version = 8
onnx.save(mm, os.path.join(amp, "m.onnx"))
rng = np.random.default_rng(7)
for i in range(4):
    os.makedirs(os.path.join(amp, "in", "s%d" % i))
    scale = 10 if i < 2 else 200
    np.save(os.path.join(amp, "in", "s%d" % i, "x.npy"), (scale * rng.uniform(0.5, 1, (1, 64))).astype(np.float32))
open(os.path.join(amp, "c.yaml"), "w").write("model: %s\ninputs: %s\nprecisions: [fp32]\n" % (os.path.join(amp, "m.onnx"), os.path.join(amp, "in")))
rc, _, err = run("fix-precision", os.path.join(amp, "c.yaml"), "--precision", "fp16", "-c", "snr=40", "-q",
                 "--samples", 2, "--holdout", 2, "-o", os.path.join(amp, "out"))
rep = json.load(open(os.path.join(amp, "out", "report.json")))
a = rep["answers"]
# two of its three layers are two thirds of the FLOPs: met, but no useful split (exit 4, issue 34)
ok(rc == 4 and rep["verdict"] == "no_useful_split" and a["reduced"]["search"]["pass"] and not a["reduced"]["holdout"]["pass"] and
   set(a["autocast"]["layers"]) == {"/amp/Mul", "/amp/Div"} and a["fix_precision"]["layers"] == a["autocast"]["layers"] and
   a["fix_precision"]["holdout"]["pass"] and "AutoCast" in a["fix_precision"]["note"] and
   "AutoCast" in open(os.path.join(amp, "out", "report.md")).read().split("### Layers")[0],
   "the search's answer fails the held-out samples, AutoCast's passes both: AutoCast's is handed back, and said", a)

# cannot be met: best attempt written, exit 1
out2 = os.path.join(tmp, "hopeless")
rc, _, err = run("fix-precision", cfg, "--precision", "fp16", "-c", "snr=200", "-o", out2, "-q", "--max-evals", 8)
ok(rc == 1 and "NOT met" in err and os.path.exists(os.path.join(out2, "report.json")),
   "a criterion no set meets: exit 1, says so, writes its best attempt", err)

# bad input
for args, needle, what in [
        (["--precision", "fp8"], "fp8", "unknown precision"),
        (["--precision", "fp16", "-c", "psnr=3"], "psnr=3", "unknown criterion"),
        (["--precision", "fp16", "--max-evals", "1"], "budget too small", "budget too small"),
        (["--precision", "fp16", "--max-seconds", "0.5"], "budget too small", "time budget too small"),
        (["--precision", "fp16", "--holdout", "-1"], "at least", "negative held-out count"),
        (["--precision", "fp16", "-c", "map-drop=1"], "detection", "mAP criterion without a detection section")]:
    rc, _, err = run("fix-precision", cfg, "-o", os.path.join(tmp, "bad"), *args)
    ok(one_line_error(rc, err, needle) and not os.path.exists(os.path.join(tmp, "bad")), "bad input: " + what, err)

# no float layer
nf = os.path.join(tmp, "nofloat")
os.makedirs(os.path.join(nf, "in"))
from onnx import helper
g = helper.make_graph([helper.make_node("Add", ["a", "a"], ["b"], name="add")], "int",
                      [helper.make_tensor_value_info("a", TensorProto.INT64, [4])],
                      [helper.make_tensor_value_info("b", TensorProto.INT64, [4])])
mm = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
mm.ir_version = 8
onnx.save(mm, os.path.join(nf, "m.onnx"))
np.save(os.path.join(nf, "in", "a.npy"), np.arange(4, dtype=np.int64))
open(os.path.join(nf, "c.yaml"), "w").write("model: %s\ninputs: %s\nprecisions: [fp32]\n" % (os.path.join(nf, "m.onnx"), os.path.join(nf, "in")))
rc, _, err = run("fix-precision", os.path.join(nf, "c.yaml"), "--precision", "bf16", "-o", os.path.join(nf, "out"))
ok(one_line_error(rc, err, "no float layer") and not os.path.exists(os.path.join(nf, "out")), "bad input: no float layer", err)

# the reference itself misses an absolute floor: a detector whose one box per
# image (its input) misses the ground truth's, so its AP is 0
det = os.path.join(tmp, "det")
g = helper.make_graph([helper.make_node("Mul", ["b", "one"], ["boxes"], name="/box/Mul"),
                       helper.make_node("Sigmoid", ["logit"], ["scores"], name="/score/Sigmoid"),
                       helper.make_node("Identity", ["cls"], ["labels"], name="/label/Identity")], "det",
                      [helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, 1, 4])],
                      [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [1, 1, 4]),
                       helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 1]),
                       helper.make_tensor_value_info("labels", TensorProto.INT64, [1, 1])],
                      [helper.make_tensor("one", TensorProto.FLOAT, [], [1.0]),
                       helper.make_tensor("logit", TensorProto.FLOAT, [1, 1], [2.0]),
                       helper.make_tensor("cls", TensorProto.INT64, [1, 1], [0])])
mm = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
mm.ir_version = 8
os.makedirs(det)
onnx.save(mm, os.path.join(det, "det.onnx"))
json.dump({"images": [{"id": k, "file_name": "%d.png" % k, "width": 100, "height": 100} for k in (1, 2)],
           "categories": [{"id": 1, "name": "box"}],
           "annotations": [{"id": k, "image_id": k, "category_id": 1, "bbox": [10, 10, 20, 20], "area": 400, "iscrowd": 0}
                           for k in (1, 2)]}, open(os.path.join(det, "gt.json"), "w"))
for k in (1, 2):
    sd = os.path.join(det, "in", "s%d" % k)
    os.makedirs(sd)
    np.save(os.path.join(sd, "b.npy"), np.array([[[60, 60, 90, 90]]], np.float32))
    json.dump({"image_id": k, "width": 100, "height": 100, "scale_x": 1, "scale_y": 1, "offset_x": 0, "offset_y": 0},
              open(os.path.join(sd, "meta.json"), "w"))
open(os.path.join(det, "c.yaml"), "w").write(
    "model: %s\ndataset: {gt: %s, images: %s}\nprecisions: [fp32]\nvariants: [rtdetr-official]\n"
    "detection: {labels: labels, boxes: boxes, scores: scores, box_format: xyxy, box_coords: original, label_map: [1]}\n"
    % (os.path.join(det, "det.onnx"), os.path.join(det, "gt.json"), det))
rc, _, err = run("fix-precision", os.path.join(det, "c.yaml"), "--precision", "fp16", "-c", "min-map=0.5",
                 "--inputs", os.path.join(det, "in"), "--samples", 1, "--holdout", 1, "-o", os.path.join(det, "out"))
ok(one_line_error(rc, err, "FP32 reference itself", "nothing to repair") and not os.path.exists(os.path.join(det, "out")),
   "bad input: the FP32 reference itself fails the criterion (AP 0 < min-map 0.5): nothing to repair", err)
rc, _, err = run("fix-precision", os.path.join(det, "c.yaml"), "--precision", "fp16", "-c", "map-drop=1", "-q",
                 "--inputs", os.path.join(det, "in"), "--samples", 1, "--holdout", 1, "-o", os.path.join(det, "ok"))
ok(rc == 0 and os.path.exists(os.path.join(det, "ok", "report.json")),
   "the same detector with a drop criterion runs (the fixture itself is sound)", err)
done()
