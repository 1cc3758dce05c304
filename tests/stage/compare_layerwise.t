#!/usr/bin/python3
# compare --layerwise: on synthetic dumps (a 20-layer chain written here with
# numpy, layer 7 perturbed; an FP16 overflow planted at a Pow; a different
# input; local errors planted per layer) and on real dumps of the seed
# reproducers (build-engine --layers-out, infer --dump all / --reference),
# where compare must give each reproducer's diagnosis.
import json
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from compare_util import save_set
from tap import ok, done, run

tmp = tempfile.mkdtemp(prefix="parity-cmp-layerwise-")
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
models = os.path.join(root, "build", "models")
precisions = os.path.join(root, "configs", "precisions")


def path(*p):
    return os.path.join(tmp, *p)






OPS = ["Conv", "Relu", "Add", "Mul", "Sigmoid"]
N = 20


def out_name(i, op):
    return "/blocks.%d/%s_output_0" % (i, op)


def layer_report(file, ops, precisions_):
    layers, prev = [], "images"
    for i, op in enumerate(ops):
        o = out_name(i, op)
        layers.append({"index": i, "name": "/blocks.%d/%s" % (i, op), "op": op, "inputs": [prev, "w%d" % i],
                       "outputs": [{"name": o, "shape": [1, 8, 16], "dtype": "float32"}],
                       "precision": precisions_[i], "storage": "float16" if precisions_[i] == "fp16" else "float32",
                       "reason": "default", "fused_from": []})
        prev = o
    json.dump({"source": "synthetic.onnx", "precision": "fp16", "layers": layers}, open(file, "w"), indent=1)


def f(i, x):
    """Layer i of the synthetic chain (kept in a sane range)."""
    return np.tanh(x * (1.0 + 0.05 * i) + 0.01 * i).astype(np.float32)


def chain(x0, ops, perturb=None, jitter=0.0, rng=None, local_from=None):
    """Dump of every tensor. perturb: {layer: fn(y) -> y}; local_from: a
    reference dump each layer reads its input from (local mode)."""
    d, x = {"images": x0}, x0
    for i, op in enumerate(ops):
        if local_from is not None:
            x = local_from[out_name(i - 1, ops[i - 1])] if i else local_from["images"]
        y = f(i, x)
        if jitter:
            y = (y * (1 + jitter * rng.standard_normal(y.shape))).astype(np.float32)
        if perturb and i in perturb:
            y = perturb[i](y)
        d[out_name(i, op)] = y
        x = y
    return d


def lw(a, b, layers, *args):
    js = path("lw%d.json" % len(os.listdir(tmp)))
    rc, out, err = run("compare", "--layerwise", a, b, "--layers", layers, "--json", js, *args)
    return rc, (json.load(open(js)) if os.path.exists(js) else None), out + err


rng = np.random.default_rng(7)
ops = [OPS[i % len(OPS)] for i in range(N)]
layer_report(path("layers.json"), ops, ["fp16"] * N)
x0 = rng.standard_normal((1, 8, 16)).astype(np.float32)
ref = chain(x0, ops)
save_set(path("ref"), ref)

# ---- layer 7 of 20 perturbed -------------------------------------------------------
pert = chain(x0, ops, perturb={7: lambda y: (y + 0.05 * rng.standard_normal(y.shape)).astype(np.float32)},
             jitter=1e-7, rng=rng)
save_set(path("pert"), pert)
tol = ("--atol", "1e-4", "--rtol", "1e-3")
rc, js, out = lw(path("pert"), path("ref"), path("layers.json"), *tol)
s = js["layerwise"]["samples"][0] if js else {}
ff = s.get("first_failure") or {}
ok(rc == 1 and ff.get("tensor") == out_name(7, ops[7]) and ff.get("layer_index") == 7,
   "layer 7 of 20 perturbed: the first failing tensor is layer 7's output (%s)" % ff.get("tensor"), out)
rows = s.get("rows", [])
ok([r["tensor"] for r in rows] == ["images"] + [out_name(i, ops[i]) for i in range(N)],
   "rows follow the execution order, the graph input first")
ok(all(r["status"] == "pass" for r in rows[:8]) and all(r["status"] == "fail" for r in rows[8:]),
   "layers before 7 pass (jitter below tolerance), 7 and everything after fail")
ok("first failing: %s (%s) in layer /blocks.7/%s, fp16" % (out_name(7, ops[7]), ops[7], ops[7]) in out,
   "the text names the first failing tensor with its op, layer and precision", out)
table = [l for l in out.splitlines() if l.strip().endswith(out_name(7, ops[7]))]
ok(len(table) == 1 and "FAIL" in table[0], "the table has a row per layer with the error (%s)" % table)
ok(s.get("first_nonfinite") is None and "first non-finite" not in out, "no non-finite tensor is reported when there is none")
ok("precision issue" in s.get("diagnosis", ""), "diagnosis: a precision issue (the layer is fp16)", s.get("diagnosis"))

