#!/usr/bin/python3
# YOLO raw-head decoding (coco/yolo.c through map-eval --write-results)
# against the independent numpy reference tests/stage/yolo_ref.py, written
# from Ultralytics' / YOLOv5's non_max_suppression and torchvision's nms
# kernel: the decoded detections must be IDENTICAL (same order, image,
# category, every box coordinate and score bit for bit). The heads are
# generated with adversarial cases: score ties (order by candidate index
# decides which box survives), scores exactly at float32(conf), IoU pairs
# where the float32 IoU and the exact IoU fall on different sides of the
# threshold (mined here), IoU exactly at the threshold, one box in several
# classes, multi- and single-label, agnostic, max_det and max_nms caps,
# float16 heads, letterbox (both inverses) and stretch metas with clipping.
# Then the worked example of docs/metrics-detection.md, and bad input.
import json
import os
import shutil
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done, run, one_line_error
import yolo_ref

rng = np.random.default_rng(35)
tmp = tempfile.mkdtemp(prefix="parity-yolo-")
F = np.float32


def p(*a):
    return os.path.join(tmp, *a)


meta_for = yolo_ref.meta_for


# ---- heads ----

def iou32(a, b):
    """torchvision's float32 IoU of two float32 xyxy boxes, and the exact one (float64 of the same corners)."""
    def one(a, b, t):
        a, b = a.astype(t), b.astype(t)
        w = max(t(0), min(a[2], b[2]) - max(a[0], b[0]))
        h = max(t(0), min(a[3], b[3]) - max(a[1], b[1]))
        inter = w * h
        return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)
    return one(a, b, np.float32), one(a, b, np.float64)


def xyxy(c):
    c = np.asarray(c, F)
    return np.array([c[0] - c[2] / F(2), c[1] - c[3] / F(2), c[0] + c[2] / F(2), c[1] + c[3] / F(2)], F)


def mined_pairs(thr, want):
    """(A, B) xywh pairs whose float32 IoU is on the other side of thr than the exact IoU of the same
    float32 corners: random A, B the same size shifted in x to near the crossing, then slid one float32
    ulp at a time across it."""
    r = np.random.default_rng(1)
    out = []
    for _ in range(5000):
        base = np.array([r.uniform(50, 600), r.uniform(50, 400), r.uniform(10, 200), r.uniform(10, 200)], F)
        w = float(base[2])
        x = F(base[0] + w - thr * 2 * w / (1 + thr))      # the shift d with (w - d) h = thr (2wh - (w - d) h)
        for _ in range(20):
            x = np.nextafter(x, F(-np.inf))
        for _ in range(40):
            x = np.nextafter(x, F(np.inf))
            b = base.copy()
            b[0] = x
            f32, f64 = iou32(xyxy(base), xyxy(b))
            if (float(f32) > thr) != (f64 > thr):
                out.append((base, b))
                break
        if len(out) >= want:
            break
    return out


def offset_pairs(thr, cls, want):
    """(A, B) xywh pairs of class cls whose IoU decides '> thr' differently once both boxes are moved
    by cls * 7680 in float32 (Ultralytics' class offset), against their exact float32 IoU."""
    r = np.random.default_rng(2)
    out = []
    off = F(cls * 7680)
    while len(out) < want:
        base = np.array([r.uniform(50, 600), r.uniform(50, 400), r.uniform(10, 200), r.uniform(10, 200)], F)
        w = float(base[2])
        b = base.copy()
        b[0] = F(base[0] + w - thr * 2 * w / (1 + thr) + r.uniform(-0.05, 0.05))
        exact, _ = iou32(xyxy(base), xyxy(b))
        moved, _ = iou32(xyxy(base) + off, xyxy(b) + off)
        if (float(exact) > thr) != (float(moved) > thr):
            out.append((base, b))
    return out


