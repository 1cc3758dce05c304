#!/usr/bin/python3
# preprocess_group.t — several variants in one preprocess run (each -o takes
# the --config and --set before it; one image list): every variant's folder
# is byte for byte what a run of that variant alone writes, for variants
# that share the decoding and the resize (RGB and BGR, other mean/std, a
# twin that differs only in extra:, whose identical tensor files are one
# file, linked), and for ones that do not (another
# library, letterbox, gray, RGBA over a background, uint8 NHWC), over gray,
# gray+alpha, RGB, RGBA, palette and 16-bit PNGs, on 1 and 2 threads. An
# output folder that already holds exactly the new bytes is kept, times and
# inode included, while a changed one is replaced; usage errors exit 2 with
# one line. Then the plan: one grouped preprocess rule per model, for the
# variants the run selects (with the reference's and each one's twins), and
# make, run on the generated plan, reruns only the readers of the variant
# whose tensors changed.
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from preproc_common import CONFIGS, PREPROCESS, ROOT, BIN, Tap, gen_image, save_png, tmpdir
from pngmake import encode

# the makes run here are a user's fresh ones, not children of `make test`
for _k in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "SANITIZE", "CC_OUT", "V"):
    os.environ.pop(_k, None)

t = Tap()
rng = np.random.default_rng(23)
d = tmpdir()
imgs = os.path.join(d, "imgs")
os.makedirs(imgs)
for i, (w, h, c) in enumerate([(40, 30, 3), (31, 47, 1), (64, 64, 4), (90, 20, 2), (23, 23, 3), (50, 35, 3)]):
    save_png(os.path.join(imgs, "im%d.png" % i), gen_image(h, w, c, i % 4, rng))
pal = rng.integers(0, 256, (16, 3))
with open(os.path.join(imgs, "pal.png"), "wb") as f:
    f.write(encode(rng.integers(0, 16, (21, 33, 1)), 3, 4, palette=pal))
with open(os.path.join(imgs, "deep.png"), "wb") as f:
    f.write(encode(rng.integers(0, 65536, (27, 19, 3)), 2, 16))

C = lambda n: os.path.join(CONFIGS, n)
# (name, config, --set overrides)
VARIANTS = [
    ("official", C("rtdetr-official.yaml"), []),
    ("bgr", C("bgr.yaml"), []),                                   # shares official's resize
    ("norm", C("imagenet-norm.yaml"), []),                        # shares it too
    ("cv", C("opencv-stretch.yaml"), []),
    ("lb", C("letterbox.yaml"), []),
    ("lb-naive", C("letterbox-naive.yaml"), []),                  # lb's twin: extra only
    ("gray-cv", C("opencv-stretch.yaml"), ["color=gray"]),        # decodes with cv's gray rule
    ("rgba", C("rtdetr-official.yaml"), ["color=rgba"]),
    ("bg", C("rtdetr-official.yaml"), ["alpha=composite", "background=[10,200,30]"]),
    ("u8", C("bgr.yaml"), ["dtype=uint8", "layout=nhwc"]),
    ("bgra-f16", C("opencv-stretch.yaml"), ["color=bgra", "dtype=float16", "resize.size=24x40"]),
]
COMMON = ["--set", "resize.size=32x32", "--images", imgs]


def variant_args(name, cfg, sets, out):
    a = ["--config", cfg]
    for s in (["resize.size=32x32"] if not any(s.startswith("resize.size") for s in sets) else []) + sets:
        a += ["--set", s]
    return a + ["-o", out]


def pre(args):
    p = subprocess.run([PREPROCESS] + args, capture_output=True, text=True)
    return p.returncode, p.stderr


def tree(top):
    """{relative path: bytes} of every file under top."""
    out = {}
    for dd, _, files in os.walk(top):
        for f in files:
            p = os.path.join(dd, f)
            out[os.path.relpath(p, top)] = open(p, "rb").read()
    return out


# 1. alone, then together: the same bytes
alone = os.path.join(d, "alone")
for name, cfg, sets in VARIANTS:
    rc, err = pre(variant_args(name, cfg, sets, os.path.join(alone, name)) + ["--images", imgs, "-j", "1"])
    t.ok(rc == 0, "alone: %s" % name, err)
for jobs in (1, 2):
    grp = os.path.join(d, "group%d" % jobs)
    args = ["--images", imgs, "-j", str(jobs)]
    for name, cfg, sets in VARIANTS:
        args += variant_args(name, cfg, sets, os.path.join(grp, name))
    rc, err = pre(args)
    t.ok(rc == 0, "%d variants in one run, %d thread%s" % (len(VARIANTS), jobs, "s" if jobs > 1 else ""), err)
    bad = [n for n, _, _ in VARIANTS if tree(os.path.join(grp, n)) != tree(os.path.join(alone, n))]
    # 8 images: a folder each with the tensor, meta.json (and an extra input), and index.json
    sizes = [len(os.listdir(os.path.join(grp, n))) for n, _, _ in VARIANTS]
    t.ok(not bad and sizes == [8 + 1] * len(VARIANTS),
         "every variant's folder is byte for byte its run alone (%d threads)" % jobs, "differ: %s, files %s" % (bad, sizes))