# ---- an FP16 overflow planted at a Pow ------------------------------------------------
ops_p = list(ops)
ops_p[12] = "Pow"
layer_report(path("layers_pow.json"), ops_p, ["fp16"] * N)
ref_p = chain(x0, ops_p, perturb={12: lambda y: (y * 1e5).astype(np.float32)})
over = chain(x0, ops_p, perturb={12: lambda y: np.where(np.abs(y * 1e5) > 65504, np.float32(np.inf), y * 1e5).astype(np.float32)})
save_set(path("ref_p"), ref_p)
save_set(path("over"), over)
rc, js, out = lw(path("over"), path("ref_p"), path("layers_pow.json"), *tol)
s = js["layerwise"]["samples"][0]
fn = s["first_nonfinite"] or {}
ok(rc == 1 and fn.get("tensor") == out_name(12, "Pow") and fn.get("op") == "Pow",
   "the first tensor holding Inf is named separately (%s)" % fn.get("tensor"), out)
ok("first non-finite: %s (Pow) in layer /blocks.12/Pow, fp16" % out_name(12, "Pow") in out,
   "the text says 'first non-finite: NAME (Pow)' and the layer", out)
ok("FP16 overflow" in s["diagnosis"] and "beyond the FP16 range" in s["diagnosis"],
   "diagnosis: FP16 overflow, the reference holds values beyond 65504 there", s["diagnosis"])

# ---- scale-free: --layer-snr-db judges each layer by its SNR -----------------------------
# relative noise 3e-3 on every layer (SNR about 50 dB) fails the absolute
# tolerance at the first layer; at 30 dB only layer 7 (noise 0.05 on values
# of about 0.5, SNR near 20 dB) fails. SNRs checked against numpy's.
noisy = chain(x0, ops, perturb={7: lambda y: (y + 0.05 * rng.standard_normal(y.shape)).astype(np.float32)},
              jitter=3e-3, rng=rng)
save_set(path("noisy"), noisy)
rc_abs, js_abs, _ = lw(path("noisy"), path("ref"), path("layers.json"), *tol)
rc, js, out = lw(path("noisy"), path("ref"), path("layers.json"), *tol, "--layer-snr-db", "30")
s = js["layerwise"]["samples"][0]
snr = {r["tensor"]: r["snr_db"] for r in s["rows"]}
want = {k: 10 * np.log10(np.sum(ref[k].astype(np.float64) ** 2) / np.sum((noisy[k].astype(np.float64) - ref[k]) ** 2))
        for k in ref if k != "images"}
ok(js_abs["layerwise"]["samples"][0]["first_failure"]["layer_index"] == 0 and s["first_failure"]["layer_index"] == 7,
   "3e-3 noise everywhere: absolute tolerances fail at layer 0, SNR >= 30 dB fails first at layer 7", out)
ok(all(abs(snr[k] - want[k]) < 1e-3 for k in want) and all(r["status"] == ("fail" if want[r["tensor"]] < 30 else "pass")
                                                            for r in s["rows"] if r["tensor"] in want),
   "each row's SNR is numpy's (%.1f dB at layer 7) and its status follows the threshold" % want[out_name(7, ops[7])])

# ---- after a TopK: order-dependent rows are shown but never a first failure -------------
ops_k = list(ops)
ops_k[10] = "TopK"
layer_report(path("layers_topk.json"), ops_k, ["fp32"] * N)
ref_k = chain(x0, ops_k)
swap = dict(ref_k)
for i in range(10, N):      # near-tied entries swapped: same values, other places
    swap[out_name(i, ops_k[i])] = ref_k[out_name(i, ops_k[i])][:, :, ::-1].copy()
save_set(path("ref_k"), ref_k)
save_set(path("swap"), swap)
rc_t, js_t, _ = lw(path("swap"), path("ref_k"), path("layers_topk.json"), *tol)
rc_s, js_s, out = lw(path("swap"), path("ref_k"), path("layers_topk.json"), *tol, "--layer-snr-db", "30")
s = js_s["layerwise"]["samples"][0]
ok(js_t["layerwise"]["samples"][0]["first_failure"]["layer_index"] == 10 and rc_s == 0 and s["first_failure"] is None
   and [r["tensor"] for r in s["rows"] if r.get("order_dependent")] == [out_name(i, ops_k[i]) for i in range(10, N)],
   "rows from the TopK on are order-dependent: a first failure by tolerance, none with --layer-snr-db", out)

