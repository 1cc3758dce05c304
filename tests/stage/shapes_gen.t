#!/usr/bin/python3
# gen-shapes, the synthetic shapes dataset: same seed -> same bytes; shards
# (--start) reproduce the images of a whole split (so val-200 is the head of
# val-2000); the COCO ground truth is well formed and agrees with the PNG files
# as Pillow decodes them; the data is varied (sizes, all six categories, small
# and large objects, occlusions); bad usage exits 2 with one line and leaves no
# output folder.
import collections
import filecmp
import json
import os
import shutil
import sys
import tempfile

from PIL import Image

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done, run, one_line_error

tmp = tempfile.mkdtemp(prefix="parity-shapes-")
N = 24


def gen(name, *args):
    out = os.path.join(tmp, name)
    rc, _, err = run("gen-shapes", "-o", out, "-j", "2", *args)
    return rc, err, out


def load(d):
    with open(os.path.join(d, "annotations.json")) as f:
        return json.load(f)


rc, err, a = gen("a", "--split", "val", "--count", N)
ok(rc == 0, "val split of %d images" % N, err)
rc, err, b = gen("b", "--split", "val", "--count", N)
names = sorted(os.listdir(os.path.join(a, "images")))
same = filecmp.cmpfiles(os.path.join(a, "images"), os.path.join(b, "images"), names, shallow=False)
ok(rc == 0 and len(same[0]) == N and filecmp.cmp(os.path.join(a, "annotations.json"),
                                                 os.path.join(b, "annotations.json"), shallow=False),
   "same seed and split: identical PNG and JSON bytes")
ok(names == ["%07d.png" % i for i in range(1, N + 1)], "file names are the 1-based image ids")

half = N // 2
rc, err, s = gen("shard", "--split", "val", "--start", half, "--count", N - half)
snames = sorted(os.listdir(os.path.join(s, "images")))
same = filecmp.cmpfiles(os.path.join(a, "images"), os.path.join(s, "images"), snames, shallow=False)
ga, gs = load(a), load(s)
tail_imgs = [im for im in ga["images"] if im["id"] > half]
tail_anns = [x for x in ga["annotations"] if x["image_id"] > half]
ok(rc == 0 and snames == names[half:] and len(same[0]) == N - half,
   "a shard (--start %d) draws the same images as the whole split" % half, err)
ok(gs["images"] == tail_imgs and gs["annotations"] == tail_anns,
   "and the same annotations (ids included)")

rc, err, t = gen("train", "--split", "train", "--count", 2)
rc2, err2, o = gen("seed", "--split", "val", "--count", 2, "--seed", 7)
ok(rc == 0 and rc2 == 0 and
   not filecmp.cmp(os.path.join(t, "images", names[0]), os.path.join(a, "images", names[0]), shallow=False) and
   not filecmp.cmp(os.path.join(o, "images", names[0]), os.path.join(a, "images", names[0]), shallow=False),
   "train split and another seed draw other images", err + err2)

# The ground truth: COCO fields, ids, categories, boxes inside their images.
cats = {c["id"]: c["name"] for c in ga["categories"]}
ok(cats == {1: "circle", 2: "rectangle", 3: "triangle", 4: "star", 5: "ring", 6: "cross"},
   "categories 1..6: circle rectangle triangle star ring cross")
sizes = {}
decoded_ok = True
for im in ga["images"]:
    with Image.open(os.path.join(a, "images", im["file_name"])) as p:
        decoded_ok &= p.size == (im["width"], im["height"]) and p.mode == "RGB"
    sizes[im["id"]] = (im["width"], im["height"])
ok(decoded_ok and [im["id"] for im in ga["images"]] == list(range(1, N + 1)),
   "every PNG decodes (Pillow) as RGB of the width and height the JSON gives")
bad = []
for x in ga["annotations"]:
    w, h = sizes.get(x["image_id"], (0, 0))
    bx, by, bw, bh = x["bbox"]
    if not (x["category_id"] in cats and x["iscrowd"] == 0 and bw > 0 and bh > 0 and bx >= 0 and by >= 0
            and bx + bw <= w + 0.01 and by + bh <= h + 0.01 and 0 < x["area"] <= bw * bh + 1
            and 0 < x["visible"] <= 1):
        bad.append(x)
ok(not bad, "every annotation: known category, iscrowd 0, box inside its image, 0 < area <= box area",
   json.dumps(bad[:3]))
ids = [x["id"] for x in ga["annotations"]]
ok(len(ids) == len(set(ids)), "annotation ids are unique")

# Geometry the boxes must show: a disc or ring that is whole and away from the
# border has a square box.
round_boxes = [x for x in ga["annotations"] if x["category_id"] in (1, 5) and x["visible"] == 1.0
               and x["bbox"][0] > 0 and x["bbox"][1] > 0
               and x["bbox"][0] + x["bbox"][2] < sizes[x["image_id"]][0]
               and x["bbox"][1] + x["bbox"][3] < sizes[x["image_id"]][1]]
ok(round_boxes and all(abs(x["bbox"][2] - x["bbox"][3]) <= 0.02 for x in round_boxes),
   "whole circles and rings have square boxes (%d checked)" % len(round_boxes))

# Variety.
areas = [x["area"] for x in ga["annotations"]]
ok(len(set(sizes.values())) >= 4, "at least 4 image sizes among %d images (%d)" % (N, len(set(sizes.values()))))
ok(set(collections.Counter(x["category_id"] for x in ga["annotations"])) == set(cats), "all six categories occur")
ok(min(areas) < 32 * 32 and max(areas) > 96 * 96, "small (< 32^2) and large (> 96^2) objects occur")
ok(any(x["visible"] < 1 for x in ga["annotations"]), "some objects are partly occluded")

# Bad usage: one line, exit 2, nothing written.
rc, _, err = run("gen-shapes", "--split", "test", "--count", 1, "-o", os.path.join(tmp, "x"))
ok(one_line_error(rc, err, "--split") and not os.path.exists(os.path.join(tmp, "x")), "unknown split: exit 2", err)
rc, _, err = run("gen-shapes", "--split", "val", "-o", os.path.join(tmp, "x"))
ok(one_line_error(rc, err, "--count") and not os.path.exists(os.path.join(tmp, "x")), "missing --count: exit 2", err)
rc, _, err = run("gen-shapes", "--split", "val", "--count", "3x", "-o", os.path.join(tmp, "x"))
ok(one_line_error(rc, err, "--count", "3x"), "non-numeric --count: exit 2", err)
blocker = os.path.join(tmp, "file")
open(blocker, "w").close()
rc, _, err = run("gen-shapes", "--split", "val", "--count", 1, "-o", os.path.join(blocker, "sub"))
ok(one_line_error(rc, err, "file") and os.path.isfile(blocker), "unwritable output: exit 2, one line", err)
shutil.rmtree(tmp, ignore_errors=True)
done()
