#!/usr/bin/python3
"""unet-attn — a UNet attention block: GroupNorm-free qkv 1x1 conv, reshape,
split into q/k/v, softmax(q.k^T / sqrt(d)).v, projection, residual. Used to
show that dumping every intermediate tensor leaves the output bit-identical
(TensorRT issues #3161/#4400: marking outputs changes fusion). Writes
OUTDIR/unet_attn.onnx and OUTDIR/input/x.npy."""
import os

import numpy as np
from onnx import helper

from common import F32, init, make, out_path, save, tensor

out = out_path()
rng = np.random.default_rng(3161)
C, H, W, heads = 64, 16, 16, 4
d = C // heads
inits = [init("qkv.weight", (rng.standard_normal((3 * C, C, 1, 1)) / np.sqrt(C)).astype(np.float32)),
         init("qkv.bias", (0.02 * rng.standard_normal(3 * C)).astype(np.float32)),
         init("proj.weight", (rng.standard_normal((C, C, 1, 1)) / np.sqrt(C)).astype(np.float32)),
         init("proj.bias", (0.02 * rng.standard_normal(C)).astype(np.float32)),
         init("shape5", np.array([1, 3, heads, d, H * W], np.int64)),
         init("shape4", np.array([1, C, H, W], np.int64)),
         init("scale", np.array(1 / np.sqrt(d), np.float32)),
         init("split", np.array([1, 1, 1], np.int64)), init("ax1", np.array([1], np.int64))]
p = "/attn"
nodes = [
    helper.make_node("Conv", ["x", "qkv.weight", "qkv.bias"], [p + "/qkv"], name=p + "/qkv/Conv", kernel_shape=[1, 1]),
    helper.make_node("Reshape", [p + "/qkv", "shape5"], [p + "/qkv5"], name=p + "/Reshape"),
    helper.make_node("Split", [p + "/qkv5", "split"], [p + "/q5", p + "/k5", p + "/v5"], name=p + "/Split", axis=1),
    helper.make_node("Squeeze", [p + "/q5", "ax1"], [p + "/q"], name=p + "/Squeeze"),
    helper.make_node("Squeeze", [p + "/k5", "ax1"], [p + "/k"], name=p + "/Squeeze_1"),
    helper.make_node("Squeeze", [p + "/v5", "ax1"], [p + "/v"], name=p + "/Squeeze_2"),
    helper.make_node("Transpose", [p + "/q"], [p + "/qt"], name=p + "/Transpose", perm=[0, 1, 3, 2]),
    helper.make_node("MatMul", [p + "/qt", p + "/k"], [p + "/qk"], name=p + "/MatMul"),
    helper.make_node("Mul", [p + "/qk", "scale"], [p + "/qks"], name=p + "/Mul"),
    helper.make_node("Softmax", [p + "/qks"], [p + "/attn"], name=p + "/Softmax", axis=-1),
    helper.make_node("Transpose", [p + "/v"], [p + "/vt"], name=p + "/Transpose_1", perm=[0, 1, 3, 2]),
    helper.make_node("MatMul", [p + "/attn", p + "/vt"], [p + "/o"], name=p + "/MatMul_1"),
    helper.make_node("Transpose", [p + "/o"], [p + "/ot"], name=p + "/Transpose_2", perm=[0, 1, 3, 2]),
    helper.make_node("Reshape", [p + "/ot", "shape4"], [p + "/o4"], name=p + "/Reshape_1"),
    helper.make_node("Conv", [p + "/o4", "proj.weight", "proj.bias"], [p + "/proj"], name=p + "/proj/Conv",
                     kernel_shape=[1, 1]),
    helper.make_node("Add", ["x", p + "/proj"], ["output"], name=p + "/Add"),
]
m = make(nodes, [tensor("x", F32, [1, C, H, W])], [tensor("output", F32, [1, C, H, W])], inits, 17, "unet_attn")
save(m, os.path.join(out, "unet_attn.onnx"))
os.makedirs(os.path.join(out, "input"), exist_ok=True)
np.save(os.path.join(out, "input", "x.npy"), rng.standard_normal((1, C, H, W)).astype(np.float32))
