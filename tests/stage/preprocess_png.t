#!/usr/bin/python3
# preprocess_png.t — reading PNG files: every colour type and bit depth, palette,
# tRNS, Adam7, against cv2.imread and PIL (identity size, uint8 output);
# alpha compositing against PIL's alpha_composite; broken files (truncated,
# garbage, bad CRC, bad zlib data) give exit 2 naming the file and leave no
# sample folder and no index.json.
import os
import struct
import subprocess
import sys
import warnings
import zlib

import cv2
import numpy as np
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pngmake
from preproc_common import (CONFIGS, Tap, cv_load, describe_diff, load_sample, preprocess, run,
                            tmpdir, to_hwc)

t = Tap()
warnings.filterwarnings("ignore")
rng = np.random.default_rng(5)
d = tmpdir()
H, W = 13, 11
pal16 = rng.integers(0, 256, (16, 3))
pal256 = rng.integers(0, 256, (256, 3))
cases = {}
for depth in (1, 2, 4, 8, 16):
    cases["g%d" % depth] = pngmake.encode(rng.integers(0, 2 ** depth, (H, W)), 0, depth)
for depth in (8, 16):
    cases["ga%d" % depth] = pngmake.encode(rng.integers(0, 2 ** depth, (H, W, 2)), 4, depth)
    cases["rgb%d" % depth] = pngmake.encode(rng.integers(0, 2 ** depth, (H, W, 3)), 2, depth)
    cases["rgba%d" % depth] = pngmake.encode(rng.integers(0, 2 ** depth, (H, W, 4)), 6, depth)
for depth in (1, 2, 4):
    cases["p%d" % depth] = pngmake.encode(rng.integers(0, 2 ** depth, (H, W)), 3, depth, palette=pal16[:2 ** depth])
cases["p8"] = pngmake.encode(rng.integers(0, 256, (H, W)), 3, 8, palette=pal256)
cases["p8trns"] = pngmake.encode(rng.integers(0, 16, (H, W)), 3, 8, palette=pal16,
                                 trns=bytes(rng.integers(0, 256, 10).astype(np.uint8)))
cases["rgb8trns"] = pngmake.encode(rng.integers(0, 4, (H, W, 3)) * 80, 2, 8, trns=bytes([0, 0, 0, 80, 0, 160]))
cases["g8trns"] = pngmake.encode(rng.integers(0, 4, (H, W)) * 80, 0, 8, trns=bytes([0, 80]))
cases["rgb8i"] = pngmake.encode(rng.integers(0, 256, (H, W, 3)), 2, 8, interlace=True)
cases["g2i"] = pngmake.encode(rng.integers(0, 4, (H, W)), 0, 2, interlace=True)
cases["p4i"] = pngmake.encode(rng.integers(0, 16, (H, W)), 3, 4, palette=pal16, interlace=True)
cases["rgba16i"] = pngmake.encode(rng.integers(0, 65536, (H, W, 4)), 6, 16, interlace=True)
cases["ga16i"] = pngmake.encode(rng.integers(0, 65536, (H, W, 2)), 4, 16, interlace=True)
files = []
for k, v in cases.items():
    path = os.path.join(d, k + ".png")
    with open(path, "wb") as f:
        f.write(v)
    files.append(path)


def ours(color, method, sets=()):
    out = os.path.join(d, "out_%s_%s_%d" % (color, method, len(sets)))
    preprocess(out, files, sets=["resize.size=%dx%d" % (H, W), "dtype=uint8", "color=" + color,
                                 "resize.method=" + method] + list(sets))
    return {os.path.basename(p)[:-4]: to_hwc(load_sample(out, os.path.basename(p)[:-4])) for p in files}


def compare(got, refs, name, skip=()):
    problems = []
    for k, ref in refs.items():
        if k in skip:
            continue
        if not np.array_equal(got[k], ref):
            problems.append("%s: %s" % (k, describe_diff(got[k], ref)))
    t.ok(not problems, name, "\n".join(problems))


def pil(path, mode):
    a = np.asarray(Image.open(path).convert(mode))
    return a[:, :, None] if a.ndim == 2 else a


names = [os.path.basename(p)[:-4] for p in files]
rgb_cv = ours("rgb", "opencv-linear")
compare(rgb_cv, {k: cv_load(p, "rgb") for k, p in zip(names, files)},
        "rgb: every format decodes as cv2.imread(IMREAD_COLOR)")
rgb_pil = ours("rgb", "pillow-bilinear")
compare(rgb_pil, {k: pil(p, "RGB") for k, p in zip(names, files)},
        "rgb: every format except 16-bit gray decodes as PIL convert('RGB')", skip=("g16",))
g16 = os.path.join(d, "g16.png")
t.ok(np.array_equal(rgb_pil["g16"][:, :, 0], cv2.imread(g16, cv2.IMREAD_UNCHANGED) >> 8),
     "16-bit gray keeps the high byte (as OpenCV; Pillow's mode I clips at 255 instead)")
