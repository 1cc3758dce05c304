#!/usr/bin/python3
# Agreement: parity's FP32 engine (pipeline/backends/parity) against ONNX
# Runtime (pipeline/backends/onnxruntime, onnxruntime-node's CPU library) on
# every bundled model and on PyTorch-converted ONNX conformance models.
#
# FP32 outputs must agree within 1e-4 relative (max |a-b| / max |ort|) and
# numpy.allclose(rtol=1e-4, atol=1e-5); integer and bool outputs exactly. Two
# documented exceptions, each checked by its own rule rather than skipped:
#  - mixed_cast computes in FP16 by its own Cast nodes. ONNX Runtime's CPU
#    provider has no FP16 MatMul/Div on x86: it computes them in FP32 and
#    drops the Cast pairs around them, so its output is not even FP16-valued.
#    parity honours the model's types (strongly typed), so the two agree to
#    FP16 accuracy of the output's scale only: max |a-b| within 2^-10 of
#    max |ort| (two FP16 ulps at the top), checked per element as
#    allclose(rtol=2^-10, atol=2^-10 * max |ort|).
#  - RT-DETR's TopK outputs: labels may legitimately swap where two scores
#    are within 1e-5 of each other (tests/fixtures/rtdetr-tiny/PROVENANCE.md),
#    so a label mismatch is accepted only at such a pair, and detections are
#    then matched by (label, box), not by position. Boxes are compared in
#    the model's own normalised coordinates (pixels / [w, h, w, h] of
#    orig_target_sizes): the model computes them in [0, 1] and scales them
#    last, and a corner near x = 0 comes from cancellation (cx - w/2), so an
#    absolute tolerance of 1e-5 means 1e-5 of the image, not 1e-5 pixel.
# The ONNX Runtime backend itself is checked first: on the RT-DETR fixture
# its outputs are byte-identical to those Python's onnxruntime 1.30.0 wrote
# (tests/fixtures/rtdetr-tiny/ort_op16, ort_op17; one thread).
import collections
import json
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper, version_converter

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done
from backend_lib import (root, run_backend, read_set, write_set, tmpdir, rel_diff, ort_available)

RTOL, ATOL = 1e-4, 1e-5
tmp = tmpdir("backend-ort")
models = os.path.join(root, "build", "models")
rtdetr = os.path.join(root, "tests", "fixtures", "rtdetr-tiny")
conformance = "/usr/share/libonnx-testdata/data/pytorch-converted"

if not ort_available():
    ok(False, "onnxruntime-node is installed (node_modules/onnxruntime-node)",
       "run tools/deps.sh (npm ci --onnxruntime-node-install=skip in the repository root)")
    done()


def run_both(tag, model, inp):
    """Runs both backends; returns (parity outputs, ort outputs) or a failure text."""
    res = []
    for be in ("parity", "onnxruntime"):
        out = os.path.join(tmp, tag + "." + be)
        rc, _, err = run_backend(be, "run", "--model", model, "--input", inp, "--output", out, "--threads", 2)
        if rc:
            return None, "%s backend exit %d: %s" % (be, rc, err.strip())
        res.append(read_set(out))
    return res, None


def agree_fp32(p, o, rtol=RTOL, atol=ATOL, rel_limit=RTOL):
    """Per-output agreement; returns (all agree, summary, failures)."""
    summary, bad = [], []
    if sorted(p) != sorted(o):
        return False, "", ["output names differ: parity %s, onnxruntime %s" % (sorted(p), sorted(o))]
    for name in sorted(o):
        a, b = p[name], o[name]
        if a.dtype != b.dtype or a.shape != b.shape:
            bad.append("%s: parity %s %s, onnxruntime %s %s" % (name, a.dtype, a.shape, b.dtype, b.shape))
            continue
        if b.dtype.kind in "biu":
            n = int(np.sum(a != b))
            summary.append("%s equal" % name if not n else "%s %d differ" % (name, n))
            if n:
                bad.append("%s: %d of %d integer values differ" % (name, n, b.size))
            continue
        r = rel_diff(a, b)
        summary.append("%s rel %.2e" % (name, r))
        close = np.allclose(a.astype(np.float64), b.astype(np.float64), rtol=rtol, atol=atol)
        if not (r <= rel_limit and close):
            bad.append("%s: rel %.3e (limit %.0e), allclose(rtol=%g, atol=%g) %s"
                       % (name, r, rel_limit, rtol, atol, close))
    return not bad, ", ".join(summary), bad


