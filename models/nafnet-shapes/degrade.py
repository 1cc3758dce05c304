#!/usr/bin/python3
"""The degradation nafnet-shapes learns to undo, and its validation set.

A 256x256 centre crop of each shapes image is blurred with the 7-tap binomial
kernel [1, 6, 15, 20, 15, 6, 1] / 64 in x and y (a Gaussian of sigma
sqrt(1.5) = 1.22 px; edges mirrored without repeating the border pixel, like
numpy's 'reflect' and OpenCV's BORDER_REFLECT_101), then Gaussian-like noise of
standard deviation SIGMA = 15 (in 0..255 pixel values) is added and the result
rounded half up and clipped to 0..255.  The noise is Irwin-Hall: the sum of 12
uniform 16-bit integers drawn from SplitMix64 of (seed, image id, channel, y, x),
centred; everything is integer arithmetic, so the bytes are the same on every
machine, numpy version and thread count (no torch needed to regenerate them).

    degrade.py --images DIR --gt annotations.json -o OUTDIR [--count 32]

writes OUTDIR/clean/<id>.png, OUTDIR/degraded/<id>.png (8-bit RGB) and
OUTDIR/manifest.json (levels, ids, sha256 of each image's raw RGB bytes) for the
first COUNT images of the ground truth.  train.py draws its training pairs with
the same blur and the same noise law (its noise from torch's generator).
"""
import argparse
import hashlib
import json
import os
import sys

import numpy as np
from PIL import Image

CROP = 256
SIGMA = 15                      # noise standard deviation, 0..255 units
KERNEL = (1, 6, 15, 20, 15, 6, 1)   # binomial, sum 64, variance 1.5
SEED = 2024
M64 = 0xFFFFFFFFFFFFFFFF


def splitmix64(x):
    """SplitMix64's output function on a uint64 array (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def centre_crop(img, size=CROP):
    h, w = img.shape[:2]
    top, left = (h - size) // 2, (w - size) // 2
    return img[top:top + size, left:left + size]


def blur_sum(img):
    """Integer blur: sum over the 7x7 binomial weights (total 4096), int64."""
    k = np.array(KERNEL, np.int64)
    r = len(KERNEL) // 2
    x = np.pad(img.astype(np.int64), ((r, r), (r, r), (0, 0)), mode="reflect")
    h, w = img.shape[:2]
    rows = sum(k[i] * x[i:i + h] for i in range(len(k)))            # [h, w + 2r, c]
    return sum(k[j] * rows[:, j:j + w] for j in range(len(k)))      # [h, w, c]


def noise_sum(image_id, shape, seed=SEED):
    """Irwin-Hall numerators: sum of 12 uniform 16-bit integers minus their mean
    (393210), one per pixel and channel; the noise is SIGMA * value / 65536."""
    h, w, c = shape
    idx = np.arange(h * w * c, dtype=np.uint64).reshape(h, w, c)
    base = np.uint64((seed * 1000003 + image_id) * 3 & M64)
    s = np.zeros(shape, np.int64)
    for k in range(3):                     # 3 hashes x 4 lanes of 16 bits = 12 uniforms
        with np.errstate(over="ignore"):
            z = splitmix64(idx * np.uint64(3) + np.uint64(k) + (base << np.uint64(32)))
        for lane in range(4):
            s += ((z >> np.uint64(16 * lane)) & np.uint64(0xFFFF)).astype(np.int64)
    return s - 393210


def degrade(img, image_id, sigma=SIGMA, seed=SEED):
    """uint8 [h, w, 3] -> uint8: round_half_up(blur + sigma * noise) clipped to 0..255,
    as one exact integer expression over 2^28."""
    num = blur_sum(img) * 65536 + sigma * 4096 * noise_sum(image_id, img.shape, seed)
    return np.clip((num + (1 << 27)) >> 28, 0, 255).astype(np.uint8)


def psnr(a, b, peak=255.0):
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return 10 * np.log10(peak * peak / mse)


def make_set(images, gt_path, out, count):
    with open(gt_path) as f:
        gt = json.load(f)
    ims = gt["images"][:count]
    if len(ims) < count:
        sys.exit(f"degrade.py: {gt_path}: {len(ims)} images, {count} asked for")
    for sub in ("clean", "degraded"):
        os.makedirs(os.path.join(out, sub), exist_ok=True)
    entries, gains = [], []
    for im in ims:
        path = os.path.join(images, im["file_name"])
        with Image.open(path) as pil:
            clean = centre_crop(np.asarray(pil.convert("RGB")))
        if clean.shape[:2] != (CROP, CROP):
            sys.exit(f"degrade.py: {path}: smaller than {CROP}x{CROP}")
        bad = degrade(clean, im["id"])
        name = f"{im['id']}.png"
        for sub, arr in (("clean", clean), ("degraded", bad)):
            tmp = os.path.join(out, sub, name + ".tmp")
            Image.fromarray(arr).save(tmp, format="PNG")
            os.replace(tmp, os.path.join(out, sub, name))
        gains.append(psnr(bad, clean))
        entries.append({"id": im["id"], "file": name,
                        "clean_sha256": hashlib.sha256(clean.tobytes()).hexdigest(),
                        "degraded_sha256": hashlib.sha256(bad.tobytes()).hexdigest(),
                        "psnr_degraded_db": round(gains[-1], 4)})
    manifest = {"crop": CROP, "blur_kernel": list(KERNEL), "blur_sigma_px": 1.5 ** 0.5, "noise_sigma": SIGMA,
                "noise": "Irwin-Hall(12) of SplitMix64 16-bit lanes", "seed": SEED, "source": gt_path,
                "count": count, "mean_psnr_degraded_db": round(float(np.mean(gains)), 4), "images": entries}
    tmp = os.path.join(out, "manifest.json.tmp")
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=1)
    os.replace(tmp, os.path.join(out, "manifest.json"))
    return manifest


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--images", required=True, help="folder of the shapes images")
    ap.add_argument("--gt", required=True, help="their annotations.json (gives the ids and order)")
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--count", type=int, default=32)
    a = ap.parse_args()
    m = make_set(a.images, a.gt, a.out, a.count)
    print(f"{m['count']} pairs -> {a.out}, degraded PSNR {m['mean_psnr_degraded_db']:.2f} dB", file=sys.stderr)


if __name__ == "__main__":
    main()
