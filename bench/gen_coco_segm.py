#!/usr/bin/python3
"""gen_coco_segm.py — a deterministic, COCO-sized synthetic segm evaluation.

Writes OUT/gt.json and OUT/dt.json shaped like COCO val2017 instance masks
evaluated with a Mask R-CNN-style model: 5,000 images of COCO's common sizes,
the 80 COCO category ids, about 7.3 objects per image (~36k, about 1% crowd)
whose sizes spread over small/medium/large, every mask a compressed RLE
string (as COCO's own RLE annotations and the results of Detectron2 /
MMDetection are); a fixed number of results per image (default 100, so
500k), each a compressed RLE with its bbox and a score rounded to 4
decimals: shifted copies of the ground-truth masks (true positives at
varied IoU, duplicates, wrong classes) and background false positives.

Masks are blobs with one vertical run per column. A blob placed at
(x0, y0) in an image of height h has the same counts whatever x0 and y0
are, except the first and the last, so each shape's string is encoded once
and only its ends per placement (the string stores counts from the 4th on
as differences to the one two before).

Usage: gen_coco_segm.py OUT [--images N] [--dets-per-image D] [--seed S]
The same arguments always give the same bytes (random.Random(seed), no numpy).
"""
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_coco import COCO_IDS, setup  # noqa: E402
SIZES = [(640, 480), (480, 640), (640, 427), (640, 426), (500, 375), (640, 640)]


def enc(x):
    """One count of maskApi's RLE string (x may be negative)."""
    out = []
    more = True
    while more:
        c = x & 0x1F
        x >>= 5
        more = (x != -1) if (c & 0x10) else (x != 0)
        if more:
            c |= 0x20
        out.append(chr(c + 48))
    return "".join(out)


class Shape:
    """A blob of W columns: per column the top row and run length."""

    def __init__(self, rng, h, w_max, h_max):
        s = math.exp(rng.uniform(math.log(4), math.log(min(w_max, h_max) * 0.8)))
        ar = math.exp(rng.uniform(-0.6, 0.6))
        self.W = max(2, min(w_max - 2, int(s * ar)))
        self.H = max(2, min(h_max - 2, int(s / ar)))
        self.h = h
        cx, r = (self.W - 1) / 2.0, (self.W - 1) / 2.0 + 0.5
        wob = rng.uniform(0.0, 0.25)
        self.top, self.len = [], []
        for j in range(self.W):
            f = math.sqrt(max(0.0, 1 - ((j - cx) / r) ** 2)) * (1 - wob * math.sin(j * 0.7))
            half = max(0.5, f * self.H / 2.0)
            t = max(0, int(round(self.H / 2.0 - half)))
            n = max(1, min(self.H - t, int(round(2 * half))))
            self.top.append(t)
            self.len.append(n)
        self.area = sum(self.len)
        # counts between the first run and the last: fixed for this image height
        mid = []
        for j in range(1, self.W):
            mid.append(h - self.top[j - 1] - self.len[j - 1] + self.top[j])
            mid.append(self.len[j])
        self.mid = mid                       # counts[2 .. 2W-1]
        # the string of counts[3 .. 2W-1] (differences to two before)
        cnt = [None, self.len[0]] + mid
        self.mid_str = "".join(enc(cnt[i] - cnt[i - 2]) for i in range(3, len(cnt)))

    def rle(self, x0, y0, w):
        h = self.h
        c0 = x0 * h + y0 + self.top[0]
        last = h * w - (x0 + self.W - 1) * h - (y0 + self.top[-1] + self.len[-1])
        cnt_m3 = self.mid[-2] if len(self.mid) >= 2 else self.len[0]    # counts[2W-2]
        s = enc(c0) + enc(self.len[0]) + enc(self.mid[0]) + self.mid_str + enc(last - cnt_m3)
        return {"size": [h, w], "counts": s}

    def bbox(self, x0, y0):
        ys = [y0 + t for t in self.top]
        ye = [y0 + t + n for t, n in zip(self.top, self.len)]
        return [x0, min(ys), self.W, max(ye) - min(ys)]


def place(rng, shape, W, H):
    return rng.randint(0, W - shape.W), rng.randint(0, H - shape.H)


def main():
    a, rng = setup()
    library = {}                             # (w, h) -> shapes for false positives
    for w, h in SIZES:
        library[(w, h)] = [Shape(rng, h, w, h) for _ in range(300)]

    images, anns, dets = [], [], []
    aid = 1
    for i in range(a.images):
        img_id = 100000 + 7 * i
        W, H = SIZES[rng.randrange(len(SIZES))]
        images.append({"id": img_id, "width": W, "height": H, "file_name": "%012d.jpg" % img_id})
        n = max(0, int(rng.gauss(7.3, 4)))
        objs = []
        for _ in range(n):
            shp = Shape(rng, H, W, H)
            x0, y0 = place(rng, shp, W, H)
            cat = COCO_IDS[rng.randrange(80)]
            crowd = 1 if rng.random() < 0.01 else 0
            anns.append({"id": aid, "image_id": img_id, "category_id": cat,
                         "segmentation": shp.rle(x0, y0, W), "area": float(shp.area),
                         "bbox": [float(v) for v in shp.bbox(x0, y0)], "iscrowd": crowd})
            aid += 1
            objs.append((shp, x0, y0, cat))
        k = 0
        mine = []
        for shp, x0, y0, cat in objs:
            for _ in range(rng.choice([1, 1, 2, 3])):
                if k >= a.dets_per_image:
                    break
                d = max(1, shp.W // 6)
                x1 = min(max(0, x0 + rng.randint(-d, d)), W - shp.W)
                y1 = min(max(0, y0 + rng.randint(-d, d)), H - shp.H)
                c = cat if rng.random() < 0.9 else COCO_IDS[rng.randrange(80)]
                mine.append((shp, x1, y1, c, rng.uniform(0.3, 1.0)))
                k += 1
        while k < a.dets_per_image:
            shp = library[(W, H)][rng.randrange(300)]
            x0, y0 = place(rng, shp, W, H)
            mine.append((shp, x0, y0, COCO_IDS[rng.randrange(80)], rng.uniform(0.0, 0.6)))
            k += 1
        for shp, x0, y0, c, s in mine:
            dets.append({"image_id": img_id, "category_id": c,
                         "segmentation": shp.rle(x0, y0, W),
                         "bbox": [float(v) for v in shp.bbox(x0, y0)], "score": round(s, 4)})

    cats = [{"id": c, "name": "c%d" % c, "supercategory": "x"} for c in COCO_IDS]
    with open(os.path.join(a.out, "gt.json"), "w") as f:
        json.dump({"images": images, "annotations": anns, "categories": cats}, f)
    with open(os.path.join(a.out, "dt.json"), "w") as f:
        json.dump(dets, f)
    print("gen_coco_segm: %d images, %d ground-truth masks, %d results -> %s"
          % (len(images), len(anns), len(dets), a.out))


if __name__ == "__main__":
    main()
