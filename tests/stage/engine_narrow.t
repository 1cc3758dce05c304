#!/usr/bin/python3
# Engine format 2 (issue 34, disk use): float32 constants that float16, else
# bfloat16, holds bit for bit are stored in 2 bytes and widened exactly on
# load (engine/narrow.c). Against build-engine --no-narrow (every constant in
# 4 bytes, the format 1 layout): the same output bits at fp32 and fp16, an
# engine smaller by 2 bytes per narrowed element (counted here from the
# model's initializers with numpy; at fp16 every weight, which the build
# rounds to float16), nothing narrowed at fp32 when no constant fits;
# damaged or newer files are refused with one line, exit 2.
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done, run
from backend_lib import write_set, read_set, tmpdir
from exported_models import conv_net

np.seterr(over="ignore")   # float16 rounding of the bfloat16-only layer overflows to inf, as the build's does
tmp = tmpdir("engine-narrow")
inp = os.path.join(tmp, "in")
write_set(inp, {"input": np.random.default_rng(5).standard_normal((1, 3, 16, 16)).astype(np.float32)})
configs = os.path.join(os.path.dirname(__file__), "..", "..", "configs", "precisions")


def exact_in(a, narrow):
    """Elements of a that survive float32 -> narrow -> float32 bit for bit."""
    if narrow == "f16":
        back = a.astype(np.float16).astype(np.float32)
    else:   # bfloat16 keeps the high 16 bits: exact when the low ones are 0
        return bool(np.all(a.view(np.uint32) & 0xFFFF == 0))
    return bool(np.all(back.view(np.uint32) == a.view(np.uint32)))


def narrowable(model):
    """Elements of the initializers the engine may store in 2 bytes, and how many initializers."""
    n, k = 0, 0
    for t in model.graph.initializer:
        a = numpy_helper.to_array(t)
        if a.dtype == np.float32 and (exact_in(a, "f16") or exact_in(a, "bf16")):
            n += a.size
            k += 1
    return n, k


def build(tag, model_path, *args):
    eng = os.path.join(tmp, tag + ".engine")
    rc, _, err = run("build-engine", model_path, "-o", eng, *args)
    return eng if rc == 0 else None, err


def infer(eng, tag):
    out = os.path.join(tmp, tag + ".out")
    rc, _, err = run("infer", eng, "-i", inp, "-o", out)
    return read_set(out) if rc == 0 else err


# a model of FP16-trained weights carried in float32, with one layer beyond
# float16's range in bfloat16-exact values, and the same net with fp32 weights
mixed = conv_net(seed=2)
for t in mixed.graph.initializer:
    a = numpy_helper.to_array(t).astype(np.float32)
    if t.name.startswith("/head/"):
        a = (a * np.float32(1e6)).view(np.uint32) & np.uint32(0xFFFF0000)
        a = a.view(np.float32)
    else:
        a = a.astype(np.float16).astype(np.float32)
    t.CopyFrom(numpy_helper.from_array(a, t.name))
plain = conv_net(seed=2)
paths = {}
for name, m in (("mixed", mixed), ("plain", plain)):
    paths[name] = os.path.join(tmp, name + ".onnx")
    onnx.save(m, paths[name])

n_mixed, k_mixed = narrowable(mixed)
n_plain, _ = narrowable(plain)
ok(n_mixed > 1000 and k_mixed >= 10 and n_plain == 0, "the fixture: %d narrowable elements in %d initializers, none in the fp32 twin"
   % (n_mixed, k_mixed))

def rounded_f16(model):
    """The model as an fp16 engine holds it: weights read only by fp16 layers are
    rounded to float16 once at build time (docs/precision.md), so they narrow too."""
    r = onnx.ModelProto()
    r.CopyFrom(model)
    for t in r.graph.initializer:
        t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float16).astype(np.float32), t.name))
    return r


expect = {("mixed", "fp32"): (n_mixed, k_mixed), ("plain", "fp32"): (0, 0),
          ("mixed", "fp16"): narrowable(rounded_f16(mixed)), ("plain", "fp16"): narrowable(rounded_f16(plain))}
for name in ("mixed", "plain"):
    for prec in ("fp32", "fp16"):
        n, k = expect[name, prec]
        cfg = os.path.join(configs, prec + ".yaml")
        narrow, e1 = build("%s-%s" % (name, prec), paths[name], "--config", cfg)
        wide, e2 = build("%s-%s-wide" % (name, prec), paths[name], "--config", cfg, "--no-narrow")
        if not ok(narrow and wide, "%s %s: both engines build" % (name, prec), e1 + e2):
            continue
        a, b = infer(narrow, "%s-%s" % (name, prec)), infer(wide, "%s-%s-wide" % (name, prec))
        same = isinstance(a, dict) and isinstance(b, dict) and sorted(a) == sorted(b) == ["output", "side"] and all(
            a[t].dtype == b[t].dtype and a[t].tobytes() == b[t].tobytes() for t in a)
        ok(same, "%s %s: the same output bits as the 4-byte engine" % (name, prec), (a, b) if not same else None)
        saved = os.path.getsize(wide) - os.path.getsize(narrow)
        # 2 bytes per element; each narrowed constant also gains a widen entry
        # (2 bytes) and may shorten its length prefix (at most 2 bytes)
        ok(abs(saved - 2 * n) <= 4 * k, "%s %s: %d bytes smaller, 2 x %d narrowable elements (+/- %d)" % (name, prec, saved, n, 4 * k))

# damaged and newer files: one line, exit 2 (fields appended to the message: the last value wins)
eng = os.path.join(tmp, "mixed-fp32.engine")
data = open(eng, "rb").read()
for tag, extra, want in (("beyond", b"\x70\x7f", "widen entry %d: constant index 127 out of order or beyond" % k_mixed),
                         ("newer", b"\x08\x03", "engine format version 3, this parity reads 1 to 2")):
    bad = os.path.join(tmp, tag + ".engine")
    open(bad, "wb").write(data + extra)
    rc, _, err = run("infer", bad, "-i", inp, "-o", os.path.join(tmp, tag + ".out"))
    ok(rc == 2 and want in err and err.count("\n") == 1 and not os.path.exists(os.path.join(tmp, tag + ".out")),
       "%s: refused in one line, exit 2" % tag, err)
done()