def scene(n, nc, layout, rng, dtype=F, extra=()):
    """A random head: low background scores (some at and around float32(0.001)), clusters of boxes
    around a few objects with scores quantised to 1/64 (ties), anchors scoring in two classes, and the
    (anchor xywh, class, score) rows of `extra` placed first."""
    boxes = np.stack([rng.uniform(0, 640, n), rng.uniform(0, 480, n), rng.uniform(4, 200, n),
                      rng.uniform(4, 200, n)], 1).astype(F)
    cls = (rng.uniform(0, 0.0012, (n, nc)) * (rng.uniform(size=(n, nc)) < 0.3)).astype(F)
    thr_hits = rng.choice(n, 12, replace=False)
    cls[thr_hits, rng.integers(0, nc, 12)] = F(0.001)           # exactly float32(conf): not > conf
    cls[thr_hits[:6], 0] = np.nextafter(F(0.001), F(1))          # one ulp above: kept
    a = len(extra)
    for ob in range(6):                                          # objects: clusters of near-duplicates
        c = np.array([rng.uniform(40, 600), rng.uniform(40, 440), rng.uniform(20, 150), rng.uniform(20, 150)])
        k = int(rng.integers(5, 14))
        for _ in range(k):
            if a >= n:
                break
            boxes[a] = (c + rng.normal(0, [3, 3, 4, 4])).astype(F)
            cl = int(rng.integers(0, nc))
            cls[a, cl] = F(np.round(rng.uniform(0.3, 0.95) * 64) / 64)
            if rng.uniform() < 0.3:                               # the same box in a second class
                cls[a, (cl + 1) % nc] = F(np.round(rng.uniform(0.2, 0.9) * 64) / 64)
            a += 1
    for i, (xywh, cl, s) in enumerate(extra):
        boxes[i] = xywh
        cls[i] = 0
        cls[i, cl] = s
    boxes[:, 2:] = np.abs(boxes[:, 2:])
    if layout == "yolov8":
        raw = np.concatenate([boxes, cls], 1).T[None]
    else:
        obj = np.where(cls.max(1) > 0.2, rng.uniform(0.5, 1.0, n), rng.uniform(0, 0.003, n)).astype(F)
        obj[np.arange(len(extra))] = F(1)
        raw = np.concatenate([boxes, obj[:, None], cls], 1)[None]
    return np.ascontiguousarray(raw.astype(dtype))


# ---- running both ----

def write_run(name, samples, cfg, nc, tensor=None):
    """samples: list of (raw head, meta); returns (run dir, gt path, config path)."""
    root = p(name)
    shutil.rmtree(root, ignore_errors=True)
    imgs = []
    for k, (raw, meta) in enumerate(samples):
        d = os.path.join(root, "s%03d" % k)
        os.makedirs(d)
        np.save(os.path.join(d, (tensor or cfg.get("output", "output0")) + ".npy"), raw)
        m = dict(meta, image_id=k + 1)
        json.dump(m, open(os.path.join(d, "meta.json"), "w"))
        imgs.append({"id": k + 1, "width": meta["width"], "height": meta["height"], "file_name": "s%03d.png" % k})
    gt = {"images": imgs, "categories": [{"id": c + 1, "name": "c%d" % c} for c in range(nc)],
          "annotations": [{"id": k + 1, "image_id": k + 1, "category_id": 1, "bbox": [10, 10, 50, 50], "area": 2500,
                           "iscrowd": 0} for k in range(len(samples))]}
    gpath = p(name + ".gt.json")
    json.dump(gt, open(gpath, "w"))
    cpath = p(name + ".yaml")
    full = dict({"label_map": list(range(1, nc + 1))}, **cfg)
    with open(cpath, "w") as f:
        for k, v in full.items():
            f.write("%s: %s\n" % (k, json.dumps(v)))
    return root, gpath, cpath


def reference(samples, cfg):
    args = {k: cfg[k] for k in ("max_det", "max_nms", "multi_label", "agnostic") if k in cfg}
    if "conf_threshold" in cfg:
        args["conf"] = cfg["conf_threshold"]
    if "nms_iou" in cfg:
        args["iou"] = cfg["nms_iou"]
    out = []
    for k, (raw, meta) in enumerate(samples):
        for box, score, c, _ in yolo_ref.decode(raw, cfg["head"], **args):
            out.append({"image_id": k + 1, "category_id": c + 1,
                        "bbox": yolo_ref.to_original(box, meta, cfg.get("letterbox_inverse", "ultralytics"),
                                                     cfg.get("clip", True)),
                        "score": float(score)})
    return out


