#!/usr/bin/python3
# The bundled RT-DETR (models/rtdetr) on the first 20 images of shapes-val-200,
# through parity's own stages (gen-shapes -> preprocess -> build-engine ->
# infer -> map-eval). The oracle is PyTorch: the trained model's detections on
# the same images, computed on the GPU machine by models/rtdetr/train.py (CPU,
# fp32, Pillow preprocessing) and kept in models/rtdetr/reference/. Checks:
# the official interface of both exports, parity FP32 detections = PyTorch's
# (scores, boxes, labels), the same mAP, opset 16 = opset 17, and the seed
# case: a misaligned preprocessing (letterbox-114) loses >= 2 AP points.
import hashlib
import json
import os
import shutil
import sys
import tempfile

import numpy as np
import onnx

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done, run

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
mdir = os.path.join(root, "models", "rtdetr")
tmp = tempfile.mkdtemp(prefix="parity-shapes-model-")
N = 20
models = {op: os.path.join(mdir, "rtdetr_shapes_op%d.onnx" % op) for op in (16, 17)}

# The official deploy interface.
for op, path in models.items():
    m = onnx.load(path)
    ins = {i.name: (i.type.tensor_type.elem_type, [d.dim_value for d in i.type.tensor_type.shape.dim])
           for i in m.graph.input}
    outs = {o.name: o.type.tensor_type.elem_type for o in m.graph.output}
    ops = {n.op_type for n in m.graph.node}
    ok(ins == {"images": (onnx.TensorProto.FLOAT, [1, 3, 320, 320]),
               "orig_target_sizes": (onnx.TensorProto.INT64, [1, 2])}
       and outs == {"labels": onnx.TensorProto.INT64, "boxes": onnx.TensorProto.FLOAT,
                    "scores": onnx.TensorProto.FLOAT},
       "opset %d: inputs images/orig_target_sizes, outputs labels/boxes/scores" % op)
    ln = "LayerNormalization" in ops
    ok(m.opset_import[0].version == op and {"TopK", "GridSample", "Sigmoid", "Mod"} <= ops
       and (ln if op == 17 else not ln and {"ReduceMean", "Pow", "Sqrt"} <= ops),
       "opset %d: TopK/Sigmoid/Mod postprocessing, GridSample, LayerNorm %s" %
       (op, "as LayerNormalization" if op == 17 else "decomposed"))
total = sum(os.path.getsize(p) for p in models.values())
ok(total < 40 * 2 ** 20, "the two exports total %.1f MiB < 40 MiB" % (total / 2 ** 20))

# Ground truth and inputs.
val = os.path.join(tmp, "val")
rc, _, err = run("gen-shapes", "--split", "val", "--count", N, "-o", val)
gt = os.path.join(val, "annotations.json")
ok(rc == 0, "gen-shapes: the first %d images of shapes-val-200" % N, err)
dec = os.path.join(tmp, "decode.yaml")
with open(dec, "w") as f:
    f.write("label_map: [1, 2, 3, 4, 5, 6]\n")


def pipeline(variant, op, tag):
    pre = os.path.join(tmp, "pre-" + variant)
    if not os.path.isdir(pre):
        rc, _, err = run("preprocess", "--config", os.path.join(root, "configs", "preprocess", variant + ".yaml"),
                         "--set", "resize.size=320x320", "--dataset", gt, "--images", os.path.join(val, "images"),
                         "-o", pre)
        if rc:
            return None, err
    eng = os.path.join(tmp, "op%d.engine" % op)
    if not os.path.exists(eng):
        rc, _, err = run("build-engine", models[op], "-o", eng)
        if rc:
            return None, err
    out = os.path.join(tmp, "out-%s-%d" % (variant, op))
    rc, _, err = run("infer", eng, "-i", pre, "-o", out, "--threads", "2")
    if rc:
        return None, err
    js = os.path.join(tmp, "map-%s.json" % tag)
    rc, _, err = run("map-eval", "--gt", gt, "--dt", out, "--meta", pre, "--decode", dec, "--section", ".",
                     "-q", "-j", js)
    if rc:
        return None, err
    with open(js) as f:
        return (out, json.load(f)["stats"]), ""


