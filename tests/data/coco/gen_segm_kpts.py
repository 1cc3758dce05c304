#!/usr/bin/python3
# gen_segm_kpts.py — makes the segm and keypoints test vectors of
# tests/data/coco/segm/ and tests/data/coco/keypoints/ and what pycocotools
# computes for them (expected.json). Needs pycocotools (see README.md: how
# it was built and run, versions); the suite only reads the files it wrote.
#
#   PYTHONPATH=/path/to/cocoapi/PythonAPI /usr/bin/python3 gen_segm_kpts.py [OUTDIR]
#
# Every case is evaluated twice: with numpy's own SIMD exp (AVX512F
# machines) and with libm's (NPY_DISABLE_CPU_FEATURES, a child process); the
# two must give the same statistics, so the vectors do not depend on which
# of the two the reference machine used (they differ in the last bit of some
# OKS values, never enough to move a match).
import copy
import json
import os
import subprocess
import sys

import numpy as np
from pycocotools import mask as mu
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

HERE = os.path.dirname(os.path.abspath(__file__))
SEGM_STATS = ["AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl"]
KP_STATS = ["AP", "AP50", "AP75", "APm", "APl", "AR", "AR50", "AR75", "ARm", "ARl"]
NO_AVX512 = "AVX512F AVX512CD AVX512_KNL AVX512_KNM AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL"


def coco_from(d):
    c = COCO()
    c.dataset = copy.deepcopy(d)
    c.createIndex()
    return c


def evaluate(gt, dt, iou_type, sigmas=None):
    """pycocotools on the two objects; stats, per-category AP, OKS/IoU dict."""
    cg = coco_from(gt)
    cd = cg.loadRes(copy.deepcopy(dt))
    ev = COCOeval(cg, cd, iou_type)
    if sigmas is not None:
        ev.params.kpt_oks_sigmas = np.array(sigmas)
    ev.evaluate()
    ev.accumulate()
    ev.summarize()
    names = KP_STATS if iou_type == "keypoints" else SEGM_STATS
    stats = {k: float(v) for k, v in zip(names, ev.stats)}
    prec = ev.eval["precision"]
    mlast = len(ev.params.maxDets) - 1
    cat = {}
    for k, cid in enumerate(ev.params.catIds):
        s = prec[:, :, k, 0, mlast]
        s = s[s > -1]
        cat[str(cid)] = float(np.mean(s)) if s.size else -1.0
    ious = {}
    for (img, c), m in ev.ious.items():
        if len(m):
            ious["%d,%d" % (img, c)] = np.asarray(m).tolist()
    return {"stats": stats, "per_category_AP": cat}, ious


def child_eval(spec_path):
    spec = json.load(open(spec_path))
    r, ious = evaluate(spec["gt"], spec["dt"], spec["type"], spec.get("sigmas"))
    r["ious"] = ious
    print(json.dumps(r))


# ---- shapes ----

def rand_poly(rng, cx, cy, r, n):
    a = np.sort(rng.uniform(0, 2 * np.pi, n))
    rr = r * rng.uniform(0.4, 1.0, n)
    pts = []
    for t, q in zip(a, rr):
        pts += [round(float(cx + q * np.cos(t)), 2), round(float(cy + q * np.sin(t)), 2)]
    return pts


def ellipse_mask(rng, h, w, cx, cy, rx, ry):
    yy, xx = np.mgrid[0:h, 0:w]
    m = ((xx - cx) / max(rx, 0.5)) ** 2 + ((yy - cy) / max(ry, 0.5)) ** 2 <= 1.0
    if rng.random() < 0.3:   # a hole
        m &= ((xx - cx) / max(rx / 3, 0.5)) ** 2 + ((yy - cy) / max(ry / 3, 0.5)) ** 2 > 1.0
    return np.asfortranarray(m.astype(np.uint8))


def rle_str(m):
    r = mu.encode(m)
    return {"size": [int(r["size"][0]), int(r["size"][1])], "counts": r["counts"].decode("ascii")}


