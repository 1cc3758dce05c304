"""preproc_common.py — shared helpers for the preprocess stage tests.

The oracles are the libraries themselves (Debian's python3-opencv and
python3-pil) driven the way training pipelines drive them, plus numpy's
float32 arithmetic; the geometry of letterbox and centre crop is written here
from Ultralytics' LetterBox and torchvision's Resize + CenterCrop.
"""
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile

import cv2
import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BIN = os.environ.get("PARITY_BIN", os.path.join(ROOT, "build", "bin"))
PREPROCESS = os.path.join(BIN, "preprocess")
CONFIGS = os.path.join(ROOT, "configs", "preprocess")

CV_METHODS = {"opencv-linear": cv2.INTER_LINEAR, "opencv-area": cv2.INTER_AREA,
              "opencv-nearest": cv2.INTER_NEAREST, "opencv-cubic": cv2.INTER_CUBIC}
PIL_METHODS = {"pillow-bilinear": Image.BILINEAR, "pillow-bicubic": Image.BICUBIC,
               "pillow-nearest": Image.NEAREST, "pillow-lanczos": Image.LANCZOS}
METHODS = list(CV_METHODS) + list(PIL_METHODS)


class Tap:
    """TAP producer; the plan is printed at the end."""

    def __init__(self):
        self.n = 0
        self.failed = 0

    def ok(self, cond, name, diag=None):
        self.n += 1
        print(("ok" if cond else "not ok") + " %d - %s" % (self.n, name))
        if not cond:
            self.failed += 1
            for line in (diag or "").splitlines():
                print("#   " + line)
        sys.stdout.flush()
        return cond

    def done(self):
        print("1..%d" % self.n)
        sys.exit(1 if self.failed else 0)


def tmpdir():
    """A scratch folder, removed at exit unless PARITY_KEEP is set."""
    d = tempfile.mkdtemp(prefix="parity-pre-")
    if not os.environ.get("PARITY_KEEP"):
        atexit.register(shutil.rmtree, d, True)
    return d


