#!/usr/bin/python3
# The seed reproducers (models/reproducers/, generated into build/models/ by
# make) and the diagnosis each must give under parity's precision emulation.
import json
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done, run

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
models = os.path.join(root, "build", "models")
precisions = os.path.join(root, "configs", "precisions")
tmp = tempfile.mkdtemp(prefix="parity-precision-")
n_engine = 0


def engine(model, *args):
    """Builds an engine; returns (engine path, layer report) or (None, stderr)."""
    global n_engine
    n_engine += 1
    eng = os.path.join(tmp, "e%d.engine" % n_engine)
    layers = eng + ".layers.json"
    rc, _, err = run("build-engine", model, "-o", eng, "--layers-out", layers, *args)
    if rc:
        return None, err
    return eng, json.load(open(layers))


def infer(eng, inp, *args):
    out = os.path.join(tmp, "o%d" % len(os.listdir(tmp)))
    rc, _, err = run("infer", eng, "-i", inp, "-o", out, *args)
    if rc:
        raise RuntimeError(err)
    return {f[:-4]: np.load(os.path.join(out, f)) for f in os.listdir(out) if f.endswith(".npy")}


def decode(name):
    import urllib.parse
    return urllib.parse.unquote(name)


def first_nonfinite(layers, dump):
    byname = {decode(k): v for k, v in dump.items()}
    for layer in layers["layers"]:
        for o in layer["outputs"]:
            t = byname.get(o["name"])
            if t is not None and t.dtype.kind == "f" and not np.all(np.isfinite(t)):
                return o["name"], layer["op"]
    return None, None


def rel_err(a, b):
    return float(np.max(np.abs(a.astype(np.float64) - b)) / max(np.max(np.abs(b)), 1e-30))


# convclip: TF32 error is small, non-zero, and lives where outputs are not clipped deep
d = os.path.join(models, "convclip")
inp = os.path.join(d, "input")
# unfused, so the pre-clip tensor exists in the dump; fused is the default
e32, l32 = engine(os.path.join(d, "convclip.onnx"), "--no-fusion")
e32f, l32f = engine(os.path.join(d, "convclip.onnx"))
etf, ltf = engine(os.path.join(d, "convclip.onnx"), "--precision", "tf32", "--no-fusion")
if e32 and etf:
    dump = infer(e32, inp, "--dump", "all")
    a, pre = dump["output"], dump["%2Fconv%2FConv_output_0"]
    a2 = infer(e32, inp, "--threads", "2")["output"]
    t = infer(etf, inp)["output"]
    ok(a.tobytes() == a2.tobytes(), "convclip: FP32 vs FP32 is exact (1 and 2 threads)")
    fused = infer(e32f, inp)["output"]
    ok(fused.tobytes() == a.tobytes() and [l["op"] for l in l32f["layers"]] == ["Conv"]
       and l32f["layers"][0]["fused_from"] == ["/conv/Conv", "/act/Clip"],
       "convclip: Conv+Clip fuse into one layer with bit-identical FP32 output")
    err = np.abs(t.astype(np.float64) - a)
    ok(0 < err.max() < 1e-2, "convclip: TF32 error is small but non-zero (max %.3g)" % err.max())
    # where the convolution lands well outside [0, 6] the clip hides any TF32 error
    deep = (pre < -0.05) | (pre > 6.05)
    ok(deep.sum() > 0.2 * pre.size and np.count_nonzero(err[deep]) == 0,
       "convclip: no error where outputs are clipped deep (%d of %d elements)" % (deep.sum(), pre.size))
    # an output pinned at a bound differs only when the pre-activation sits near that bound
    at_bound = ((a == 0) | (a == 6)) & (err > 0)
    near = (np.abs(pre) < 0.05) | (np.abs(pre - 6) < 0.05)
    ok(at_bound.sum() > 0 and np.all(near[at_bound]),
       "convclip: errors at the clip bounds all sit within 0.05 of a bound (%d elements)" % at_bound.sum())
    conv_rows = [l for l in ltf["layers"] if l["op"] == "Conv"]
    ok(conv_rows and conv_rows[0]["precision"] == "tf32" and
       [l for l in ltf["layers"] if l["op"] == "Clip"][0]["precision"] == "fp32",
       "convclip: the layer report shows Conv in tf32 and Clip in fp32")
else:
    ok(False, "convclip engines build", (l32, ltf))