lb, lbn = tree(os.path.join(alone, "lb")), tree(os.path.join(alone, "lb-naive"))
t.ok([k for k in lb if k.endswith("images.npy") and lb[k] != lbn[k]] == [] and
     [k for k in lb if k.endswith("orig_target_sizes.npy") and lb[k] != lbn[k]] != [],
     "the twins: the same images, different extra inputs (each checked above against its run alone)")
ino = lambda top, n: [os.stat(os.path.join(top, n, smp, "images.npy")).st_ino for smp in sorted(os.listdir(os.path.join(top, n)))
                      if smp != "index.json"]
g1 = os.path.join(d, "group1")
t.ok(ino(g1, "lb") == ino(g1, "lb-naive") and ino(g1, "official") != ino(g1, "bgr") and ino(alone, "lb") != ino(alone, "lb-naive"),
     "together, the twin's images are links to the first's file (no second copy); other variants' are files of their own")

# 2. a rerun that makes the same bytes keeps the folders as they were
grp = os.path.join(d, "group2")


def stamp(n):
    st = os.stat(os.path.join(grp, n, "index.json"))
    return (st.st_mtime_ns, st.st_ino, os.stat(os.path.join(grp, n)).st_ino)


before = {n: stamp(n) for n, _, _ in VARIANTS}
args = ["--images", imgs, "-j", "2"]
for name, cfg, sets in VARIANTS:
    sets = sets + ["mean=[0.1,0.2,0.3]", "std=[0.5,0.5,0.5]"] if name == "official" else sets
    args += variant_args(name, cfg, sets, os.path.join(grp, name))
rc, err = pre(args)
after = {n: stamp(n) for n, _, _ in VARIANTS}
kept = [n for n, _, _ in VARIANTS if after[n] == before[n]]
t.ok(rc == 0 and kept == [n for n, _, _ in VARIANTS if n != "official"],
     "rerun with one variant's mean/std changed: the other %d folders kept (times, inodes), that one replaced" % (len(VARIANTS) - 1),
     "kept: %s %s" % (kept, err))
t.ok(tree(os.path.join(grp, "official")) != tree(os.path.join(alone, "official")) and
     not [n for n in os.listdir(grp) if ".tmp." in n or ".old." in n], "the replaced one holds the new tensors; no staging left")
rc, err = pre(variant_args("bgr", C("bgr.yaml"), [], os.path.join(grp, "bgr")) + ["--images", imgs])
t.ok(rc == 0 and stamp("bgr") == before["bgr"], "one variant alone, the same bytes: kept too", err)

# 3. usage errors: exit 2, one line, nothing written
def usage_error(args, needle, what):
    out = os.path.join(d, "never")
    rc, err = pre(args)
    lines = [l for l in err.splitlines() if l.strip()]
    t.ok(rc == 2 and len(lines) == 1 and needle in lines[0] and not os.path.exists(out), what, err)


o1, o2 = os.path.join(d, "never"), os.path.join(d, "never2")
usage_error(["--config", C("bgr.yaml"), "-o", o1, "--config", C("bgr.yaml"), "-o", o2, "--set", "color=rgb", "--images", imgs],
            "after the last -o", "--set after the last of several -o: refused")
usage_error(["--config", C("bgr.yaml"), "-o", o1, "--config", C("bgr.yaml"), "-o", o1, "--images", imgs],
            "given twice", "the same -o twice: refused")
usage_error(["--config", C("bgr.yaml"), "--config", C("letterbox.yaml"), "-o", o1, "--images", imgs],
            "two --config", "two --config for one -o: refused")
usage_error(["-o", o1, "--config", C("bgr.yaml"), "-o", o2, "--images", imgs], "missing --config",
            "an -o with no --config before it (several outputs): refused")
usage_error(["--config", C("bgr.yaml"), "-o", o1, "--images", imgs, "--config", C("bgr.yaml"), "-o", o2, "--images", d],
            "different values", "two image folders in one run: refused")
rc, err = pre(["-o", o1, "--config", C("bgr.yaml"), "--images", imgs, "--set", "resize.size=8x8"])
t.ok(rc == 0 and os.path.isdir(o1), "one output: its --config and --set may follow -o, as before", err)

