#!/usr/bin/python3
# task-eval --task restoration against its references on generated images:
# scikit-image's peak_signal_noise_ratio / structural_similarity (Debian's
# python3-skimage, the real library) within 1e-6 per image and for the mean,
# and BasicSR's calculate_psnr / calculate_ssim (tests/stage/basicsr_ref.py,
# re-implemented from its published rules: crop_border, float32 Y) within
# 1e-6; sizes from the smallest SSIM accepts (11x11) to odd ones, RGB and
# gray; outputs outside [0, 1] and at rounding ties go through tensor2img's
# rule, and pixel-value outputs with --output-max 255 (min_max=(0, 255)).
# Bad input: a missing clean image, a wrong-size one, a too-small image.
import json
import os
import shutil
import sys
import tempfile

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done, run, one_line_error, skip
import basicsr_ref

try:
    from skimage.metrics import peak_signal_noise_ratio, structural_similarity
except ImportError:
    peak_signal_noise_ratio = None

tmp = tempfile.mkdtemp(prefix="task-eval-restore.")
rng = np.random.default_rng(35)


def clean_image(h, w, c):
    """Smooth structure plus texture, so SSIM is far from 0 and 1."""
    y, x = np.mgrid[0:h, 0:w]
    base = 128 + 80 * np.sin(x / 3.0 + y / 5.0)[..., None] * np.linspace(0.5, 1, c)[None, None, :]
    return np.clip(base + rng.normal(0, 20, (h, w, c)), 0, 255).astype(np.uint8)


def restored(clean, sigma):
    """A model output [1, C, H, W] float32: the clean image /255 plus noise,
    with values below 0 and above 1 and some exact rounding ties."""
    x = clean.astype(np.float32) / 255 + rng.normal(0, sigma, clean.shape).astype(np.float32)
    x[0, 0, :] = -0.25
    x[-1, -1, :] = 1.5
    x.flat[1::17] = np.float32(0.5) / np.float32(255.0) * np.float32(2 * (np.arange(len(x.flat[1::17])) % 100) + 1)
    return np.ascontiguousarray(np.transpose(x, (2, 0, 1))[None])


SIZES = [(11, 11, 3), (11, 13, 1), (12, 17, 3), (16, 16, 1), (31, 23, 3), (64, 48, 3), (23, 40, 1), (40, 29, 3)]


def make_run(name, sizes, sigma):
    run_dir, clean_dir = os.path.join(tmp, name, "run"), os.path.join(tmp, name, "clean")
    imgs = {}
    for i, (h, w, c) in enumerate(sizes):
        sid = "s%02d" % i
        cl = clean_image(h, w, c)
        out = restored(cl, sigma)
        os.makedirs(os.path.join(run_dir, sid))
        np.save(os.path.join(run_dir, sid, "out.npy"), out)
        os.makedirs(clean_dir, exist_ok=True)
        Image.fromarray(cl[..., 0] if c == 1 else cl).save(os.path.join(clean_dir, sid + ".png"))
        imgs[sid] = (cl, basicsr_ref.tensor2img(out[0]))
    return run_dir, clean_dir, imgs


def evaluate(run_dir, clean_dir, *extra):
    js = os.path.join(tmp, "r.json")
    rc, out, err = run("task-eval", "--task", "restoration", "--dt", run_dir, "--clean", clean_dir, "--output", "out",
                       "--json", js, "-q", *extra)
    return rc, (json.load(open(js)) if rc == 0 else None), err


run_dir, clean_dir, imgs = make_run("a", SIZES, 0.03)

# ---- scikit-image ----
if peak_signal_noise_ratio is None:
    skip("scikit-image convention", "python3-skimage is not installed (tools/deps.sh installs it)")
else:
    rc, r, err = evaluate(run_dir, clean_dir)
    ok(rc == 0, "skimage convention: evaluated", err)
    worst_p = worst_s = 0.0
    ps, ss = [], []
    for s in r["per_sample"]:
        cl, img = imgs[s["sample"]]
        a, b = (cl, img) if cl.shape[2] == 3 else (cl[..., 0], img[..., 0])
        p = peak_signal_noise_ratio(a, b, data_range=255)
        q = structural_similarity(a, b, channel_axis=2 if a.ndim == 3 else None, gaussian_weights=True, sigma=1.5,
                                  use_sample_covariance=False, data_range=255)
        ps.append(p)
        ss.append(q)
        worst_p = max(worst_p, abs(p - s["psnr"]))
        worst_s = max(worst_s, abs(q - s["ssim"]))
    ok(worst_p <= 1e-6, "skimage PSNR per image within 1e-6 (worst %.3g) over %d images" % (worst_p, len(ps)))
    ok(worst_s <= 1e-6, "skimage SSIM per image within 1e-6 (worst %.3g)" % worst_s)
    ok(abs(np.mean(ps) - r["metrics"]["psnr"]["value"]) <= 1e-6 and abs(np.mean(ss) - r["metrics"]["ssim"]["value"]) <= 1e-6,
       "the run's PSNR and SSIM are the means over images", (np.mean(ps), np.mean(ss), r["metrics"]))
    ok(0.3 < min(ss) < max(ss) < 0.99, "the generated cases are neither trivial nor hopeless (SSIM %.3f..%.3f)" % (min(ss), max(ss)))

