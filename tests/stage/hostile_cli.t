#!/usr/bin/python3
# Hostile inputs through the real command lines (issue 15): for each stage and
# each file argument, a missing file, an empty file, a folder (or a file where
# a folder is expected, or an empty folder), random bytes, a file of another
# kind, and where the format declares sizes, a huge declared size. Each must
# end with exit 2, one line on stderr naming the file, and no output left
# behind (neither the output nor a staging name beside it). Every case runs
# against a command line that succeeds with the good file, checked first.
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done, bindir

repo = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
B = os.path.abspath(bindir())
tmp = tempfile.mkdtemp(prefix="parity-hostile-")
rng = np.random.default_rng(15)


def path(*p):
    return os.path.join(tmp, *p)


def write(name, data):
    with open(path(name), "wb") as f:
        f.write(data)
    return path(name)


def run(stage, args, cwd=None):
    p = subprocess.run([os.path.join(B, stage)] + args, capture_output=True, cwd=cwd)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def png_bytes(w, h, pixels=True):
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    raw = b"".join(b"\0" + bytes(rng.integers(0, 256, 3 * w, dtype=np.uint8)) for _ in range(h)) if pixels else b""
    body = chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
    body += chunk(b"IDAT", zlib.compress(raw)) if pixels else b""
    return b"\x89PNG\r\n\x1a\n" + body + chunk(b"IEND", b"")


