#!/usr/bin/python3
"""convclip — Conv + Clip(0, 6) on a 1x3x512x512 input (TensorRT issue #3938's
pattern). Under TF32 the convolution's inputs lose 13 mantissa bits; the error
is small, and the clip hides it except where outputs sit inside or near the
bounds. Writes OUTDIR/convclip.onnx and OUTDIR/input/images.npy."""
import os

import numpy as np
from onnx import helper

from common import F32, init, make, out_path, save, tensor

out = out_path()
rng = np.random.default_rng(3938)
w = (rng.standard_normal((16, 3, 3, 3)) * 0.9).astype(np.float32)
b = (rng.standard_normal(16) * 0.5 + 2.0).astype(np.float32)
nodes = [
    helper.make_node("Conv", ["images", "conv.weight", "conv.bias"], ["/conv/Conv_output_0"],
                     name="/conv/Conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    helper.make_node("Clip", ["/conv/Conv_output_0", "clip.min", "clip.max"], ["output"], name="/act/Clip"),
]
m = make(nodes, [tensor("images", F32, [1, 3, 512, 512])], [tensor("output", F32, [1, 16, 512, 512])],
         [init("conv.weight", w), init("conv.bias", b),
          init("clip.min", np.array(0, np.float32)), init("clip.max", np.array(6, np.float32))], 13, "convclip")
save(m, os.path.join(out, "convclip.onnx"))
os.makedirs(os.path.join(out, "input"), exist_ok=True)
img = rng.random((1, 3, 512, 512), dtype=np.float32) * 2.0
np.save(os.path.join(out, "input", "images.npy"), img)