def rle_uncompressed(m):
    flat = m.flatten(order="F")
    counts, cur, run = [], 0, 0
    for v in flat:
        if v != cur:
            counts.append(run)
            run, cur = 0, v
        run += 1
    counts.append(run)
    return {"size": list(m.shape), "counts": counts}


def bbox_of(m):
    return [float(x) for x in mu.toBbox(mu.encode(np.asfortranarray(m)))]


def shift_mask(m, dx, dy):
    return np.asfortranarray(np.roll(np.roll(m, dy, axis=0), dx, axis=1))


# ---- segm cases ----

def segm_case(rng, nimg, ncat, gt_per_img, det_mode, extra_dets, seed_ids=1):
    images, anns, dets = [], [], []
    cats = [{"id": c * 2 + 1, "name": "c%d" % c} for c in range(ncat)]
    aid = seed_ids
    for i in range(nimg):
        h, w = int(rng.integers(40, 160)), int(rng.integers(40, 160))
        iid = 1000 + i * 3
        images.append({"id": iid, "width": w, "height": h, "file_name": "%d.jpg" % iid})
        ngt = 0 if rng.random() < 0.1 else int(rng.integers(1, gt_per_img + 1))
        for _ in range(ngt):
            cat = cats[int(rng.integers(0, ncat))]["id"]
            cx, cy = rng.uniform(0, w), rng.uniform(0, h)
            r = rng.uniform(3, min(h, w) * 0.6)
            kind = rng.random()
            crowd = int(rng.random() < 0.08)
            if kind < 0.45 and not crowd:
                polys = [rand_poly(rng, cx, cy, r, int(rng.integers(3, 12)))]
                if rng.random() < 0.25:
                    polys.append(rand_poly(rng, rng.uniform(0, w), rng.uniform(0, h), r / 2, 5))
                if rng.random() < 0.1:      # a repeated vertex
                    polys[0] = polys[0][:2] + polys[0][:2] + polys[0][2:]
                seg = polys
                m = mu.decode(mu.merge(mu.frPyObjects(polys, h, w)))
            else:
                m = ellipse_mask(rng, h, w, cx, cy, r * rng.uniform(0.3, 1), r * rng.uniform(0.3, 1))
                seg = rle_uncompressed(m) if (crowd or kind < 0.7) else rle_str(m)
            area = float(mu.area(mu.encode(np.asfortranarray(m))))
            if rng.random() < 0.1:
                area = float(area * rng.uniform(0.5, 2))   # the JSON area is what counts
            anns.append({"id": aid, "image_id": iid, "category_id": cat, "segmentation": seg,
                         "area": area, "bbox": bbox_of(m), "iscrowd": crowd})
            aid += 1
            # detections near this object
            for _ in range(int(rng.integers(0, 4))):
                dm = shift_mask(m, int(rng.integers(-2, 3)), int(rng.integers(-2, 3)))
                if rng.random() < 0.3:
                    dm = ellipse_mask(rng, h, w, cx + rng.normal(0, 3), cy + rng.normal(0, 3),
                                      r * rng.uniform(0.3, 1), r * rng.uniform(0.3, 1))
                dets.append(make_segm_det(rng, iid, cat if rng.random() < 0.9 else
                                          cats[int(rng.integers(0, ncat))]["id"], dm, det_mode))
        for _ in range(int(rng.integers(0, extra_dets + 1))):
            dm = ellipse_mask(rng, h, w, rng.uniform(0, w), rng.uniform(0, h),
                              rng.uniform(2, w / 2), rng.uniform(2, h / 2))
            dets.append(make_segm_det(rng, iid, cats[int(rng.integers(0, ncat))]["id"], dm, det_mode))
    rng.shuffle(dets)
    return {"images": images, "annotations": anns, "categories": cats}, dets


