#!/usr/bin/python3
# compare --detection: a detector's outputs matched by detection. The cases
# are built so the answer is known by construction: the reference's
# detections reordered (as TopK does with near-ties) and moved by a known
# amount, one removed (missed), one added (extra), one relabelled (a label
# flip), detections below the score floor dropped or added (not counted).
# IoU and drifts of the matched pairs are computed here with numpy from the
# construction, not by re-running the matching.
import json
import shutil
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done, bindir
from compare_util import save_set

rng = np.random.default_rng(17)
tmp = tempfile.mkdtemp(prefix="parity-detmatch-")
compare = os.path.join(bindir(), "compare")
N = 100


def reference(k):
    """k well-separated boxes on a grid (no two overlap), scores 0.9..0.35, then filler below 0.3."""
    boxes = np.zeros((N, 4), np.float32)
    for i in range(k):
        x, y = (i % 10) * 64.0, (i // 10) * 64.0
        boxes[i] = [x + 4, y + 4, x + 44, y + 40]
    boxes[k:] = [700, 700, 710, 710]
    scores = np.concatenate([np.linspace(0.9, 0.35, k), np.full(N - k, 0.01)]).astype(np.float32)
    labels = (np.arange(N) % 6).astype(np.int64)
    return labels, boxes, scores


def save(d, labels, boxes, scores, sample="s0"):
    save_set(os.path.join(d, sample), {"labels": labels[None], "boxes": boxes[None], "scores": scores[None]})


def iou(p, q):
    w = np.minimum(p[:, 2], q[:, 2]) - np.maximum(p[:, 0], q[:, 0])
    h = np.minimum(p[:, 3], q[:, 3]) - np.maximum(p[:, 1], q[:, 1])
    inter = np.clip(w, 0, None) * np.clip(h, 0, None)
    area = lambda b: (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    return inter / (area(p) + area(q) - inter)


def run(a, b, extra=""):
    out = os.path.join(tmp, "out.json")
    r = subprocess.run([compare, a, b, "--detection", "labels=labels,boxes=boxes,scores=scores" + extra, "--json", out, "-q"],
                       capture_output=True, text=True)
    return r, (json.load(open(out)) if os.path.exists(out) else None)


K = 30
lab, box, sc = reference(K)
ref = os.path.join(tmp, "ref")
save(ref, lab, box, sc)

# 1. reordered and moved by known amounts: every detection matched, elementwise differs
perm = rng.permutation(K)
shift = rng.uniform(-1.5, 1.5, (K, 4)).astype(np.float32)
dscore = rng.uniform(-0.004, 0.004, K).astype(np.float32)
b2, s2, l2 = box.copy(), sc.copy(), lab.copy()
b2[:K] = (box[:K] + shift)[perm]
s2[:K] = (sc[:K] + dscore)[perm]
l2[:K] = lab[:K][perm]
cell = os.path.join(tmp, "swap")
save(cell, l2, b2, s2)
r, j = run(cell, ref)
d = j and j["detections"]
exp_iou = iou(box[:K] + shift, box[:K]).astype(np.float64)
ok(r.returncode == 0 and d and d["matched_all"] == N and d["matched"] == K and d["missed"] == 0 and d["extra"] == 0 and d["label_flips"] == 0,
   "reordered detections all match, exit 0 (%s)" % (d and {k: d[k] for k in ("matched", "missed", "extra")}), r.stderr)
ok(d and abs(d["iou"]["min"] - exp_iou.min()) < 1e-5 and abs(d["iou"]["mean"] - exp_iou.mean()) < 1e-5,
   "IoU of the matched pairs as constructed (min %.5f, mean %.5f)" % (exp_iou.min(), exp_iou.mean()))
exp_box = np.abs(shift).max(axis=1)
exp_sc = np.abs((sc[:K] + dscore) - sc[:K])
ok(d and abs(d["box_drift"]["max"] - exp_box.max()) < 1e-5 and abs(d["score_drift"]["max"] - exp_sc.max()) < 1e-6,
   "box drift %.4f px and score drift %.5f as constructed" % (exp_box.max(), exp_sc.max()))
elem = j and max(t["abs"]["max"] for t in j["tensors"] if t["name"] == "boxes")
ok(j and elem > 50 and j["passed_elementwise"] is False and j["passed"] is True,
   "element-wise the same detections differ by %.0f px (kept, not the verdict)" % (elem or 0))

# 2. one missed, one extra, one label flip, and changes below the floor
b3, s3, l3 = box.copy(), sc.copy(), lab.copy()
b3[3] = [600, 600, 640, 640]; s3[3] = 0.1    # reference det 3 lost (elsewhere, below the floor): missed
b3[K] = [660, 660, 700, 700]; s3[K] = 0.8    # a new confident box: extra
l3[5] = (lab[5] + 1) % 6                     # same box, other class: a label flip
s3[K + 1] = 0.2; b3[K + 1] = [600, 10, 630, 40]   # a new box below the floor: not counted
cell = os.path.join(tmp, "changed")
save(cell, l3, b3, s3)
r, j = run(cell, ref)
d = j and j["detections"]
ok(r.returncode == 1 and d and (d["missed"], d["extra"], d["label_flips"]) == (1, 1, 1) and d["passed"] is False,
   "missed 1, extra 1, label flips 1, exit 1 (%s)" % str(d and (d["missed"], d["extra"], d["label_flips"])), r.stderr)
ok(d and d["reference_above_floor"] == K and d["above_floor"] == K - 1 + 1, "detections above the floor counted on each side")

# 3. the IoU threshold: a box moved to IoU 0.4 matches at iou=0.3, not at 0.5
b4 = box.copy()
w = box[0, 2] - box[0, 0]
# shift right by t*w gives IoU (1-t)/(1+t); 0.4 -> t = 3/7
b4[0, [0, 2]] += w * 3 / 7
cell = os.path.join(tmp, "moved")
save(cell, lab, b4, sc)
_, j5 = run(cell, ref)
_, j3 = run(cell, ref, ",iou=0.3")
ok(j5 and j3 and (j5["detections"]["missed"], j5["detections"]["extra"]) == (1, 1) and j3["detections"]["missed"] == 0,
   "IoU 0.40: unmatched at iou=0.5, matched at iou=0.3")

# 4. flat boxes (x1 == x2 == 640: clipped to a border, or FCOS's zero
#    distances): the flat axis is left out, so the same segment moved by
#    1 px of its 40 px matches at IoU 39/41 (an overlap of 39 over a union
#    of 41); one on another line (x = 600) does not match
b6, r6 = box.copy(), box.copy()
r6[0] = [640, 100, 640, 140]; b6[0] = [640, 101, 640, 141]
r6[1] = [640, 200, 640, 240]; b6[1] = [600, 200, 600, 240]
a, b = os.path.join(tmp, "flat_a"), os.path.join(tmp, "flat_b")
save(a, lab, b6, sc)
save(b, lab, r6, sc)
_, j = run(a, b)
d = j and j["detections"]
ok(d and d["matched"] == K - 1 and d["missed"] == 1 and d["extra"] == 1 and abs(d["iou"]["min"] - 39 / 41) < 1e-9,
   "flat boxes on the same line match by their other axis (IoU %s), not on another line"
   % (d and d["iou"]["min"]))

# 5. formats and bad specs
cx = np.stack([(box[:, 0] + box[:, 2]) / 2, (box[:, 1] + box[:, 3]) / 2, box[:, 2] - box[:, 0], box[:, 3] - box[:, 1]], 1)
a, b = os.path.join(tmp, "cx_a"), os.path.join(tmp, "cx_b")
save(a, l2, np.concatenate([cx[:K][perm], cx[K:]]), s2)
save(b, lab, cx, sc)
r, j = run(a, b, ",format=cxcywh")
ok(r.returncode == 0 and j["detections"]["matched_all"] == N, "cxcywh boxes are converted before IoU")
for spec in ["labels=labels,boxes=boxes", "labels=labels,boxes=boxes,scores=scores,iou=2", "labels=x,boxes=boxes,scores=scores,bogus=1"]:
    r = subprocess.run([compare, ref, ref, "--detection", spec], capture_output=True, text=True)
    ok(r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, "refused: --detection %s (%s)" % (spec, r.stderr.strip()))
r = subprocess.run([compare, ref, ref, "--detection", "labels=nope,boxes=boxes,scores=scores"], capture_output=True, text=True)
ok(r.returncode == 2 and "nope" in r.stderr, "a missing tensor is named, exit 2 (%s)" % r.stderr.strip())

# 6. nothing to judge (issue 39): a reference with no detection at or above
# the floor passes whatever the candidate holds unless that is a failure of
# its own: NaN boxes, no detections, negated labels each exit 1, "judged": false
low = sc * 0.05                       # the best reference score 0.045, below the floor 0.3
lowref = os.path.join(tmp, "lowref")
save(lowref, lab, box, low)
bad_outputs = {"NaN boxes": (lab, np.full_like(box, np.nan), low), "no detections": (lab[:0], box[:0], low[:0]),
               "negated labels": (-lab, box, low), "the reference itself": (lab, box, low)}
for what, (l3, b3, s3) in bad_outputs.items():
    cand = os.path.join(tmp, "bad-" + what.replace(" ", "_"))
    save(cand, l3, b3, s3)
    r, j = run(cand, lowref)
    d = j and j["detections"]
    ok(r.returncode == 1 and j and j["passed"] is False and j["judged"] is False and d["judged"] is False
       and d["reference_above_floor"] == 0 and "score floor 0.3" in j["not_judged"] and abs(d["reference_best_score"] - 0.045) < 1e-6,
       "reference all below the floor, candidate %s: not judged, exit 1, the reference's best score named" % what,
       r.stdout + r.stderr + json.dumps(j)[:400])
r, j = run(os.path.join(tmp, "bad-NaN_boxes"), lowref, ",score_floor=0.04")
above = int((low >= np.float32(0.04)).sum())
ok(r.returncode == 1 and j["judged"] is True and j["detections"]["missed"] == above > 0,
   "the same NaN boxes against a floor under the reference's scores: judged, the %d reference detections above it missed" % above, json.dumps(j and j["detections"])[:300])
r, j = run(lowref, lowref, ",score_floor=0.04")
ok(r.returncode == 0 and j["judged"] is True and j["passed"] is True, "and the reference against itself passes there")
emptyref = os.path.join(tmp, "emptyref")
save(emptyref, lab[:0], box[:0], sc[:0])
r, j = run(emptyref, emptyref)
ok(r.returncode == 1 and j["judged"] is False and "no detection" in j["not_judged"], "no detection on either side: not judged, exit 1",
   r.stdout + json.dumps(j)[:300])
shutil.rmtree(tmp)
done()