def check(name, samples, cfg, nc):
    root, gpath, cpath = write_run(name, samples, cfg, nc)
    res = p(name + ".results.json")
    rc, _, err = run("map-eval", "--gt", gpath, "--dt", root, "--decode", cpath, "--section", ".",
                     "--write-results", res, "-q")
    exp = reference(samples, cfg)
    if not ok(rc == 0, "%s: map-eval decodes" % name, err):
        return None
    got = json.load(open(res))
    same = len(got) == len(exp) and all(
        g["image_id"] == e["image_id"] and g["category_id"] == e["category_id"] and g["score"] == e["score"]
        and all(a == b for a, b in zip(g["bbox"], e["bbox"])) for g, e in zip(got, exp))
    first = next((i for i, (g, e) in enumerate(zip(got, exp)) if g != e), None)
    ok(same and len(exp) > 0, "%s: %d detections identical to the reference (order, ids, boxes, scores)"
       % (name, len(exp)), "got %d, expected %d; first difference at %s: %s vs %s" %
       (len(got), len(exp), first, first is not None and got[first], first is not None and exp[first]))
    return got


W = [(640, 480), (500, 333), (333, 500), (640, 640), (1000, 250), (123, 457)]


def samples_for(layout, nc, n, count, mode, dtype=F, extra=()):
    out = []
    for k in range(count):
        w, h = W[k % len(W)]
        out.append((scene(n, nc, layout, rng, dtype, extra if k == 0 else ()), meta_for(w, h, 640, 480 if k % 2 else 640, mode)))
    return out


# adversarial IoU pairs: the float32 IoU and the exact one disagree about "> 0.7" (or sit at float32(0.7))
pairs = mined_pairs(0.7, 8)
adv = []
flip = 0
for i, (a, b) in enumerate(pairs):
    f32, f64 = iou32(xyxy(a), xyxy(b))
    flip += (float(f32) > 0.7) != (f64 > 0.7)
    adv += [(a, 2, F(0.75)), (b, 2, F(0.75) if i % 2 else F(0.5))]     # ties too: the earlier anchor leads
ok(len(pairs) == 8 and flip == 8, "the mined pairs are adversarial: %d of %d decide '> 0.7' differently in float32"
   % (flip, len(pairs)))

cases = [
    ("v8-multi-letterbox", "yolov8", 7, 300, 6, "letterbox", {"head": "yolov8"}),
    ("v8-single-stretch", "yolov8", 7, 300, 6, "stretch", {"head": "yolov8", "multi_label": False}),
    ("v8-agnostic", "yolov8", 7, 300, 3, "letterbox", {"head": "yolov8", "agnostic": True, "nms_iou": 0.45}),
    ("v8-max-det", "yolov8", 7, 300, 3, "letterbox", {"head": "yolov8", "max_det": 7}),
    ("v8-max-nms", "yolov8", 7, 300, 3, "letterbox", {"head": "yolov8", "max_nms": 25, "conf_threshold": 0.0005}),
    ("v8-meta-inverse", "yolov8", 7, 300, 4, "letterbox", {"head": "yolov8", "letterbox_inverse": "meta"}),
    ("v8-noclip-conf", "yolov8", 7, 300, 3, "letterbox", {"head": "yolov8", "clip": False, "conf_threshold": 0.25}),
    ("v8-80-classes", "yolov8", 80, 400, 2, "letterbox", {"head": "yolov8", "nms_iou": 0.6}),
    ("v8-one-class", "yolov8", 1, 200, 2, "stretch", {"head": "yolov8"}),
    ("v5-multi", "yolov5", 7, 300, 6, "letterbox", {"head": "yolov5", "nms_iou": 0.6}),
    ("v5-single", "yolov5", 7, 300, 3, "stretch", {"head": "yolov5", "multi_label": False}),
]
for name, layout, nc, n, count, mode, cfg in cases:
    check(name, samples_for(layout, nc, n, count, mode, extra=adv if nc > 2 else ()), cfg, nc)