def check(tag, model, inp, **tol):
    res, err = run_both(tag, model, inp)
    if err:
        return ok(False, "%s: parity FP32 vs onnxruntime" % tag, err)
    good, summary, bad = agree_fp32(*res, **tol)
    return ok(good, "%s: parity FP32 vs onnxruntime: %s" % (tag, summary), "\n".join(bad))


# ---- the ONNX Runtime backend reproduces Python's onnxruntime ---------------
for op in ("16", "17"):
    out = os.path.join(tmp, "ortref%s" % op)
    rc, _, err = run_backend("onnxruntime", "run", "--model", os.path.join(rtdetr, "rtdetr_tiny_op%s.onnx" % op),
                             "--input", os.path.join(rtdetr, "input"), "--output", out, "--threads", 1)
    same = rc == 0 and all(
        open(os.path.join(out, f), "rb").read() == open(os.path.join(rtdetr, "ort_op" + op, f), "rb").read()
        for f in ("labels.npy", "boxes.npy", "scores.npy")) and sorted(os.listdir(out)) == sorted(
        os.listdir(os.path.join(rtdetr, "ort_op" + op)))
    ok(same, "onnxruntime backend on rtdetr_tiny_op%s: byte-identical to Python onnxruntime 1.30.0's outputs" % op,
       err if rc else "output files differ from tests/fixtures/rtdetr-tiny/ort_op%s" % op)

# ---- --profile: ONNX Runtime's own trace, warm-up left out ------------------
# With graph optimisation off, ORT runs the model's own nodes, so the trace of
# 2 runs (the first dropped) must hold exactly one kernel event per node. Not
# run as a kernel: Constant nodes (ORT turns them into initializers when it
# loads the graph) and the fixture's two Casts of an int64 to int64, which ORT
# removes even at level disabled.
model = os.path.join(rtdetr, "rtdetr_tiny_op17.onnx")
prof = os.path.join(tmp, "prof", "ort.json")
os.makedirs(os.path.dirname(prof))
rc, _, err = run_backend("onnxruntime", "run", "--model", model, "--input", os.path.join(rtdetr, "input"),
                         "--output", os.path.join(tmp, "prof-out"), "--runs", 2, "--optimization", "disabled",
                         "--profile", prof)
try:
    trace = json.load(open(prof)) if rc == 0 else None
except (OSError, ValueError) as ex:
    trace, err = None, "%s: %s" % (prof, ex)
