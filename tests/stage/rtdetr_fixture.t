#!/usr/bin/python3
# The RT-DETR-shaped fixture exported by PyTorch at opsets 16 and 17
# (tests/fixtures/rtdetr-tiny, made on a GPU machine by
# models/fixtures/make_rtdetr_tiny.py): parity's FP32 engine agrees with
# ONNX Runtime's outputs recorded there within 1e-4 relative, and every
# reduced precision runs end to end.
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done, run

fx = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "rtdetr-tiny")
tmp = tempfile.mkdtemp(prefix="parity-rtdetr-")


def load(d):
    return {f[:-4]: np.load(os.path.join(d, f)) for f in os.listdir(d) if f.endswith(".npy")}


for op in (16, 17):
    model = os.path.join(fx, "rtdetr_tiny_op%d.onnx" % op)
    ort = load(os.path.join(fx, "ort_op%d" % op))
    eng = os.path.join(tmp, "op%d.engine" % op)
    rc, _, err = run("build-engine", model, "-o", eng)
    if not ok(rc == 0, "opset %d: builds" % op, err):
        continue
    out = os.path.join(tmp, "op%d.out" % op)
    rc, _, err = run("infer", eng, "-i", os.path.join(fx, "input"), "-o", out, "--threads", "2")
    if not ok(rc == 0, "opset %d: runs" % op, err):
        continue
    got = load(out)
    ok(np.array_equal(got["labels"], ort["labels"]) and got["labels"].dtype == np.int64,
       "opset %d: labels equal ONNX Runtime's" % op)
    for k in ("boxes", "scores"):
        rel = np.max(np.abs(got[k].astype(np.float64) - ort[k])) / np.max(np.abs(ort[k]))
        ok(rel < 1e-4, "opset %d: %s within 1e-4 relative of ONNX Runtime (%.2e)" % (op, k, rel))
    for prec in ("tf32", "fp16", "bf16"):
        e2 = os.path.join(tmp, "op%d.%s.engine" % (op, prec))
        o2 = os.path.join(tmp, "op%d.%s.out" % (op, prec))
        rc, _, err = run("build-engine", model, "-o", e2, "--precision", prec)
        if rc == 0:
            rc, _, err = run("infer", e2, "-i", os.path.join(fx, "input"), "-o", o2)
        ok(rc == 0 and all(np.all(np.isfinite(v)) for v in load(o2).values()),
           "opset %d: %s runs end to end with finite outputs" % (op, prec), err)
done()
