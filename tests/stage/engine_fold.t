#!/usr/bin/python3
# Build-time folds modelled as a deploy engine does them (passes/foldbn.c,
# passes/fuse.c), each switchable in the precision config (fold: {batchnorm,
# scale_bias, activation}), and the build-time report of constants beyond
# the target precision's range (precision/range.c).
#  1. BatchNormalization folded into Conv, grouped ConvTranspose and Gemm
#     (transB 0 and 1): at FP32, folded and unfolded outputs are both within
#     the float32 rounding bound of the float64 result (bounds.py: sums of
#     K + 6 roundings of the exact terms' magnitudes), so folding changes
#     FP32 only within FP32 rounding.
#  2. The text detector's mechanism (exported_models.conv_bn_head: a BN whose
#     running variance is 1e7-1e8): the FP16 build passes compare's FP16
#     tolerance against FP32 with folding on (the variance is never cast) and
#     fails it with `fold: {batchnorm: false}`, when the layer report and
#     stderr name the BatchNormalization and its out-of-range variance.
#  3. The other switches turn their fold off; bad fold keys are refused.
import json
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done, run, one_line_error
from bounds import sum_bound, within
from backend_lib import write_set, read_set, tmpdir
from exported_models import conv_bn_head

tmp = tmpdir("engine-fold")
rng = np.random.default_rng(11)


def build(tag, model, *args):
    path = os.path.join(tmp, tag + ".onnx")
    onnx.save(model, path)
    eng, lay = os.path.join(tmp, tag + ".engine"), os.path.join(tmp, tag + ".layers.json")
    rc, _, err = run("build-engine", path, "-o", eng, "--layers-out", lay, *args)
    return (eng, json.load(open(lay)), err) if rc == 0 else (None, None, err)


def infer(tag, eng, inputs):
    d, out = os.path.join(tmp, tag + ".in"), os.path.join(tmp, tag + ".out")
    write_set(d, inputs)
    rc, _, err = run("infer", eng, "-i", d, "-o", out)
    return (read_set(out) if rc == 0 else None), err


def config(tag, text):
    path = os.path.join(tmp, tag + ".yaml")
    open(path, "w").write(text)
    return path


NOFOLD = config("nofold", "fold: {batchnorm: false}\n")


def bn_params(c):
    return (rng.uniform(0.5, 1.5, c), rng.uniform(-1, 1, c), rng.standard_normal(c), rng.uniform(0.1, 4, c))


def bn_model(tag, node, x_shape, w, b, y_shape, bn):
    scale, beta, mean, var = bn
    inits = [numpy_helper.from_array(w.astype(np.float32), "W"), numpy_helper.from_array(b.astype(np.float32), "Bc")]
    inits += [numpy_helper.from_array(a.astype(np.float32), n) for a, n in zip(bn, ("s", "beta", "mean", "var"))]
    g = helper.make_graph([node, helper.make_node("BatchNormalization", ["h", "s", "beta", "mean", "var"], ["y"],
                                                  name="bn", epsilon=1e-3)], tag,
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)], initializer=inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 15)])


def exact_bn(h, hmag, b, bn, axis_shape):
    """float64 BN of the exact layer output h (h includes the bias b), and the magnitude of its terms."""
    scale, beta, mean, var = (p.astype(np.float32).astype(np.float64) for p in bn)
    s = scale / np.sqrt(var + np.float64(np.float32(1e-3)))
    r = lambda v: v.reshape(axis_shape)
    y = (h - r(mean)) * r(s) + r(beta)
    mag = hmag * r(np.abs(s)) + r(np.abs(mean * s)) + r(np.abs(beta)) + r(np.abs(b * s))
    return y, mag


def conv2d(x, w):            # 3x3, pads 1, stride 1, float64
    n, ci, hh, ww = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    y = np.zeros((n, w.shape[0], hh, ww))
    for ki in range(3):
        for kj in range(3):
            y += np.einsum("nchw,oc->nohw", xp[:, :, ki:ki + hh, kj:kj + ww], w[:, :, ki, kj])
    return y


