#!/usr/bin/python3
"""preprocess_bench.py — preprocess vs OpenCV + numpy on the same PNG images.

The peer is what a Python deployment script does per image:
    cv2.imread -> cv2.resize(640x640, INTER_LINEAR) -> BGR->RGB ->
    float32 / 255 -> CHW, batch dimension
timed in one process over all images (OpenCV may use its own threads), and
the same with np.save of the tensor (preprocess always writes its .npy files).
preprocess runs as one process over all images (--jobs = CPU count), start-up
included. Each side: best of several runs. Prints per-image times and ratios
(peer time / preprocess time: above 1 means preprocess is faster).
"""
import os
import resource
import subprocess
import sys
import tempfile
import time

import cv2
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BIN = os.environ.get("PARITY_BIN", os.path.join(ROOT, "build", "bin"))
N = int(os.environ.get("BENCH_IMAGES", "24"))
REPEAT = int(os.environ.get("BENCH_REPEAT", "3"))


def photo(h, w, rng):
    a = np.zeros((h, w, 3), np.float32)
    for s in (3, 11, 41):
        small = rng.normal(0, 50, (h // s + 2, w // s + 2, 3)).astype(np.float32)
        a += cv2.resize(small, (w, h), interpolation=cv2.INTER_CUBIC)
    a += rng.normal(0, 6, a.shape).astype(np.float32)      # sensor noise: realistic PNG sizes
    return np.clip(a + 128, 0, 255).astype(np.uint8)


def cpu_children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def peer(files, save_dir=None):
    """Returns (wall, cpu) seconds; cpu counts every thread of this process."""
    t0, c0 = time.perf_counter(), time.process_time()
    for i, f in enumerate(files):
        img = cv2.imread(f, cv2.IMREAD_COLOR)
        img = cv2.resize(img, (640, 640), interpolation=cv2.INTER_LINEAR)
        img = cv2.cvtColor(img, cv2.COLOR_BGR2RGB)
        x = np.ascontiguousarray((img.astype(np.float32) / 255.0).transpose(2, 0, 1)[None])
        if save_dir:
            np.save(os.path.join(save_dir, "%d.npy" % i), x)
    return time.perf_counter() - t0, time.process_time() - c0


def ours(files, out):
    cmd = [os.path.join(BIN, "preprocess"), "--config",
           os.path.join(ROOT, "configs", "preprocess", "opencv-stretch.yaml"), "-o", out] + files
    t0, c0 = time.perf_counter(), cpu_children()
    subprocess.run(cmd, check=True)
    return time.perf_counter() - t0, cpu_children() - c0


def main():
    rng = np.random.default_rng(0)
    d = tempfile.mkdtemp(prefix="parity-bench-")
    files = []
    for i in range(N):
        h, w = (750, 1000) if i % 2 == 0 else (1080, 810)
        f = os.path.join(d, "img%03d.png" % i)
        cv2.imwrite(f, photo(h, w, rng))
        files.append(f)
    mb = sum(os.path.getsize(f) for f in files) / len(files) / 1e6
    peer(files[:2])                      # warm the page cache and OpenCV
    best = lambda runs: (min(r[0] for r in runs), min(r[1] for r in runs))
    t_peer = best([peer(files) for _ in range(REPEAT)])
    sd = os.path.join(d, "peer_npy")
    os.makedirs(sd)
    t_save = best([peer(files, sd) for _ in range(REPEAT)])
    t_ours = best([ours(files, os.path.join(d, "out")) for _ in range(REPEAT)])
    ms = lambda t: 1000.0 * t / len(files)
    print("preprocess benchmark: %d PNG images (1000x750 and 810x1080 RGB, %.1f MB each) -> "
          "1x3x640x640 float32, cv2 INTER_LINEAR, /255; %d CPUs, load average %.1f"
          % (len(files), mb, os.cpu_count(), os.getloadavg()[0]))
    print("                                          wall ms/image   CPU ms/image")
    for name, t in (("OpenCV %s imread+resize+numpy" % cv2.__version__, t_peer),
                    ("  the same + np.save", t_save), ("parity preprocess (-> .npy files)", t_ours)):
        print("  %-38s %10.2f %14.2f" % (name, ms(t[0]), ms(t[1])))
    for name, t in (("no save", t_peer), ("with np.save", t_save)):
        print("  ratio to OpenCV (%s): wall %.2fx, CPU %.2fx (above 1: preprocess is faster)"
              % (name, t[0] / t_ours[0], t[1] / t_ours[1]))
    subprocess.run(["rm", "-rf", d])


if __name__ == "__main__":
    main()
