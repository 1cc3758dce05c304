#!/usr/bin/python3
# A residual Add (and the activation after it) fused into the Conv before it
# (passes/fuseres.c) is added in the convolution's epilogue, on each finished
# tile (ops/gemm/fgemm.c's fgemm_tile_post), on every path a Conv takes: the
# pixel tile (fconv_px), the implicit GEMM (fconv_rows, strided on its stride
# phases), the 1x1 GEMM, im2col + GEMM (small planes, kernels wider than
# FCONV_MAX_K), several k panels (k > FG_KC), groups, batches, no bias, the
# residual on either side of the Add, both addends Convs (RepVGG); and where
# the epilogue does not take it (a depthwise Conv, --kernels blas) the
# executor adds it. At FP32 the sum order is the unfused graph's -- (acc +
# bias) + r, then the activation -- so the fused engine's outputs must be
# bit-identical to the unfused one's (fold: {residual: false}) at every
# instruction set this CPU has, on 1 and 3 threads, with either kernels.
# (FP16/BF16: the fused sum is rounded once, as on TensorRT;
# tests/stage/engine_fold.t checks that against numpy.)
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done, run, cpu_levels
from backend_lib import write_set, read_set, tmpdir
from bounds import sum_bound, within

tmp = tmpdir("conv-residual")
rng = np.random.default_rng(41)
inits, nodes, inputs, outputs, feed = [], [], [], [], {}


def tensor_in(name, shape):
    inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape)))
    feed[name] = rng.standard_normal(shape).astype(np.float32)


def weight(name, shape):
    fan = int(np.prod(shape[1:]))
    inits.append(numpy_helper.from_array((rng.standard_normal(shape) / np.sqrt(fan)).astype(np.float32), name))
    return name


