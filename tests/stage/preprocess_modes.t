#!/usr/bin/python3
# preprocess_modes.t — letterbox (Ultralytics LetterBox) and shorter-side +
# centre crop (torchvision Resize + CenterCrop) for every method, against the
# libraries; meta.json's map (input = original * scale + offset), padding and
# sizes; the orig_target_sizes extra input (int64 [1, 2] as width, height),
# and input_wh (the network input's width, height).
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from preproc_common import (CONFIGS, METHODS, Tap, describe_diff, gen_image, load_meta, load_sample,
                            preprocess, reference_pixels, run, save_png, tmpdir, to_hwc)

t = Tap()
rng = np.random.default_rng(7)
d = tmpdir()
SOURCES = [(100, 75), (75, 100), (33, 61), (64, 64), (640, 427)]
files = []
for i, (w, h) in enumerate(SOURCES):
    path = os.path.join(d, "img_%dx%d.png" % (w, h))
    save_png(path, gen_image(h, w, 3, (i + 1) % 4, rng))
    files.append(path)

CASES = [  # mode, (H, W), color, extra sets, reference kwargs
    ("letterbox", (64, 64), "rgb", ["resize.pad=114"], {}),
    ("letterbox", (48, 80), "bgr", ["resize.pad=[10,20,30]"], {"pad": (10, 20, 30)}),
    ("letterbox", (57, 57), "gray", ["resize.pad=114"], {}),
    ("center-crop", (64, 64), "rgb", [], {}),
    ("center-crop", (48, 64), "rgb", ["resize.shorter=70"], {"shorter": 70}),
    ("stretch", (40, 52), "bgr", [], {}),
]

for method in METHODS:
    for mode, (H, W), color, sets, kw in CASES:
        out = os.path.join(d, "out_%s_%s_%dx%d_%s" % (method, mode, H, W, color))
        preprocess(out, files, config="letterbox-114.yaml",
                   sets=["resize.method=" + method, "resize.mode=" + mode, "color=" + color,
                         "resize.size=%dx%d" % (H, W), "dtype=uint8"] + sets)
        problems = []
        for path in files:
            sid = os.path.splitext(os.path.basename(path))[0]
            got = to_hwc(load_sample(out, sid))
            ref, (sx, sy, ox, oy) = reference_pixels(path, method, color, H, W, mode=mode, **kw)
            if not np.array_equal(got, ref):
                problems.append("%s pixels: %s" % (sid, describe_diff(got, ref)))
            m = load_meta(out, sid)
            w, h = [int(v) for v in sid.split("_")[1].split("x")]
            if (m["width"], m["height"], m["input_width"], m["input_height"]) != (w, h, W, H):
                problems.append("%s meta sizes: %s" % (sid, m))
            if not np.allclose([m["scale_x"], m["scale_y"], m["offset_x"], m["offset_y"]],
                               [sx, sy, ox, oy], rtol=0, atol=1e-12):
                problems.append("%s meta map %s vs reference %s" % (
                    sid, [m["scale_x"], m["scale_y"], m["offset_x"], m["offset_y"]], [sx, sy, ox, oy]))
            if m["mode"] != mode or m["method"] != method:
                problems.append("%s meta mode/method: %s %s" % (sid, m["mode"], m["method"]))
            ots = load_sample(out, sid, "orig_target_sizes")
            if ots.dtype != np.int64 or ots.tolist() != [[w, h]]:
                problems.append("%s orig_target_sizes %s %s" % (sid, ots.dtype, ots.tolist()))
        t.ok(not problems, "%s %s %dx%d %s %s" % (method, mode, H, W, color, " ".join(sets)),
             "\n".join(problems))

# The map sends the original image's corners where the pixels went: for
# letterbox, original (0,0) and (w,h) land on the padded window's corners.
out = os.path.join(d, "lb_map")
preprocess(out, [files[4]], config="letterbox-114.yaml", sets=["resize.size=640x640"])
m = load_meta(out, "img_640x427")
x1, y1 = 0 * m["scale_x"] + m["offset_x"], 0 * m["scale_y"] + m["offset_y"]
x2, y2 = 640 * m["scale_x"] + m["offset_x"], 427 * m["scale_y"] + m["offset_y"]
# (640 - 427) / 2 = 106.5: round(106.4) = 106 above, round(106.6) = 107 below
t.ok((x1, y1, x2, y2) == (0.0, 106.0, 640.0, 533.0) and m["pad"]["top"] == 106 and
     m["pad"]["bottom"] == 107, "letterbox 640x427 -> 640x640: image rows 106..533, pad 106/107",
     str(m))

# input_wh: the network input's (w, h), int64 [1, 2], whatever the image's size
# (letterbox.yaml: the graph scales boxes by it, so they come out in input pixels)
out = os.path.join(d, "lb_input_wh")
preprocess(out, files[:2], config="letterbox.yaml", sets=["resize.size=48x80"])
got = [load_sample(out, os.path.splitext(os.path.basename(f))[0], "orig_target_sizes") for f in files[:2]]
t.ok(all(g.dtype == np.int64 and g.tolist() == [[80, 48]] for g in got),
     "extra input_wh: the input's (w, h) = (80, 48) for 100x75 and 75x100 images", str(got))

# an extra input's name: 200 characters work; one past what a file name
# holds (255 bytes with .npy, the name encoded) is refused when the config is
# read, exit 2 naming the place -- not an internal error, nothing written
def with_extra(name, kind):
    cfg = os.path.join(d, "extra-%d.yaml" % len(name))
    with open(os.path.join(CONFIGS, "opencv-stretch.yaml")) as f:
        text = f.read().split("extra:")[0]
    with open(cfg, "w") as f:
        f.write(text + "extra:\n  %s: %s\n" % (name, kind))
    return cfg

out = os.path.join(d, "long_extra")
preprocess(out, files[:1], config=with_extra("n" * 200, "input_wh"), sets=["resize.size=48x80"])
wh = load_sample(out, os.path.splitext(os.path.basename(files[0]))[0], "n" * 200)
t.ok(wh.dtype == np.int64 and wh.tolist() == [[80, 48]], "an extra input named with 200 characters: input_wh", str(wh))
# a name with dots (PyTorch's exports name inputs "input.1") is one key
out = os.path.join(d, "dotted_extra")
preprocess(out, files[:1], config=with_extra("sizes.1", "input_wh"), sets=["resize.size=48x80"])
wh = load_sample(out, os.path.splitext(os.path.basename(files[0]))[0], "sizes.1")
t.ok(wh.dtype == np.int64 and wh.tolist() == [[80, 48]], "an extra input named with dots (sizes.1): input_wh", str(wh))
out = os.path.join(d, "too_long_extra")
rc, err = run(["--config", with_extra("n" * 300, "input_wh"), "-o", out, files[0]], check=False)
lines = [l for l in err.splitlines() if l.strip()]
t.ok(rc == 2 and len(lines) == 1 and "too long for a file name" in lines[0] and ":14:" in lines[0]
     and not os.path.exists(out), "an extra input's name too long for a file: exit 2, one line naming the place",
     err[:300])

t.done()
