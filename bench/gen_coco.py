#!/usr/bin/python3
"""gen_coco.py — a deterministic, COCO-sized synthetic bbox evaluation.

Writes OUT/gt.json (COCO ground truth) and OUT/dt.json (COCO results) shaped
like COCO val2017 evaluated with a real detector: 5,000 images, the 80 COCO
category ids (1..90 with COCO's gaps), about 7.3 boxes per image (~36k, about
1% crowd), box sizes spread over small/medium/large, and a fixed number of
detections per image (default 100, so 500k): noisy copies of the ground truth
(true positives at varied IoU, duplicates, wrong classes) plus background
false positives, scores rounded to 4 decimals as exporters do (so there are
many equal scores, which exercises the stable sorts).

Usage: gen_coco.py OUT [--images N] [--dets-per-image D] [--seed S]
The same arguments always give the same bytes (random.Random(seed), no numpy).
"""
import argparse
import json
import math
import os
import random

COCO_IDS = [i for i in range(1, 91) if i not in
            (12, 26, 29, 30, 45, 66, 68, 69, 71, 83)]


def rand_box(rng, W, H):
    # log-uniform side lengths: about 40% small, 35% medium, 25% large
    s = math.exp(rng.uniform(math.log(6), math.log(min(W, H) * 0.9)))
    ar = math.exp(rng.uniform(-0.7, 0.7))
    w = min(W - 1.0, s * ar)
    h = min(H - 1.0, s / ar)
    x = rng.uniform(0, W - w)
    y = rng.uniform(0, H - h)
    return [round(x, 2), round(y, 2), round(w, 2), round(h, 2)]


def jitter(rng, b, W, H, sigma):
    x, y, w, h = b
    x += rng.gauss(0, sigma) * w
    y += rng.gauss(0, sigma) * h
    w *= math.exp(rng.gauss(0, sigma))
    h *= math.exp(rng.gauss(0, sigma))
    x = min(max(x, 0.0), W - 1.0)
    y = min(max(y, 0.0), H - 1.0)
    w = max(0.5, min(w, W - x))
    h = max(0.5, min(h, H - y))
    return [round(x, 2), round(y, 2), round(w, 2), round(h, 2)]


def setup():
    """The command line (shared with gen_coco_segm.py): args, seeded rng, OUT made."""
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--images", type=int, default=5000)
    ap.add_argument("--dets-per-image", type=int, default=100)
    ap.add_argument("--seed", type=int, default=2017)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    return a, random.Random(a.seed)


def main():
    a, rng = setup()

    images, anns, dets = [], [], []
    ann_id = 1
    for i in range(a.images):
        img_id = 100000 + 7 * i            # sparse ids, like COCO's
        W, H = rng.choice([(640, 480), (480, 640), (640, 427), (500, 375)])
        images.append({"id": img_id, "width": W, "height": H,
                       "file_name": "%012d.jpg" % img_id})
        # a few categories per image, several boxes each
        cats = rng.sample(COCO_IDS, rng.randint(1, 5))
        nbox = max(0, int(rng.gauss(7.3, 4)))
        gts = []
        for _ in range(nbox):
            c = rng.choice(cats)
            b = rand_box(rng, W, H)
            crowd = 1 if rng.random() < 0.01 else 0
            area = round(b[2] * b[3] * rng.uniform(0.45, 0.95), 2)
            anns.append({"id": ann_id, "image_id": img_id, "category_id": c,
                         "bbox": b, "area": area, "iscrowd": crowd})
            ann_id += 1
            gts.append((c, b))
        out = []
        for c, b in gts:                    # detections of the ground truth
            for k in range(rng.randint(1, 4)):
                sigma = rng.choice([0.02, 0.05, 0.1, 0.25])
                cc = c if rng.random() < 0.85 else rng.choice(cats)
                score = rng.betavariate(5, 2) if k == 0 else rng.betavariate(2, 4)
                out.append((cc, jitter(rng, b, W, H, sigma), score))
        while len(out) < a.dets_per_image:  # background false positives
            out.append((rng.choice(cats if rng.random() < 0.7 else COCO_IDS),
                        rand_box(rng, W, H), rng.betavariate(1.2, 8)))
        out = out[:a.dets_per_image]
        for c, b, s in out:
            dets.append({"image_id": img_id, "category_id": c, "bbox": b,
                         "score": round(s, 4)})

    cats = [{"id": c, "name": "class%d" % c, "supercategory": "synthetic"}
            for c in COCO_IDS]
    with open(os.path.join(a.out, "gt.json"), "w") as f:
        json.dump({"info": {"description": "parity synthetic COCO-sized evaluation"},
                   "images": images, "annotations": anns, "categories": cats}, f)
    with open(os.path.join(a.out, "dt.json"), "w") as f:
        json.dump(dets, f)
    print("%s: %d images, %d categories, %d ground-truth boxes, %d detections"
          % (a.out, len(images), len(cats), len(anns), len(dets)))


if __name__ == "__main__":
    main()