def run(args, check=True):
    """Runs preprocess; returns (rc, stderr)."""
    p = subprocess.run([PREPROCESS] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if check and p.returncode != 0:
        raise RuntimeError("preprocess %s failed (%d): %s" % (" ".join(args), p.returncode,
                                                            p.stderr.decode()))
    return p.returncode, p.stderr.decode()


def preprocess(outdir, files, config="opencv-stretch.yaml", sets=(), extra=()):
    args = ["--config", os.path.join(CONFIGS, config), "-o", outdir]
    for s in sets:
        args += ["--set", s]
    run(args + list(extra) + list(files))


def load_sample(outdir, sample, name="images"):
    return np.load(os.path.join(outdir, sample, name + ".npy"))


def load_meta(outdir, sample):
    with open(os.path.join(outdir, sample, "meta.json")) as f:
        return json.load(f)


# ---- images ----

def gen_image(h, w, c, kind, rng):
    """uint8 (h, w, c): 0 noise, 1 smooth gradient, 2 sharp edges, 3 photo-like."""
    if kind == 0:
        a = rng.integers(0, 256, (h, w, c))
    elif kind == 1:
        y, x = np.mgrid[0:h, 0:w]
        a = np.stack([(x * 255.0 / max(w - 1, 1) * (k + 1) / 2 + y * 200.0 / max(h - 1, 1)) % 256
                      for k in range(c)], -1)
    elif kind == 2:
        a = np.zeros((h, w, c))
        for _ in range(6):
            y0, x0 = rng.integers(0, h), rng.integers(0, w)
            a[y0:y0 + rng.integers(1, h + 1), x0:x0 + rng.integers(1, w + 1)] = rng.integers(0, 256, c)
    else:
        a = np.zeros((h, w, c), np.float64)
        for s in (2, 5, 17):
            small = rng.normal(0, 60, (max(h // s, 1) + 2, max(w // s, 1) + 2, c)).astype(np.float32)
            up = cv2.resize(small, (w, h), interpolation=cv2.INTER_CUBIC).reshape(h, w, c)
            a += up
        a = a + 128
        a[h // 3: h // 2, w // 4: w // 2] += 90          # an object with hard edges
    return np.clip(a, 0, 255).astype(np.uint8)


def save_png(path, a):
    """Writes (h, w, c) uint8 RGB/RGBA/gray through PIL (stores RGB order)."""
    c = a.shape[2]
    mode = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}[c]
    Image.fromarray(a[:, :, 0] if c == 1 else a, mode).save(path)


# ---- the reference pipelines ----

def cv_load(path, color):
    """What cv2.imread gives, converted the usual way, in the config's channel order."""
    if color == "gray":
        return cv2.imread(path, cv2.IMREAD_GRAYSCALE)[:, :, None]
    if color in ("rgba", "bgra"):
        a = cv2.imread(path, cv2.IMREAD_UNCHANGED)
        if a.dtype == np.uint16:
            a = (a >> 8).astype(np.uint8)
        if a.ndim == 2:
            a = cv2.cvtColor(a, cv2.COLOR_GRAY2BGRA)
        elif a.shape[2] == 3:
            a = cv2.cvtColor(a, cv2.COLOR_BGR2BGRA)
        return a if color == "bgra" else cv2.cvtColor(a, cv2.COLOR_BGRA2RGBA)
    a = cv2.imread(path, cv2.IMREAD_COLOR)
    return a if color == "bgr" else cv2.cvtColor(a, cv2.COLOR_BGR2RGB)


def pil_load(path, color):
    mode = {"rgb": "RGB", "bgr": "RGB", "gray": "L", "rgba": "RGBA", "bgra": "RGBA"}[color]
    return Image.open(path).convert(mode)


def as_hwc(a):
    a = np.asarray(a)
    return a[:, :, None] if a.ndim == 2 else a


def swap_if_bgr(a, color):
    a = as_hwc(a)
    if color in ("bgr", "bgra"):
        a = a.copy()
        a[:, :, [0, 2]] = a[:, :, [2, 0]]
    return a


def resize_ref(img, method, w, h):
    """img: numpy (cv) or PIL image; returns HWC uint8."""
    if method in CV_METHODS:
        return as_hwc(cv2.resize(img, (w, h), interpolation=CV_METHODS[method]))
    return as_hwc(img.resize((w, h), PIL_METHODS[method]))


def reference_pixels(path, method, color, H, W, mode="stretch", pad=(114, 114, 114), shorter=None):
    """The uint8 network image (H, W, C) the reference pipeline produces, and its
    map (scale_x, scale_y, offset_x, offset_y)."""
    img = cv_load(path, color) if method in CV_METHODS else pil_load(path, color)
    w, h = (img.shape[1], img.shape[0]) if method in CV_METHODS else img.size
    if mode == "stretch":
        out = resize_ref(img, method, W, H)
        return swap_if_bgr(out, color) if method in PIL_METHODS else out, (W / w, H / h, 0.0, 0.0)
    if mode == "letterbox":            # Ultralytics LetterBox(auto=False, scaleup=True)
        r = min(H / h, W / w)
        new_unpad = int(round(w * r)), int(round(h * r))
        dw, dh = (W - new_unpad[0]) / 2, (H - new_unpad[1]) / 2
        im = resize_ref(img, method, *new_unpad) if (w, h) != new_unpad else as_hwc(img)
        if method in PIL_METHODS:
            im = swap_if_bgr(im, color)
        top, bottom = int(round(dh - 0.1)), int(round(dh + 0.1))
        left, right = int(round(dw - 0.1)), int(round(dw + 0.1))
        c = im.shape[2]
        value = list(pad)[::-1] if color in ("bgr", "bgra") else list(pad)
        value = (value + [255])[:c] if c > 1 else [pad[0]]
        out = np.empty((H, W, c), np.uint8)
        out[:] = np.array(value, np.uint8)
        out[top:top + im.shape[0], left:left + im.shape[1]] = im
        return out, (new_unpad[0] / w, new_unpad[1] / h, float(left), float(top))
    # torchvision Resize(shorter) then CenterCrop((H, W))
    s = shorter if shorter else max(H, W)
    short, long = (w, h) if w <= h else (h, w)
    new_short, new_long = s, int(s * long / short)
    nw, nh = (new_short, new_long) if w <= h else (new_long, new_short)
    im = resize_ref(img, method, nw, nh)
    if method in PIL_METHODS:
        im = swap_if_bgr(im, color)
    top, left = int(round((nh - H) / 2.0)), int(round((nw - W) / 2.0))
    return im[top:top + H, left:left + W], (nw / w, nh / h, float(-left), float(-top))


def normalise_ref(pix, scale="1/255", mean=None, std=None, dtype="float32", layout="nchw"):
    """numpy float32 arithmetic on the uint8 pixels (H, W, C) -> [1, ...] tensor."""
    x = pix.astype(np.float32)
    if isinstance(scale, str):
        x = x / np.float32(float(scale.split("/")[1]))
    else:
        x = x * np.float32(scale)
    if mean is not None:
        x = x - np.array(mean, np.float32)
    if std is not None:
        x = x / np.array(std, np.float32)
    if dtype == "float16":
        x = x.astype(np.float16)
    if layout == "nchw":
        x = x.transpose(2, 0, 1)
    return np.ascontiguousarray(x[None])


def to_hwc(t, layout="nchw"):
    """A [1, C, H, W] / [1, H, W, C] output tensor back to (H, W, C)."""
    return t[0].transpose(1, 2, 0) if layout == "nchw" else t[0]


def describe_diff(a, b):
    if a.shape != b.shape:
        return "shape %s vs reference %s" % (a.shape, b.shape)
    d = np.abs(a.astype(np.int64) - b.astype(np.int64))
    idx = np.argwhere(d)
    return "%d of %d values differ, max %d, first at %s" % (len(idx), d.size, d.max(),
                                                           tuple(idx[0]) if len(idx) else "-")