res16, err = pipeline("rtdetr-official", 16, "official16")
ok(res16 is not None, "official preprocessing, FP32 engine, opset 16: runs and is evaluated", err)

# PyTorch's detections on the same images.
with open(os.path.join(mdir, "reference", "torch_val200_first20.json")) as f:
    ref = json.load(f)
by_img = {}
for r in ref:
    by_img.setdefault(r["image_id"], []).append(r)
ok(sorted(by_img) == list(range(1, N + 1)) and all(len(v) == 100 for v in by_img.values()),
   "reference: 100 PyTorch detections for each of images 1..%d" % N)
if res16:
    out16 = res16[0]
    same_lab = total_lab = 0
    dscore = dbox = 0.0
    for iid, rs in by_img.items():
        d = os.path.join(out16, str(iid))
        lab, box, sc = (np.load(os.path.join(d, n + ".npy"))[0] for n in ("labels", "boxes", "scores"))
        tl = np.array([r["category_id"] - 1 for r in rs])
        tb = np.array([r["bbox"] for r in rs], dtype=np.float64)
        tb[:, 2:] += tb[:, :2]
        ts = np.array([r["score"] for r in rs])
        eq = lab == tl
        same_lab += int(eq.sum())
        total_lab += len(tl)
        dscore = max(dscore, float(np.abs(np.sort(sc) - np.sort(ts)).max()))
        dbox = max(dbox, float(np.abs(box[eq] - tb[eq]).max()))
    ok(same_lab >= 0.99 * total_lab, "labels in PyTorch's order: %d/%d equal" % (same_lab, total_lab))
    ok(dscore < 1e-4, "sorted scores within 1e-4 of PyTorch's (%.2e)" % dscore)
    ok(dbox < 0.05, "boxes of equal labels within 0.05 px of PyTorch's (%.2e)" % dbox)
    refjs = os.path.join(tmp, "torch.json")
    with open(refjs, "w") as f:
        json.dump(ref, f)
    rc, _, err = run("map-eval", "--gt", gt, "--dt", refjs, "-q", "-j", os.path.join(tmp, "map-torch.json"))
    with open(os.path.join(tmp, "map-torch.json")) as f:
        ap_t = json.load(f)["stats"]["AP"]
    ap16 = res16[1]["AP"]
    ok(rc == 0 and abs(ap16 - ap_t) < 0.005, "mAP: parity FP32 %.4f, PyTorch %.4f" % (ap16, ap_t), err)
    ok(ap16 >= 0.6, "the trained model: AP %.3f >= 0.60 on these images" % ap16)

    res17, err = pipeline("rtdetr-official", 17, "official17")
    ok(res17 is not None and abs(res17[1]["AP"] - ap16) < 0.002,
       "opset 17 (LayerNormalization): same mAP as opset 16", err)

    lb, err = pipeline("letterbox-114", 16, "letterbox")
    ok(lb is not None and lb[1]["AP"] <= ap16 - 0.02,
       "seed case: letterbox-114 instead of the official stretch loses >= 2 AP points (%.3f -> %.3f)"
       % (ap16, lb[1]["AP"] if lb else float("nan")), err)

# The committed files are those PROVENANCE.md describes.
with open(os.path.join(mdir, "PROVENANCE.md")) as f:
    prov = f.read()
for op, path in models.items():
    with open(path, "rb") as f:
        h = hashlib.sha256(f.read()).hexdigest()
    ok(h in prov, "opset %d: sha256 recorded in PROVENANCE.md" % op)
shutil.rmtree(tmp, ignore_errors=True)
done()