check("v8-float16", samples_for("yolov8", 7, 300, 3, "letterbox", dtype=np.float16), {"head": "yolov8"}, 7)
check("v8-float64", samples_for("yolov8", 7, 300, 2, "letterbox", dtype=np.float64), {"head": "yolov8"}, 7)

# the same settings as command-line options
s = samples_for("yolov8", 7, 300, 3, "letterbox", extra=adv)
cfg = {"head": "yolov8", "agnostic": True, "nms_iou": 0.45, "max_det": 40, "multi_label": False}
root, gpath, _ = write_run("cli", s, cfg, 7)
lm = p("cli-labels.json")
json.dump(list(range(1, 8)), open(lm, "w"))
res = p("cli.results.json")
rc, _, err = run("map-eval", "--gt", gpath, "--dt", root, "--head", "yolov8", "--agnostic", "true", "--nms-iou", "0.45",
                 "--max-det", "40", "--multi-label", "false", "--label-map", lm, "--write-results", res, "-q")
ok(rc == 0 and json.load(open(res)) == reference(s, cfg), "command-line options (--head, --agnostic, --nms-iou, "
   "--max-det, --multi-label) decode as the config keys do", err)

# Ultralytics' class offset (boxes + class * 7680, one NMS) rounds the coordinates: pairs of class 79
# where that flips the decision. Identical to the exact per-class reference, and unlike the offset one.
opairs = offset_pairs(0.7, 79, 6)
extra = []
for a, b in opairs:
    extra += [(a, 79, F(0.9)), (b, 79, F(0.8))]
s = samples_for("yolov8", 80, 400, 2, "letterbox", extra=extra)
got = check("class-offset-pairs", s, {"head": "yolov8"}, 80)
trick = [d for raw, _ in s[:1] for d in yolo_ref.decode(raw, "yolov8", offset_wh=7680)]
exact = [d for raw, _ in s[:1] for d in yolo_ref.decode(raw, "yolov8")]
key = lambda d: (d[3], d[2])
diff = len(set(map(key, trick)) ^ set(map(key, exact)))
ok(diff >= len(opairs), "the class offset would change %d detections of that image (%d mined pairs): the check tells "
   "exact per-class NMS from the offset trick" % (diff, len(opairs)))

# IoU exactly 0.5 (50 / 100) at nms_iou 0.5: not greater, both stay; a ">=" rule would drop one
half = [(np.array([5, 5, 10, 10], F), 0, F(0.9)), (np.array([5, 2.5, 10, 5], F), 0, F(0.8))]
s = samples_for("yolov8", 3, 50, 1, "stretch", extra=half)
got = check("iou-exactly-at-threshold", s, {"head": "yolov8", "nms_iou": 0.5}, 3)
ok(got is not None and sum(1 for d in got if d["score"] in (float(F(0.9)), float(F(0.8)))) == 2,
   "IoU exactly at the threshold suppresses nothing")

# ---- the worked example of docs/metrics-detection.md ----
ex = np.zeros((1, 4 + 2, 4), F)
ex[0, :4] = np.array([[100, 200, 100, 120], [100, 204, 100, 100], [20, 180, 100, 40], [40, 50, 20, 20]], F).T
ex[0, 4] = [0.9, 0.8, 0.0, 0.0]          # class 0
ex[0, 5] = [0.0, 0.8, 0.8, 0.0005]       # class 1
meta = meta_for(800, 600, 640, 640, "letterbox")
got = check("worked-example", [(ex, meta)], {"head": "yolov8", "num_classes": 2}, 2)   # 4 anchors < 6 values: say nc
# by hand: candidates (anchor, class) (0,0) 0.9, (1,0) 0.8, (1,1) 0.8, (2,1) 0.8; anchor 3 scores
# 0.0005 < 0.001. Class 0: (1,0) has IoU 10000 / 12000 = 0.83 > 0.7 with (0,0) and goes. Class 1:
# (1,1) comes before (2,1) (tie, earlier candidate) and their IoU 800 / 13200 keeps both. Letterbox
# 800x600 -> 640x640: gain 0.8, pad (0, 80); (2,1)'s x1 = -30 maps to -37.5 and is clipped to 0.
hand = [(0.9, 1, [62.5, 75, 125, 150]), (0.8, 2, [62.5, 92.5, 125, 125]), (0.8, 2, [0, 100, 87.5, 50])]
ok(got is not None and len(got) == 3 and all(
    d["score"] == float(F(sc)) and d["category_id"] == c and max(abs(a - b) for a, b in zip(d["bbox"], bb)) < 1e-9
    for d, (sc, c, bb) in zip(got, hand)), "worked example: the detections computed by hand", got)