# ---- ranked by severity, not position: a slight early failure, a collapse later ------
# layer 3 loses a little (relative noise 1e-3: about 60 dB, fails the tolerance
# first); layer 14 collapses (noise 0.5: about 6 dB). The failure to look at
# first is 14, by its SNR drop; the first in execution order stays 3. The
# layer report sits where a validation writes it (build/MODEL/engines/), so
# the fix names the make command.
eng_dir = path("build", "chainnet", "engines")
os.makedirs(eng_dir)
layer_report(os.path.join(eng_dir, "fp16.layers.json"), ops, ["fp16"] * N)
two = chain(x0, ops, perturb={3: lambda y: (y * (1 + 1e-3 * rng.standard_normal(y.shape))).astype(np.float32),
                              14: lambda y: (y + 0.5 * rng.standard_normal(y.shape)).astype(np.float32)})
save_set(path("two"), two)
rc, js, out = lw(path("two"), path("ref"), os.path.join(eng_dir, "fp16.layers.json"), *tol)
s = js["layerwise"]["samples"][0]
wf = s.get("worst_failure") or {}
ok(rc == 1 and s["first_failure"]["layer_index"] == 3 and wf.get("layer_index") == 14 and wf.get("severity") == "snr drop"
   and wf.get("snr_drop_db", 0) > 10,
   "a slight failure at layer 3 and a collapse at 14: first in order 3, worst by severity 14 (drop %.1f dB)"
   % wf.get("snr_drop_db", 0), out)
ok(s["cause"].startswith("precision issue in layer /blocks.14/") and "/blocks.3/" in s["evidence"]
   and "at the outputs of the sample compared layer by layer" in s["evidence"]
   and ": %s, SNR" % out_name(N - 1, ops[N - 1]) in s["evidence"],
   "the cause names layer 14; the evidence names the earlier first failure and the output's SNR", s["diagnosis"])
ok("`layers: [{match: '/blocks.14/%s', precision: fp32}]`" % ops[14] in s["fix"]
   and "`make fix-precision MODEL=chainnet PRECISION=fp16`" in s["fix"]
   and all(k in out for k in ("\ncause: ", "\nevidence: ", "\nfix: ")),
   "the fix gives the precision config line and the make command; the text has cause, evidence and fix lines",
   s["fix"])

# ---- different inputs: preprocessing, not the engine -----------------------------------
x1 = (x0 + 0.01).astype(np.float32)
save_set(path("other_in"), chain(x1, ops))
rc, js, out = lw(path("other_in"), path("ref"), path("layers.json"), *tol)
s = js["layerwise"]["samples"][0]
ok(rc == 1 and s["first_failure"]["tensor"] == "images" and "inputs differ" in s["diagnosis"],
   "a different graph input is the first failure, diagnosed as a preprocessing difference", out)

# ---- local error: each layer fed the reference's inputs --------------------------------
precs = ["fp16"] * N
precs[15] = "fp32"
layer_report(path("layers_local.json"), ops, precs)
own = {3: 1e-2, 9: 1e-1, 15: 3e-2}
loc = chain(x0, ops, local_from=ref,
            perturb={i: (lambda e: lambda y: (y * (1 + e * rng.standard_normal(y.shape))).astype(np.float32))(e)
                     for i, e in own.items()})
save_set(path("local"), loc)
rc, js, out = lw(path("local"), path("ref"), path("layers_local.json"), "--local", *tol)
s = js["layerwise"]["samples"][0]
rank = [r["layer_index"] for r in s.get("ranking", [])]
ok(rc == 1 and rank[:3] == [9, 15, 3], "--local ranks layers by their own error, worst first (%s)" % rank[:5], out)
ok([r["status"] for r in s["rows"]].count("fail") == 3, "in local mode only the layers with own error fail")
ok("pin to fp32 first (own error, worst first): /blocks.9/%s, /blocks.3/%s." % (ops[9], ops[3]) in s["diagnosis"],
   "the pin-to-FP32 list names the failing fp16 layers in rank order, not the fp32 one", s["diagnosis"])
ok("layers by their own error, worst first:" in out, "the text shows the ranking")

# ---- the seed reproducers, on real dumps -------------------------------------------------
n_engine = 0


def engine(model, *args):
    global n_engine
    n_engine += 1
    eng = path("e%d.engine" % n_engine)
    rc, _, err = run("build-engine", model, "-o", eng, "--layers-out", eng + ".layers.json", *args)
    return (eng, eng + ".layers.json") if rc == 0 else (None, err)


def infer(eng, inp, *args):
    out = path("o%d" % len(os.listdir(tmp)))
    rc, _, err = run("infer", eng, "-i", inp, "-o", out, *args)
    return out if rc == 0 else None


