#!/usr/bin/python3
# map-eval --iou-type segm and keypoints against pycocotools: every case of
# tests/data/coco/segm and tests/data/coco/keypoints (expected.json: what
# pycocotools 2.0.11 gave, see tests/data/coco/README.md) must give the very
# same doubles -- all stats and per-category APs compared with ==, no
# tolerance; the printed lines in pycocotools' layout; and bad input (a mask
# of the wrong size, an odd polygon, keypoints of the wrong count, a missing
# segmentation, ...) exits 2 with one line naming the file and the problem,
# writing nothing.
import copy
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done, run, one_line_error

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
VECTORS = os.path.join(REPO, "tests", "data", "coco")
tmp = tempfile.mkdtemp(prefix="map-eval-tasks-t.")


def path(*p):
    return os.path.join(tmp, *p)


def dump(obj, name):
    p = path(name)
    with open(p, "w") as f:
        json.dump(obj, f)
    return p


# ---- the pycocotools vectors ----

ncase = 0
for kind, nstats in (("segm", 12), ("keypoints", 10)):
    root = os.path.join(VECTORS, kind)
    for case in sorted(c for c in os.listdir(root) if os.path.isdir(os.path.join(root, c))):
        ncase += 1
        d = os.path.join(root, case)
        exp = json.load(open(os.path.join(d, "expected.json")))
        out = path("%s-%s.json" % (kind, case))
        args = ["--iou-type", kind, "--gt", os.path.join(d, "gt.json"), "--dt",
                os.path.join(d, "dt.json"), "--json", out, "--threads", str(1 + ncase % 3)]
        if "kpt_oks_sigmas" in exp:
            args += ["--kpt-sigmas", ",".join(repr(v) for v in exp["kpt_oks_sigmas"])]
        rc, so, se = run("map-eval", *args)
        if not ok(rc == 0, "%s/%s: map-eval runs" % (kind, case), se):
            continue
        got = json.load(open(out))
        ok(len(exp["stats"]) == nstats and got["stats"] == exp["stats"],
           "%s/%s: all %d stats are pycocotools' doubles" % (kind, case, nstats),
           [(k, v, got["stats"].get(k)) for k, v in exp["stats"].items() if got["stats"].get(k) != v])
        ok(got["per_category_AP"] == exp["per_category_AP"],
           "%s/%s: all %d per-category APs are pycocotools'" % (kind, case, len(exp["per_category_AP"])),
           (exp["per_category_AP"], got["per_category_AP"]))
        lines = so.splitlines()
        md = 20 if kind == "keypoints" else 100
        first = " Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=%3d ] = %0.3f" % (md, exp["stats"]["AP"])
        last = " Average Recall     (AR) @[ IoU=0.50:0.95 | area= large | maxDets=%3d ] = %0.3f" % (md, exp["stats"]["ARl"])
        ok(len(lines) == nstats and lines[0] == first and lines[-1] == last,
           "%s/%s: the %d lines of pycocotools' summarize()" % (kind, case, nstats), so)
ok(ncase == 9, "the 9 segm and keypoints vector cases", ncase)

# the stats must not be a property of the vectors alone: the same segm case
# judged as boxes (its results carry boxes) gives other numbers
d = os.path.join(VECTORS, "segm", "rle-bbox")
rc, so, se = run("map-eval", "--gt", os.path.join(d, "gt.json"), "--dt", os.path.join(d, "dt.json"),
                 "--json", path("as-bbox.json"), "-q")
exp = json.load(open(os.path.join(d, "expected.json")))
ok(rc == 0 and json.load(open(path("as-bbox.json")))["stats"]["AP"] != exp["stats"]["AP"],
   "the segm case evaluated as bbox differs (the masks are what is compared)", se)

# ---- bad input: exit 2, one line naming the file and the problem, no output ----

IMG = [{"id": 1, "width": 8, "height": 6}, {"id": 2, "width": 4, "height": 4}]
CATS = [{"id": 1, "name": "a"}]
SQ = [1, 1, 5, 1, 5, 4, 1, 4]
SEG_GT = {"images": IMG, "categories": CATS, "annotations": [
    {"id": 1, "image_id": 1, "category_id": 1, "segmentation": [SQ], "area": 12.0,
     "bbox": [1, 1, 4, 3], "iscrowd": 0}]}
SEG_DT = [{"image_id": 1, "category_id": 1, "segmentation": {"size": [6, 8], "counts": [7, 3, 3, 3, 3, 3, 3, 3, 20]},
           "score": 0.9}]
KP = [3, 3, 2] * 17
KP_GT = {"images": IMG, "categories": CATS, "annotations": [
    {"id": 1, "image_id": 1, "category_id": 1, "keypoints": KP, "num_keypoints": 17, "area": 12.0,
     "bbox": [1, 1, 4, 3], "iscrowd": 0}]}
KP_DT = [{"image_id": 1, "category_id": 1, "keypoints": KP, "score": 0.9}]

n_err = 0


def expect_error(kind, name, gt, dt, *needles, extra=()):
    global n_err
    n_err += 1
    g = dump(gt, "e%d-gt.json" % n_err)
    t = dump(dt, "e%d-dt.json" % n_err)
    out = path("e%d-out.json" % n_err)
    rc, so, se = run("map-eval", "--iou-type", kind, "--gt", g, "--dt", t, "--json", out, *extra)
    where = ("e%d-gt.json" if "gt" in needles[0] else "e%d-dt.json") % n_err
    ok(one_line_error(rc, se, where, *needles[1:]) and not os.path.exists(out) and so == "",
       "bad input, %s: exit 2 naming %s and the problem" % (name, where.split("-")[1]), (rc, se))