def make_segm_det(rng, iid, cat, m, mode):
    score = round(float(rng.random()), 2) if rng.random() < 0.3 else float(rng.random())
    d = {"image_id": iid, "category_id": cat, "score": score}
    if mode == "poly":
        # a polygon around the mask's box corners, jittered
        b = bbox_of(m)
        x0, y0, x1, y1 = b[0], b[1], b[0] + b[2], b[1] + b[3]
        d["segmentation"] = [[x0 + rng.uniform(0, 2), y0, x1, y0 + rng.uniform(0, 2), x1 - 1, y1,
                              x0, y1 - rng.uniform(0, 2)]]
    else:
        d["segmentation"] = rle_str(m)
    if mode in ("rle+bbox", "poly"):
        d["bbox"] = bbox_of(m)
    return d


def segm_edge():
    """Hand-written corner cases."""
    h, w = 30, 40
    images = [{"id": i, "width": w, "height": h} for i in (1, 2, 3, 4)]
    cats = [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}, {"id": 3, "name": "empty"}]
    sq = np.zeros((h, w), np.uint8, order="F")
    sq[5:15, 5:15] = 1
    big = np.zeros((h, w), np.uint8, order="F")
    big[0:30, 0:40] = 1
    anns = [
        # a square as a polygon, one as compressed RLE, one as uncompressed RLE
        {"id": 1, "image_id": 1, "category_id": 1, "segmentation": [[5, 5, 15, 5, 15, 15, 5, 15]],
         "area": 100.0, "bbox": [5, 5, 10, 10], "iscrowd": 0},
        {"id": 2, "image_id": 1, "category_id": 1, "segmentation": rle_str(shift_mask(sq, 18, 0)),
         "area": 100.0, "bbox": [23, 5, 10, 10], "iscrowd": 0},
        {"id": 3, "image_id": 1, "category_id": 2, "segmentation": rle_uncompressed(big),
         "area": 1200.0, "bbox": [0, 0, 40, 30], "iscrowd": 1},
        # polygon with coordinates outside the image, a repeated vertex, two parts
        {"id": 4, "image_id": 2, "category_id": 1,
         "segmentation": [[-3.3, -2.1, 20.7, -1.4, 20.7, -1.4, 44.9, 12.2, 10.25, 33.5],
                          [30.1, 20.2, 38.6, 21.0, 35.5, 28.9]],
         "area": 1024.0, "bbox": [0, 0, 40, 30], "iscrowd": 0},
        # a triangle and a later "polygon" of two points (a line)
        {"id": 5, "image_id": 2, "category_id": 2,
         "segmentation": [[2.5, 3.5, 11.0, 3.5, 11.0, 9.25], [20.2, 2.0, 26.7, 8.1]],
         "area": 90.0, "bbox": [2.5, 3.5, 11, 9.25], "iscrowd": 0},
        # a crowd polygon region
        {"id": 6, "image_id": 3, "category_id": 1, "segmentation": [[0, 0, 39, 0, 39, 29, 0, 29]],
         "area": 9216.0, "bbox": [0, 0, 39, 29], "iscrowd": 1},
        {"id": 7, "image_id": 3, "category_id": 1, "segmentation": rle_str(sq),
         "area": 100.0, "bbox": [5, 5, 10, 10], "iscrowd": 0},
        # uncompressed RLE with zero-length runs
        {"id": 8, "image_id": 3, "category_id": 2,
         "segmentation": {"size": [h, w], "counts": [0, 50, 0, 0, 100, 30, 1020]},
         "area": 80.0, "bbox": [0, 0, 2, 30], "iscrowd": 0},
    ]
    dets = [
        {"image_id": 1, "category_id": 1, "segmentation": rle_str(sq), "score": 0.9},
        {"image_id": 1, "category_id": 1, "segmentation": rle_str(shift_mask(sq, 2, 1)), "score": 0.9},
        {"image_id": 1, "category_id": 1, "segmentation": rle_str(shift_mask(sq, 17, 0)), "score": 0.8},
        {"image_id": 1, "category_id": 2, "segmentation": rle_str(sq), "score": 0.7},
        {"image_id": 1, "category_id": 2, "segmentation": rle_str(shift_mask(sq, 10, 10)), "score": 0.6},
        {"image_id": 2, "category_id": 1, "segmentation": rle_str(big), "score": 0.5},
        {"image_id": 2, "category_id": 2, "segmentation": rle_str(shift_mask(sq, -2, -1)), "score": 0.5},
        {"image_id": 3, "category_id": 1, "segmentation": rle_str(sq), "score": 0.4},
        {"image_id": 3, "category_id": 1, "segmentation": rle_str(shift_mask(sq, 1, 0)), "score": 0.45},
        {"image_id": 3, "category_id": 1, "segmentation": rle_str(shift_mask(sq, 12, 10)), "score": 0.3},
        {"image_id": 3, "category_id": 2, "segmentation": rle_str(sq), "score": 0.3},
        {"image_id": 4, "category_id": 1, "segmentation": rle_str(sq), "score": 0.2},
        {"image_id": 4, "category_id": 3, "segmentation": rle_str(np.zeros((h, w), np.uint8, order="F")),
         "score": 0.1},
    ]
    return {"images": images, "annotations": anns, "categories": cats}, dets


