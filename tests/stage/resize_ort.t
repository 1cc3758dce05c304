#!/usr/bin/python3
# FP32 linear Resize bit-identical to ONNX Runtime (issue 34 item 5).
# ONNX Runtime computes bilinear Resize in float (coordinate, weights and a
# four-term sum in a fixed order); parity follows the same operations
# (ops/nn/resize.c, "bilinear in ONNX Runtime's order"). Oracle:
# onnxruntime-node through pipeline/backends/onnxruntime, one thread, on
# seeded random inputs, every output element compared bit for bit. Cases:
# IS-Net's decoder (half_pixel, sizes: 2x and up to 32x upsampling to a
# sibling's size), the other coordinate modes ONNX Runtime's bilinear kernel
# takes, odd sizes, downscaling, 2-D input. Also checked: the float64
# formula of the ONNX reference (numpy, below) differs from ONNX Runtime on
# some elements of these cases, so the comparison can tell the two apart.
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, skip, done, run
from backend_lib import run_backend, read_set, write_set, tmpdir, save_model, ort_available

tmp = tmpdir("resize-ort")
rng = np.random.default_rng(34)

# (name, input shape, coordinate mode, scales or None, sizes or None)
CASES = [
    ("isnet-2x", (1, 4, 32, 32), "half_pixel", None, (1, 4, 64, 64)),
    ("isnet-32x", (1, 1, 32, 32), "half_pixel", None, (1, 1, 1024, 1024)),
    ("isnet-odd", (1, 3, 21, 13), "half_pixel", None, (1, 3, 64, 40)),
    ("half-scale-1.5", (1, 2, 10, 14), "half_pixel", (1, 1, 1.5, 1.5), None),
    ("half-down", (1, 2, 30, 26), "half_pixel", (1, 1, 0.5, 0.75), None),
    ("align-corners", (1, 3, 17, 11), "align_corners", None, (1, 3, 50, 37)),
    ("asymmetric", (1, 2, 9, 12), "asymmetric", (1, 1, 2.5, 3.0), None),
    ("pytorch-half", (2, 2, 15, 10), "pytorch_half_pixel", None, (2, 2, 44, 1)),
    ("h-only", (1, 2, 8, 8), "half_pixel", (1, 1, 3.0, 1.0), None),
    ("rank-2", (19, 23), "half_pixel", (2.0, 1.7), None),
]


def model(name, shape, ctm, scales, sizes):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    inits = [numpy_helper.from_array(np.array([], np.float32), "roi")]
    if scales:
        inits.append(numpy_helper.from_array(np.array(scales, np.float32), "scales"))
        ins = ["x", "roi", "scales"]
    else:
        inits.append(numpy_helper.from_array(np.array([], np.float32), "scales"))
        inits.append(numpy_helper.from_array(np.array(sizes, np.int64), "sizes"))
        ins = ["x", "roi", "scales", "sizes"]
    node = helper.make_node("Resize", ins, ["y"], mode="linear", coordinate_transformation_mode=ctm)
    return save_model(tmp, name, [node], [x], [y], inits, opset=13)


def f64_reference(x, ctm, out_shape):
    """The ONNX reference's formula in float64 (separable linear taps), the
    order parity used before: what the bit-exact check must distinguish."""
    y = x.astype(np.float64)
    for a in range(x.ndim):
        n_in, n_out = x.shape[a], out_shape[a]
        if n_in == n_out:
            continue
        s = n_out / n_in
        o = np.arange(n_out, dtype=np.float64)
        if ctm == "align_corners":
            c = o * (n_in - 1) / (n_out - 1) if n_out > 1 else 0 * o
        elif ctm == "asymmetric":
            c = o / s
        elif ctm == "pytorch_half_pixel":
            c = (o + 0.5) / s - 0.5 if n_out > 1 else 0 * o
        else:
            c = (o + 0.5) / s - 0.5
        c = np.clip(c, 0, n_in - 1)
        i0 = np.minimum(np.floor(c).astype(np.int64), n_in - 1)
        i1 = np.minimum(i0 + 1, n_in - 1)
        w = c - i0
        shp = [1] * x.ndim
        shp[a] = n_out
        y = np.take(y, i0, axis=a) * (1 - w).reshape(shp) + np.take(y, i1, axis=a) * w.reshape(shp)
    return y.astype(np.float32)


if not ort_available():
    skip("linear Resize against onnxruntime", "onnxruntime-node is not installed (tools/deps.sh)")
    done()

f64_differs = 0
for name, shape, ctm, scales, sizes in CASES:
    path = model(name, shape, ctm, scales, sizes)
    inp = os.path.join(tmp, name + ".in")
    x = rng.standard_normal(shape).astype(np.float32) * 3
    write_set(inp, {"x": x})
    eng, outp, outo = (os.path.join(tmp, name + s) for s in (".engine", ".parity", ".ort"))
    rc, _, err = run("build-engine", path, "-o", eng)
    if rc == 0:
        rc, _, err = run("infer", eng, "-i", inp, "-o", outp)
    rco, _, erro = run_backend("onnxruntime", "run", "--model", path, "--input", inp, "--output", outo, "--threads", 1)
    if rc or rco:
        ok(False, "%s: parity and onnxruntime both run" % name, err + erro)
        continue
    p, o = read_set(outp)["y"], read_set(outo)["y"]
    same = p.shape == o.shape and np.array_equal(p.view(np.uint32), o.view(np.uint32))
    diff = int(np.count_nonzero(p.view(np.uint32) != o.view(np.uint32))) if p.shape == o.shape else -1
    ok(same, "%s (%s, %s -> %s): parity's FP32 Resize is bit-identical to onnxruntime's" % (name, ctm, shape, o.shape),
       "shapes %s vs %s; %d of %d elements differ" % (p.shape, o.shape, diff, o.size))
    r = f64_reference(x, ctm, o.shape)
    n64 = int(np.count_nonzero(r.view(np.uint32) != o.view(np.uint32)))
    print("# %s: the float64 formula differs from onnxruntime on %d of %d elements (%.1f%%)" % (name, n64, o.size, 100.0 * n64 / o.size))
    f64_differs += n64 > 0
ok(f64_differs >= 3, "the float64 formula differs from onnxruntime in %d of %d cases: the bit-exact check can tell them apart"
   % (f64_differs, len(CASES)))
done()
