"""yolo_task_ref.py — an independent reference for the masks of a YOLOv8-seg
head and the keypoints of a YOLOv8-pose head (docs/metrics-detection.md
"Masks and keypoints"), for tests/stage/yolo_task_decode.t. The detections
themselves come from yolo_ref.decode; this adds, per kept detection:

- mask: logits = sum_j coef_j * proto_j in float64 (j ascending, as a
  left-to-right sum); the proto planes' letterbox part (Ultralytics'
  scale_masks: pad = (mw - iw * gain) / 2, cut at int(pad)) resized to the
  input size by PyTorch's bilinear rule (align_corners=False, float64;
  written here from PyTorch's upsample_bilinear2d: source index
  scale * (dst + 0.5) - 0.5 rounded once, as its CPU build contracts it to a
  fused multiply-add -- computed exactly with fractions -- clamped at 0,
  weights l1 = s - i0, l0 = 1 - l1, l0 * x0 + l1 * x1 unfused as parity
  documents it (PyTorch's CPU build fuses one product of the two, a
  difference of one rounding), rows then columns; tests compare it with
  torch.nn.functional.interpolate itself where PyTorch is installed, which
  Debian's test dependencies do not include); crop_mask (float32 column/row index
  >= x1 and < x2); > 0; then the input mask's image part (scale_image: cut
  at int(pad)) resized by PyTorch the same way to the original size, >= 0.5;
  encoded with maskApi's rule (column-major runs from background, then
  rleToString's 5-bit groups, deltas from the third count on), written here
  from the published algorithm.
- keypoints: rows 4 + nc + 3k.. of the anchor, x and y through the same map
  as the boxes, clipped to [0, W] x [0, H] (clip_coords), confidence kept.
"""
from fractions import Fraction

import numpy as np


def geometry(meta, letterbox_inverse="ultralytics"):
    """(sx, sy, ox, oy): input = original * s + o, as the boxes use it (yolo_ref.to_original)."""
    W, H = meta["width"], meta["height"]
    if meta.get("mode") == "letterbox" and letterbox_inverse == "ultralytics":
        iw, ih = meta["input_width"], meta["input_height"]
        gain = min(ih / H, iw / W)
        return gain, gain, float(round((iw - W * gain) / 2 - 0.1)), float(round((ih - H * gain) / 2 - 0.1))
    return meta["scale_x"], meta["scale_y"], meta["offset_x"], meta["offset_y"]


def taps(m, n):
    """PyTorch's source taps for n destination indices over m source ones:
    (i0, i1, l0, l1) arrays; the source index rounded once (its fma)."""
    scale = Fraction(m / n)          # the double m / n, exactly
    i0, i1, l0, l1 = [], [], [], []
    for d in range(n):
        s = float(scale * (d + Fraction(1, 2)) - Fraction(1, 2))   # one rounding
        s = max(s, 0.0)
        a = min(int(s), m - 1)
        i0.append(a)
        i1.append(a + 1 if a < m - 1 else a)
        l1.append(s - a)
        l0.append(1 - (s - a))
    return np.array(i0), np.array(i1), np.array(l0), np.array(l1)


def resize(a, h, w):
    """PyTorch's bilinear resize (align_corners=False) of a float64 2-D array:
    out = ly0 * (lx0 * v00 + lx1 * v01) + ly1 * (lx0 * v10 + lx1 * v11)."""
    a = np.ascontiguousarray(a, np.float64)
    y0, y1, ly0, ly1 = taps(a.shape[0], h)
    x0, x1, lx0, lx1 = taps(a.shape[1], w)
    ly0, ly1 = ly0[:, None], ly1[:, None]
    top = lx0 * a[y0][:, x0] + lx1 * a[y0][:, x1]
    bot = lx0 * a[y1][:, x0] + lx1 * a[y1][:, x1]
    return ly0 * top + ly1 * bot


def resize_torch(a, h, w):
    """The same resize by PyTorch itself, or None where it is not installed."""
    try:
        import torch
        import torch.nn.functional as Fn
    except ImportError:
        return None
    t = torch.from_numpy(np.ascontiguousarray(a, np.float64))[None, None]
    return Fn.interpolate(t, size=(h, w), mode="bilinear", align_corners=False)[0, 0].numpy()


def mask(raw, protos, nc, box, anchor, meta, letterbox_inverse="ultralytics"):
    """The boolean mask [H, W] of one detection (box: float32 xyxy in input pixels)."""
    f = np.asarray(raw, np.float32).reshape(raw.shape[-2], raw.shape[-1])
    P = np.asarray(protos, np.float32)
    P = P.reshape(P.shape[-3], P.shape[-2], P.shape[-1])
    nm, mh, mw = P.shape
    coef = f[4 + nc:4 + nc + nm, anchor].astype(np.float64)
    L = np.zeros((mh, mw))
    for j in range(nm):
        L = L + coef[j] * P[j].astype(np.float64)
    iw, ih = meta["input_width"], meta["input_height"]
    gain = min(mh / ih, mw / iw)
    px, py = (mw - iw * gain) / 2, (mh - ih * gain) / 2
    L = L[int(py):int(mh - py), int(px):int(mw - px)]
    up = resize(L, ih, iw)
    cols = np.arange(iw, dtype=np.float32)
    rows = np.arange(ih, dtype=np.float32)
    keep = ((rows >= box[1]) & (rows < box[3]))[:, None] & ((cols >= box[0]) & (cols < box[2]))[None, :]
    m_in = ((up > 0) & keep).astype(np.float64)
    sx, sy, ox, oy = geometry(meta, letterbox_inverse)
    part = m_in[int(oy):int(ih - oy), int(ox):int(iw - ox)]
    return resize(part, meta["height"], meta["width"]) >= 0.5


def rle_string(m):
    """maskApi's compressed RLE string of a boolean [H, W] mask."""
    flat = np.asarray(m, bool).ravel(order="F")
    counts, cur, run = [], False, 0
    for v in flat:
        if v != cur:
            counts.append(run)
            cur, run = v, 0
        run += 1
    counts.append(run)
    out = []
    for i, c in enumerate(counts):
        x = c - counts[i - 2] if i > 2 else c
        more = True
        while more:
            ch = x & 0x1f
            x >>= 5                                   # Python's >> on negatives is arithmetic
            more = x != -1 if ch & 0x10 else x != 0
            if more:
                ch |= 0x20
            out.append(chr(ch + 48))
    return "".join(out)


def keypoints(raw, nc, K, anchor, meta, letterbox_inverse="ultralytics"):
    """[x, y, conf] * K of one detection in original pixels."""
    f = np.asarray(raw, np.float32).reshape(raw.shape[-2], raw.shape[-1])
    sx, sy, ox, oy = geometry(meta, letterbox_inverse)
    out = []
    for k in range(K):
        x, y, v = (float(f[4 + nc + 3 * k + q, anchor]) for q in range(3))
        out += [min(max((x - ox) / sx, 0.0), float(meta["width"])),
                min(max((y - oy) / sy, 0.0), float(meta["height"])), v]
    return out