# nafnet-ln: FP16 overflows at the decomposed LayerNorm's Pow; op17 and pinned LayerNorm stay finite
d = os.path.join(models, "nafnet_ln")
inp = os.path.join(d, "input")
op16, op17 = os.path.join(d, "nafnet_ln_op16.onnx"), os.path.join(d, "nafnet_ln_op17.onnx")
e32, _ = engine(op16)
e16, l16 = engine(op16, "--precision", "fp16")
e17, _ = engine(op17, "--precision", "fp16")
epin, lpin = engine(op16, "--config", os.path.join(precisions, "mixed.yaml"))
if e32 and e16 and e17 and epin:
    ref = infer(e32, inp)["output"]
    dump = infer(e16, inp, "--dump", "all")
    name, op = first_nonfinite(l16, dump)
    ok(name == "/block/norm1/LayerNorm/sq" and op == "Pow",
       "nafnet-ln: FP16 gives the first non-finite tensor at the LayerNorm's Pow (%s, %s)" % (name, op))
    y17 = infer(e17, inp)["output"]
    ok(np.all(np.isfinite(y17)) and rel_err(y17, ref) < 2e-2,
       "nafnet-ln: opset-17 LayerNormalization in FP16 stays finite and within 2e-2 (%.3g)" % rel_err(y17, ref))
    ypin = infer(epin, inp)["output"]
    ok(np.all(np.isfinite(ypin)) and rel_err(ypin, ref) < 2e-2,
       "nafnet-ln: LayerNorm pinned to fp32 stays finite and within 2e-2 (%.3g)" % rel_err(ypin, ref))
    pinned = [l for l in lpin["layers"] if "LayerNorm" in l["name"]]
    ok(pinned and all(l["precision"] == "fp32" and "rule at" in l["reason"] for l in pinned),
       "nafnet-ln: the layer report names the rule that pinned each LayerNorm layer")
else:
    ok(False, "nafnet-ln engines build")

# mixed-cast: honouring the model's Casts (strongly typed or obeyed constraints) beats ignoring them
d = os.path.join(models, "mixed_cast")
inp = os.path.join(d, "input")
eref, _ = engine(os.path.join(d, "mixed_cast_fp32.onnx"))
est, lst = engine(os.path.join(d, "mixed_cast.onnx"), "--config", os.path.join(precisions, "strongly-typed.yaml"))
eign, _ = engine(os.path.join(d, "mixed_cast.onnx"), "--precision", "fp16")
eobey, _ = engine(os.path.join(d, "mixed_cast.onnx"), "--config", os.path.join(precisions, "mixed.yaml"))
if eref and est and eign and eobey:
    ref = infer(eref, inp)["output"]
    yst, yign, yobey = (infer(e, inp)["output"] for e in (est, eign, eobey))
    est_err, eobey_err = rel_err(yst, ref), rel_err(yobey, ref)
    ign_err = rel_err(np.nan_to_num(yign, nan=0, posinf=0, neginf=0), ref)
    ok(est_err < 1e-2, "mixed-cast: strongly typed matches the FP32 reference (%.3g)" % est_err)
    ok(eobey_err < 1e-2, "mixed-cast: obeyed constraints match the FP32 reference (%.3g)" % eobey_err)
    ok(ign_err > 100 * max(est_err, eobey_err),
       "mixed-cast: casts ignored is far worse (%.3g vs %.3g)" % (ign_err, max(est_err, eobey_err)))
    rs = [l for l in lst["layers"] if l["op"] == "ReduceSum"][0]
    ok(rs["storage"] == "float32" and "strongly typed" in rs["reason"], "mixed-cast: strongly typed keeps ReduceSum in fp32")
else:
    ok(False, "mixed-cast engines build")

# unet-attn: dumping every tensor leaves the output bit-identical, in FP32 and FP16
d = os.path.join(models, "unet_attn")
inp = os.path.join(d, "input")
for prec in ("fp32", "fp16"):
    e, _ = engine(os.path.join(d, "unet_attn.onnx"), "--precision", prec)
    if not e:
        ok(False, "unet-attn %s builds" % prec)
        continue
    plain = infer(e, inp)["output"]
    dumped = infer(e, inp, "--dump", "all")
    ok(len(dumped) > 10 and dumped["output"].tobytes() == plain.tobytes(),
       "unet-attn %s: --dump all (%d tensors) leaves the output bit-identical" % (prec, len(dumped)))
done()