def convT2d(x, w, group):    # kernel 2, stride 1, no pads, float64
    n, ci, hh, ww = x.shape
    cog = w.shape[1]
    y = np.zeros((n, cog * group, hh + 1, ww + 1))
    cig = ci // group
    for gi in range(group):
        for ki in range(2):
            for kj in range(2):
                y[:, gi * cog:(gi + 1) * cog, ki:ki + hh, kj:kj + ww] += np.einsum(
                    "nchw,co->nohw", x[:, gi * cig:(gi + 1) * cig], w[gi * cig:(gi + 1) * cig, :, ki, kj])
    return y


cases = []
# Conv 6->5, 3x3: K = 54 terms
x = rng.standard_normal((1, 6, 7, 7)).astype(np.float32)
w = rng.standard_normal((5, 6, 3, 3)).astype(np.float32)
b = rng.standard_normal(5).astype(np.float32)
bn = bn_params(5)
h = conv2d(x.astype(np.float64), w.astype(np.float64)) + b.reshape(1, 5, 1, 1)
hm = conv2d(np.abs(x.astype(np.float64)), np.abs(w.astype(np.float64))) + np.abs(b).reshape(1, 5, 1, 1)
cases.append(("conv", bn_model("conv", helper.make_node("Conv", ["x", "W", "Bc"], ["h"], name="layer", pads=[1] * 4),
                                [1, 6, 7, 7], w, b, [1, 5, 7, 7], bn), x, exact_bn(h, hm, b, bn, (1, 5, 1, 1)), 54))
# ConvTranspose 4->6, group 2, kernel 2: K = 2 * 4 = 8 terms
x = rng.standard_normal((1, 4, 5, 5)).astype(np.float32)
w = rng.standard_normal((4, 3, 2, 2)).astype(np.float32)
b = rng.standard_normal(6).astype(np.float32)
bn = bn_params(6)
h = convT2d(x.astype(np.float64), w.astype(np.float64), 2) + b.reshape(1, 6, 1, 1)
hm = convT2d(np.abs(x.astype(np.float64)), np.abs(w.astype(np.float64)), 2) + np.abs(b).reshape(1, 6, 1, 1)
cases.append(("convtranspose", bn_model("convt", helper.make_node("ConvTranspose", ["x", "W", "Bc"], ["h"], name="layer",
                                                                  group=2), [1, 4, 5, 5], w, b, [1, 6, 6, 6], bn),
              x, exact_bn(h, hm, b, bn, (1, 6, 1, 1)), 8))