def npy_bytes(shape, data=b""):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % (tuple(shape),)
    header += " " * (63 - (len(header) + 10) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + data


# ---- good inputs ----
os.makedirs(path("imgs"))
good_png = write("imgs/a.png", png_bytes(12, 10))
good_png2 = write("imgs/b.png", png_bytes(9, 7))
pcfg = write("pre.yaml", open(os.path.join(repo, "configs/preprocess/rtdetr-official.yaml"), "rb").read()
             .replace(b"640x640", b"16x16"))
listf = write("list.txt", (good_png + "\n").encode())
gt = {"images": [{"id": 1, "file_name": "a.png", "width": 12, "height": 10}, {"id": 2, "file_name": "b.png", "width": 9, "height": 7}],
      "categories": [{"id": 1, "name": "x"}],
      "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [1, 1, 4, 4], "area": 16, "iscrowd": 0}]}
gtf = write("gt.json", json.dumps(gt).encode())
dtf = write("dt.json", json.dumps([{"image_id": 1, "category_id": 1, "bbox": [1, 1, 4, 4], "score": 0.9}]).encode())
onnx = os.path.join(repo, "build/models/convclip/convclip.onnx")
inset = os.path.join(repo, "build/models/convclip/input")
prec = os.path.join(repo, "configs/precisions/fp32.yaml")
eng, layers = path("m.engine"), path("layers.json")
setup = [run("build-engine", [onnx, "-o", eng, "--layers-out", layers]),
         run("infer", [eng, "-i", inset, "-o", path("outA"), "--dump", "all"]),
         run("infer", [eng, "-i", inset, "-o", path("outB"), "--dump", "all"]),
         run("plan", ["configs/models/convclip.yaml", "-o", path("plan")], cwd=repo)]
ok(all(r[0] == 0 for r in setup), "fixtures: an engine, two dumps, a plan", [r[2] for r in setup])
planjson = path("plan/plan.json")
results = write("results.json", json.dumps({"verdict": "PASS"}).encode())
args_ok = write("ok.args", json.dumps(["--config", pcfg]).encode())

# task-eval's inputs: a run of one sample, its labels, classes, label map, clean image
os.makedirs(path("clsrun/s0"))
np.save(path("clsrun/s0/logits.npy"), np.array([[0.1, 0.9, 0.3, 0.2]], np.float32))
os.makedirs(path("imgrun/s0"))
np.save(path("imgrun/s0/out.npy"), rng.random((1, 3, 12, 12)).astype(np.float32))
labels_json = write("labels.json", b'{"s0": 1}')
classes_txt = write("classes.txt", b"a\nb\nc\nd\n")
os.makedirs(path("clean"))
write("clean/s0.png", png_bytes(12, 12))
os.makedirs(path("segmaps"))
from PIL import Image
Image.fromarray(rng.integers(0, 3, (12, 12)).astype(np.uint8)).save(path("segmaps/s0.png"))

# ---- hostile files, by the kind of file expected ----
random_bytes = write("random.bin", bytes(rng.integers(0, 256, 4096, dtype=np.uint8)))
empty = write("empty.bin", b"")
os.makedirs(path("folder"))
os.makedirs(path("emptyset"))
os.makedirs(path("hugeset"))
write("hugeset/images.npy", npy_bytes((1 << 20, 1 << 20, 1 << 20), b"\0" * 64))
huge_png = write("huge.png", png_bytes(1000000, 1000000, pixels=False))
huge_pb = write("huge.pb", b"\x0a" + bytes([0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]))   # a field of 2^56 bytes
huge_yaml = write("huge.yaml", b"resize: {size: 1000000x1000000}\n")
a_png = write("wrong.png", png_bytes(4, 4))
a_file = write("plain.txt", b"not a folder\n")
listed_missing = write("list-missing.txt", path("nope.png").encode() + b"\n")
mixed_list = write("list-mixed.txt", (good_png + "\n" + random_bytes + "\n").encode())
bad_args = write("bad.args", b'{"not": "an array"}')
os.makedirs(path("mixedset/a"))
os.makedirs(path("mixedset/b"))
shutil.copy(os.path.join(inset, "images.npy"), path("mixedset/a/images.npy"))
bad_sample = write("mixedset/b/images.npy", bytes(rng.integers(0, 256, 512, dtype=np.uint8)))

FILE = {   # variant -> file (None: the kind has no such variant)
    "missing": path("missing.x"), "empty": empty, "folder": path("folder"), "random bytes": random_bytes,
}


def variants(kind):
    v = dict(FILE)
    v["wrong kind"] = {"png": onnx}.get(kind, a_png)
    v["huge size"] = {"png": huge_png, "onnx": huge_pb, "engine": huge_pb, "yaml-pre": huge_yaml}.get(kind)
    if kind == "set":   # a folder is expected: a plain file, an empty folder, a tensor of huge declared shape
        v.update({"folder": path("emptyset"), "wrong kind": a_file, "huge size": path("hugeset")})
    return {k: f for k, f in v.items() if f}


O = path("outs", "O")   # every output goes here; the folder must stay empty
CASES = [   # stage, argument, kind, argv (F: the file under test, O: the output)
    ("preprocess", "--config", "yaml-pre", ["--config", "F", "-o", "O", good_png]),
    ("preprocess", "IMAGE", "png", ["--config", pcfg, "-o", "O", good_png, "F"]),
    ("preprocess", "--list", "text", ["--config", pcfg, "-o", "O", "--list", "F"]),
    ("preprocess", "--dataset", "json", ["--config", pcfg, "-o", "O", "--dataset", "F", "--images", path("imgs")]),
    ("preprocess", "--images", "set", ["--config", pcfg, "-o", "O", "--dataset", gtf, "--images", "F"]),
    ("preprocess", "@FILE", "json", ["@F", "-o", "O", good_png]),
    ("build-engine", "MODEL", "onnx", ["F", "-o", "O"]),
    ("build-engine", "--config", "yaml", [onnx, "-o", "O", "--config", "F"]),
    ("build-engine", "@FILE", "json", [onnx, "-o", "O", "@F"]),
    ("infer", "ENGINE", "engine", ["F", "-i", inset, "-o", "O"]),
    ("infer", "-i", "set", [eng, "-i", "F", "-o", "O"]),
    ("infer", "--reference", "set", [eng, "-i", inset, "-o", "O", "--dump", "all", "--reference", "F"]),
    ("compare", "A", "set", ["F", path("outB"), "--json", "O"]),
    ("compare", "B", "set", [path("outA"), "F", "--json", "O"]),
    ("compare", "--layers", "json", ["--layers", "F", path("outA"), path("outB"), "--json", "O"]),
    ("compare", "@FILE", "json", [path("outA"), path("outB"), "@F", "--json", "O"]),
    ("map-eval", "--gt", "json", ["--gt", "F", "--dt", dtf, "--json", "O", "-q"]),
    ("map-eval", "--dt", "json", ["--gt", gtf, "--dt", "F", "--json", "O", "-q"]),
    ("report", "--plan", "json", ["--plan", "F", "-o", "O"]),
    ("report", "--verdict", "json", ["--verdict", "F"]),
    ("plan", "CONFIG", "yaml", ["F", "-o", "O"]),
    ("task-eval", "--dt", "set", ["--task", "restoration", "--dt", "F", "--clean", path("clean"), "--json", "O", "-q"]),
    ("task-eval", "--clean", "set", ["--task", "restoration", "--dt", path("imgrun"), "--clean", "F", "--json", "O", "-q"]),
    ("task-eval", "--gt-maps", "set", ["--task", "segmentation", "--dt", path("imgrun"), "--gt-maps", "F", "--json", "O", "-q"]),
    ("task-eval", "--labels", "text", ["--task", "classification", "--dt", path("clsrun"), "--labels", "F", "--json", "O", "-q"]),
    ("task-eval", "--classes", "text", ["--task", "classification", "--dt", path("clsrun"), "--labels", labels_json,
                                        "--classes", "F", "--json", "O", "-q"]),
]
GOOD = {("preprocess", "--config"): pcfg, ("preprocess", "IMAGE"): good_png2, ("preprocess", "--list"): listf,
        ("preprocess", "--dataset"): gtf, ("preprocess", "--images"): path("imgs"), ("preprocess", "@FILE"): args_ok,
        ("build-engine", "MODEL"): onnx, ("build-engine", "--config"): prec,
        ("build-engine", "@FILE"): write("be.args", json.dumps(["--config", prec]).encode()),
        ("infer", "ENGINE"): eng, ("infer", "-i"): inset, ("infer", "--reference"): path("outB"),
        ("compare", "A"): path("outA"), ("compare", "B"): path("outB"), ("compare", "--layers"): layers,
        ("compare", "@FILE"): write("cmp.args", json.dumps(["--atol", "1"]).encode()),
        ("map-eval", "--gt"): gtf, ("map-eval", "--dt"): dtf, ("report", "--plan"): planjson,
        ("report", "--verdict"): None, ("plan", "CONFIG"): os.path.join(repo, "configs/models/convclip.yaml"),
        ("task-eval", "--dt"): path("imgrun"), ("task-eval", "--clean"): path("clean"), ("task-eval", "--gt-maps"): path("segmaps"),
        ("task-eval", "--labels"): labels_json, ("task-eval", "--classes"): classes_txt}
EXTRA = [   # further hostile inputs of one argument (and the file the error must name)
    ("preprocess", "--list", "a listed image missing", listed_missing, path("nope.png")),
    ("preprocess", "--list", "a good and a bad image", mixed_list, random_bytes),
    ("preprocess", "@FILE", "not an array", bad_args, bad_args),
    ("compare", "@FILE", "not an array", bad_args, bad_args),
    ("infer", "-i", "a good and a bad sample", path("mixedset"), bad_sample),
]


def argv_with(argv, f):
    return [a.replace("F", f) if a in ("F", "@F") else (O if a == "O" else a) for a in argv]


def leftovers():
    return os.listdir(path("outs")) if os.path.isdir(path("outs")) else []


def check(stage, arg, what, argv, f, cwd, named_file=None):
    shutil.rmtree(path("outs"), ignore_errors=True)
    os.makedirs(path("outs"))
    rc, out, err = run(stage, argv_with(argv, f), cwd=cwd)
    lines = [l for l in err.splitlines() if l.strip()]
    nf = named_file or f
    named = len(lines) == 1 and (nf in lines[0] or os.path.basename(nf.rstrip("/")) in lines[0])
    left = leftovers()
    good = rc == 2 and named and not left
    return good, "%s %s, %s: exit %d, stderr %r, left %s" % (stage, arg, what, rc, err[-300:], left)


# each command line succeeds with the good file (so each failure below is the file's)
bad = []
for stage, arg, kind, argv in CASES:
    g = GOOD[(stage, arg)]
    if g is None:
        continue
    shutil.rmtree(path("outs"), ignore_errors=True)
    os.makedirs(path("outs"))
    rc, out, err = run(stage, argv_with(argv, g), cwd=repo)
    if rc not in (0, 1):
        bad.append("%s %s with the good file: exit %d %s" % (stage, arg, rc, err[-300:]))
ok(not bad, "every command line works with the good file", "\n".join(bad))

results_by_stage = {}
for stage, arg, kind, argv in CASES:
    for what, f in variants(kind).items():
        results_by_stage.setdefault(stage, []).append(check(stage, arg, what, argv, f, repo))
for stage, arg, what, f, named_file in EXTRA:
    argv = next(c[3] for c in CASES if c[0] == stage and c[1] == arg)
    results_by_stage[stage].append(check(stage, arg, what, argv, f, repo, named_file))
for stage in results_by_stage:
    rs = results_by_stage[stage]
    ok(all(r[0] for r in rs), "%s: %d hostile files: exit 2, one line naming the file, nothing left behind"
       % (stage, len(rs)), "\n".join(r[1] for r in rs if not r[0]))

# numeric options: not a number, trailing text, out of range, overflow; each
# a usage error (exit 2) naming the option, before any file is touched
NUMERIC = [
    ("infer", "--threads", [eng, "-i", inset, "-o", path("outN")], ["0", "257", "2x", "", "abc"]),
    ("infer", "--runs", [eng, "-i", inset, "-o", path("outN")], ["0", "-3", "1e3", "99999999999999999999"]),
    ("infer", "--warmup", [eng, "-i", inset, "-o", path("outN")], ["-1", "one", "2 "]),
    ("preprocess", "--jobs", ["--config", pcfg, "-s", "official", "--images", path("imgs"), "-o", path("outN")],
     ["0", "65", "4cpus"]),
    ("shard", "--count", ["select", "--dir", path("imgs"), "--index", "0", "-o", path("outN")], ["0", "4097", "two"]),
    ("shard", "--index", ["select", "--dir", path("imgs"), "--count", "2", "-o", path("outN")], ["2", "-1", "0.5"]),
    ("gen-shapes", "--count", ["--split", "val", "-o", path("outN")], ["0", "ten"]),
]
bad = []
for stage, opt, argv, values in NUMERIC:
    for v in values:
        rc, out, err = run(stage, argv + [opt, v], cwd=repo)
        if rc != 2 or opt not in err or len(err.strip().splitlines()) != 1 or os.path.exists(path("outN")):
            bad.append("%s %s %r: exit %d, stderr %r" % (stage, opt, v, rc, err[-200:]))
ok(not bad, "numeric options out of range or not numbers: exit 2, one line naming the option", "\n".join(bad))

shutil.rmtree(tmp)
done()
