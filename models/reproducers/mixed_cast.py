#!/usr/bin/python3
"""mixed-cast — a mixed-precision model as a converter writes it: FP16 compute,
with the sum of squares and its square root (an L2 norm) kept in FP32 through
explicit Casts, because the sum exceeds 65504. Also the same model in plain
FP32 as the reference. Writes OUTDIR/mixed_cast.onnx, mixed_cast_fp32.onnx and
OUTDIR/input/x.npy."""
import os

import numpy as np
from onnx import helper

from common import F16, F32, init, make, out_path, save, tensor

out = out_path()
rng = np.random.default_rng(4616)
N = 512
w = (rng.standard_normal((N, N)) / np.sqrt(N)).astype(np.float16)


def model(mixed):
    dt = F16 if mixed else F32
    nodes, inits = [], [init("proj.weight", w if mixed else w.astype(np.float32)),
                        init("half", np.array(0.5, np.float32)), init("axes", np.array([1], np.int64))]
    src = "x"
    if mixed:
        nodes.append(helper.make_node("Cast", ["x"], ["x16"], name="/in/Cast", to=F16))
        src = "x16"
    nodes.append(helper.make_node("MatMul", [src, "proj.weight"], ["h"], name="/proj/MatMul"))
    h32 = "h"
    if mixed:
        nodes.append(helper.make_node("Cast", ["h"], ["h32"], name="/norm/Cast", to=F32))
        h32 = "h32"
    nodes += [helper.make_node("Mul", [h32, h32], ["sq"], name="/norm/Mul"),
              helper.make_node("ReduceSum", ["sq", "axes"], ["ss"], name="/norm/ReduceSum", keepdims=1),
              helper.make_node("Pow", ["ss", "half"], ["nrm"], name="/norm/Pow")]
    n = "nrm"
    if mixed:
        nodes.append(helper.make_node("Cast", ["nrm"], ["nrm16"], name="/norm/Cast_1", to=F16))
        n = "nrm16"
    nodes.append(helper.make_node("Div", ["h", n], ["y"], name="/norm/Div"))
    if mixed:
        nodes.append(helper.make_node("Cast", ["y"], ["output"], name="/out/Cast", to=F32))
    else:
        nodes[-1].output[0] = "output"
    return make(nodes, [tensor("x", F32, [4, N])], [tensor("output", F32, [4, N])], inits, 17,
                "mixed_cast" if mixed else "mixed_cast_fp32")


save(model(True), os.path.join(out, "mixed_cast.onnx"))
save(model(False), os.path.join(out, "mixed_cast_fp32.onnx"))
os.makedirs(os.path.join(out, "input"), exist_ok=True)
x = (rng.standard_normal((4, N)) * 20).astype(np.float32)
np.save(os.path.join(out, "input", "x.npy"), x)