# ---- masks: each form against pycocotools' own conversion, and IoUs ----

def nasty_poly(rng, h, w):
    n = int(rng.integers(3, 14))
    grid = [0.1, 0.5, 0.2, 0.01][int(rng.integers(0, 4))]
    pts = []
    for _ in range(n):
        x = round(float(rng.uniform(-0.3 * w, 1.3 * w)) / grid) * grid
        y = round(float(rng.uniform(-0.3 * h, 1.3 * h)) / grid) * grid
        pts += [x, y]
        if rng.random() < 0.1:
            pts += [x, y]                      # repeated vertex
        if rng.random() < 0.05:
            pts += [x, y + 3 * grid]           # a vertical step
    return pts


def masks_case(rng):
    masks, pairs = [], []
    sizes = [(1, 7), (9, 1), (5, 5), (17, 23), (40, 31), (64, 48)]
    by_size = {}
    for _ in range(300):
        h, w = sizes[int(rng.integers(0, len(sizes)))]
        r = rng.random()
        if r < 0.55:
            seg = [nasty_poly(rng, h, w)]
            while rng.random() < 0.3:
                seg.append(nasty_poly(rng, h, w) if rng.random() < 0.8 else
                           [round(float(rng.uniform(0, w)), 1), round(float(rng.uniform(0, h)), 1)])
            rle = mu.merge(mu.frPyObjects(seg, h, w))
        elif r < 0.8:
            m = (rng.random((h, w)) < rng.uniform(0.05, 0.95)).astype(np.uint8)
            seg = rle_uncompressed(np.asfortranarray(m))
            if rng.random() < 0.4:             # zero-length runs, as a user may write them
                c = seg["counts"]
                for _ in range(int(rng.integers(1, 4))):
                    k = int(rng.integers(1, len(c) + 1))
                    c[k:k] = [0, 0] if rng.random() < 0.5 else [0]
                if len(c) % 2 == 0 and rng.random() < 0.5:
                    c.append(0)
            rle = mu.frPyObjects(seg, h, w)
        else:
            m = ellipse_mask(rng, h, w, rng.uniform(0, w), rng.uniform(0, h), rng.uniform(1, w),
                             rng.uniform(1, h))
            seg = rle_str(m)
            rle = dict(seg)
        s = rle["counts"]
        masks.append({"h": h, "w": w, "segmentation": seg,
                      "rle": s.decode("ascii") if isinstance(s, bytes) else s,
                      "area": int(mu.area(rle))})
        by_size.setdefault((h, w), []).append((len(masks) - 1, rle))
    for (h, w), items in sorted(by_size.items()):
        for _ in range(60 * len(items) // 10):
            a, ra = items[int(rng.integers(0, len(items)))]
            b, rb = items[int(rng.integers(0, len(items)))]
            crowd = int(rng.random() < 0.3)
            v = mu.iou([ra], [rb], [crowd])
            pairs.append({"dt": a, "gt": b, "iscrowd": crowd, "iou": float(np.asarray(v)[0][0])})
    return {"masks": masks, "pairs": pairs}


# ---- keypoints cases ----

COCO_SIGMAS = [.26, .25, .25, .35, .35, .79, .79, .72, .72, .62, .62, 1.07, 1.07, .87, .87, .89, .89]


def kp_case(rng, nimg, ncat, K, gt_per_img, with_bbox, extra_dets, int_coords=False):
    images, anns, dets = [], [], []
    cats = [{"id": c + 1, "name": "p%d" % c, "keypoints": ["k%d" % k for k in range(K)]}
            for c in range(ncat)]
    aid = 1
    for i in range(nimg):
        w, h = int(rng.integers(100, 400)), int(rng.integers(100, 400))
        iid = 7 + i * 2
        images.append({"id": iid, "width": w, "height": h})
        ngt = 0 if rng.random() < 0.1 else int(rng.integers(1, gt_per_img + 1))
        for _ in range(ngt):
            cat = cats[int(rng.integers(0, ncat))]["id"]
            bw, bh = rng.uniform(8, w / 2), rng.uniform(8, h / 2)
            bx, by = rng.uniform(0, w - bw), rng.uniform(0, h - bh)
            kp, nvis = [], 0
            mode = rng.random()
            for k in range(K):
                x, y = bx + rng.uniform(0, bw), by + rng.uniform(0, bh)
                if int_coords:
                    x, y = float(int(x)), float(int(y))
                v = int(rng.choice([0, 1, 2], p=[0.2, 0.2, 0.6]))
                if mode < 0.1:
                    v = 0                  # no visible keypoint at all
                if v == 0:
                    x = y = 0.0
                nvis += v > 0
                kp += [round(x, 2), round(y, 2), v]
            num = nvis
            if mode >= 0.1 and mode < 0.15:
                num = 0                    # num_keypoints 0 with points present: ignored
            if mode < 0.1 and rng.random() < 0.5:
                num = 3                    # claims points none of which is visible
            crowd = int(rng.random() < 0.05)
            area = float(bw * bh * rng.uniform(0.3, 0.9))
            if rng.random() < 0.05:
                area = float(rng.choice([1024.0, 9216.0]))
            anns.append({"id": aid, "image_id": iid, "category_id": cat, "keypoints": kp,
                         "num_keypoints": num, "area": area, "bbox": [bx, by, bw, bh],
                         "iscrowd": crowd})
            aid += 1
            for _ in range(int(rng.integers(0, 4))):
                noise = rng.uniform(0.2, 6)
                dk = []
                for k in range(K):
                    gx, gy = kp[3 * k], kp[3 * k + 1]
                    if kp[3 * k + 2] == 0:
                        gx, gy = bx + rng.uniform(0, bw), by + rng.uniform(0, bh)
                    dk += [float(gx + rng.normal(0, noise)), float(gy + rng.normal(0, noise)),
                           float(rng.random())]
                dets.append(make_kp_det(rng, iid, cat, dk, with_bbox))
        for _ in range(int(rng.integers(0, extra_dets + 1))):
            dk = []
            cx, cy = rng.uniform(0, w), rng.uniform(0, h)
            for k in range(K):
                dk += [float(cx + rng.normal(0, 30)), float(cy + rng.normal(0, 30)), 1.0]
            dets.append(make_kp_det(rng, iid, cats[int(rng.integers(0, ncat))]["id"], dk, with_bbox))
    rng.shuffle(dets)
    return {"images": images, "annotations": anns, "categories": cats}, dets


def make_kp_det(rng, iid, cat, dk, with_bbox):
    score = round(float(rng.random()), 2) if rng.random() < 0.3 else float(rng.random())
    d = {"image_id": iid, "category_id": cat, "keypoints": dk, "score": score}
    if with_bbox:
        xs, ys = dk[0::3], dk[1::3]
        d["bbox"] = [min(xs) - 2, min(ys) - 2, max(xs) - min(xs) + 4, max(ys) - min(ys) + 4]
    return d


# ---- driver ----

def write(d, name, obj):
    with open(os.path.join(d, name), "w") as f:
        json.dump(obj, f, separators=(",", ":"))
        f.write("\n")


def run_case(out, kind, name, gt, dt, sigmas=None, note=""):
    d = os.path.join(out, kind, name)
    os.makedirs(d, exist_ok=True)
    write(d, "gt.json", gt)
    write(d, "dt.json", dt)
    res, _ = evaluate(gt, dt, kind, sigmas)
    spec = os.path.join(d, ".spec.json")
    write(d, ".spec.json", {"gt": gt, "dt": dt, "type": kind, "sigmas": sigmas})
    env = dict(os.environ, NPY_DISABLE_CPU_FEATURES=NO_AVX512)
    child = subprocess.run([sys.executable, __file__, "--child", spec], env=env, check=True,
                           capture_output=True, text=True)
    os.remove(spec)
    other = json.loads(child.stdout.splitlines()[-1])
    assert other["stats"] == res["stats"], (name, other["stats"], res["stats"])
    assert other["per_category_AP"] == res["per_category_AP"], name
    exp = {"oracle": "pycocotools COCOeval(iouType=%s), numpy float64" % kind,
           "iou_type": kind, "note": note}
    if sigmas is not None:
        exp["kpt_oks_sigmas"] = sigmas
    exp.update(res)
    write(d, "expected.json", exp)
    print("%s/%s: %d images, %d GT, %d dets, AP %.4f" % (kind, name, len(gt["images"]),
          len(gt["annotations"]), len(dt), res["stats"]["AP"]), file=sys.stderr)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child_eval(sys.argv[2])
        return
    out = sys.argv[1] if len(sys.argv) > 1 else HERE
    rng = np.random.default_rng(35)
    os.makedirs(os.path.join(out, "segm"), exist_ok=True)
    write(os.path.join(out, "segm"), "masks.json", masks_case(np.random.default_rng(350)))
    gt, dt = segm_edge()
    run_case(out, "segm", "edge", gt, dt, note="hand-written corner cases, dets without bbox")
    gt, dt = segm_case(rng, 40, 3, 6, "rle+bbox", 5)
    run_case(out, "segm", "rle-bbox", gt, dt, note="dets: compressed RLE with bbox (area from bbox)")
    gt, dt = segm_case(rng, 40, 4, 6, "rle", 5)
    run_case(out, "segm", "rle-nobbox", gt, dt, note="dets: compressed RLE, no bbox (area from mask)")
    gt, dt = segm_case(rng, 30, 2, 5, "poly", 3)
    run_case(out, "segm", "poly-dets", gt, dt, note="dets: polygons with bbox")
    gt, dt = segm_case(rng, 12, 2, 12, "rle+bbox", 140)
    run_case(out, "segm", "many-dets", gt, dt, note="over 100 dets per image and category")
    gt, dt = kp_case(rng, 50, 1, 17, 6, True, 4)
    run_case(out, "keypoints", "person-bbox", gt, dt, note="17 COCO keypoints, dets with bbox")
    gt, dt = kp_case(rng, 50, 2, 17, 6, False, 4, int_coords=True)
    run_case(out, "keypoints", "person-nobbox", gt, dt,
             note="dets without bbox (area from the keypoint extent), integer GT coordinates")
    gt, dt = kp_case(rng, 15, 1, 17, 4, True, 30)
    run_case(out, "keypoints", "many-dets", gt, dt, note="over 20 dets per image (maxDets 20)")
    sig = [round(float(s), 3) for s in rng.uniform(0.02, 0.12, 5)]
    gt, dt = kp_case(rng, 40, 2, 5, 5, True, 3)
    run_case(out, "keypoints", "custom-5", gt, dt, sigmas=sig, note="5 keypoints, custom sigmas")


if __name__ == "__main__":
    main()
