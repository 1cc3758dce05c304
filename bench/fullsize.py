"""fullsize.py — the benchmarks' models and inputs that are made, not
shipped: the full-size RT-DETR (bench/models/rtdetr_r18vd_640_op16/op17:
graphs committed without weights, xz-compressed) and the shapes-val image
through the official preprocessing. Shared by infer_vs_ort.py and
profile_vs_ort.py.

A full-size model is made once: the graph decompressed and its weights
filled deterministically by tests/zoo/gen_weights.py (nothing downloaded),
into build/bench/models/NAME-HASH/model.onnx, HASH the first 16 hex digits
of the SHA-256 of the committed .onnx.xz, so a changed graph makes a new
folder. The folder is built under a temporary name beside it and renamed
into place whole: a run cut off leaves no half-made model, and two runs at
once both end with a complete one."""
import hashlib
import lzma
import os
import shutil
import subprocess
import sys
import tempfile

root = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
# Debian's python3 (numpy, onnx) here; PARITY_PYTHON where another one holds them (the GPU machine's)
PYTHON = os.environ.get("PARITY_PYTHON") or ("/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK)
                                             else sys.executable)
FULLSIZE_INPUT = "images:float32:1x3x640x640:0:1"   # gen_weights.py's own input (unused: the image is real)


def fail(msg):
    print("bench: " + msg, file=sys.stderr)
    sys.exit(2)


def fullsize_model(name, cache=None):
    """build/bench/models/NAME-HASH/model.onnx for bench/models/NAME.onnx.xz,
    made on first use."""
    graph = os.path.join(root, "bench", "models", name + ".onnx.xz")
    try:
        digest = hashlib.sha256(open(graph, "rb").read()).hexdigest()[:16]
    except OSError as ex:
        fail("%s: %s" % (graph, ex.strerror))
    cache = cache or os.path.join(root, "build", "bench", "models")
    final = os.path.join(cache, "%s-%s" % (name, digest))
    model = os.path.join(final, "model.onnx")
    if os.path.isfile(model):
        return model
    os.makedirs(cache, exist_ok=True)
    work = tempfile.mkdtemp(prefix=".%s-" % name, dir=cache)
    try:
        src = os.path.join(work, "graph.onnx")
        try:
            with lzma.open(graph) as fin, open(src, "wb") as fout:
                shutil.copyfileobj(fin, fout)
        except (OSError, lzma.LZMAError) as ex:
            fail("%s: cannot decompress: %s" % (graph, ex))
        made = os.path.join(work, "model")
        p = subprocess.run([PYTHON, os.path.join(root, "tests", "zoo", "gen_weights.py"), src, FULLSIZE_INPUT, made],
                           capture_output=True, text=True)
        if p.returncode:
            fail("gen_weights.py %s: %s" % (graph, p.stderr.strip()[-400:]))
        os.remove(src)
        try:
            os.rename(made, final)
        except OSError:
            if not os.path.isfile(model):     # not another run's finished copy: a real failure
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return model


def shapes_input(tmp, bindir, size):
    """The first shapes-val image (gen-shapes, seed 2024) through the official
    RT-DETR preprocessing at size x size, made in tmp by parity's own stages
    (once per size and run); returns the tensor-set folder."""
    pre = os.path.join(tmp, "shapes-pre-%d" % size)
    if not os.path.isdir(pre):
        val = os.path.join(tmp, "shapes-val")
        steps = [["preprocess", "--config", os.path.join(root, "configs", "preprocess", "rtdetr-official.yaml"),
                  "--set", "resize.size=%dx%d" % (size, size), "-o", pre, os.path.join(val, "images", "0000001.png")]]
        if not os.path.isdir(val):
            steps.insert(0, ["gen-shapes", "--split", "val", "--seed", "2024", "--count", "1", "-o", val])
        for cmd in steps:
            p = subprocess.run([os.path.join(bindir, cmd[0])] + cmd[1:], capture_output=True, text=True)
            if p.returncode:
                fail("%s (the RT-DETR input): %s" % (cmd[0], p.stderr.strip()))
    return os.path.join(pre, "0000001")
