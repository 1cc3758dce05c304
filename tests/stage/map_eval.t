#!/usr/bin/python3
# map-eval against pycocotools: every case of tests/data/coco (the stats and
# per-category APs pycocotools gave, in expected.json) within 1e-9;
# numpy's own mean over the precision arrays map-eval writes (so the pairwise
# summation is checked against numpy, beyond 8192 values); one-line errors
# with exit 2 and no output file for bad input (also deep in files big enough
# for the streamed reader and the segmented scan, alike at every thread
# count); and decoding of inference tensor sets through letterbox and
# stretch meta.json, checked against boxes computed here from the meta
# formula input = original * scale + offset.
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done, run, one_line_error

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
VECTORS = os.path.join(REPO, "tests", "data", "coco")
STATS = ["AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl"]

tmp = tempfile.mkdtemp(prefix="map-eval-t.")


def path(*p):
    return os.path.join(tmp, *p)


def dump(obj, name, raw=None):
    p = path(name)
    with open(p, "w") as f:
        f.write(raw if raw is not None else json.dumps(obj))
    return p


# ---- the pycocotools vectors ----

# (segm/ and keypoints/ hold the other iou types: map_eval_tasks.t)
cases = sorted(d for d in os.listdir(VECTORS) if os.path.isdir(os.path.join(VECTORS, d))
               and d not in ("segm", "keypoints"))
if not ok(len(cases) == 5, "the 5 pycocotools vector cases in tests/data/coco", cases):
    done()

for case in cases:
    d = os.path.join(VECTORS, case)
    exp = json.load(open(os.path.join(d, "expected.json")))
    out = path(case + ".json")
    rc, so, se = run("map-eval", "--gt", os.path.join(d, "gt.json"), "--dt",
                     os.path.join(d, "dt.json"), "--json", out)
    if not ok(rc == 0, "%s: map-eval runs" % case, se):
        continue
    got = json.load(open(out))
    bad = [(k, exp["stats"][k], got["stats"].get(k)) for k in STATS
           if got["stats"].get(k) is None or abs(got["stats"][k] - exp["stats"][k]) > 1e-9]
    ok(not bad, "%s: all 12 stats within 1e-9 of pycocotools" % case, bad)
    ecat, gcat = exp["per_category_AP"], got["per_category_AP"]
    bad = [(k, v, gcat.get(k)) for k, v in ecat.items()
           if gcat.get(k) is None or abs(gcat[k] - v) > 1e-9]
    ok(not bad and set(ecat) == set(gcat),
       "%s: all %d per-category APs within 1e-9" % (case, len(ecat)), (bad, sorted(gcat)))
    # the text is pycocotools' summarize() layout
    lines = so.splitlines()
    first = " Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ] = %0.3f" % exp["stats"]["AP"]
    last = " Average Recall     (AR) @[ IoU=0.50:0.95 | area= large | maxDets=100 ] = %0.3f" % exp["stats"]["ARl"]
    ok(len(lines) == 12 and lines[0] == first and lines[11] == last,
       "%s: the 12 lines in pycocotools' layout" % case, so)

# ---- numpy's mean, checked on a COCO-like evaluation with 80 categories ----

gen = os.path.join(REPO, "bench", "gen_coco.py")
syn = path("syn")
subprocess.run([sys.executable, gen, syn, "--images", "300", "--dets-per-image", "60"],
               check=True, capture_output=True)
rc, so, se = run("map-eval", "--gt", os.path.join(syn, "gt.json"), "--dt",
                 os.path.join(syn, "dt.json"), "--json", path("syn.json"), "--pr-curves",
                 path("pr"), "-q", "--per-category")
