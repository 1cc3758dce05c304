#!/usr/bin/python3
# preprocess_fit_height.t — the text recognizers' resize (resize.mode:
# fit-height): height H keeping the aspect ratio, width capped at W, padded on
# the right to W, against PaddleOCR's resize_norm_img written out with
# OpenCV and numpy (cv2.imread's BGR, cv2.resize INTER_LINEAR, /255, -0.5,
# /0.5 in float32, zeros to the right) bit for bit; the padding and the map
# in meta.json; a pixel pad (resize.pad) for uint8 output; bad fills refused.
import math
import os
import sys

import cv2
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from preproc_common import Tap, describe_diff, gen_image, load_meta, run, save_png, tmpdir

t = Tap()
rng = np.random.default_rng(34)
d = tmpdir()
H, W = 48, 320
# (w, h): wider than W allows (capped), narrow, H * ratio a whole number, a sliver, taller than H
SOURCES = [(900, 40), (40, 60), (96, 48), (3, 100), (250, 31), (700, 110)]
files = []
for i, (w, h) in enumerate(SOURCES):
    path = os.path.join(d, "line_%dx%d.png" % (w, h))
    save_png(path, gen_image(h, w, 3, i % 4, rng))
    files.append(path)


def paddle_rec(path):
    """PaddleOCR's resize_norm_img (rec, image_shape [3, H, W]) on cv2.imread's image."""
    img = cv2.imread(path)
    h, w = img.shape[:2]
    ratio = w / float(h)
    rw = W if math.ceil(H * ratio) > W else int(math.ceil(H * ratio))
    r = cv2.resize(img, (rw, H)).astype("float32")
    r = r.transpose((2, 0, 1)) / 255
    r -= 0.5
    r /= 0.5
    out = np.zeros((3, H, W), dtype=np.float32)
    out[:, :, 0:rw] = r
    return out[None], rw


cfg = os.path.join(d, "rec.yaml")
open(cfg, "w").write("input: {name: x}\nresize: {size: %dx%d, method: opencv-linear, mode: fit-height, fill: 0}\n"
                     "color: bgr\nscale: 1/255\nmean: 0.5\nstd: 0.5\ndtype: float32\n" % (H, W))
out = os.path.join(d, "out")
run(["--config", cfg, "-o", out] + files)
problems, meta_problems = [], []
for path, (w, h) in zip(files, SOURCES):
    sid = os.path.splitext(os.path.basename(path))[0]
    got = np.load(os.path.join(out, sid, "x.npy"))
    ref, rw = paddle_rec(path)
    if got.dtype != np.float32 or got.shape != ref.shape or not np.array_equal(got.view(np.uint32), ref.view(np.uint32)):
        problems.append("%s: %s" % (sid, describe_diff(got, ref) if got.shape == ref.shape else got.shape))
    m = load_meta(out, sid)
    want = {"left": 0, "top": 0, "right": W - rw, "bottom": 0}
    if {k: m["pad"][k] for k in want} != want or m["pad"]["fill"] != 0 or m["mode"] != "fit-height" or \
            m["resized"] != {"width": rw, "height": H} or (m["scale_x"], m["scale_y"], m["offset_x"], m["offset_y"]) != (rw / w, H / h, 0, 0):
        meta_problems.append("%s: %s (resized width %d)" % (sid, m, rw))
t.ok(not problems, "fit-height 48x320 is PaddleOCR's resize_norm_img bit for bit (%d lines, capped and padded)"
     % len(files), "\n".join(problems))
t.ok(not meta_problems, "meta.json records the right padding, the fill and the map", "\n".join(meta_problems))

# uint8 output with a pixel pad (resize.pad, RGB): the resized pixels, then the pad colour
cfg8 = os.path.join(d, "rec8.yaml")
open(cfg8, "w").write("input: {name: x}\nresize: {size: 32x100, mode: fit-height, pad: [10, 20, 30]}\n"
                      "color: bgr\ndtype: uint8\nlayout: nhwc\n")
out8 = os.path.join(d, "out8")
run(["--config", cfg8, "-o", out8] + files)
problems = []
for path in files:
    sid = os.path.splitext(os.path.basename(path))[0]
    img = cv2.imread(path)
    h, w = img.shape[:2]
    rw = 100 if math.ceil(32 * (w / float(h))) > 100 else int(math.ceil(32 * (w / float(h))))
    ref = np.empty((32, 100, 3), np.uint8)
    ref[:] = (30, 20, 10)                       # the RGB pad in BGR order
    ref[:, :rw] = cv2.resize(img, (rw, 32))
    got = np.load(os.path.join(out8, sid, "x.npy"))[0]
    if not np.array_equal(got, ref):
        problems.append("%s: %s" % (sid, describe_diff(got, ref)))
t.ok(not problems, "fit-height uint8 NHWC with resize.pad: cv2.resize, then the pad colour to the right", "\n".join(problems))

# refusals: one line naming the key
for body, needle in (("resize: {size: 32x100, mode: stretch, fill: 0}\n", "resize.fill: only letterbox and fit-height pad"),
                     ("resize: {size: 32x100, mode: fit-height, fill: 1.5}\ndtype: uint8\n", "resize.fill: expected a finite number"),
                     ("resize: {size: 32x100, mode: fit-height, fill: .nan}\n", "resize.fill: expected a finite number")):
    bad = os.path.join(d, "bad.yaml")
    open(bad, "w").write("input: {name: x}\n" + body)
    rc, err = run(["--config", bad, "-o", os.path.join(d, "bad")] + files[:1], check=False)
    t.ok(rc == 2 and needle in err and err.count("\n") == 1 and not os.path.exists(os.path.join(d, "bad")),
         "refused: %s" % body.strip().replace("\n", " "), err)
t.done()
