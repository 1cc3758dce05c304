#!/usr/bin/python3
# The bundled YOLO-style detector (models/yolo-shapes, issue 36). Without torch:
#  - the committed files are those PROVENANCE.md records (sha256);
#  - the exports are what the committed checkpoint exports: every initializer
#    is the checkpoint's tensor of its name after the BatchNorm folding that
#    yolo.fuse_conv_bn does, repeated here in numpy float32 in the same order,
#    and no tensor is left over either way. Unfolded tensors are equal bit for
#    bit; folded ones within the rounding of a scale a few ulps off: torch's
#    float32 CPU kernels (vectorised sqrt and division) are not always
#    correctly rounded, and gamma / sqrt(var + eps) came out up to 3 ulps from
#    numpy's in 12 of 3728 channels, so the folded weight w * scale may differ by
#    up to 4 ulps of itself, the bias beta - mean * scale by 4 ulps of
#    mean * scale plus 1 of itself (any other checkpoint differs by far more);
#  - the raw Ultralytics interface: images [1,3,320,320] -> output0 [1,10,2100], no NMS;
#  - parity's stages on images 1..20 of shapes-val-200 (preprocess with the
#    training letterbox, build-engine, infer, decode.py, map-eval) against
#    PyTorch's own outputs kept in models/yolo-shapes/reference/ (raw head
#    outputs of images 1..3, decoded detections of images 1..20): the same raw
#    numbers, the same detections, the same mAP.
import hashlib
import json
import os
import shutil
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done, run

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
mdir = os.path.join(root, "models", "yolo-shapes")
sys.path.insert(0, mdir)
import decode  # noqa: E402

tmp = tempfile.mkdtemp(prefix="parity-yolo-shapes-")
N = 20
models = {op: os.path.join(mdir, "yolo_shapes_op%d.onnx" % op) for op in (16, 17)}
ckpt = os.path.join(mdir, "checkpoint", "ema.npz")

with open(os.path.join(mdir, "PROVENANCE.md")) as f:
    prov = f.read()
for path in list(models.values()) + [ckpt] + [os.path.join(mdir, "reference", "torch_val200%s.json" % s)
                                          for s in ("", "_first20")]:
    with open(path, "rb") as f:
        h = hashlib.sha256(f.read()).hexdigest()
    ok(h in prov, "%s: sha256 recorded in PROVENANCE.md" % os.path.relpath(path, mdir))


def fused(z):
    """The checkpoint as the export holds it: each Conv's BatchNorm folded in;
    name -> (tensor, allowed absolute difference per element)."""
    out = {}
    for k in z.files:
        if k.endswith(".bn.weight"):
            p = k[:-len(".bn.weight")]
            std = np.sqrt(z[p + ".bn.running_var"] + np.float32(1e-3))
            scale = z[p + ".bn.weight"] / std
            w = z[p + ".conv.weight"] * scale.reshape(-1, 1, 1, 1)
            ms = z[p + ".bn.running_mean"] * scale
            b = z[p + ".bn.bias"] - ms
            out[p + ".conv.weight"] = (w, 4 * np.spacing(np.abs(w)))
            out[p + ".conv.bias"] = (b, 4 * np.spacing(np.abs(ms)) + np.spacing(np.abs(b)))
        elif ".bn." not in k and k not in out and not (k.endswith(".conv.weight") and
                                                      k[:-len(".conv.weight")] + ".bn.weight" in z.files):
            out[k] = (z[k], np.zeros_like(z[k]))
    return out


z = np.load(ckpt)
want = fused(z)
ok(all(v[0].dtype == np.float32 for v in want.values()) and len(want) == 127,
   "checkpoint: %d tensors fold into %d float32 export tensors" % (len(z.files), len(want)))
for op, path in models.items():
    m = onnx.load(path)
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    same = [n for n in want if n in inits and inits[n].shape == want[n][0].shape
            and np.all(np.abs(inits[n] - want[n][0]) <= want[n][1])]
    exact = sum(inits[n].tobytes() == want[n][0].tobytes() for n in same)
    extra = sorted(set(inits) - set(want))
    missing = sorted(set(want) - set(same))
    ok(not missing and not extra, "opset %d: all %d initializers are the checkpoint's folded tensors "
       "(%d bit for bit, the rest within the few-ulp bound of the folding)" % (op, len(inits), exact),
       "differ or missing: %s; not in the checkpoint: %s" % (missing[:5], extra[:5]))
    ins = [(i.name, [d.dim_value for d in i.type.tensor_type.shape.dim]) for i in m.graph.input]
    outs = [(o.name, [d.dim_value for d in o.type.tensor_type.shape.dim]) for o in m.graph.output]
    ops = {n.op_type for n in m.graph.node}
    ok(m.opset_import[0].version == op and ins == [("images", [1, 3, 320, 320])]
       and outs == [("output0", [1, 10, 2100])],
       "opset %d: images [1,3,320,320] -> output0 [1,10,2100] (4 box + 6 classes, 40^2+20^2+10^2 anchors)" % op)
    ok({"Softmax", "Sigmoid", "Split", "Concat"} <= ops and not ops & {"NonMaxSuppression", "TopK",
                                                                   "BatchNormalization"},
       "opset %d: DFL softmax and sigmoid scores in the graph, no NMS or TopK, BatchNorm folded" % op)