def conv(name, x, cin, cout, kh, kw, bias=True, **attrs):
    ins = [x, weight(name + ".w", (cout, cin // attrs.get("group", 1), kh, kw))]
    if bias:
        inits.append(numpy_helper.from_array((rng.standard_normal(cout) * 0.1).astype(np.float32), name + ".b"))
        ins.append(name + ".b")
    nodes.append(helper.make_node("Conv", ins, [name], name=name, **attrs))
    return name


def residual(tag, c, r, shape, act, conv_first=True):
    """Add(c, r) (or Add(r, c)), then the activation, to output tag."""
    s = tag + "/sum"
    nodes.append(helper.make_node("Add", [c, r] if conv_first else [r, c], [s], name=tag + "/Add"))
    if act == "Silu":
        nodes.append(helper.make_node("Sigmoid", [s], [tag + "/sig"], name=tag + "/Sigmoid"))
        nodes.append(helper.make_node("Mul", [s, tag + "/sig"], [tag], name=tag + "/Mul"))
    elif act == "Clip":
        inits.extend([numpy_helper.from_array(np.array(v, np.float32), tag + n) for n, v in (("/lo", -0.5), ("/hi", 0.75))])
        nodes.append(helper.make_node("Clip", [s, tag + "/lo", tag + "/hi"], [tag], name=tag + "/Clip"))
    elif act == "LeakyRelu":
        nodes.append(helper.make_node("LeakyRelu", [s], [tag], name=tag + "/LeakyRelu", alpha=0.1))
    elif act:
        nodes.append(helper.make_node(act, [s], [tag], name=tag + "/" + act))
    else:
        nodes[-1].output[0] = tag
    outputs.append(helper.make_tensor_value_info(tag, TensorProto.FLOAT, list(shape)))


tensor_in("x", (2, 8, 20, 20))       # a batch of two
tensor_in("x2", (1, 4, 41, 40))      # strided: 21 x 20 outputs
tensor_in("x3", (1, 264, 16, 16))    # k = 2376 > FG_KC: two panels
for tag, shape in (("ra", (2, 40, 20, 20)), ("rc", (2, 16, 20, 20)), ("rs", (1, 24, 21, 20)),
                   ("rk", (1, 8, 16, 16)), ("rg", (2, 8, 20, 20)), ("rd", (2, 8, 20, 20)),
                   ("rw", (2, 8, 20, 12)), ("rn", (2, 8, 20, 20)), ("rm", (2, 8, 10, 10))):
    tensor_in(tag, shape)
residual("px3x3_relu", conv("c_px", "x", 8, 40, 3, 3, pads=[1] * 4), "ra", (2, 40, 20, 20), "Relu")
residual("pw1x1_clip", conv("c_pw", "x", 8, 16, 1, 1), "rc", (2, 16, 20, 20), "Clip")
residual("s2_leaky", conv("c_s2", "x2", 4, 24, 3, 3, strides=[2, 2], pads=[1] * 4), "rs", (1, 24, 21, 20),
         "LeakyRelu")
residual("k2376_sigmoid", conv("c_k", "x3", 264, 8, 3, 3, pads=[1] * 4), "rk", (1, 8, 16, 16), "Sigmoid")
residual("group2_silu", conv("c_g", "x", 8, 8, 3, 3, pads=[1] * 4, group=2), "rg", (2, 8, 20, 20), "Silu")
residual("depthwise_relu", conv("c_dw", "x", 8, 8, 3, 3, pads=[1] * 4, group=8), "rd", (2, 8, 20, 20), "Relu")
residual("k1x9_relu", conv("c_w", "x", 8, 8, 1, 9, pads=[0, 0, 0, 0]), "rw", (2, 8, 20, 12), "Relu")
residual("nobias_5x5_left", conv("c_nb", "x", 8, 8, 5, 5, bias=False, pads=[2] * 4), "rn", (2, 8, 20, 20), "Relu",
         conv_first=False)
residual("small_plane", conv("c_sm", "x", 8, 8, 3, 3, strides=[2, 2], pads=[1] * 4), "rm", (2, 8, 10, 10), None)
residual("repvgg_relu", conv("c_r3", "x", 8, 8, 3, 3, pads=[1] * 4), conv("c_r1", "x", 8, 8, 1, 1),
         (2, 8, 20, 20), "Relu")
n_cases = len(outputs)
model = helper.make_model(helper.make_graph(nodes, "conv_residual", inputs, outputs, initializer=inits),
                          opset_imports=[helper.make_opsetid("", 17)])
onnx.checker.check_model(model)
onnx_path = os.path.join(tmp, "model.onnx")
onnx.save(model, onnx_path)
in_dir = os.path.join(tmp, "in")
write_set(in_dir, feed)


def build(tag, *args):
    eng, lay = os.path.join(tmp, tag + ".engine"), os.path.join(tmp, tag + ".layers.json")
    rc, _, err = run("build-engine", onnx_path, "-o", eng, "--layers-out", lay, *args)
    return (eng, json.load(open(lay))) if rc == 0 else (None, err)


fused_eng, fused_lay = build("fused")
nores = os.path.join(tmp, "nores.yaml")
open(nores, "w").write("fold: {residual: false}\n")
plain_eng, plain_lay = build("plain", "--config", nores)
fused_adds = [r["fused_from"] for r in fused_lay["layers"]] if fused_eng else []
fused_adds = [f for f in fused_adds if any(n.endswith("/Add") for n in f)]
ok(fused_eng and plain_eng and len(fused_adds) == n_cases and all(f[0].startswith("c_") for f in fused_adds)
   and not any(r["op"] == "Add" for r in fused_lay["layers"])
   and sum(r["op"] == "Add" for r in plain_lay["layers"]) == n_cases,
   "every residual Add (%d) fuses into its Conv, none with fold: {residual: false}" % n_cases,
   "%s %s" % (fused_lay if not fused_eng else fused_adds, plain_lay if not plain_eng else ""))


def infer(eng, tag, *args):
    out = os.path.join(tmp, "out-" + tag)
    rc, _, err = run("infer", eng, "-i", in_dir, "-o", out, *args)
    return read_set(out) if rc == 0 else err


results = {}
for isa in cpu_levels():
    for threads in (1, 3):
        for kernels in ("own", "blas"):
            key = "%s/%dt/%s" % (isa, threads, kernels)
            args = ("--isa", isa, "--threads", threads, "--kernels", kernels)
            got = infer(fused_eng, "f-" + key.replace("/", "-"), *args)
            want = infer(plain_eng, "p-" + key.replace("/", "-"), *args)
            results[key] = got
            same = isinstance(got, dict) and isinstance(want, dict) and sorted(got) == sorted(want) == \
                sorted(o.name for o in outputs) and all(np.array_equal(got[k], want[k]) for k in want)
            bad = [k for k in want if not np.array_equal(got[k], want[k])] if same is False and \
                isinstance(got, dict) and isinstance(want, dict) else (got, want)
            ok(same, "%s: fused and unfused engines give the same bits on all %d cases" % (key, n_cases),
               "" if same else str(bad)[:2000])
own = [v for k, v in results.items() if k.endswith("/own") and isinstance(v, dict)]
ok(len(own) == 2 * len(cpu_levels()) and all(all(np.array_equal(o[k], own[0][k]) for k in own[0]) for o in own),
   "the fused engine's own-kernel outputs are the same bits at every level (%s) and thread count"
   % ", ".join(cpu_levels()))
# the sums carry the residual: the 1x1 case against float64 within the
# rounding bound of its terms (8 products, the bias and r: no term through
# more than 8 + 2 roundings; Clip is 1-Lipschitz), so both engines dropping
# r alike would still fail
o = results.get("%s/1t/own" % cpu_levels()[0])
if isinstance(o, dict):
    arr = {i.name: numpy_helper.to_array(i).astype(np.float64) for i in inits}
    terms = np.einsum("oc,nchw->nochw", arr["c_pw.w"][:, :, 0, 0], feed["x"].astype(np.float64))
    exact = terms.sum(axis=2) + arr["c_pw.b"][None, :, None, None] + feed["rc"]
    mag = np.abs(terms).sum(axis=2) + np.abs(arr["c_pw.b"])[None, :, None, None] + np.abs(feed["rc"])
    good, worst = within(o["pw1x1_clip"], np.clip(exact, -0.5, 0.75), sum_bound(10, mag))
else:
    good, worst = False, -1
ok(good, "1x1 Conv + residual + Clip within the float32 rounding bound of float64 (worst %.3g of it)" % worst)
done()