# 4. the plan: one grouped rule, the selected variants, readers on index.json
W = os.path.join(d, "w")
os.makedirs(os.path.join(W, "data"))
shutil.copytree(imgs, os.path.join(W, "data", "imgs"))
model = {
    "description": "group", "model": "m.onnx", "input_shapes": {"images": "1x3x32x32"},
    "dataset": {"images": "data/imgs"},
    "preprocess": {"resize.size": "32x32"},
    "variants": ["rtdetr-official", "bgr", "letterbox", "letterbox-naive", "opencv-stretch"],
    "precisions": ["fp32"],
    "reference": {"variant": "rtdetr-official", "precision": "fp32"},
    "compare": {"atol": 0.1, "rtol": 0.1},
}
os.makedirs(os.path.join(W, "configs", "models"))
shutil.copytree(CONFIGS, os.path.join(W, "configs", "preprocess"))
shutil.copytree(os.path.join(ROOT, "configs", "precisions"), os.path.join(W, "configs", "precisions"))
open(os.path.join(W, "m.onnx"), "wb").close()
with open(os.path.join(W, "configs", "models", "g.yaml"), "w") as f:
    json.dump(model, f)   # JSON is YAML
p = subprocess.run([os.path.join(BIN, "plan"), "configs/models/g.yaml", "-o", "build/g"], cwd=W, capture_output=True, text=True)
t.ok(p.returncode == 0, "plan: a model of 5 variants plans", p.stderr)
mk = open(os.path.join(W, "build", "g", "plan.mk")).read() if p.returncode == 0 else ""
pre_rules = [l for l in mk.splitlines() if "$(PARITY_BIN)/preprocess -j" in l]
t.ok(len(pre_rules) == 1 and "build/g/pre/rtdetr-official.done build/g/pre/bgr.done build/g/pre/letterbox.done "
     "build/g/pre/letterbox-naive.done build/g/pre/opencv-stretch.done &:" in mk,
     "one grouped preprocess rule makes every variant's stamp", "\n".join(pre_rules))
t.ok("g_PRE_WITH_letterbox-naive := letterbox letterbox-naive" in mk and "g_PRE_WITH_bgr := bgr" in mk,
     "each variant's preprocessing comes with its twin's (one infer process runs both)")
readers = [l for l in mk.splitlines() if "/out.done:" in l and "build/g/pre/" in l and "shards" not in l]
t.ok(readers and all("/index.json" in l and ".done" not in l.split(":", 1)[1].split("build/g/pre/")[1].split()[0] for l in readers),
     "the cells read a variant's index.json, not the group's stamps", "\n".join(readers[:2]))

# make on the plan: the preprocess rules only, each reader a stub that says it ran
with open(os.path.join(W, "run.mk"), "w") as f:
    f.write("PARITY_BIN := %s\nQ := @\nJOBS := 2\nTHREADS := 1\nFORCE:\n.PHONY: FORCE\n" % os.path.abspath(BIN))
    f.write("include build/g/plan.mk\n")
    for v in model["variants"]:
        f.write("use/%s: build/g/pre/%s/index.json\n\t@mkdir -p use && touch $@ && echo READ %s\n" % (v, v, v))


def make(*args):
    p = subprocess.run(["make", "-f", "run.mk"] + list(args), cwd=W, capture_output=True, text=True)
    return p.returncode, sorted(l.split()[1] for l in p.stdout.splitlines() if l.startswith("READ")), p.stdout + p.stderr


def pre_runs(out):
    return [l.split(None, 1)[1] for l in out.splitlines() if l.startswith("  PRE ")]


alluse = ["use/%s" % v for v in model["variants"]]
rc, read, out = make("VARIANTS=bgr", "use/bgr", "use/rtdetr-official")
t.ok(rc == 0 and pre_runs(out) == ["g rtdetr-official bgr"] and read == ["bgr", "rtdetr-official"]
     and not os.path.exists(os.path.join(W, "build/g/pre/letterbox")),
     "VARIANTS=bgr: preprocess runs once, for the reference's variant and bgr only", out)
rc, read, out = make(*alluse)
t.ok(rc == 0 and pre_runs(out) == ["g rtdetr-official bgr letterbox letterbox-naive opencv-stretch"]
     and read == ["letterbox", "letterbox-naive", "opencv-stretch"],
     "every variant: one run makes the stamps the selection lacked; the readers already run do not rerun", out)
rc, read, out = make(*alluse)
t.ok(rc == 0 and not pre_runs(out) and not read, "again: nothing runs", out)
cfgs = os.path.join(W, "configs", "preprocess")


def edit(path, text=""):
    """A user's edit, after make's stamps: file times tick only with the
    kernel's clock (at most 10 ms), so step past one tick first."""
    time.sleep(0.05)
    with open(path, "a") as f:
        f.write(text)
    os.utime(path)


edit(os.path.join(cfgs, "bgr.yaml"))
rc, read, out = make(*alluse)
t.ok(rc == 0 and len(pre_runs(out)) == 1 and not read, "a config touched, its tensors the same: preprocess reruns, no reader does", out)
edit(os.path.join(cfgs, "bgr.yaml"), "mean: [0.5, 0.5, 0.5]\n")
rc, read, out = make(*alluse)
t.ok(rc == 0 and len(pre_runs(out)) == 1 and read == ["bgr"], "bgr's mean changed: only bgr's reader reruns", out)
rc, read, out = make(*alluse)
t.ok(rc == 0 and not pre_runs(out) and not read, "and then nothing", out)
t.done()