# ---- bad input: exit 2, one line naming the file and the problem ----


def bad(name, raw, cfg, needles, nc=3, meta=None, tensor=None):
    root, gpath, cpath = write_run(name, [(raw, meta or meta_for(640, 480, 640, 640, "letterbox"))], cfg, nc, tensor)
    rc, _, err = run("map-eval", "--gt", gpath, "--dt", root, "--decode", cpath, "--section", ".", "-q")
    ok(one_line_error(rc, err, *needles), "bad input: %s" % name, "rc %d: %s" % (rc, err))


good = scene(50, 3, "yolov8", rng)
bad("rank 4", good[None], {"head": "yolov8"}, ["output0.npy", "rank 4"])
bad("batch of 2", np.concatenate([good, good]), {"head": "yolov8"}, ["output0.npy", "batch of 2"])
bad("label map shorter than the head", good, {"head": "yolov8", "label_map": [1, 2]}, ["output0.npy", "3 classes", "label map has 2"])
bad("num_classes mismatch", good, {"head": "yolov8", "num_classes": 80}, ["output0.npy", "num_classes is 80"])
bad("the other layout (transposed)", np.ascontiguousarray(good.transpose(0, 2, 1)), {"head": "yolov8"},
    ["output0.npy", "other layout"])
bad("v5 width too small", np.zeros((1, 10, 5), F), {"head": "yolov5"}, ["output0.npy", "width is 5"])
nan = good.copy()
nan[0, 5, 17] = np.nan
bad("NaN score", nan, {"head": "yolov8"}, ["output0.npy", "anchor 17", "class 1", "NaN"])
inf = good.copy()
inf[0, 4, 3] = np.inf
bad("infinite score", inf, {"head": "yolov8"}, ["output0.npy", "anchor 3", "infinite"])
nb = good.copy()
nb[0, 4, 9] = 0.9
nb[0, 2, 9] = np.nan
bad("NaN box of a candidate", nb, {"head": "yolov8"}, ["output0.npy", "anchor 9", "not finite"])
v5 = scene(40, 3, "yolov5", rng)
v5[0, 6, 4] = np.nan
bad("NaN objectness", v5, {"head": "yolov5"}, ["output0.npy", "anchor 6", "objectness", "NaN"])
bad("integer head", good.astype(np.int32), {"head": "yolov8"}, ["output0.npy", "int32"])
bad("no such tensor", good, {"head": "yolov8", "output": "head"}, ["'head'", "output:"], tensor="output0")
meta = meta_for(640, 480, 640, 640, "letterbox")
del meta["input_width"]
bad("letterbox meta without input_width", good, {"head": "yolov8"}, ["meta.json", "input_width"], meta=meta)
bad("score_threshold with a head", good, {"head": "yolov8", "score_threshold": 0.5}, ["conf_threshold"])
bad("unknown head", good, {"head": "yolov9"}, ["yolov9", "head"])
bad("nms_iou out of range", good, {"head": "yolov8", "nms_iou": 1.5}, ["nms_iou", "1.5"])
bad("max_det 0", good, {"head": "yolov8", "max_det": 0}, ["max_det"])
# a class-index file that does not match the head's width
lm = p("classes.json")
json.dump(list(range(1, 81)), open(lm, "w"))
bad("class file mismatch", good, {"head": "yolov8", "label_map": lm}, ["output0.npy", "3 classes", "classes.json", "has 80"])
lm = p("classes.yaml")
open(lm, "w").write("label_map: [1, 2]\n")
bad("class file mismatch (YAML)", good, {"head": "yolov8", "label_map": lm}, ["output0.npy", "classes.yaml", "has 2"])

shutil.rmtree(tmp)
done()
