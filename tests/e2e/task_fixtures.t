#!/usr/bin/python3
# The task path end to end (issue 35): `make validate` on the three generated
# task fixtures (configs/models/task-*.yaml), each reference metric checked
# against an independent numpy forward pass of the fixture model and numpy /
# scikit-image metrics; results.json's task headline and its "elementwise"
# key; then report's judging of task metrics on hand-made results
# (metric_drop per metric, min_metric, max_metric, the verdict naming the
# change "fp16: −6.10 dB PSNR").
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "stage"))
from tap import ok, done, run  # noqa: E402

os.chdir(REPO)
tmp = tempfile.mkdtemp(prefix="task-fixtures.")


def validate(model):
    shutil.rmtree(os.path.join("build", model), ignore_errors=True)
    shutil.rmtree(os.path.join("reports", model), ignore_errors=True)
    p = subprocess.run(["make", "-s", "validate", "MODEL=" + model], capture_output=True, text=True)
    res = os.path.join("reports", model, "results.json")
    return p.returncode, p.stdout + p.stderr, json.load(open(res)) if os.path.exists(res) else None


def cells(r):
    return {c["name"]: c for c in r["cells"]}


def inputs(fx):
    d = os.path.join("build", "models", fx, "input")
    return {s: np.load(os.path.join(d, s, "images.npy")) for s in sorted(os.listdir(d))}


# ---- classification ----
rc, out, r = validate("task-classification")
ok(rc == 0 and r and r["verdict"] == "PASS", "task-classification validates and passes", out)
if r:
    import onnx
    from onnx import numpy_helper
    m = onnx.load("build/models/task_classification/model.onnx")
    w = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    labels = json.load(open("build/models/task_classification/labels.json"))
    top1 = []
    for s, x in inputs("task_classification").items():
        logits = w["fc.weight"] @ x[0].mean(axis=(1, 2)) + w["fc.bias"]
        top1.append(int(np.argsort(-logits, kind="stable")[0]) == labels[s + ".png"])
    ref = cells(r)["inputs__fp32"]
    ok(abs(ref["task"]["value"] - 100 * np.mean(top1)) < 1e-6 and 0 < np.mean(top1) < 1,
       "the reference's top-1 (%.2f %%) equals numpy's forward pass and argsort" % (100 * np.mean(top1)), ref["task"])
    ok(all("elementwise" in c and "max_abs_error" not in c for c in r["cells"]) and ref["task"]["metrics"]["top1_flips"]["value"] == 0,
       "task cells keep element-wise statistics under 'elementwise'; the reference has 0 flips", ref)

# ---- segmentation ----
rc, out, r = validate("task-segmentation")
ok(rc == 0 and r and r["verdict"] == "PASS", "task-segmentation validates and passes", out)
if r:
    m = onnx.load("build/models/task_segmentation/model.onnx")
    w = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    C = 3
    cm = np.zeros((C, C), np.int64)
    for s, x in inputs("task_segmentation").items():
        logits = np.einsum("oc,chw->ohw", w["head.weight"][:, :, 0, 0], x[0]) + w["head.bias"][:, None, None]
        pred = np.argmax(logits, axis=0).reshape(-1)
        gt = np.array(Image.open("build/models/task_segmentation/gt/%s.png" % s)).reshape(-1).astype(np.int64)
        keep = gt != 255
        cm += np.bincount(gt[keep] * C + pred[keep], minlength=C * C).reshape(C, C)
    tp = np.diag(cm)
    miou = 100 * np.nanmean(tp / (cm.sum(0) + cm.sum(1) - tp))
    ref = cells(r)["inputs__fp32"]
    ok(abs(ref["task"]["value"] - miou) < 1e-6, "the reference's mIoU (%.2f) equals a numpy confusion matrix over numpy's forward pass" % miou,
       ref["task"])
    ok("mIoU" in open("reports/task-segmentation/summary.md").read(), "the report's grid names mIoU")

# ---- restoration ----
rc, out, r = validate("task-restoration")
ok(rc == 0 and r and r["verdict"] == "PASS" and "fp16 (−" in r["verdict_line"] and "dB PSNR)" in r["verdict_line"],
   "task-restoration passes with fp16 an expected failure named by its PSNR loss (%s)" % (r or {}).get("verdict_line"), out)