def gt_with(base, **kw):
    g = copy.deepcopy(base)
    g["annotations"][0].update(kw)
    return g


def dt_with(base, **kw):
    d = copy.deepcopy(base)
    d[0].update(kw)
    return d


rc, so, se = run("map-eval", "--iou-type", "segm", "--gt", dump(SEG_GT, "ok-gt.json"), "--dt", dump(SEG_DT, "ok-dt.json"))
ok(rc == 0 and so.count("\n") == 12, "the base segm input of the error cases is good", se)
rc, so, se = run("map-eval", "--iou-type", "keypoints", "--gt", dump(KP_GT, "okk-gt.json"), "--dt", dump(KP_DT, "okk-dt.json"))
ok(rc == 0 and so.count("\n") == 10 and "= 1.000" in so, "the base keypoints input is good", se)

expect_error("segm", "mask size unlike the image's", SEG_GT,
             dt_with(SEG_DT, segmentation={"size": [8, 6], "counts": [48]}),
             "dt", "[0]", "mask size 8x6 does not match image 1's 6x8")
expect_error("segm", "GT RLE of the wrong size", gt_with(SEG_GT, segmentation={"size": [6, 9], "counts": "0"}),
             SEG_DT, "gt", "annotations[0]", "does not match image 1")
expect_error("segm", "polygon with an odd coordinate count", gt_with(SEG_GT, segmentation=[SQ, [1, 2, 3]]),
             SEG_DT, "gt", "annotations[0]", "polygon 1 has 3 coordinates")
expect_error("segm", "first polygon of 4 numbers", gt_with(SEG_GT, segmentation=[[1, 1, 4, 3]]),
             SEG_DT, "gt", "annotations[0]", "more than 4")
expect_error("segm", "GT without segmentation",
             {"images": IMG, "categories": CATS, "annotations": [
                 {k: v for k, v in SEG_GT["annotations"][0].items() if k != "segmentation"}]},
             SEG_DT, "gt", "annotations[0]", "'segmentation' is missing")
expect_error("segm", "result without segmentation", SEG_GT,
             [{"image_id": 1, "category_id": 1, "bbox": [1, 1, 4, 3], "score": 0.5}],
             "dt", "[0]", "'segmentation' is missing")
expect_error("segm", "RLE counts not covering the image", SEG_GT,
             dt_with(SEG_DT, segmentation={"size": [6, 8], "counts": [7, 3, 3]}), "dt", "cover 13 pixels")
expect_error("segm", "compressed RLE with a byte outside its alphabet", SEG_GT,
             dt_with(SEG_DT, segmentation={"size": [6, 8], "counts": "0~"}), "dt", "not one of")
expect_error("segm", "image without a size",
             dict(SEG_GT, images=[{"id": 1}, {"id": 2, "width": 4, "height": 4}]), SEG_DT,
             "gt", "image 1 has no valid 'height' and 'width'")
expect_error("segm", "a later result without the bbox the first has", SEG_GT,
             [dict(SEG_DT[0], bbox=[1, 1, 4, 3]), SEG_DT[0]], "dt", "[1]", "'bbox' is missing")
expect_error("keypoints", "GT keypoints of the wrong count", gt_with(KP_GT, keypoints=KP[:-3]), KP_DT,
             "gt", "annotations[0]", "holds 48 numbers, expected 3 x 17 keypoints = 51")
expect_error("keypoints", "result keypoints of the wrong count", KP_GT, dt_with(KP_DT, keypoints=KP + [1]),
             "dt", "[0]", "holds 52 numbers")
expect_error("keypoints", "keypoints against sigmas of another count", KP_GT, KP_DT,
             "gt", "expected 3 x 5 keypoints = 15", extra=("--kpt-sigmas", "0.1,0.1,0.1,0.1,0.1"))
expect_error("keypoints", "GT without num_keypoints",
             {"images": IMG, "categories": CATS, "annotations": [
                 {k: v for k, v in KP_GT["annotations"][0].items() if k != "num_keypoints"}]},
             KP_DT, "gt", "'num_keypoints' is missing")
expect_error("keypoints", "result without keypoints", KP_GT,
             [{"image_id": 1, "category_id": 1, "score": 0.5}], "dt", "[0]", "'keypoints' is missing")

for args, what in ((["--iou-type", "mask"], "an unknown --iou-type"),
                   (["--iou-type", "segm", "--kpt-sigmas", "0.1"], "--kpt-sigmas without keypoints"),
                   (["--iou-type", "keypoints", "--kpt-sigmas", "0.1,x"], "a --kpt-sigmas that is not numbers"),
                   (["--iou-type", "segm", "--dt", tmp], "segm with a folder of labels/boxes/scores to decode")):
    full = ["--gt", path("ok-gt.json")] + (["--dt", path("ok-dt.json")] if "--dt" not in args else []) + args
    rc, so, se = run("map-eval", *full)
    ok(rc == 2 and so == "" and len(se.strip().splitlines()) >= 1, "usage error: %s (exit 2)" % what, (rc, se))

# --write-results of segm / keypoints results (RLE strings, keypoints) reads back to the same stats
for kind, g, d in (("segm", "ok-gt.json", "ok-dt.json"), ("keypoints", "okk-gt.json", "okk-dt.json")):
    rc1, so1, se1 = run("map-eval", "--iou-type", kind, "--gt", path(g), "--dt", path(d), "-w", path("w.json"))
    rc2, so2, se2 = run("map-eval", "--iou-type", kind, "--gt", path(g), "--dt", path("w.json"))
    ok(rc1 == 0 and rc2 == 0 and so1 == so2 and "Average Precision" in so1,
       "%s: --write-results reads back to the same stats" % kind, (se1, se2, so1, so2))

shutil.rmtree(tmp)
done()
