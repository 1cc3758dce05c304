#!/usr/bin/python3
"""Mean PSNR (dB, peak 255, output clipped to 0..255) of a restorer's outputs
against the clean images: the number train.py reports, for outputs that parity's
infer wrote (OUTDIR/<sample-id>/<tensor>.npy, [1, 3, H, W] in 0..255).

    psnr.py OUTDIR CLEAN_DIR [--tensor output]      (CLEAN_DIR/<sample-id>.png)
"""
import argparse
import os
import sys

import numpy as np
from PIL import Image


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("clean")
    ap.add_argument("--tensor", default="output")
    a = ap.parse_args()
    vals, nonfinite = [], 0
    for sid in sorted(os.listdir(a.outdir), key=lambda s: (len(s), s)):
        path = os.path.join(a.outdir, sid, a.tensor + ".npy")
        if not os.path.isfile(path):
            continue
        out = np.load(path)[0].transpose(1, 2, 0).astype(np.float64)
        nonfinite += int((~np.isfinite(out)).sum())
        out = np.clip(np.nan_to_num(out, nan=0.0), 0, 255)
        with Image.open(os.path.join(a.clean, sid + ".png")) as im:
            ref = np.asarray(im.convert("RGB"), dtype=np.float64)
        vals.append(10 * np.log10(255.0 ** 2 / np.mean((out - ref) ** 2)))
    if not vals:
        sys.exit(f"psnr.py: {a.outdir}: no {a.tensor}.npy found")
    print(f"{np.mean(vals):.4f} dB mean PSNR over {len(vals)} images (min {np.min(vals):.2f}, "
          f"non-finite outputs {nonfinite})")


if __name__ == "__main__":
    main()