d = os.path.join(models, "nafnet_ln")
e32, _ = engine(os.path.join(d, "nafnet_ln_op16.onnx"))
e16, l16 = engine(os.path.join(d, "nafnet_ln_op16.onnx"), "--precision", "fp16")
d32 = e32 and infer(e32, os.path.join(d, "input"), "--dump", "all")
d16 = e16 and infer(e16, os.path.join(d, "input"), "--dump", "all")
if d32 and d16:
    rc, js, out = lw(d16, d32, l16, "--atol", "1e-3", "--rtol", "1e-2")
    s = js["layerwise"]["samples"][0]
    ok(rc == 1 and "first non-finite: /block/norm1/LayerNorm/sq (Pow)" in out
       and "precision issue (FP16 overflow)" in s["diagnosis"] and "opset >= 17" in s["diagnosis"],
       "nafnet-ln FP16: compare names the LayerNorm's Pow as the first non-finite tensor, an FP16 overflow", out)
    ok((s.get("worst_failure") or {}).get("layer") == "/block/norm1/LayerNorm/Pow"
       and s["cause"].startswith("precision issue (FP16 overflow) in layer /block/norm1/LayerNorm/Pow")
       and "intermediate tensor /block/norm1/LayerNorm/sq (Pow)" in s["evidence"]
       and "0 NaN/Inf (the non-finite values stay inside the graph)" in s["evidence"]
       and s["first_failure"]["op"] == "ReduceMean" and "smaller error before it" in s["evidence"],
       "nafnet-ln FP16: the cause is the Pow (non-finite first), told apart from the earlier ReduceMean's slight "
       "failure and from the outputs, which hold no NaN/Inf", s["diagnosis"])
    dl = infer(e16, os.path.join(d, "input"), "--dump", "all", "--reference", d32)
    rc, js, out = lw(dl, d32, l16, "--local", "--atol", "1e-3", "--rtol", "1e-2") if dl else (None, None, "")
    s = js["layerwise"]["samples"][0] if js else {}
    top = [r["layer"] for r in s.get("ranking", [])[:2]]
    ok(sorted(top) == ["/block/norm1/LayerNorm/Pow", "/block/norm2/LayerNorm/Pow"]
       and "pin to fp32 first" in s.get("diagnosis", ""),
       "nafnet-ln FP16 --reference: the two Pow layers rank first by their own error (%s)" % top, out)
else:
    ok(False, "nafnet-ln engines and dumps (build/models; make tools generates them)")
    ok(False, "nafnet-ln local dump")

d = os.path.join(models, "convclip")
e32, _ = engine(os.path.join(d, "convclip.onnx"))
etf, ltf = engine(os.path.join(d, "convclip.onnx"), "--precision", "tf32")
d32 = e32 and infer(e32, os.path.join(d, "input"), "--dump", "all")
dtf = etf and infer(etf, os.path.join(d, "input"), "--dump", "all")
if d32 and dtf:
    rc, js, out = lw(dtf, d32, ltf)
    s = js["layerwise"]["samples"][0]
    ok(rc == 1 and s["first_failure"]["op"] == "Conv" and s["first_failure"]["precision"] == "tf32"
       and "precision issue" in s["diagnosis"], "convclip TF32: the first divergence is the Conv, in tf32: a precision issue", out)
else:
    ok(False, "convclip engines and dumps")

d = os.path.join(models, "mixed_cast")
eref, _ = engine(os.path.join(d, "mixed_cast_fp32.onnx"))
eign, lign = engine(os.path.join(d, "mixed_cast.onnx"), "--precision", "fp16")
est, lst = engine(os.path.join(d, "mixed_cast.onnx"), "--config", os.path.join(precisions, "strongly-typed.yaml"))
dref = eref and infer(eref, os.path.join(d, "input"), "--dump", "all")
dign = eign and infer(eign, os.path.join(d, "input"), "--dump", "all")
dst = est and infer(est, os.path.join(d, "input"), "--dump", "all")
if dref and dign and dst:
    rc, js, out = lw(dign, dref, lign, "--atol", "1e-3", "--rtol", "1e-2")
    s = js["layerwise"]["samples"][0]
    ok(rc == 1 and (s["first_nonfinite"] or {}).get("op") == "ReduceSum" and "FP16 overflow" in s["diagnosis"],
       "mixed-cast, casts ignored (fp16): the ReduceSum overflows first, an FP16 overflow", out)
    rc, js, out = lw(dst, dref, lst, "--atol", "1e-3", "--rtol", "1e-2")
    s = js["layerwise"]["samples"][0]
    ok(s["first_nonfinite"] is None and "fp32/fp16" in s["diagnosis"] and "x16 exists in A only" in s["diagnosis"],
       "mixed-cast, strongly typed: finite; the difference enters through the model's own fp16 Cast", out)
else:
    ok(False, "mixed-cast engines and dumps")
    ok(False, "mixed-cast strongly typed")
done()
