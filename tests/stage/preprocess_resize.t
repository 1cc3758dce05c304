#!/usr/bin/python3
# preprocess_resize.t — uint8 output of every resize method equals
# cv2.resize / PIL Image.resize exactly: 1, 3 and 4 channels, up- and
# downscales, odd sizes, exact 2x and 3x shrinks (OpenCV's area fast paths),
# on noise, gradients, sharp edges and photo-like images.
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from preproc_common import (METHODS, Tap, describe_diff, gen_image, load_sample, preprocess,
                            reference_pixels, save_png, tmpdir, to_hwc)

t = Tap()
rng = np.random.default_rng(20240611)
d = tmpdir()
# source sizes (w, h): tiny, odd, exact multiples of the 32x24 target, larger
SOURCES = [(1, 1), (2, 3), (17, 13), (64, 48), (96, 72), (101, 77), (255, 190)]
TARGETS = [(24, 32), (37, 23), (121, 163)]          # (H, W): down, odd, up
COLORS = {"gray": 1, "rgb": 3, "rgba": 4}

files = {}
for color, c in COLORS.items():
    files[color] = []
    for i, (w, h) in enumerate(SOURCES):
        path = os.path.join(d, "%s_%dx%d.png" % (color, w, h))
        save_png(path, gen_image(h, w, c, i % 4, rng))
        files[color].append(path)

for method in METHODS:
    for color in COLORS:
        for H, W in TARGETS:
            out = os.path.join(d, "out_%s_%s_%dx%d" % (method, color, H, W))
            preprocess(out, files[color], sets=["resize.method=" + method, "color=" + color,
                                                "resize.size=%dx%d" % (H, W), "dtype=uint8"])
            problems = []
            for path in files[color]:
                sid = os.path.splitext(os.path.basename(path))[0]
                got = to_hwc(load_sample(out, sid))
                ref, _ = reference_pixels(path, method, color, H, W)
                if got.dtype != np.uint8 or not np.array_equal(got, ref):
                    problems.append("%s: %s" % (sid, describe_diff(got, ref)))
            t.ok(not problems, "%s %s -> %dx%d: %d images bit-exact" % (method, color, H, W,
                 len(files[color])), "\n".join(problems))

# Real PNG files shipped by Debian packages (artwork and screenshots), when
# present: every method, down to 640x640 and to an odd size.
REAL = [f for f in ("/usr/share/icons/Adwaita/512x512/places/folder-pictures.png",
                    "/usr/share/doc/valgrind/html/images/kcachegrind_xtree.png",
                    "/usr/share/doc/nodejs/contributing/doc_img/scatter-plot.png") if os.path.exists(f)]
for method in METHODS:
    for H, W in ((640, 640), (301, 417)):
        if not REAL:
            print("ok %d # SKIP no real PNG files on this machine" % (t.n + 1))
            t.n += 1
            continue
        out = os.path.join(d, "real_%s_%dx%d" % (method, H, W))
        preprocess(out, REAL, sets=["resize.method=" + method, "resize.size=%dx%d" % (H, W), "dtype=uint8"])
        problems = []
        for path in REAL:
            got = to_hwc(load_sample(out, os.path.splitext(os.path.basename(path))[0]))
            ref, _ = reference_pixels(path, method, "rgb", H, W)
            if not np.array_equal(got, ref):
                problems.append("%s: %s" % (path, describe_diff(got, ref)))
        t.ok(not problems, "%s -> %dx%d on %d real PNG files: bit-exact" % (method, H, W, len(REAL)),
             "\n".join(problems))

t.done()
