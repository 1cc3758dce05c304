#!/usr/bin/python3
# compare --detection head=...: a raw YOLO head on both sides is decoded
# (coco/yolo.c) and then matched by detection. Known by construction: the
# reference head holds K well-separated objects, each a few near-duplicate
# anchors of one class (NMS keeps one) and low-scoring background; the cell
# is the same head with its anchors permuted and the boxes moved a little
# (every object matched, element-wise wildly different), then with one
# object gone (missed), one added (extra) and one relabelled (a label
# flip). The IoU of the matched pairs is computed here from the decodings
# of the numpy reference (tests/stage/yolo_ref.py), object by object.
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done, bindir
from compare_util import save_set
import yolo_ref

rng = np.random.default_rng(3535)
tmp = tempfile.mkdtemp(prefix="parity-cmpyolo-")
compare = os.path.join(bindir(), "compare")
F = np.float32
K, DUP, NC, N = 12, 4, 5, 400


def reference():
    """[N, 4+NC] rows: object k at anchors k*DUP.. (k*DUP + DUP - 1), class k % NC, on a 4x3 grid."""
    x = np.zeros((N, 4 + NC), F)
    x[:, :4] = np.stack([rng.uniform(0, 640, N), rng.uniform(0, 640, N), rng.uniform(5, 30, N), rng.uniform(5, 30, N)], 1)
    x[:, 4:] = rng.uniform(0, 0.2, (N, NC)) * (rng.uniform(size=(N, NC)) < 0.2)    # background: below the floor
    for k in range(K):
        cx, cy = 80 + 160 * (k % 4), 100 + 200 * (k // 4)
        for d in range(DUP):
            a = k * DUP + d
            x[a, :4] = [cx + d * 0.5, cy - d * 0.5, 90 + d, 70 - d]
            x[a, 4:] = 0
            x[a, 4 + k % NC] = 0.9 - 0.05 * d - 0.01 * k
    return x


def save(d, rows, sample="s0"):
    save_set(os.path.join(d, sample), {"output0": np.ascontiguousarray(rows.T[None])})


def run(a, b, extra=""):
    out = os.path.join(tmp, "out.json")
    if os.path.exists(out):
        os.remove(out)
    r = subprocess.run([compare, a, b, "--detection", "head=yolov8" + extra, "--json", out, "-q"],
                       capture_output=True, text=True)
    return r, (json.load(open(out)) if os.path.exists(out) else None)


def top(rows):
    """The reference decoding's detections above the floor 0.3: {class: box}."""
    dets = yolo_ref.decode(rows.T[None], "yolov8")
    return [(c, b) for b, s, c, _ in dets if s >= 0.3]


def iou(p, q):
    p, q = p.astype(np.float64), q.astype(np.float64)
    w = min(p[2], q[2]) - max(p[0], q[0])
    h = min(p[3], q[3]) - max(p[1], q[1])
    inter = max(w, 0) * max(h, 0)
    return inter / ((p[2] - p[0]) * (p[3] - p[1]) + (q[2] - q[0]) * (q[3] - q[1]) - inter)


ref_rows = reference()
ref = os.path.join(tmp, "ref")
save(ref, ref_rows)
ok(len(top(ref_rows)) == K, "the reference head decodes to one detection per object above the floor (%d)" % len(top(ref_rows)))

# 1. anchors permuted, boxes moved by up to 2 px: every object matched
perm = rng.permutation(N)
moved = ref_rows.copy()
moved[:, :4] += rng.uniform(-2, 2, (N, 4)).astype(F)
cell_rows = moved[perm]
cell = os.path.join(tmp, "perm")
save(cell, cell_rows)
r, j = run(cell, ref)
d = j and j["detections"]
pairs = [(iou(b, rb)) for (c, b), (rc, rb) in zip(sorted(top(cell_rows), key=lambda t: (t[0], t[1][0])),
                                                    sorted(top(ref_rows), key=lambda t: (t[0], t[1][0])))]
ok(r.returncode == 0 and d and (d["matched"], d["missed"], d["extra"], d["label_flips"]) == (K, 0, 0, 0),
   "permuted and moved: %d objects matched, exit 0 (%s)" % (K, d and (d["matched"], d["missed"], d["extra"])), r.stderr)
ok(d and abs(d["iou"]["min"] - min(pairs)) < 1e-9 and abs(d["iou"]["mean"] - np.mean(pairs)) < 1e-9,
   "IoU of the matched pairs as the reference decodings give (min %.6f)" % min(pairs), d and d["iou"])
ok(j and j["passed_elementwise"] is False and j["passed"] is True and "head=yolov8" in d.get("decoded", ""),
   "element-wise the heads differ; judged by decoded detections")

# 2. one object gone, one new, one relabelled
ch = ref_rows.copy()
ch[0:DUP, 4:] = 0                             # object 0: missed
ch[DUP:2 * DUP, 4:] = ch[DUP:2 * DUP, 4:][:, [4, 0, 1, 2, 3]]   # object 1: class 1 -> 2, a label flip
ch[N - 1, :4] = [600, 600, 60, 60]            # a new confident box: extra
ch[N - 1, 4:] = 0
ch[N - 1, 7] = 0.8
cell = os.path.join(tmp, "changed")
save(cell, ch)
r, j = run(cell, ref)
d = j and j["detections"]
ok(r.returncode == 1 and d and (d["missed"], d["extra"], d["label_flips"]) == (1, 1, 1),
   "missed 1, extra 1, label flips 1, exit 1 (%s)" % str(d and (d["missed"], d["extra"], d["label_flips"])), r.stderr)

# 3. the decoding settings reach compare: conf_threshold above every score leaves nothing to match
r, j = run(cell, ref, ",conf_threshold=0.95")
d = j and j["detections"]
ok(r.returncode == 0 and d and d["matched_all"] == 0 and d["reference_above_floor"] == 0, "conf_threshold=0.95: no detections")

# 4. bad specs and heads: exit 2, one line
for spec, needle in [("head=yolov8,labels=l", "output="), ("head=yolov9", "yolov9"), ("head=yolov8,nms_iou=2", "nms_iou"),
                     ("head=yolov8,output=nope", "nope"), ("head=yolov5", "other layout")]:
    r = subprocess.run([compare, ref, ref, "--detection", spec], capture_output=True, text=True)
    ok(r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and needle in r.stderr,
       "refused: --detection %s (%s)" % (spec, r.stderr.strip()))
nan = ref_rows.copy()
nan[7, 5] = np.nan
bad = os.path.join(tmp, "nan")
save(bad, nan)
r = subprocess.run([compare, bad, ref, "--detection", "head=yolov8"], capture_output=True, text=True)
ok(r.returncode == 2 and "anchor 7" in r.stderr and "NaN" in r.stderr and "output0" in r.stderr,
   "a NaN score: exit 2 naming the sample, tensor and anchor (%s)" % r.stderr.strip())
shutil.rmtree(tmp)
done()