ok(rc == 0 and so == "", "synthetic 80-category evaluation runs (-q prints nothing)", se)
if rc == 0:
    res = json.load(open(path("syn.json")))
    pr = json.load(open(path("pr", "pr-curves.json")))
    prec = np.array([c["precision"] for c in pr["categories"]], dtype=np.float64)  # [K][T][R]
    s = np.transpose(prec, (1, 2, 0))                                             # [T][R][K]
    ap = np.mean(s[s > -1]) if (s > -1).any() else -1
    ok(s.size > 8192 and res["stats"]["AP"] == ap,
       "AP equals numpy's mean over %d precisions, bit for bit" % s.size, (res["stats"]["AP"], ap))
    ap50 = np.mean(s[0][s[0] > -1])
    ok(res["stats"]["AP50"] == ap50, "AP50 equals numpy's mean", (res["stats"]["AP50"], ap50))
    mism = [c["id"] for c in pr["categories"]
            if res["per_category_AP"][str(c["id"])] !=
            (np.mean(np.array(c["precision"])[np.array(c["precision"]) > -1])
             if (np.array(c["precision"]) > -1).any() else -1)]
    ok(len(pr["categories"]) == 80 and not mism, "per-category AP equals numpy's mean (80 categories)", mism)
    csv = open(path("pr", "pr-curves.csv")).read().splitlines()
    ok(csv[0] == "category_id,iou_threshold,recall_threshold,precision" and len(csv) == 1 + 80 * 10 * 101,
       "pr-curves.csv has one row per category, IoU and recall threshold")
    # same bytes whatever the thread count
    outs = []
    for t in ("1", "2", "5"):
        rc, so, se = run("map-eval", "--gt", os.path.join(syn, "gt.json"), "--dt",
                         os.path.join(syn, "dt.json"), "--json", path("t%s.json" % t), "--threads", t, "-q")
        outs.append(open(path("t%s.json" % t), "rb").read() if rc == 0 else None)
    ok(outs[0] is not None and outs.count(outs[0]) == 3, "identical JSON with 1, 2 and 5 threads")

# ---- bad input: exit 2, one line, no output file ----

GT = {"images": [{"id": 1}, {"id": 2}], "categories": [{"id": 1, "name": "a"}],
      "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10],
                       "area": 100, "iscrowd": 0}]}
DT = [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "score": 0.9}]
good_gt = dump(GT, "good_gt.json")
good_dt = dump(DT, "good_dt.json")


def expect_error(name, gt, dt, *needles):
    out = path("err.json")
    if os.path.exists(out):
        os.unlink(out)
    rc, so, se = run("map-eval", "--gt", gt, "--dt", dt, "--json", out, "-w", path("err-res.json"))
    left = [f for f in os.listdir(tmp) if f.startswith("err")]
    ok(one_line_error(rc, se, *needles) and not left,
       "%s: exit 2, one clear line, no output" % name, (rc, se, left))


def with_ann(**kw):
    g = json.loads(json.dumps(GT))
    g["annotations"][0].update(kw)
    return g


def with_det(**kw):
    d = json.loads(json.dumps(DT))
    d[0].update(kw)
    return d


expect_error("truncated results JSON", good_gt, dump(None, "b1.json", '[{"image_id": 1, "category_id"'),
             "b1.json", "line 1", "invalid JSON")
expect_error("bad JSON in the ground truth", dump(None, "b2.json", '{"images": [}'), good_dt,
             "b2.json", "invalid JSON")
expect_error("trailing comma", good_gt, dump(None, "b3.json", '[{"image_id": 1, "category_id": 1, '
             '"bbox": [0,0,1,1], "score": 1},\n]'), "b3.json", "line 2")
expect_error("detection without a score", good_gt, dump([{"image_id": 1, "category_id": 1, "bbox": [0, 0, 1, 1]}], "b4.json"),
             "b4.json", "[0]", "'score' is missing")
g = json.loads(json.dumps(GT))
del g["annotations"][0]["area"]
expect_error("annotation without an area", dump(g, "b5.json"), good_dt, "b5.json", "annotations[0]", "'area' is missing")
g = json.loads(json.dumps(GT))
del g["images"]
expect_error("ground truth without images", dump(g, "b6.json"), good_dt, "b6.json", "'images' is missing")
expect_error("negative detection width", good_gt, dump(with_det(bbox=[0, 0, -3, 10]), "b7.json"),
             "b7.json", "[0]", "negative width")
expect_error("negative GT height", dump(with_ann(bbox=[0, 0, 3, -1]), "b8.json"), good_dt,
             "b8.json", "annotations[0]", "negative height")
expect_error("NaN score (as Python's json writes it)", good_gt,
             dump(None, "b9.json", json.dumps([dict(DT[0], score=float("nan"))])), "b9.json", "NaN")
expect_error("score that is a string", good_gt, dump(with_det(score="0.5"), "b10.json"), "b10.json", "'score' must be a number")
expect_error("unknown image id", good_gt, dump(DT + [dict(DT[0], image_id=7)], "b11.json"),
             "b11.json", "image_id 7", "not an image of the ground truth")