# Gemm [3,10] x [10,4] (transB 0) and x [4,10]^T (transB 1)
for tb in (0, 1):
    x = rng.standard_normal((3, 10)).astype(np.float32)
    w = rng.standard_normal((10, 4)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    bn = bn_params(4)
    h = x.astype(np.float64) @ w.astype(np.float64) + b
    hm = np.abs(x.astype(np.float64)) @ np.abs(w.astype(np.float64)) + np.abs(b)
    wf = w.T.copy() if tb else w
    cases.append(("gemm transB=%d" % tb, bn_model("gemm%d" % tb, helper.make_node("Gemm", ["x", "W", "Bc"], ["h"],
                                                                                  name="layer", transB=tb),
                                                  [3, 10], wf, b, [3, 4], bn), x, exact_bn(h, hm, b, bn, (1, 4)), 10))

for tag, model, xin, (want, mag), k in cases:
    worst, folded_seen, err = 0.0, None, ""
    good = True
    for mode, args in (("folded", ()), ("unfolded", ("--config", NOFOLD))):
        eng, lay, err = build(tag.replace(" ", "_").replace("=", "") + mode, model, *args)
        out, err2 = infer(tag.replace(" ", "_").replace("=", "") + mode, eng, {"x": xin}) if eng else (None, err)
        if out is None:
            good, err = False, err + err2
            break
        fused = any("bn" in r["fused_from"] for r in lay["layers"])
        good &= fused == (mode == "folded") and len(lay["layers"]) == (1 if mode == "folded" else 2)
        inside, ratio = within(out["y"], want, sum_bound(k + 6, mag))
        good &= inside
        worst = max(worst, ratio)
    ok(good, "BatchNormalization after %s: folded at FP32 (one layer) and unfolded (two) both within float32 rounding "
       "of the float64 result (worst %.2f of the bound)" % (tag, worst), err)

# ---- the text detector's head: FP16 with and without the fold -------------
head = conv_bn_head()
xin = rng.standard_normal((1, 3, 16, 16)).astype(np.float32)
ref_eng, _, err = build("head32", head)
ref, _ = infer("head32", ref_eng, {"input": xin})
refdir = os.path.join(tmp, "head32.out")
cells = {}
for tag, args in (("fold", ("--precision", "fp16")), ("nofold", ("--config", config("f16nofold", "precision: fp16\n"
                                                                                     "fold: {batchnorm: false}\n")))):
    eng, lay, err = build("head16" + tag, head, *args)
    out, err2 = infer("head16" + tag, eng, {"input": xin}) if eng else (None, err)
    rc, txt, cerr = run("compare", os.path.join(tmp, "head16" + tag + ".out"), refdir, "--atol", "1e-2", "--rtol",
                        "1e-2", "--check-error-stat", "max") if out is not None else (-1, "", err)
    cells[tag] = (rc, lay, err, txt + cerr)
rc, lay, err, txt = cells["fold"]
ok(rc == 0 and not any("out_of_range" in r for r in lay["layers"]) and "65504" not in err,
   "variance 1e7-1e8 head at FP16 with BatchNormalization folded (as TensorRT): passes compare (atol/rtol 1e-2, max), "
   "no constant out of range", txt + err)
rc, lay, err, txt = cells["nofold"]
bnrow = [r for r in lay["layers"] if r["op"] == "BatchNormalization"] if lay else []
note = bnrow[0].get("out_of_range", "") if bnrow else ""
ok(rc == 1, "the same with fold: {batchnorm: false}: fails compare", txt)
ok("input_var" in note and "head.bn.running_var" in note and "8 of 8 values beyond fp16's 65504" in note,
   "the layer report names the BatchNormalization's out-of-range variance: %s" % note, json.dumps(bnrow))
ok("'/head/BatchNormalization'" in err and "head.bn.running_var" in err and "build-engine: warning:" in err,
   "build-engine's stderr names the layer and its variance", err)

# compare --layerwise on the unfolded FP16 cell: the reference (FP32, folded)
# has no tensor for the BatchNormalization's output, the cell's first failing
# tensor in execution order is the backbone Conv's slight FP16 rounding; the
# diagnosis still blames the BatchNormalization and its variance, and says
# how to fix it
d32, dnf = os.path.join(tmp, "dump32"), os.path.join(tmp, "dumpnf")
run("infer", os.path.join(tmp, "head32.engine"), "-i", os.path.join(tmp, "head32.in"), "-o", d32, "--dump", "all")
run("infer", os.path.join(tmp, "head16nofold.engine"), "-i", os.path.join(tmp, "head32.in"), "-o", dnf, "--dump", "all")
js = os.path.join(tmp, "lw.json")
rc, out, err = run("compare", "--layerwise", dnf, d32, "--layers", os.path.join(tmp, "head16nofold.layers.json"),
                   "--atol", "1e-3", "--rtol", "1e-3", "--json", js)
s = json.load(open(js))["layerwise"]["samples"][0] if os.path.exists(js) else {}
ok(rc == 1 and (s.get("first_failure") or {}).get("layer") == "/backbone/Conv"
   and "layer /head/BatchNormalization (BatchNormalization, fp16)" in s.get("cause", "")
   and "'head.bn.running_var': 8 of 8 values beyond fp16's 65504" in s.get("cause", "")
   and "fold: {batchnorm: true}" in s.get("fix", "") and "match: '/head/BatchNormalization'" in s.get("fix", ""),
   "layerwise: the diagnosis blames the BatchNormalization and its variance, not the first failing Conv, and "
   "gives the fold and the precision config line as fixes", out + err)

# the same layer report where a validation keeps it (build/MODEL/engines/CELL.layers.json, beside
# build-engine's CELL.args): the fix names where the cell's precision is configured -- its own
# config: entry in configs/models/MODEL.yaml (ppocr-det's fp16-nofold, issue 34 item 4), or the file
# it names -- and says the make command searches from the global precision, not the cell's config
for kind, cfg in (("inline", "build/ocrdet/configs/precision-fp16-nofold.yaml"), ("file", "configs/precisions/nofold16.yaml")):
    edir = os.path.join(tmp, kind, "build", "ocrdet", "engines")
    os.makedirs(edir)
    shutil.copy(os.path.join(tmp, "head16nofold.layers.json"), os.path.join(edir, "fp16-nofold.layers.json"))
    json.dump(["--config", cfg], open(os.path.join(edir, "fp16-nofold.args"), "w"))
    js = os.path.join(tmp, kind + "-lw.json")
    rc, out, err = run("compare", "--layerwise", dnf, d32, "--layers", os.path.join(edir, "fp16-nofold.layers.json"),
                       "--atol", "1e-3", "--rtol", "1e-3", "--json", js)
    fix = json.load(open(js))["layerwise"]["samples"][0].get("fix", "") if os.path.exists(js) else ""
    where = ("the config of precision 'fp16-nofold' in configs/models/ocrdet.yaml (its config: entry)" if kind == "inline"
             else "configs/precisions/nofold16.yaml (the config of precision 'fp16-nofold' in configs/models/ocrdet.yaml)")
    ok(rc == 1 and "set fold: {batchnorm: true} (the default) in " + where in fix
       and "in %s, the line `layers: [{match: '/head/BatchNormalization', precision: fp32}]`" % where in fix
       and "`make fix-precision MODEL=ocrdet PRECISION=fp16` (it searches from the global fp16 precision, not from the "
           "config of precision 'fp16-nofold')" in fix,
       "a validation's %s-configured cell: the fix names where to set fold: {batchnorm: true}, not only the global precision"
       % kind, fix + out + err)

# ---- Conv + Add(residual) + Relu: one layer, the sum rounded once ---------
# FP32: conv_net's residual blocks fuse (the Conv takes the Add and the Relu
# after it) and the outputs are bit-identical to the unfused graph. FP16: a
# 1x1 Conv of one channel, whose result is exact to compute: x16 * w16 is
# exact in float32, + b16 and + r16 are float32 additions; fused, the sum
# is rounded to FP16 once, unfused the Conv's result is rounded first.
from exported_models import conv_net
net = conv_net()
xin = rng.standard_normal((1, 3, 16, 16)).astype(np.float32)
outs = {}
for tag, args in (("res", ()), ("nores", ("--config", config("nores", "fold: {residual: false}\n")))):
    eng, lay, err = build("net_" + tag, net, *args)
    outs[tag] = (infer("net_" + tag, eng, {"input": xin})[0] if eng else None, lay, err)
(o1, l1, e1), (o2, l2, e2) = outs["res"], outs["nores"]
fused = [r["fused_from"] for r in l1["layers"] if "Add" in " ".join(r["fused_from"])] if l1 else []
ok(o1 is not None and o2 is not None and all(np.array_equal(o1[k], o2[k]) for k in o2) and len(fused) == 3
   and all(f[1].endswith("/Add") and f[2].endswith("/Relu_1") for f in fused)
   and not any(r["op"] == "Add" for r in l1["layers"]) and sum(r["op"] == "Add" for r in l2["layers"]) == 3,
   "FP32: Conv + residual Add + Relu fuse into one layer per block (%s), outputs bit-identical to unfused" % fused,
   e1 + e2)
# RepVGG (RT-DETR): Conv(x) + Conv(x) -> SiLU; the SiLU fused into the Add
# first must move into the Conv with it
wa, wb = (rng.standard_normal((4, 4, k, k)).astype(np.float32) for k in (3, 1))
g = helper.make_graph([helper.make_node("Conv", ["x", "Wa"], ["a"], name="c3", pads=[1] * 4),
                       helper.make_node("Conv", ["x", "Wb"], ["b"], name="c1"),
                       helper.make_node("Add", ["a", "b"], ["s"], name="add"),
                       helper.make_node("Sigmoid", ["s"], ["g"], name="sig"),
                       helper.make_node("Mul", ["s", "g"], ["y"], name="silu")], "repvgg",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6, 6])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 6, 6])],
                      initializer=[numpy_helper.from_array(wa, "Wa"), numpy_helper.from_array(wb, "Wb")])
