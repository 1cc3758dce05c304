#!/usr/bin/python3
# preprocess_float.t — the named variants in configs/preprocess/ do what their
# names promise (checked against the libraries and numpy at 640x640), and the
# float output equals numpy's float32 arithmetic on the reference pixels for
# scale (multiply, or 1/N: divide), mean, std, float16, nhwc and channel orders.
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from preproc_common import (Tap, gen_image, load_sample, preprocess, reference_pixels, save_png,
                            tmpdir, normalise_ref)

t = Tap()
rng = np.random.default_rng(99)
d = tmpdir()
files = []
for i, (w, h) in enumerate([(500, 375), (333, 500)]):
    path = os.path.join(d, "photo%d.png" % i)
    save_png(path, gen_image(h, w, 3, 3, rng))
    files.append(path)

IMAGENET = ([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
VARIANTS = {  # config -> method, mode, color, mean, std (all 640x640, /255, nchw float32)
    "rtdetr-official.yaml": ("pillow-bilinear", "stretch", "rgb", None, None),
    "opencv-stretch.yaml": ("opencv-linear", "stretch", "rgb", None, None),
    "letterbox-114.yaml": ("opencv-linear", "letterbox", "rgb", None, None),
    "bgr.yaml": ("opencv-linear", "stretch", "bgr", None, None),
    "imagenet-norm.yaml": ("pillow-bilinear", "stretch", "rgb") + IMAGENET,
    "paddle-bicubic.yaml": ("opencv-cubic", "stretch", "rgb", None, None),
}
for cfg, (method, mode, color, mean, std) in VARIANTS.items():
    out = os.path.join(d, cfg)
    preprocess(out, files, config=cfg)
    problems = []
    for i, path in enumerate(files):
        got = load_sample(out, "photo%d" % i)
        pix, _ = reference_pixels(path, method, color, 640, 640, mode=mode)
        ref = normalise_ref(pix, "1/255", mean, std)
        if got.dtype != np.float32 or got.shape != (1, 3, 640, 640) or not np.array_equal(got, ref):
            bad = np.argwhere(got != ref) if got.shape == ref.shape else []
            problems.append("photo%d: %s %s, %d values differ" % (i, got.dtype, got.shape, len(bad)))
        ots = load_sample(out, "photo%d" % i, "orig_target_sizes")
        w, h = (500, 375) if i == 0 else (333, 500)
        if ots.dtype != np.int64 or ots.tolist() != [[w, h]]:
            problems.append("orig_target_sizes %s" % ots.tolist())
    t.ok(not problems, "%s: %s %s %s%s, float32 equals numpy" % (
        cfg, method, mode, color, " + mean/std" if mean else ""), "\n".join(problems))

# normalisation variants on a small size
src = files[1]
CASES = [  # sets, color, scale, mean, std, dtype, layout
    ([], "rgb", "1/255", None, None, "float32", "nchw"),
    (["scale=0.00392156862745098"], "rgb", 0.00392156862745098, None, None, "float32", "nchw"),
    (["scale=1", "mean=[123.675,116.28,103.53]", "std=[58.395,57.12,57.375]"], "rgb", 1.0,
     [123.675, 116.28, 103.53], [58.395, 57.12, 57.375], "float32", "nchw"),
    (["mean=0.5", "std=0.5"], "rgb", "1/255", [0.5] * 3, [0.5] * 3, "float32", "nchw"),
    (["dtype=float16", "layout=nhwc"], "rgb", "1/255", None, None, "float16", "nhwc"),
    (["dtype=float16", "mean=[0.485,0.456,0.406]", "std=[0.229,0.224,0.225]"], "rgb", "1/255",
     IMAGENET[0], IMAGENET[1], "float16", "nchw"),
    (["color=bgr", "layout=nhwc", "mean=[0.1,0.2,0.3]"], "bgr", "1/255", [0.1, 0.2, 0.3], None,
     "float32", "nhwc"),
    (["color=gray", "mean=0.45", "std=0.25"], "gray", "1/255", [0.45], [0.25], "float32", "nchw"),
    (["color=rgba", "scale=1/127.5", "mean=1"], "rgba", "1/127.5", [1.0] * 4, None, "float32", "nchw"),
]
for method in ("opencv-linear", "pillow-bicubic"):
    for sets, color, scale, mean, std, dtype, layout in CASES:
        out = os.path.join(d, "n_%s_%d" % (method, CASES.index((sets, color, scale, mean, std, dtype, layout))))
        preprocess(out, [src], config="opencv-stretch.yaml",
                   sets=["resize.size=45x61", "resize.method=" + method] + sets)
        got = load_sample(out, "photo1")
        pix, _ = reference_pixels(src, method, color, 45, 61)
        ref = normalise_ref(pix, scale, mean, std, dtype, layout)
        same = got.dtype == ref.dtype and got.shape == ref.shape and np.array_equal(got, ref)
        t.ok(same, "%s %s: %s %s equals numpy" % (method, " ".join(sets) or "defaults", dtype, layout),
             "%s %s vs %s %s" % (got.dtype, got.shape, ref.dtype, ref.shape))

# multiply by 1/255 and divide by 255 are different float32 operations
out1, out2 = os.path.join(d, "mul"), os.path.join(d, "div")
preprocess(out1, [src], sets=["scale=0.00392156862745098", "resize.size=64x64"])
preprocess(out2, [src], sets=["scale=1/255", "resize.size=64x64"])
a, b = load_sample(out1, "photo1"), load_sample(out2, "photo1")
t.ok(not np.array_equal(a, b) and np.abs(a - b).max() < 1e-7,
     "scale 0.00392156862745098 (multiply) and 1/255 (divide) differ in the last bit, as in numpy")

t.done()