if r:
    c = cells(r)
    f16, mixed = c["inputs__fp16"], c["inputs__mixed"]
    ok(f16["outcome"] == "XFAIL" and f16["task"]["delta"] < -10 and f16["task"]["unit"] == "dB",
       "fp16 loses more than 10 dB PSNR (%.2f) and is XFAIL" % f16["task"]["delta"], f16["task"])
    ok(mixed["outcome"] == "PASS" and abs(mixed["task"]["delta"]) < 0.1, "mixed (the overflow pinned to fp32) keeps the PSNR", mixed["task"])
    try:
        from skimage.metrics import peak_signal_noise_ratio
        ps = []
        for s, x in inputs("task_restoration").items():
            out_np = np.load("build/task-restoration/cells/inputs__fp32/out/%s/restored.npy" % s)[0]
            img = np.round(np.clip(out_np, 0, 1) * np.float32(255)).astype(np.uint8).transpose(1, 2, 0)
            clean = np.array(Image.open("build/models/task_restoration/clean/%s.png" % s))
            ps.append(peak_signal_noise_ratio(clean, img, data_range=255))
        ok(abs(np.mean(ps) - c["inputs__fp32"]["task"]["value"]) < 1e-6, "the reference's PSNR equals scikit-image's on its outputs")
    except ImportError:
        ok(False, "scikit-image is installed (tools/deps.sh)")

# ---- judging task metrics on hand-made results ----
j = os.path.join(tmp, "j")
def task_json(cell, psnr, ssim):
    os.makedirs(os.path.join(j, cell), exist_ok=True)
    json.dump({"task": "restoration", "metrics": {"psnr": {"value": psnr, "unit": "dB", "better": "higher"},
                                                  "ssim": {"value": ssim, "unit": "", "better": "higher"}}},
              open(os.path.join(j, cell, "task.json"), "w"))
    return os.path.join(j, cell, "task.json")
plan = {"model": "judge", "onnx": "m.onnx", "reference": "in__fp32", "task": "restoration", "task_metric": "psnr",
        "variants": ["in"], "precisions": [{"name": "fp32"}, {"name": "fp16"}, {"name": "bf16"}],
        "thresholds": {"require_compare": False, "max_metric_drop": {"psnr": 1.0, "ssim": 0.01}, "min_metric": {"psnr": 30}},
        "cells": [
            {"name": "in__fp32", "variant": "in", "precision": "fp32", "is_reference": True, "task": task_json("r", 32.2, 0.95),
             "checks": ["min_metric", "finite"], "expected_failure": None},
            {"name": "in__fp16", "variant": "in", "precision": "fp16", "is_reference": False, "task": task_json("h", 26.1, 0.90),
             "checks": ["metric_drop", "finite"], "expected_failure": None},
            {"name": "in__bf16", "variant": "in", "precision": "bf16", "is_reference": False, "task": task_json("b", 31.5, 0.945),
             "checks": ["metric_drop", "finite"], "expected_failure": None}]}
json.dump(plan, open(os.path.join(j, "plan.json"), "w"))
run("report", "--plan", os.path.join(j, "plan.json"), "-o", os.path.join(j, "out"))
rc, v, err = run("report", "--verdict", os.path.join(j, "out", "results.json"))
ok(rc == 1 and "FAIL — 2 checks failed (fp16: \u22126.10 dB PSNR)" in v,
   "a PSNR and an SSIM drop fail the fp16 cell; the verdict names the change", v + err)
res = json.load(open(os.path.join(j, "out", "results.json")))
ok(cells(res)["in__bf16"]["outcome"] == "PASS" and "bf16" not in v, "bf16, within both allowances, passes and is not listed", v)
h = cells(res)["in__fp16"]["task"]
ok(abs(h["delta"] + 6.1) < 1e-6 and abs(h["metrics"]["ssim"]["delta"] + 0.05) < 1e-6 and h["metric"] == "psnr",
   "results.json: the cell's headline is its PSNR change, every metric with its delta", h)
plan["thresholds"]["min_metric"] = {"psnr": 33}
json.dump(plan, open(os.path.join(j, "plan.json"), "w"))
run("report", "--plan", os.path.join(j, "plan.json"), "-o", os.path.join(j, "out"))
rc, v, err = run("report", "--verdict", os.path.join(j, "out", "results.json"))
ok(rc == 1 and "reference 32.20 dB PSNR is below the required 33" in v, "a reference below min_metric fails", v)

shutil.rmtree(tmp)
done()
