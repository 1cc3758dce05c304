#!/usr/bin/python3
# Every committed fuzz regression input (tests/fuzz/regress/NAME/) through the
# real CLI that reads such a file: exit 2, one line naming the file, no output
# left behind. build/tests/fuzz/NAME replays the same inputs through the
# reader alone; this checks what a user sees.
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done, run, one_line_error, skip

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz", "regress")
tmp = tempfile.mkdtemp(prefix="parity-reader-regress-")


def placed(name, src):
    """The input as the CLI meets it: (the path to name, the text it must name)."""
    d = tempfile.mkdtemp(dir=tmp)
    blob = open(src, "rb").read()
    if name == "trtexec_raw":          # the first line is the file's name
        fname, _, blob = blob.partition(b"\n")
        path = os.path.join(d, "set")
        os.makedirs(path)
        open(os.path.join(path, fname.decode()), "wb").write(blob)
        return path, fname.decode()
    ext = {"polygraphy": ".json", "trtexec_json": ".json", "npz": ".npz", "npy": ".npy", "engine": ".engine",
           "onnx": ".onnx", "pb": ".pb", "config_model": ".yaml", "config_preprocess": ".yaml"}[name]
    path = os.path.join(d, os.path.basename(src) + ext)
    open(path, "wb").write(blob)
    return path, os.path.basename(path)


def cli(name, path, out):
    """The stage invocation reading this kind of file, writing into out."""
    if name in ("polygraphy", "trtexec_json", "npz", "trtexec_raw"):
        return ("compare", path, path, "--json", os.path.join(out, "c.json"))
    if name == "engine":
        inp = os.path.join(tmp, "empty-inputs")
        os.makedirs(inp, exist_ok=True)
        return ("infer", path, "-i", inp, "-o", os.path.join(out, "o"))
    if name == "onnx":
        return ("build-engine", path, "-o", os.path.join(out, "m.engine"))
    if name == "config_model":
        return ("plan", path, "-o", os.path.join(out, "plan"))
    if name == "config_preprocess":   # the config is read before any image
        png = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz", "corpus", "png", "P.png")
        return ("preprocess", "--config", path, "-o", os.path.join(out, "p"), png)
    if name == "pb":
        d = os.path.dirname(path)
        return ("compare", d, d, "--json", os.path.join(out, "c.json"))
    return None


# Kinds whose inputs no CLI reads as they are: build/tests/fuzz/NAME replays them.
HARNESS_ONLY = {"yolo_head": "the harness pairs a settings line with a head and makes proto planes from the "
                             "head's own values; no CLI reads that pairing (its findings were the harness's)"}

count = 0
for name in sorted(os.listdir(root)):
    if name in HARNESS_ONLY:
        skip(f"{name}: its inputs through a CLI", HARNESS_ONLY[name])
        continue
    for f in sorted(os.listdir(os.path.join(root, name))):
        path, needle = placed(name, os.path.join(root, name, f))
        out = tempfile.mkdtemp(dir=tmp)
        args = cli(name, path, out)
        if args is None:
            ok(False, f"{name}/{f}: a CLI reads it (add one to cli())")
            continue
        rc, _, err = run(*args)
        ok(one_line_error(rc, err, needle) and os.listdir(out) == [],
           f"{args[0]} on {name}/{f}: exit 2, one line naming the file, no output", f"rc={rc} stderr={err[-600:]!r}")
        count += 1
ok(count > 0, f"{count} regression inputs replayed through the CLIs")
shutil.rmtree(tmp)
done()