expect_error("empty results", good_gt, dump([], "b12.json"), "b12.json", "empty")
expect_error("results not a list", good_gt, dump({"image_id": 1}, "b13.json"), "b13.json", "JSON array")
expect_error("iscrowd not 0/1", dump(with_ann(iscrowd=2), "b14.json"), good_dt, "b14.json", "iscrowd")
expect_error("bbox with 3 numbers", good_gt, dump(with_det(bbox=[0, 0, 3]), "b15.json"), "b15.json", "bbox")
expect_error("missing file", good_gt, path("nonexistent.json"), "nonexistent.json")
rc, so, se = run("map-eval", "--gt", good_gt)
ok(rc == 2 and "--dt" in se, "missing --dt is a usage error (exit 2)", se)
# ---- big files: the streamed reader and the segmented scan ----
# Over 4 MiB of results takes coco/jsonrec.c and jsonpar's segments; their
# errors must be the ones the serial path words, at every thread count, and
# the statistics the same as from the same results written one per line
# (which changes every chunk boundary).
big = [{"image_id": 1 + i % 2, "category_id": 1, "bbox": [i % 7, i % 5, 3 + i % 11, 4.25 + i % 3],
        "score": round(0.0001 * (i % 9973), 4)} for i in range(60000)]
big_text = json.dumps(big)
assert len(big_text) > 4 << 20
big_dt = dump(None, "big.json", big_text)
big_lines = dump(None, "big_lines.json", "[\n" + ",\n".join(json.dumps(d, indent=1) for d in big) + "\n]\n")
outs = []
for f, t in ((big_dt, "1"), (big_dt, "2"), (big_dt, "3"), (big_lines, "2")):
    rc, so, se = run("map-eval", "--gt", good_gt, "--dt", f, "--json", path("big%d.json" % len(outs)), "--threads", t, "-q")
    outs.append(open(path("big%d.json" % len(outs)), "rb").read() if rc == 0 else se)
ok(isinstance(outs[0], bytes) and outs.count(outs[0]) == 4,
   "a 60,000-detection file: identical JSON at 1, 2 and 3 threads and written one member per line")