# Parity's stages on images 1..20.
val = os.path.join(tmp, "val")
rc, _, err = run("gen-shapes", "--split", "val", "--count", N, "-o", val)
gt = os.path.join(val, "annotations.json")
ok(rc == 0, "gen-shapes: the first %d images of shapes-val-200" % N, err)
pre = os.path.join(tmp, "pre")
rc, _, err = run("preprocess", "--config", os.path.join(mdir, "letterbox320.yaml"), "--dataset", gt,
                 "--images", os.path.join(val, "images"), "-o", pre)
ok(rc == 0, "preprocess: the training letterbox (320, cv2 linear, pad 114)", err)

res = {}
for op in (16, 17):
    eng = os.path.join(tmp, "op%d.engine" % op)
    out = os.path.join(tmp, "out%d" % op)
    rc, _, err = run("build-engine", models[op], "-o", eng)
    if rc == 0:
        rc, _, err = run("infer", eng, "-i", pre, "-o", out, "--threads", "2")
    ok(rc == 0, "opset %d: build-engine and infer (FP32) on %d images" % (op, N), err)
    res[op] = out

# raw outputs against PyTorch's (CPU fp32, fused): box coordinates are sums of
# 16 softmax-weighted bins times the stride, up to 320 px, so float32 rounding
# differences of a few ulps of 320 (3e-5) add up to a few 1e-4 px; scores are
# sigmoids in 0..1
dbox = dscore = 0.0
for i in (1, 2, 3):
    ref = np.load(os.path.join(mdir, "reference", "raw", "%07d.npy" % i))
    got = np.load(os.path.join(res[16], str(i), "output0.npy"))
    dbox = max(dbox, float(np.abs(got[:, :4] - ref[:, :4]).max()))
    dscore = max(dscore, float(np.abs(got[:, 4:] - ref[:, 4:]).max()))
ok(dbox < 2e-3 and dscore < 1e-5, "raw head outputs of images 1..3 = PyTorch's: boxes within %.1e px, "
   "scores within %.1e" % (dbox, dscore))

with open(os.path.join(mdir, "reference", "torch_val200_first20.json")) as f:
    ref = json.load(f)
for op in (16, 17):
    dets = decode.decode_dir(res[op], pre)
    key = lambda d: (d["image_id"], d["category_id"], -d["score"])  # noqa: E731
    a, b = sorted(dets, key=key), sorted(ref, key=key)
    same_n = len(a) == len(b) and all((x["image_id"], x["category_id"]) == (y["image_id"], y["category_id"])
                                     for x, y in zip(a, b))
    db = max((abs(u - v) for x, y in zip(a, b) for u, v in zip(x["bbox"], y["bbox"])), default=0.0) if same_n else -1
    ds = max((abs(x["score"] - y["score"]) for x, y in zip(a, b)), default=0.0) if same_n else -1
    ok(same_n and db < 5e-3 and ds < 1e-5,
       "opset %d: decoded (conf 0.001, IoU 0.7, max_det 300) = PyTorch's %d detections of images 1..%d "
       "(boxes within %.1e px, scores %.1e)" % (op, len(b), N, db, ds),
       "parity %d detections, PyTorch %d" % (len(a), len(b)))
    js = os.path.join(tmp, "dets%d.json" % op)
    with open(js, "w") as f:
        json.dump(dets, f)
    rc, _, err = run("map-eval", "--gt", gt, "--dt", js, "-q", "-j", js + ".stats")
    rc2, _, err2 = run("map-eval", "--gt", gt, "--dt", os.path.join(mdir, "reference", "torch_val200_first20.json"),
                       "-q", "-j", js + ".torch")
    if rc == 0 and rc2 == 0:
        with open(js + ".stats") as f:
            ap = json.load(f)["stats"]["AP"]
        with open(js + ".torch") as f:
            ap_t = json.load(f)["stats"]["AP"]
        ok(abs(ap - ap_t) < 1e-4 and ap >= 0.6, "opset %d: mAP on images 1..%d: parity %.4f, PyTorch %.4f (>= 0.60)"
           % (op, N, ap, ap_t))
    else:
        ok(False, "opset %d: map-eval" % op, err + err2)
shutil.rmtree(tmp, ignore_errors=True)
done()
