#!/usr/bin/python3
# YOLOv8-seg masks and YOLOv8-pose keypoints (coco/yolo_task.c through
# map-eval --dt DIR --iou-type segm|keypoints --write-results) against the
# independent reference tests/stage/yolo_task_ref.py (PyTorch's bilinear rule
# for both resizes -- checked first against PyTorch's own interpolate where
# PyTorch is installed -- maskApi's RLE string rule written in Python,
# yolo_ref.py for the detections): every result must be IDENTICAL — the
# compressed RLE string, every keypoint value, box and score bit for bit.
# Heads and protos are random (float32 and float16), images of several
# sizes, letterboxed (both inverses) and stretched. Then bad input: exit 2
# with one line naming the file and the problem.
import json
import os
import shutil
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done, run, one_line_error, skip
import yolo_ref
import yolo_task_ref

rng = np.random.default_rng(3535)

# the reference's resize against PyTorch's own on the shapes a YOLOv8-seg
# head resizes (proto 160 -> input 640, input -> originals) and odd ratios:
# the taps are PyTorch's exactly; its CPU build fuses one product of each
# lerp (x0 * w0 + x1 * w1 as fma(x0, w0, x1 * w1)), which the reference and
# parity leave unfused, so the values may differ by one rounding per lerp,
# two lerps deep: |ref - torch| <= 4 ulp of the largest |input| (derived:
# each unfused sum of two weights <= 1 adds at most half an ulp of the
# larger magnitude per rounding, three roundings per lerp, two levels)
pairs = [((160, 160), (640, 640)), ((120, 160), (480, 640)), ((37, 53), (101, 99)), ((640, 480), (427, 640)),
         ((7, 3), (64, 64))]
if yolo_task_ref.resize_torch(np.zeros((2, 2)), 3, 3) is None:
    skip("the reference's bilinear resize agrees with PyTorch's interpolate", "PyTorch is not installed")
else:
    bad, worst = [], 0.0
    for (mh, mw), (h, w) in pairs:
        a = rng.normal(0, 4, (mh, mw))
        d = np.abs(yolo_task_ref.resize(a, h, w) - yolo_task_ref.resize_torch(a, h, w)).max() / np.spacing(np.abs(a).max())
        worst = max(worst, d)
        if d > 4:
            bad.append(f"{mh}x{mw}->{h}x{w}: {d:.1f} ulp")
    ok(not bad, f"the reference's bilinear resize agrees with PyTorch's interpolate within 4 ulp ({len(pairs)} shapes, "
       f"worst {worst:.2f} ulp)", ", ".join(bad))
tmp = tempfile.mkdtemp(prefix="parity-yolo-task-")
F = np.float32
# COCO's 17 person sigmas are map-eval's default; 5 of them for a custom K
SIG5 = [0.026, 0.025, 0.025, 0.035, 0.035]


def p(*a):
    return os.path.join(tmp, *a)


meta_for = yolo_ref.meta_for


def head(n, nc, extra, iw, ih, dtype):
    """[1, 4+nc+extra, n]: clusters of overlapping boxes (some past the input's edge), scores quantised
    to 1/64, background 0; extra rows normal(0, 2) (mask coefficients) or keypoint triples in and
    around the input."""
    boxes = np.stack([rng.uniform(0, iw, n), rng.uniform(0, ih, n), rng.uniform(3, iw / 2, n),
                      rng.uniform(3, ih / 2, n)], 1)
    cls = np.zeros((n, nc))
    for a in range(min(n, 40)):
        cls[a, int(rng.integers(0, nc))] = np.round(rng.uniform(0.2, 0.95) * 64) / 64
    if extra and extra % 3 == 0 and extra != 32:
        K = extra // 3
        xy = np.stack([rng.uniform(-10, iw + 10, (n, K)), rng.uniform(-10, ih + 10, (n, K)), rng.uniform(0, 1, (n, K))], 2)
        ext = xy.reshape(n, extra)
    else:
        ext = rng.normal(0, 2, (n, extra))
    raw = np.concatenate([boxes, cls, ext], 1).T[None]
    return np.ascontiguousarray(raw.astype(dtype))