cut = big_text.index('"score": ', len(big_text) // 2)
bad_num = dump(None, "big_bad_num.json", big_text[:cut] + '"score": 01' + big_text[cut + 10:])
nth = 41234
bad_w = dump(None, "big_bad_w.json", json.dumps(big[:nth] + [dict(big[nth], bbox=[0, 0, -2, 1])] + big[nth + 1:]))
for name, f, needles in (("a leading zero deep in a big file", bad_num, ("big_bad_num.json", "line 1 column", "invalid JSON")),
                         ("a negative width deep in a big file", bad_w, ("big_bad_w.json", "[%d]" % nth, "negative width"))):
    errs = []
    for t in ("1", "2", "3"):
        rc, so, se = run("map-eval", "--gt", good_gt, "--dt", f, "--threads", t, "-q")
        errs.append((rc, se))
    ok(all(one_line_error(rc, se, *needles) for rc, se in errs) and len(set(errs)) == 1,
       "%s: exit 2, the same one line at 1, 2 and 3 threads" % name, errs[0])

rc, so, se = run("map-eval", "--help")
ok(rc == 0 and "--box-format" in so and "--label-map" in so, "--help documents the decoding options")
rc, so, se = run("map-eval", "--version")
ok(rc == 0 and so.startswith("map-eval"), "--version")

# a category missing from the GT is dropped silently, as pycocotools does
rc, so, se = run("map-eval", "--gt", good_gt, "--dt", dump(DT + [dict(DT[0], category_id=9)], "u.json"),
                 "--json", path("u-out.json"), "-q")
u = json.load(open(path("u-out.json"))) if rc == 0 else {}
ok(rc == 0 and u["counts"]["detections_unknown_category"] == 1 and u["stats"]["AP50"] > 0.99,
   "detections of unknown categories are dropped", se)

# ---- decoding tensor sets (letterbox and stretch meta.json) ----

COCO80 = [i for i in range(1, 91) if i not in (12, 26, 29, 30, 45, 66, 68, 69, 71, 83)]
rng = np.random.default_rng(7)
images = [{"id": 11, "width": 640, "height": 480, "file_name": "a.png"},
          {"id": 12, "width": 500, "height": 300, "file_name": "sub/b.png"}]
metas = {
    # letterbox 640x480 -> 640x640: scale 1, 80 pixels of padding on top and bottom
    "s-a": {"file": "/data/a.png", "sample_id": "s-a", "image_id": 11, "width": 640, "height": 480,
            "input_width": 640, "input_height": 640, "scale_x": 1.0, "scale_y": 1.0,
            "offset_x": 0.0, "offset_y": 80.0},
    # stretch 500x300 -> 320x320 (no image_id: found by file name)
    "s-b": {"file": "b.png", "sample_id": "s-b", "width": 500, "height": 300,
            "input_width": 320, "input_height": 320, "scale_x": 320 / 500, "scale_y": 320 / 300,
            "offset_x": 0.0, "offset_y": 0.0},
}
K = 7
outs = {}
for sid in metas:
    labels = rng.integers(0, 80, size=(1, K)).astype(np.int64)
    scores = np.round(rng.random((1, K)), 3).astype(np.float32)
    scores[0, 2] = scores[0, 5]                      # a tie for top-k
    cx = rng.uniform(50, 250, size=(1, K)); cy = rng.uniform(50, 250, size=(1, K))
    w = rng.uniform(5, 60, size=(1, K)); h = rng.uniform(5, 60, size=(1, K))
    outs[sid] = (labels, np.stack([cx, cy, w, h], -1).astype(np.float32), scores)


def write_run(root, fmt, normalized, meta_dir=None, bad_score=False):
    for sid, m in metas.items():
        d = os.path.join(root, sid)
        os.makedirs(d, exist_ok=True)
        labels, b, scores = outs[sid]
        b = b.astype(np.float64)
        cx, cy, bw, bh = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
        if fmt == "xyxy":
            v = np.stack([cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2], -1)
        elif fmt == "xywh":
            v = np.stack([cx - bw / 2, cy - bh / 2, bw, bh], -1)
        else:
            v = np.stack([cx, cy, bw, bh], -1)
        if normalized:
            v = v / np.array([m["input_width"], m["input_height"]] * 2)
        s = scores.copy()
        if bad_score:
            s[0, 3] = np.nan
        np.save(os.path.join(d, "labels.npy"), labels)
        np.save(os.path.join(d, "pred%2Fboxes.npy"), v.astype(np.float32))   # tensor "pred/boxes"
        np.save(os.path.join(d, "scores.npy"), s)
        json.dump(m, open(os.path.join(meta_dir or root, sid, "meta.json"), "w"))


def expected_dets(fmt, normalized, thr=None, top_k=0):
    """Boxes from the stored float32 tensors, through the meta formula."""
    dets = []
    for sid in sorted(metas):
        m = metas[sid]
        labels, _, scores = outs[sid]
        boxes = np.load(os.path.join(path("run-" + fmt + str(normalized)), sid, "pred%2Fboxes.npy"))
        keep = [i for i in range(K) if thr is None or float(scores[0, i]) >= thr]
        if top_k and len(keep) > top_k:
            keep = sorted(sorted(keep, key=lambda i: -float(scores[0, i]))[:top_k])
        for i in keep:
            v = [float(x) for x in boxes[0, i]]
            if fmt == "xyxy":
                x1, y1, x2, y2 = v
            elif fmt == "xywh":
                x1, y1, x2, y2 = v[0], v[1], v[0] + v[2], v[1] + v[3]
            else:
                x1, y1, x2, y2 = v[0] - v[2] / 2, v[1] - v[3] / 2, v[0] + v[2] / 2, v[1] + v[3] / 2
            if normalized:
                x1, x2 = x1 * m["input_width"], x2 * m["input_width"]
                y1, y2 = y1 * m["input_height"], y2 * m["input_height"]
            # input = original * scale + offset  =>  original = (input - offset) / scale
            x1, x2 = (x1 - m["offset_x"]) / m["scale_x"], (x2 - m["offset_x"]) / m["scale_x"]
            y1, y2 = (y1 - m["offset_y"]) / m["scale_y"], (y2 - m["offset_y"]) / m["scale_y"]
            dets.append({"image_id": m.get("image_id", 12), "category_id": COCO80[int(labels[0, i])],
                         "bbox": [x1, y1, x2 - x1, y2 - y1], "score": float(scores[0, i])})
    return dets


def close_dets(a, b):
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x["image_id"] != y["image_id"] or x["category_id"] != y["category_id"]:
            return False
        if x["score"] != y["score"] or any(abs(p - q) > 1e-9 * max(1, abs(q)) for p, q in zip(x["bbox"], y["bbox"])):
            return False
    return True


# ground truth: the letterboxed image's first detections, exactly
gt_anns = []
for n, (sid, img) in enumerate([("s-a", 11), ("s-b", 12)]):
    gt_anns.append({"id": n + 1, "image_id": img, "category_id": 1, "bbox": [10, 10, 50, 50],
                    "area": 2500, "iscrowd": 0})
dec_gt = dump({"images": images, "categories": [{"id": c, "name": "c%d" % c} for c in COCO80],
               "annotations": gt_anns}, "dec_gt.json")

for fmt, normalized in (("xyxy", False), ("cxcywh", True), ("xywh", False)):
    root = path("run-" + fmt + str(normalized))
    write_run(root, fmt, normalized)
    args = ["--box-format", fmt, "--box-coords", "input", "--label-map", "coco80",
            "--boxes", "pred/boxes"] + (["--normalized"] if normalized else [])
    res = path("res-%s.json" % fmt)
    rc, so, se = run("map-eval", "--gt", dec_gt, "--dt", root, "-w", res, "-q", *args)
    got = json.load(open(res)) if rc == 0 else []
    ok(rc == 0 and close_dets(got, expected_dets(fmt, normalized)),
       "decode %s%s through letterbox and stretch meta" % (fmt, " normalised" if normalized else ""),
       (se, got[:2], expected_dets(fmt, normalized)[:2]))

# threshold and top-k; settings from a YAML section with a --set override
root = path("run-xyxyFalse")
yml = dump(None, "decode.yaml", "model: x\nmap_eval:\n  boxes: pred/boxes\n  box_coords: input\n"
           "  label_map: coco80\n  score_threshold: 0.2\n  top_k: 9\n")
res = path("res-yaml.json")
rc, so, se = run("map-eval", "--gt", dec_gt, "--dt", root, "-w", res, "-q", "--decode", yml,
                 "--section", "map_eval", "--set", "top_k=3")
got = json.load(open(res)) if rc == 0 else []
ok(rc == 0 and close_dets(got, expected_dets("xyxy", False, thr=0.2, top_k=3)),
   "decode settings from YAML, --set top_k=3, score threshold 0.2", (se, got))

# evaluating the decoded folder equals evaluating the results file it wrote
rc1, so1, _ = run("map-eval", "--gt", dec_gt, "--dt", root, "--boxes", "pred/boxes", "--box-coords", "input",
                  "--label-map", "coco80", "--json", path("d1.json"), "-w", path("d1-res.json"))
rc2, so2, _ = run("map-eval", "--gt", dec_gt, "--dt", path("d1-res.json"), "--json", path("d2.json"))
ok(rc1 == 0 and rc2 == 0 and json.load(open(path("d1.json")))["stats"] == json.load(open(path("d2.json")))["stats"],
   "a folder and the results JSON written from it evaluate identically")

# meta.json kept elsewhere (--meta)
mroot, mdir = path("run-sep"), path("meta-sep")
for sid in metas:
    os.makedirs(os.path.join(mdir, sid), exist_ok=True)
write_run(mroot, "xyxy", False, meta_dir=mdir)
rc, so, se = run("map-eval", "--gt", dec_gt, "--dt", mroot, "--meta", mdir, "--boxes", "pred/boxes",
                 "--box-coords", "input", "--label-map", "coco80", "-w", path("res-sep.json"), "-q")
got = json.load(open(path("res-sep.json"))) if rc == 0 else []
ok(rc == 0 and close_dets(got, expected_dets("xyxy", False)), "--meta DIR", se)

# decoding errors
nroot = path("run-nan")
write_run(nroot, "xyxy", False, bad_score=True)
rc, so, se = run("map-eval", "--gt", dec_gt, "--dt", nroot, "--boxes", "pred/boxes", "--box-coords", "input",
                 "--label-map", "coco80", "-w", path("err-nan.json"))
ok(one_line_error(rc, se, "s-a", "detection 3", "NaN") and not os.path.exists(path("err-nan.json")),
   "a NaN score in a tensor: exit 2, names sample and detection, no output", se)
rc, so, se = run("map-eval", "--gt", dec_gt, "--dt", root, "--box-coords", "input", "--label-map", "coco80")
ok(one_line_error(rc, se, "s-a", "'boxes'"), "a missing output tensor names the sample and tensor", se)
rc, so, se = run("map-eval", "--gt", dec_gt, "--dt", root, "--boxes", "pred/boxes", "--box-format", "ltrb")
ok(one_line_error(rc, se, "ltrb"), "an unknown box format is refused", se)
rc, so, se = run("map-eval", "--gt", dec_gt, "--dt", root, "--boxes", "pred/boxes", "--decode", yml,
                 "--section", "map_eval", "--set", "topk=3")
ok(one_line_error(rc, se, "topk"), "an unknown decoding key is refused", se)
broot = path("run-badimg")
shutil.copytree(root, broot)
m = dict(metas["s-a"], image_id=999)
json.dump(m, open(os.path.join(broot, "s-a", "meta.json"), "w"))
rc, so, se = run("map-eval", "--gt", dec_gt, "--dt", broot, "--boxes", "pred/boxes", "--box-coords", "input")
ok(one_line_error(rc, se, "meta.json", "image_id 999"), "a meta.json image id unknown to the GT", se)

shutil.rmtree(tmp, ignore_errors=True)
done()