rep = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
xr = rng.standard_normal((1, 4, 6, 6)).astype(np.float32)
eng, lay, err = build("rep", rep)
o1 = infer("rep", eng, {"x": xr})[0] if eng else None
eng2, _, err2 = build("rep_nores", rep, "--config", config("nores2", "fold: {residual: false}\n"))
o2 = infer("rep_nores", eng2, {"x": xr})[0] if eng2 else None
ok(o1 is not None and o2 is not None and np.array_equal(o1["y"], o2["y"]) and len(lay["layers"]) == 2
   and lay["layers"][1]["fused_from"] == ["c3", "add", "sig", "silu"],
   "a SiLU fused into the residual Add moves into the Conv with it: one layer, the same bits (%s)"
   % (lay and [r["fused_from"] for r in lay["layers"]]), err + err2)
xs = np.array([0.1, 1.7, -2.3, 3.3, 100.1, -0.37, 7.77, 1e-3], np.float32).reshape(1, 1, 2, 4)
rs = np.array([0.333, -1.01, 2.5, -3.1, 0.123, 0.77, -7.7, 5.5], np.float32).reshape(1, 1, 2, 4)
w1, b1 = np.array([[[[1.37]]]], np.float32), np.array([0.011], np.float32)
g = helper.make_graph([helper.make_node("Conv", ["x", "W", "B"], ["c"], name="conv"),
                       helper.make_node("Add", ["c", "r"], ["s"], name="add"),
                       helper.make_node("Relu", ["s"], ["y"], name="relu")], "res1",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 4]),
                       helper.make_tensor_value_info("r", TensorProto.FLOAT, [1, 1, 2, 4])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 2, 4])],
                      initializer=[numpy_helper.from_array(w1, "W"), numpy_helper.from_array(b1, "B")])
