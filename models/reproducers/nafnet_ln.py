#!/usr/bin/python3
"""nafnet-ln — a NAFNet block whose LayerNorm2d is decomposed
(ReduceMean/Sub/Pow/Sqrt/Div, as PyTorch exports it at opset 16), fed
activations large enough that (x - mean)^2 overflows FP16 (> 65504). Also the
same block with opset-17 LayerNormalization (over channels, between
transposes). Writes OUTDIR/nafnet_ln_op16.onnx, nafnet_ln_op17.onnx and
OUTDIR/input/x.npy."""
import os

import numpy as np
from onnx import helper

from common import F32, init, make, out_path, save, tensor

out = out_path()
rng = np.random.default_rng(2564)
C, H, W = 16, 32, 32


def conv(name, x, y, w, b, group=1, k=1):
    return helper.make_node("Conv", [x, name + ".weight", name + ".bias"], [y], name=f"/block/{name}/Conv",
                            kernel_shape=[k, k], pads=[k // 2] * 4, group=group)


def layernorm_decomposed(p, x, y):
    """LayerNorm2d over channels exactly as torch exports x.mean / pow / sqrt."""
    n = f"/block/{p}/LayerNorm"
    return [
        helper.make_node("ReduceMean", [x], [n + "/mu"], name=n + "/ReduceMean", axes=[1], keepdims=1),
        helper.make_node("Sub", [x, n + "/mu"], [n + "/xc"], name=n + "/Sub"),
        helper.make_node("Pow", [n + "/xc", "two"], [n + "/sq"], name=n + "/Pow"),
        helper.make_node("ReduceMean", [n + "/sq"], [n + "/var"], name=n + "/ReduceMean_1", axes=[1], keepdims=1),
        helper.make_node("Add", [n + "/var", "eps"], [n + "/vare"], name=n + "/Add"),
        helper.make_node("Sqrt", [n + "/vare"], [n + "/std"], name=n + "/Sqrt"),
        helper.make_node("Div", [n + "/xc", n + "/std"], [n + "/xn"], name=n + "/Div"),
        helper.make_node("Mul", [n + "/xn", p + ".gamma"], [n + "/xs"], name=n + "/Mul"),
        helper.make_node("Add", [n + "/xs", p + ".beta"], [y], name=n + "/Add_1"),
    ]


def layernorm_op17(p, x, y):
    n = f"/block/{p}/LayerNorm"
    return [
        helper.make_node("Transpose", [x], [n + "/nhwc"], name=n + "/Transpose", perm=[0, 2, 3, 1]),
        helper.make_node("LayerNormalization", [n + "/nhwc", p + ".gamma1d", p + ".beta1d"], [n + "/ln"],
                         name=n + "/LayerNormalization", axis=-1, epsilon=1e-6),
        helper.make_node("Transpose", [n + "/ln"], [y], name=n + "/Transpose_1", perm=[0, 3, 1, 2]),
    ]


def block(ln, opset):
    inits = [init("two", np.array(2, np.float32)), init("eps", np.array(1e-6, np.float32))]
    nodes = []
    for p in ("norm1", "norm2"):
        g = (1 + 0.1 * rng.standard_normal(C)).astype(np.float32)
        b = (0.1 * rng.standard_normal(C)).astype(np.float32)
        inits += [init(p + ".gamma", g.reshape(1, C, 1, 1)), init(p + ".beta", b.reshape(1, C, 1, 1)),
                  init(p + ".gamma1d", g), init(p + ".beta1d", b)]

    def wb(name, co, ci, k=1):
        inits.append(init(name + ".weight", (rng.standard_normal((co, ci, k, k)) / np.sqrt(ci * k * k)).astype(np.float32)))
        inits.append(init(name + ".bias", (0.05 * rng.standard_normal(co)).astype(np.float32)))

    wb("conv1", 2 * C, C); wb("conv2", 2 * C, 1, 3); wb("sca", C, C); wb("conv3", C, C)
    wb("conv4", 2 * C, C); wb("conv5", C, C)
    inits += [init("beta", np.full((1, C, 1, 1), 0.5, np.float32)), init("gamma", np.full((1, C, 1, 1), 0.5, np.float32)),
              init("split", np.array([C, C], np.int64))]
    nodes += ln("norm1", "x", "n1")
    nodes += [conv("conv1", "n1", "c1", None, None), conv("conv2", "c1", "c2", None, None, group=2 * C, k=3),
              helper.make_node("Split", ["c2", "split"], ["g1", "g2"], name="/block/sg/Split", axis=1),
              helper.make_node("Mul", ["g1", "g2"], ["sg"], name="/block/sg/Mul"),
              helper.make_node("GlobalAveragePool", ["sg"], ["pool"], name="/block/sca/GlobalAveragePool"),
              conv("sca", "pool", "att", None, None),
              helper.make_node("Mul", ["sg", "att"], ["scaled"], name="/block/sca/Mul"),
              conv("conv3", "scaled", "c3", None, None),
              helper.make_node("Mul", ["c3", "beta"], ["c3b"], name="/block/Mul"),
              helper.make_node("Add", ["x", "c3b"], ["y1"], name="/block/Add")]
    nodes += ln("norm2", "y1", "n2")
    nodes += [conv("conv4", "n2", "c4", None, None),
              helper.make_node("Split", ["c4", "split"], ["h1", "h2"], name="/block/sg2/Split", axis=1),
              helper.make_node("Mul", ["h1", "h2"], ["sg2"], name="/block/sg2/Mul"),
              conv("conv5", "sg2", "c5", None, None),
              helper.make_node("Mul", ["c5", "gamma"], ["c5g"], name="/block/Mul_1"),
              helper.make_node("Add", ["y1", "c5g"], ["output"], name="/block/Add_1")]
    return make(nodes, [tensor("x", F32, [1, C, H, W])], [tensor("output", F32, [1, C, H, W])], inits, opset,
                "nafnet_ln")


state = rng.bit_generator.state
save(block(layernorm_decomposed, 16), os.path.join(out, "nafnet_ln_op16.onnx"))
rng.bit_generator.state = state          # the same weights for both exports
save(block(layernorm_op17, 17), os.path.join(out, "nafnet_ln_op17.onnx"))
os.makedirs(os.path.join(out, "input"), exist_ok=True)
# activations of a few hundred: squares of a few 1e4..1e5 overflow FP16
x = (rng.standard_normal((1, C, H, W)) * 300 + 40).astype(np.float32)
np.save(os.path.join(out, "input", "x.npy"), x)
# samples/sNN/x.npy: more inputs of the same kind, drawn after x (which stays
# as it was), for fix-precision's search and held-out verification
for i in range(16):
    d = os.path.join(out, "samples", "s%02d" % i)
    os.makedirs(d, exist_ok=True)
    np.save(os.path.join(d, "x.npy"), (rng.standard_normal((1, C, H, W)) * 300 + 40).astype(np.float32))
