#!/usr/bin/python3
# preprocess_cli.t — the command line: --help/--version, config errors with
# file:line:col, --set errors, --list, --dataset (COCO ids and file_name
# matching), duplicate ids, identical bytes with 1 and 2 threads, reruns
# replacing sample folders, index.json.
import filecmp
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from preproc_common import CONFIGS, PREPROCESS, Tap, gen_image, load_meta, run, save_png, tmpdir
import subprocess

t = Tap()
rng = np.random.default_rng(11)
d = tmpdir()
files = []
for i, (w, h) in enumerate([(40, 30), (31, 47), (64, 64), (90, 20), (23, 23)]):
    path = os.path.join(d, "im%d.png" % i)
    save_png(path, gen_image(h, w, 3, i % 4, rng))
    files.append(path)
cfg = os.path.join(CONFIGS, "rtdetr-official.yaml")

p = subprocess.run([PREPROCESS, "--help"], stdout=subprocess.PIPE)
t.ok(p.returncode == 0 and b"usage: preprocess" in p.stdout and b"resize.method" in p.stdout, "--help")
p = subprocess.run([PREPROCESS, "--version"], stdout=subprocess.PIPE)
t.ok(p.returncode == 0 and p.stdout.startswith(b"preprocess"), "--version")
rc, err = run(["-o", d, files[0]], check=False)
t.ok(rc == 2 and "--config" in err, "missing --config: exit 2", err)


def write(name, text):
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(text)
    return path


bad = write("typo.yaml", "input:\n  name: images\nresize:\n  sise: 320x320\n")
rc, err = run(["--config", bad, "-o", os.path.join(d, "o1"), files[0]], check=False)
t.ok(rc == 2 and "typo.yaml:4:3: unknown key 'resize.sise' (did you mean 'resize.size'?)" in err,
     "unknown key: file:line:col and a suggestion", err)
bad = write("tab.yaml", "resize:\n\tsize: 320x320\n")
rc, err = run(["--config", bad, "-o", os.path.join(d, "o2"), files[0]], check=False)
t.ok(rc == 2 and "tab.yaml:2:1:" in err, "malformed YAML: file:line:col and libyaml's problem", err)
bad = write("dup.yaml", "color: rgb\ncolor: bgr\n")
rc, err = run(["--config", bad, "-o", os.path.join(d, "o2"), files[0]], check=False)
t.ok(rc == 2 and "dup.yaml:2:1: duplicate key 'color'" in err, "duplicate key", err)
bad = write("type.yaml", "resize:\n  size: 640x640\n  method: cv2-linear\n")
rc, err = run(["--config", bad, "-o", os.path.join(d, "o3"), files[0]], check=False)
t.ok(rc == 2 and "type.yaml:3:11: resize.method: expected one of opencv-linear" in err,
     "bad method lists the choices", err)
rc, err = run(["--config", cfg, "--set", "resize.size=abc", "-o", os.path.join(d, "o4"), files[0]],
              check=False)
t.ok(rc == 2 and "--set resize.size=abc: resize.size: expected HxW, got 'abc'" in err, "bad --set value", err)
rc, err = run(["--config", cfg, "--set", "mean=[1,2]", "-o", os.path.join(d, "o5"), files[0]], check=False)
t.ok(rc == 2 and "mean: expected 1 or 3 values" in err, "mean with the wrong count", err)
rc, err = run(["--config", cfg, "--set", "resize.mode=center-crop", "--set", "resize.shorter=10",
               "--set", "resize.size=20x20", "-o", os.path.join(d, "o6"), files[0]], check=False)
t.ok(rc == 2 and files[0] in err and "smaller than" in err, "crop larger than the image: exit 2 naming it", err)

# --list
lst = write("list.txt", "# images\n%s\n\n  %s  \n" % (files[0], files[1]))
out = os.path.join(d, "lst")
run(["--config", cfg, "--set", "resize.size=32x32", "-o", out, "--list", lst])
idx = json.load(open(os.path.join(out, "index.json")))
t.ok([s["sample_id"] for s in idx["samples"]] == ["im0", "im1"], "--list: samples in list order", str(idx["samples"]))

# --dataset
coco = {"images": [{"id": 17 + i, "file_name": os.path.basename(f), "width": w, "height": h}
                   for i, (f, (w, h)) in enumerate(zip(files, [(40, 30), (31, 47), (64, 64), (90, 20), (23, 23)]))],
        "annotations": [], "categories": []}
ds = write("gt.json", json.dumps(coco))
out = os.path.join(d, "ds")
run(["--config", cfg, "--set", "resize.size=32x32", "-o", out, "--dataset", ds, "--images", d])
metas = [load_meta(out, str(17 + i)) for i in range(5)]
t.ok([m["image_id"] for m in metas] == list(range(17, 22)) and metas[1]["width"] == 31 and
     metas[1]["sample_id"] == "18", "--dataset: every image, sample id = image id, meta image_id")
out = os.path.join(d, "ds2")
run(["--config", cfg, "--set", "resize.size=32x32", "-o", out, "--dataset", ds, files[3]])
t.ok(load_meta(out, "20")["image_id"] == 20 and len(os.listdir(out)) == 2,
     "--dataset with listed files: matched by file_name")
rc, err = run(["--config", cfg, "-o", os.path.join(d, "ds3"), "--dataset", ds, os.path.join(d, "tab.yaml")],
              check=False)
t.ok(rc == 2 and "no image with file_name 'tab.yaml'" in err, "file not in the dataset: exit 2", err)
coco["images"][0]["width"] = 41
ds_bad = write("gt_bad.json", json.dumps(coco))
rc, err = run(["--config", cfg, "-o", os.path.join(d, "ds4"), "--dataset", ds_bad, "--images", d], check=False)
t.ok(rc == 2 and "im0.png: the dataset says 41x30, the file is 40x30" in err, "size mismatch with the dataset", err)

# duplicate stems
sub = os.path.join(d, "sub")
os.makedirs(sub)
save_png(os.path.join(sub, "im0.png"), gen_image(5, 5, 3, 0, rng))
rc, err = run(["--config", cfg, "-o", os.path.join(d, "dup"), files[0], os.path.join(sub, "im0.png")], check=False)
t.ok(rc == 2 and "sample id 'im0'" in err, "duplicate sample ids: exit 2", err)


def same_tree(a, b):
    cmp = filecmp.dircmp(a, b)
    if cmp.left_only or cmp.right_only or cmp.diff_files or cmp.funny_files:
        return False
    for s in cmp.common_dirs:
        for f in os.listdir(os.path.join(a, s)):
            if not filecmp.cmp(os.path.join(a, s, f), os.path.join(b, s, f), shallow=False):
                return False
    return True


o1, o2 = os.path.join(d, "j1"), os.path.join(d, "j2")
for o, j in ((o1, "1"), (o2, "2")):
    run(["--config", cfg, "--set", "resize.size=96x80", "-j", j, "-o", o] + files)
t.ok(same_tree(o1, o2), "-j 1 and -j 2 write identical bytes")

# a rerun replaces the sample folders
run(["--config", cfg, "--set", "resize.size=16x16", "-j", "2", "-o", o1] + files)
shapes = {np.load(os.path.join(o1, "im%d" % i, "images.npy")).shape for i in range(5)}
t.ok(shapes == {(1, 3, 16, 16)} and not [f for f in os.listdir(o1) if f.startswith(".")],
     "rerun replaces every sample folder, no temporaries left", str(shapes))

t.done()