def protos(nm, mh, mw, dtype):
    """Smooth-ish planes (a coarse normal field upsampled by repetition plus noise): masks with structure."""
    coarse = rng.normal(0, 1, (nm, (mh + 3) // 4, (mw + 3) // 4))
    fine = np.repeat(np.repeat(coarse, 4, 1), 4, 2)[:, :mh, :mw] + rng.normal(0, 0.3, (nm, mh, mw))
    return np.ascontiguousarray(fine[None].astype(dtype))


def write_run(name, samples, cfg, nc, kpts=0):
    """samples: list of (tensors {name: array}, meta); a ground truth with each image's size and one
    annotation of the task's shape; returns (run dir, gt path, config path)."""
    root = p(name)
    shutil.rmtree(root, ignore_errors=True)
    imgs, anns = [], []
    for k, (tensors, meta) in enumerate(samples):
        d = os.path.join(root, "s%03d" % k)
        os.makedirs(d)
        for t, a in tensors.items():
            np.save(os.path.join(d, t + ".npy"), a)
        json.dump(dict(meta, image_id=k + 1), open(os.path.join(d, "meta.json"), "w"))
        imgs.append({"id": k + 1, "width": meta["width"], "height": meta["height"], "file_name": "s%03d.png" % k})
        ann = {"id": k + 1, "image_id": k + 1, "category_id": 1, "bbox": [10, 10, 50, 50], "area": 2500, "iscrowd": 0,
               "segmentation": [[10, 10, 60, 10, 60, 60, 10, 60]]}
        if kpts:
            ann["keypoints"] = [20 + k, 30, 2] * kpts
            ann["num_keypoints"] = kpts
        anns.append(ann)
    gt = {"images": imgs, "annotations": anns, "categories": [{"id": c + 1, "name": "c%d" % c} for c in range(nc)]}
    gpath = p(name + ".gt.json")
    json.dump(gt, open(gpath, "w"))
    cpath = p(name + ".yaml")
    with open(cpath, "w") as f:
        for k, v in dict({"label_map": list(range(1, nc + 1))}, **cfg).items():
            f.write("%s: %s\n" % (k, json.dumps(v)))
    return root, gpath, cpath


def reference(samples, cfg, nc, task):
    lb = cfg.get("letterbox_inverse", "ultralytics")
    out = []
    for k, (tensors, meta) in enumerate(samples):
        raw = tensors[cfg.get("output", "output0")]
        dets = yolo_ref.decode(raw[:, :4 + nc], "yolov8", conf=cfg.get("conf_threshold", 0.001))
        for box, score, c, a in dets:
            r = {"image_id": k + 1, "category_id": c + 1, "bbox": yolo_ref.to_original(box, meta, lb, True),
                 "score": float(score)}
            if task == "segm":
                m = yolo_task_ref.mask(raw, tensors[cfg.get("protos", "output1")], nc, box, a, meta, lb)
                r["segmentation"] = {"size": [meta["height"], meta["width"]], "counts": yolo_task_ref.rle_string(m)}
                r["area_px"] = int(m.sum())
            else:
                r["keypoints"] = yolo_task_ref.keypoints(raw, nc, cfg.get("keypoints", 17), a, meta, lb)
            out.append(r)
    return out


def check(name, samples, cfg, nc, task, args=()):
    kp = cfg.get("keypoints", 17) if task == "keypoints" else 0
    root, gpath, cpath = write_run(name, samples, cfg, nc, kp)
    res = p(name + ".results.json")
    rc, _, err = run("map-eval", "--gt", gpath, "--dt", root, "--iou-type", task, "--decode", cpath, "--section", ".",
                     "--write-results", res, "-q", *args)
    if not ok(rc == 0, "%s: map-eval decodes" % name, err):
        return
    got = json.load(open(res))
    exp = reference(samples, cfg, nc, task)
    key = "segmentation" if task == "segm" else "keypoints"
    diffs = [i for i, (g, e) in enumerate(zip(got, exp))
             if any(g[f] != e[f] for f in ("image_id", "category_id", "bbox", "score", key))]
    nonempty = sum(1 for e in exp if task != "segm" or e["area_px"] > 0)
    ok(len(got) == len(exp) and not diffs and nonempty > len(exp) // 2,
       "%s: %d results identical to the reference (%s, boxes, scores; %d non-empty)" % (name, len(exp), key, nonempty),
       "got %d, expected %d; first difference %s" % (len(got), len(exp),
                                                      diffs and (json.dumps(got[diffs[0]])[:400], json.dumps(exp[diffs[0]])[:400])))


SIZES = [(200, 150), (150, 200), (160, 160), (97, 211), (333, 71)]


def seg_samples(nc, nm, iw, ih, mode, dtype, count=5):
    out = []
    for k in range(count):
        w, h = SIZES[k % len(SIZES)]
        out.append(({"output0": head(120, nc, nm, iw, ih, dtype), "output1": protos(nm, ih // 4, iw // 4, dtype)},
                    meta_for(w, h, iw, ih, mode)))
    return out


def pose_samples(nc, K, iw, ih, mode, dtype, count=5):
    out = []
    for k in range(count):
        w, h = SIZES[k % len(SIZES)]
        out.append(({"output0": head(120, nc, 3 * K, iw, ih, dtype)}, meta_for(w, h, iw, ih, mode)))
    return out


SEG = {"head": "yolov8-seg", "protos": "output1"}
check("seg letterbox", seg_samples(3, 32, 160, 160, "letterbox", F), SEG, 3, "segm")
check("seg letterbox 160x128, 8 coefficients", seg_samples(2, 8, 160, 128, "letterbox", F),
      dict(SEG, mask_coefs=8), 2, "segm")
check("seg float16", seg_samples(1, 32, 160, 160, "letterbox", np.float16), SEG, 1, "segm")
check("seg stretch", seg_samples(3, 32, 128, 160, "stretch", F), SEG, 3, "segm")
check("seg letterbox, meta inverse", seg_samples(3, 32, 160, 160, "letterbox", F),
      dict(SEG, letterbox_inverse="meta"), 3, "segm")
POSE = {"head": "yolov8-pose", "keypoints": 17}
check("pose letterbox", pose_samples(1, 17, 160, 160, "letterbox", F), POSE, 1, "keypoints")
check("pose stretch float16", pose_samples(2, 17, 128, 160, "stretch", np.float16), POSE, 2, "keypoints")
check("pose 5 keypoints", pose_samples(1, 5, 160, 160, "letterbox", F), dict(POSE, keypoints=5), 1, "keypoints",
      ("--kpt-sigmas", ",".join(map(str, SIG5))))

# the box evaluation of a seg / pose head reads the boxes only
s = seg_samples(3, 32, 160, 160, "letterbox", F, 2)
root, gpath, cpath = write_run("seg as bbox", s, SEG, 3)
rc, out, err = run("map-eval", "--gt", gpath, "--dt", root, "--decode", cpath, "--section", ".")
ok(rc == 0 and "Average Precision" in out, "a yolov8-seg head evaluates as bbox too", err)

# the worked example of docs/metrics-yolo-seg-pose.md, computed by hand there
ex = np.array([4, 4, 6, 4, 0.9, 1], F).reshape(1, 6, 1)
exm = meta_for(16, 8, 8, 8, "letterbox")
root, gpath, cpath = write_run("worked example", [({"output0": ex, "output1": np.array([[[[1, -1], [1, -1]]]], F)}, exm)],
                               dict(SEG, mask_coefs=1), 1)
res = p("example.results.json")
rc, _, err = run("map-eval", "--gt", gpath, "--dt", root, "--iou-type", "segm", "--decode", cpath, "--section", ".",
                 "--num-classes", "1", "--write-results", res, "-q")
got = json.load(open(res)) if rc == 0 else [{}]
ok(rc == 0 and len(got) == 1 and got[0].get("bbox") == [2, 0, 12, 8]
   and got[0].get("segmentation") == {"size": [8, 16], "counts": "`0`1P2"},
   "worked example: the mask computed by hand (columns 2..7 of a 16x8 image)", (err, got))
pex = np.array([4, 4, 6, 4, 0.9, 5, 3, 0.8], F).reshape(1, 8, 1)
root, gpath, cpath = write_run("worked pose", [({"output0": pex}, exm)], {"head": "yolov8-pose", "keypoints": 1}, 1, 1)
rc, _, err = run("map-eval", "--gt", gpath, "--dt", root, "--iou-type", "keypoints", "--kpt-sigmas", "0.05", "--decode",
                 cpath, "--section", ".", "--num-classes", "1", "--write-results", res, "-q")
got = json.load(open(res)) if rc == 0 else [{}]
ok(rc == 0 and got[0].get("keypoints") == [10, 2, float(F(0.8))], "worked example: keypoint (5, 3) maps to (10, 2)",
   (err, got))

# ---- bad input ----


def bad(name, samples, cfg, needles, nc=3, task="segm", args=(), kp=0):
    root, gpath, cpath = write_run(name, samples, cfg, nc, kp)
    rc, _, err = run("map-eval", "--gt", gpath, "--dt", root, "--iou-type", task, "--decode", cpath, "--section", ".",
                     "-q", *args)
    ok(one_line_error(rc, err, *needles), "bad input: %s" % name, "rc %d: %s" % (rc, err))


good = seg_samples(3, 32, 160, 160, "letterbox", F, 1)
t, meta = good[0]
bad("protos with 16 planes", [(dict(t, output1=t["output1"][:, :16]), meta)], SEG,
    ["output1.npy", "16 planes", "32 mask coefficients"])
bad("protos of rank 2", [(dict(t, output1=t["output1"][0, 0]), meta)], SEG, ["output1.npy", "rank 2"])
bad("mask coefficients do not match the head", [(dict(t, output0=t["output0"][:, :37]), meta)], SEG,
    ["output0.npy", "width 37 is 4 + 1 classes + 32 mask coefficients", "label map", "has 3"])
bad("head too narrow for nm", [(dict(t, output0=t["output0"][:, :30]), meta)], SEG, ["output0.npy", "width is 30", "more than 36"])
nanp = t["output1"].copy()
nanp[0, 3, 5, 7] = np.nan
bad("NaN proto", [(dict(t, output1=nanp), meta)], SEG, ["output1.npy", "plane 3, row 5, column 7", "NaN"])
nanc = t["output0"].copy()
nanc[0, 4 + 3 + 2, :40] = np.nan
bad("NaN mask coefficient", [(dict(t, output0=nanc), meta)], SEG, ["output0.npy", "mask coefficient 2", "NaN"])
bad("no protos tensor", [({"output0": t["output0"]}, meta)], SEG, ["'output1'", "protos:"])
bad("segm without a seg head", [(t, meta)], {"head": "yolov8", "num_classes": 35}, ["segm", "yolov8-seg"])
m2 = dict(meta)
del m2["input_width"]
bad("meta without input_width", [(t, m2)], SEG, ["meta.json", "input_width"])
root, gpath, cpath = write_run("image size differs", [(t, meta)], SEG, 3)
g = json.load(open(gpath))
g["images"][0]["width"] = 199
json.dump(g, open(gpath, "w"))
rc, _, err = run("map-eval", "--gt", gpath, "--dt", root, "--iou-type", "segm", "--decode", cpath, "--section", ".", "-q")
ok(one_line_error(rc, err, "meta.json's image size 200x150", "199x150"), "bad input: meta size differs from the GT's",
   "rc %d: %s" % (rc, err))
pt, pmeta = pose_samples(1, 17, 160, 160, "letterbox", F, 1)[0]
bad("keypoints of the head do not match the head's width", [(pt, pmeta)], dict(POSE, keypoints=16),
    ["output0.npy", "48 keypoint values", "label map has 1"], nc=1, task="keypoints", kp=16,
    args=("--kpt-sigmas", ",".join(["0.05"] * 16)))
bad("head keypoints vs the evaluation's", [(pt, pmeta)], POSE, ["17 keypoints", "evaluated with 5"], nc=1,
    task="keypoints", kp=5, args=("--kpt-sigmas", ",".join(map(str, SIG5))))
bad("keypoints with the wrong count (16 of 17)", [(dict(output0=pt["output0"][:, :-3]), pmeta)], POSE,
    ["output0.npy", "width is 53", "51 keypoint values"], nc=1, task="keypoints", kp=17)
nank = pt["output0"].copy()
nank[0, 4 + 1 + 3 * 2 + 1, :40] = np.nan
bad("NaN keypoint", [(dict(output0=nank), pmeta)], POSE, ["output0.npy", "keypoint 2's y", "NaN"], nc=1,
    task="keypoints", kp=17)
bad("unknown head", [(t, meta)], {"head": "yolov8-obb"}, ["yolov8-obb", "head"])

shutil.rmtree(tmp)
done()