ok(isinstance(trace, list), "onnxruntime --profile writes a JSON list (Chrome trace)", err)
if isinstance(trace, list):
    kernels = collections.Counter(e["name"][:-len("_kernel_time")] for e in trace
                                  if e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time"))
    graph = onnx.load(model, load_external_data=False).graph
    nodes = {n.name for n in graph.node if n.op_type not in ("Constant", "Cast")}
    runs = [e for e in trace if e.get("cat") == "Session" and e.get("name") == "model_run"]
    ok(len(runs) == 1, "onnxruntime --profile --runs 2: the warm-up run left out (one model_run event)",
       "%d model_run events" % len(runs))
    missing, extra = nodes - set(kernels), set(kernels) - {n.name for n in graph.node}
    twice = [n for n, c in kernels.items() if c != 1]
    ok(not missing and not extra and not twice and len(nodes) > 500,
       "onnxruntime --profile: one Node kernel event for each of the model's %d computing nodes" % len(nodes),
       "missing %s; not in the model %s; not once %s" % (sorted(missing)[:5], sorted(extra)[:5], twice[:5]))
    left = [f for f in os.listdir(os.path.dirname(prof)) if f != "ort.json"]
    ok(not left, "onnxruntime --profile: nothing but the trace beside it", "left: %s" % left)

# ---- seed reproducers (make models) -----------------------------------------
for folder, onnx_name in (("convclip", "convclip"), ("nafnet_ln", "nafnet_ln_op16"), ("nafnet_ln", "nafnet_ln_op17"),
                          ("unet_attn", "unet_attn"), ("mixed_cast", "mixed_cast_fp32")):
    model = os.path.join(models, folder, onnx_name + ".onnx")
    if not os.path.isfile(model):
        ok(False, "%s: model present" % onnx_name, "%s missing: run make models" % model)
        continue
    check(onnx_name, model, os.path.join(models, folder, "input"))

# mixed_cast: FP16 by its own Casts; see the header for why FP16 accuracy is the bar.
model = os.path.join(models, "mixed_cast", "mixed_cast.onnx")
res, err = run_both("mixed_cast", model, os.path.join(models, "mixed_cast", "input")) if os.path.isfile(model) \
    else (None, "%s missing: run make models" % model)
if err:
    ok(False, "mixed_cast: parity vs onnxruntime", err)
else:
    p, o = res
    scale = float(np.max(np.abs(o["output"]))) if "output" in o else 0.0
    good, summary, bad = agree_fp32(p, o, rtol=2.0 ** -10, atol=2.0 ** -10 * scale, rel_limit=2.0 ** -10)
    ok(good, "mixed_cast (FP16 inside): parity vs onnxruntime within FP16 accuracy: %s" % summary, "\n".join(bad))
    y = p.get("output", np.zeros(1, np.float32))
    ok(np.array_equal(y.astype(np.float16).astype(np.float32), y),
       "mixed_cast: parity's output is FP16-valued, as the model's final Cast(FP16 -> FP32) makes it")

# ---- RT-DETR fixture, opset 16 and 17 ---------------------------------------


def rtdetr_agree(p, o):
    """labels/boxes/scores: matched by position, or by (label, box) across near-tied scores."""
    for k in ("labels", "boxes", "scores"):
        if k not in p or p[k].shape != o[k].shape or p[k].dtype != o[k].dtype:
            return False, "", ["%s: missing or shape/type differs" % k]
    lp, lo = p["labels"][0], o["labels"][0]
    w, h = np.load(os.path.join(rtdetr, "input", "orig_target_sizes.npy"))[0].astype(np.float64)
    scale = np.array([w, h, w, h])
    bp, bo = p["boxes"][0].astype(np.float64) / scale, o["boxes"][0].astype(np.float64) / scale
    sp, so = p["scores"][0].astype(np.float64), o["scores"][0].astype(np.float64)
    order = np.arange(len(lo))
    swapped = np.nonzero(lp != lo)[0]
    bad = []
    if len(swapped):
        # Pair each parity detection with the ORT one of the same label and
        # nearest box among positions whose ORT score is within 1e-5.
        order = order.copy()
        free = set(range(len(lo)))
        for i in range(len(lo)):
            cands = [j for j in free if lo[j] == lp[i] and abs(so[j] - so[i]) <= 1e-5]
            if not cands:
                bad.append("position %d: label %d has no ORT detection of that label within 1e-5 in score"
                           % (i, lp[i]))
                continue
            j = min(cands, key=lambda j: np.max(np.abs(bo[j] - bp[i])))
            order[i] = j
            free.discard(j)
    scale_b, scale_s = max(np.max(np.abs(bo)), 1e-30), max(np.max(np.abs(so)), 1e-30)
    rb = float(np.max(np.abs(bp - bo[order])) / scale_b)
    rs = float(np.max(np.abs(sp - so[order])) / scale_s)
    for name, r, a, b in (("boxes", rb, bp, bo[order]), ("scores", rs, sp, so[order])):
        if not (r <= RTOL and np.allclose(a, b, rtol=RTOL, atol=ATOL)):
            bad.append("%s: rel %.3e (limit %.0e) after matching" % (name, r, RTOL))
    summary = "labels %s, boxes (normalised) rel %.2e, scores rel %.2e" % (
        "equal" if not len(swapped) else "%d swapped at near-tied scores" % len(swapped), rb, rs)
    return not bad, summary, bad


for op in ("16", "17"):
    tag = "rtdetr_tiny_op" + op
    res, err = run_both(tag, os.path.join(rtdetr, tag + ".onnx"), os.path.join(rtdetr, "input"))
    if err:
        ok(False, "%s: parity FP32 vs onnxruntime" % tag, err)
        continue
    good, summary, bad = rtdetr_agree(*res)
    ok(good, "%s: parity FP32 vs onnxruntime: %s" % (tag, summary), "\n".join(bad))

# ---- PyTorch-converted conformance models -----------------------------------
# Opset-6 models whose operators ONNX Runtime 1.30 no longer implements at
# that opset (Gemm-6, PRelu-6, BatchNormalization-6, AveragePool-1, ...) are
# upgraded to opset 13 with onnx.version_converter; both engines run the
# same upgraded file.
CONFORMANCE = [
    ("test_Conv2d", False), ("test_Conv2d_depthwise_strided", False), ("test_Conv2d_dilated", False),
    ("test_Conv2d_groups", False), ("test_Conv1d_pad2", False), ("test_Conv3d_stride_padding", False),
    ("test_ConvTranspose2d", False), ("test_ConvTranspose2d_no_bias", False),
    ("test_MaxPool2d_stride_padding_dilation", False), ("test_Softmax", False), ("test_ELU", False),
    ("test_log_softmax_dim3", False), ("test_PixelShuffle", False), ("test_Embedding", False),
    ("test_Linear", True), ("test_PReLU_2d", True), ("test_BatchNorm2d_eval", True),
    ("test_BatchNorm2d_momentum_eval", True), ("test_AvgPool2d_stride", True), ("test_GLU", True),
]


def conformance_case(name, upgrade):
    """Writes the model (upgraded if asked) and its test_data_set_0 inputs as .npy; returns paths."""
    src = os.path.join(conformance, name)
    m = onnx.load(os.path.join(src, "model.onnx"))
    model = os.path.join(src, "model.onnx")
    if upgrade:
        m = version_converter.convert_version(m, 13)
        onnx.checker.check_model(m)
        model = os.path.join(tmp, name + ".opset13.onnx")
        onnx.save(m, model)
    inits = {i.name for i in m.graph.initializer}
    names = [i.name for i in m.graph.input if i.name not in inits]
    ds = os.path.join(src, "test_data_set_0")
    pbs = sorted((f for f in os.listdir(ds) if f.startswith("input_") and f.endswith(".pb")),
                 key=lambda f: int(f[6:-3]))
    tensors = {}
    for k, f in enumerate(pbs):
        t = onnx.TensorProto()
        with open(os.path.join(ds, f), "rb") as fh:
            t.ParseFromString(fh.read())
        tensors[t.name or names[k]] = numpy_helper.to_array(t)
    inp = os.path.join(tmp, name + ".input")
    write_set(inp, tensors)
    return model, inp


if not os.path.isdir(conformance):
    ok(False, "libonnx-testdata is installed (%s)" % conformance, "run tools/deps.sh")
for name, upgrade in CONFORMANCE if os.path.isdir(conformance) else []:
    try:
        model, inp = conformance_case(name, upgrade)
    except Exception as ex:   # a converter failure is a test failure, never a skip
        ok(False, "%s: prepared" % name, repr(ex))
        continue
    check(name + (" (opset 13)" if upgrade else ""), model, inp)

done()