# ---- BasicSR, with and without Y and crop ----
for crop, y in [(0, False), (0, True), (3, False), (4, True)]:
    sizes = [(h + 2 * crop, w + 2 * crop, c) for h, w, c in SIZES]
    rd, cd, im2 = make_run("b%d%d" % (crop, y), sizes, 0.02)
    extra = ["--convention", "basicsr", "--crop-border", str(crop)] + (["--y-channel"] if y else [])
    rc, r, err = evaluate(rd, cd, *extra)
    if not ok(rc == 0, "basicsr crop %d y %s: evaluated" % (crop, y), err):
        continue
    wp = ws = 0.0
    for s in r["per_sample"]:
        cl, img = im2[s["sample"]]
        wp = max(wp, abs(basicsr_ref.calculate_psnr(cl, img, crop, y) - s["psnr"]))
        ws = max(ws, abs(basicsr_ref.calculate_ssim(cl, img, crop, y) - s["ssim"]))
    ok(wp <= 1e-6 and ws <= 1e-6, "basicsr crop %d y %s: PSNR and SSIM within 1e-6 (worst %.3g, %.3g)" % (crop, y, wp, ws))

# Y in float32 matters: the same Y computed in double gives another PSNR,
# far beyond the agreement above (1e-14), so the check tells the rules apart
cl, img = imgs["s05"]
def y64(a):
    x = a.astype(np.float64) / 255.
    return (np.dot(x[..., ::-1], [24.966, 128.553, 65.481]) + 16.0)
mse64 = np.mean((y64(cl) - y64(img)) ** 2)
d = abs(10 * np.log10(255. ** 2 / mse64) - basicsr_ref.calculate_psnr(cl, img, 0, True))
ok(d > 1e-10, "float64 Y differs from BasicSR's float32 Y (%.3g dB here)" % d)

# ---- rounding rule: truncation differs ----
rc, r_trunc, err = evaluate(run_dir, clean_dir, "--no-round")
rc2, r_round, _ = evaluate(run_dir, clean_dir)
ok(rc == 0 and rc2 == 0 and r_trunc["metrics"]["psnr"]["value"] != r_round["metrics"]["psnr"]["value"],
   "--no-round truncates (a different PSNR)", err)

# ---- outputs in pixel values (0..255): --output-max 255 is tensor2img's
# min_max=(0, 255), clamp then / 255 then x 255 in float32 ----
px_dir = os.path.join(tmp, "px")
for sid in sorted(imgs):
    os.makedirs(os.path.join(px_dir, sid))
    x = np.load(os.path.join(run_dir, sid, "out.npy")) * np.float32(255.0)
    np.save(os.path.join(px_dir, sid, "out.npy"), x)
rc, r_px, err = evaluate(px_dir, clean_dir, "--output-max", "255", "--convention", "basicsr")
if ok(rc == 0, "--output-max 255: evaluated", err):
    wp = max(abs(basicsr_ref.calculate_psnr(imgs[s["sample"]][0], basicsr_ref.tensor2img(
        np.load(os.path.join(px_dir, s["sample"], "out.npy"))[0], (0, 255)), 0, False) - s["psnr"])
        for s in r_px["per_sample"])
    ok(wp <= 1e-6 and "/255" in r_px["convention"]["to_image"],
       "--output-max 255: PSNR of tensor2img(min_max=(0, 255)) within 1e-6 (worst %.3g)" % wp)
    rc, r_clamped, _ = evaluate(px_dir, clean_dir, "--convention", "basicsr")
    ok(rc == 0 and r_clamped["metrics"]["psnr"]["value"] < r_px["metrics"]["psnr"]["value"] - 10,
       "without it the same outputs clamp to [0, 1]: %.2f dB instead of %.2f"
       % (r_clamped["metrics"]["psnr"]["value"], r_px["metrics"]["psnr"]["value"]))
rc, _, err = evaluate(px_dir, clean_dir, "--output-max", "0")
ok(rc == 2 and "--output-max" in err, "--output-max 0 is a usage error", err)

# ---- bad input: exit 2, one line naming the file ----
os.remove(os.path.join(clean_dir, "s03.png"))
rc, r, err = evaluate(run_dir, clean_dir)
ok(one_line_error(rc, err, "s03.png", "no such file"), "a missing clean image names it", err)
Image.fromarray(np.zeros((5, 7), np.uint8)).save(os.path.join(clean_dir, "s03.png"))
rc, r, err = evaluate(run_dir, clean_dir)
ok(one_line_error(rc, err, "s03.png", "7x5"), "a wrong-size clean image names both sizes", err)
Image.fromarray(np.zeros((16, 16, 3), np.uint8)).save(os.path.join(clean_dir, "s03.png"))
rc, r, err = evaluate(run_dir, clean_dir)
ok(one_line_error(rc, err, "s03.png", "channels"), "an RGB clean image for a gray output is refused", err)
small = os.path.join(tmp, "small")
os.makedirs(os.path.join(small, "run", "x"))
os.makedirs(os.path.join(small, "clean"))
np.save(os.path.join(small, "run", "x", "out.npy"), np.zeros((1, 3, 10, 12), np.float32))
Image.fromarray(np.zeros((10, 12, 3), np.uint8)).save(os.path.join(small, "clean", "x.png"))
rc, r, err = evaluate(os.path.join(small, "run"), os.path.join(small, "clean"))
ok(one_line_error(rc, err, "at least 11x11"), "an image smaller than SSIM's window is refused", err)
ok(not os.path.exists(os.path.join(tmp, "r.json.tmp")), "no partial output")
rc, _, err = run("task-eval", "--task", "restoration", "--dt", run_dir, "--clean", clean_dir, "--crop-border", "2")
ok(rc == 2 and "basicsr" in err, "--crop-border without the basicsr convention is a usage error", err)

shutil.rmtree(tmp)
done()