res1 = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
h = lambda a: np.asarray(a, np.float32).astype(np.float16).astype(np.float32)
conv32 = (h(xs) * h(w1)[0, 0, 0, 0] + h(b1)[0]).astype(np.float32)
want_fused = h(np.maximum(conv32 + h(rs), 0))
want_apart = h(np.maximum(h(conv32) + h(rs), 0))
got = {}
for tag, args in (("f", ()), ("a", ("--config", config("res16", "precision: fp16\nfold: {residual: false}\n")))):
    eng, lay, err = build("res1" + tag, res1, "--precision", "fp16", *args) if tag == "f" else build("res1" + tag, res1, *args)
    got[tag] = infer("res1" + tag, eng, {"x": xs, "r": rs})[0] if eng else None
ok(got["f"] is not None and got["a"] is not None and np.array_equal(got["f"]["y"], want_fused)
   and np.array_equal(got["a"]["y"], want_apart) and not np.array_equal(want_fused, want_apart),
   "FP16: fused, conv + residual rounded once (as the GPU); fold: {residual: false}, the conv rounded first",
   "%s %s %s %s" % (got["f"] and got["f"]["y"].ravel(), want_fused.ravel(), got["a"] and got["a"]["y"].ravel(),
                    want_apart.ravel()))

# ---- the other switches, and bad fold keys --------------------------------
c = 4
w = rng.standard_normal((c, 3, 1, 1)).astype(np.float32)
k = rng.standard_normal((1, c, 1, 1)).astype(np.float32)
g = helper.make_graph([helper.make_node("Conv", ["x", "W"], ["h"], name="conv"),
                       helper.make_node("Mul", ["h", "K"], ["m"], name="scale"),
                       helper.make_node("Relu", ["m"], ["y"], name="relu")], "sw",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, 4, 4])],
                      initializer=[numpy_helper.from_array(w, "W"), numpy_helper.from_array(k, "K")])
sw = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
for key, expect in (("scale_bias", ["conv", "scale", "relu"]), ("activation", ["conv", "relu"])):
    eng, lay, err = build("sw_" + key, sw, "--config", config("sw_" + key, "fold: {%s: false}\n" % key))
    eng_on, lay_on, _ = build("sw_on", sw)
    names = [r["name"] for r in lay["layers"]] if lay else None
    ok(names == expect and [r["name"] for r in lay_on["layers"]] == ["conv"],
       "fold: {%s: false} keeps its layers apart (%s), on by default (one layer)" % (key, names), err)
for text, needle in (("fold: {batchnrom: false}\n", "fold.batchnrom"), ("fold: 3\n", "fold"),
                     ("fold: {batchnorm: maybe}\n", "fold.batchnorm")):
    path = config("bad", text)
    rc, _, err = run("build-engine", os.path.join(tmp, "sw_on.onnx"), "-o", os.path.join(tmp, "bad.engine"),
                     "--config", path)
    ok(one_line_error(rc, err, path, needle) and not os.path.exists(os.path.join(tmp, "bad.engine")),
       "bad precision config %r refused with one line" % text.strip(), err)
done()