compare(ours("gray", "opencv-area"), {k: cv_load(p, "gray") for k, p in zip(names, files)},
        "gray: every format decodes as cv2.imread(IMREAD_GRAYSCALE)")
compare(ours("gray", "pillow-lanczos"), {k: pil(p, "L") for k, p in zip(names, files)},
        "gray: every format except 16-bit gray decodes as PIL convert('L')", skip=("g16",))
compare(ours("rgba", "pillow-nearest"), {k: pil(p, "RGBA") for k, p in zip(names, files)},
        "rgba: every format (alpha from tRNS too) decodes as PIL convert('RGBA')", skip=("g16",))
compare(ours("rgba", "opencv-nearest"), {k: cv_load(p, "rgba") for k, p in zip(names, files)},
        "rgba: every format with alpha decodes as cv2.imread(IMREAD_UNCHANGED)",
        skip=[k for k in names if not (k.startswith("rgba") or k.startswith("ga"))])
bgr = ours("bgr", "opencv-cubic")
compare(bgr, {k: cv_load(p, "bgr") for k, p in zip(names, files)}, "bgr: channel order as cv2.imread")

# alpha composite on a background
bg = (10, 200, 30)
comp = ours("rgb", "pillow-bicubic", sets=["alpha=composite", "background=[10,200,30]"])
refs = {}
for k, p in zip(names, files):
    im = Image.open(p).convert("RGBA") if k != "g16" else None
    if im is not None and (k.startswith(("rgba", "ga", "p8trns")) or k.endswith("trns")):
        refs[k] = np.asarray(Image.alpha_composite(Image.new("RGBA", im.size, bg + (255,)), im).convert("RGB"))
compare(comp, refs, "alpha=composite equals PIL alpha_composite over the background (%d images)" % len(refs))

# ---- broken files ----
good = cases["rgb8"]
ihdr_end = 8 + 8 + 13 + 4
idat_at = good.index(b"IDAT") - 4


def recrc(b, pos, n):
    """Fixes the CRC of the chunk whose length field is at pos (data n bytes)."""
    crc = zlib.crc32(b[pos + 4:pos + 8 + n]) & 0xFFFFFFFF
    return b[:pos + 8 + n] + struct.pack(">I", crc) + b[pos + 12 + n:]


idat_len = struct.unpack(">I", good[idat_at:idat_at + 4])[0]
bad_zlib = bytearray(good)
bad_zlib[idat_at + 8] ^= 0xFF            # the zlib header, CRC recomputed below
bad_zlib = recrc(bytes(bad_zlib), idat_at, idat_len)
text = pngmake.chunk(b"tEXt", b"Comment\x00hello")
bad_text_crc = good[:ihdr_end] + text[:-1] + bytes([text[-1] ^ 1]) + good[ihdr_end:]
BROKEN = {
    "empty": b"",
    "garbage": bytes(rng.integers(0, 256, 300).astype(np.uint8)),
    "signature": b"\x89PNX" + good[4:],
    "trunc_sig": good[:6],
    "trunc_ihdr": good[:20],
    "trunc_idat": good[:idat_at + 8 + idat_len // 2],
    "trunc_no_iend": good[:-12],
    "crc_ihdr": good[:29] + bytes([good[29] ^ 0x40]) + good[30:],
    "crc_idat": good[:idat_at + 8 + 3] + bytes([good[idat_at + 8 + 3] ^ 1]) + good[idat_at + 8 + 4:],
    "crc_text": bad_text_crc,
    "zlib": bad_zlib,
}
cfg = os.path.join(CONFIGS, "opencv-stretch.yaml")
for name, data in BROKEN.items():
    path = os.path.join(d, "broken_%s.png" % name)
    with open(path, "wb") as f:
        f.write(data)
    out = os.path.join(d, "bout_" + name)
    rc, err = run(["--config", cfg, "-o", out, path], check=False)
    left = sorted(os.listdir(out)) if os.path.isdir(out) else []
    t.ok(rc == 2 and path in err and err.count("\n") == 1 and not left,
         "broken PNG (%s): exit 2, one line naming the file, nothing written" % name,
         "rc=%d stderr=%r left=%s" % (rc, err, left))

missing = os.path.join(d, "no_such.png")
rc, err = run(["--config", cfg, "-o", os.path.join(d, "bout_missing"), missing], check=False)
t.ok(rc == 2 and missing in err, "missing file: exit 2 naming it", err)

# a good image then a broken one: no output at all (issue 15: not even the good sample's)
out = os.path.join(d, "mixed")
rc, err = run(["--config", cfg, "-o", out, "-j", "2", files[0], os.path.join(d, "broken_crc_idat.png")],
              check=False)
t.ok(rc == 2 and "broken_crc_idat.png" in err and not os.path.exists(out)
     and not [f for f in os.listdir(d) if f.startswith("mixed.")],
     "good + broken: exit 2, no output folder, no staging folder left", err)

t.done()
