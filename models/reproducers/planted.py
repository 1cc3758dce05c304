#!/usr/bin/python3
"""planted — a small conv net with bad layers planted at known places, for
fix-precision's tests and as a reproducer where FP16 clearly fails an output
tolerance (SNR about 5 dB):
  /bad2/Sub  x - 3000 on an input near 3000: FP16 reads x with a step of 2;
             computed in FP32 (reading the FP32 input) it is exact;
  /bad1/Mul, /bad1/Div  times 30000 then back: the product overflows FP16
             (> 65504), so both must stay FP32.
Everything else is harmless in FP16 (output SNR about 60 dB). Writes
OUTDIR/planted.onnx and OUTDIR/samples/sNN/x.npy (8 samples)."""
import os

import numpy as np
from onnx import helper

from common import F32, init, make, out_path, save, tensor

out = out_path()
rng = np.random.default_rng(20)
C, H, W = 8, 8, 8


def conv(name, x, y, inits):
    inits.append(init(name + ".weight", (rng.standard_normal((C, C, 3, 3)) / np.sqrt(9 * C)).astype(np.float32)))
    inits.append(init(name + ".bias", (0.1 * rng.standard_normal(C)).astype(np.float32)))
    return helper.make_node("Conv", [x, name + ".weight", name + ".bias"], [y], name=name + "/Conv",
                            kernel_shape=[3, 3], pads=[1, 1, 1, 1])


inits = [init("offset", np.array(3000, np.float32)), init("big", np.array(30000, np.float32))]
nodes = [helper.make_node("Sub", ["x", "offset"], ["xc"], name="/bad2/Sub"),
         conv("/conv1", "xc", "c1", inits),
         helper.make_node("Relu", ["c1"], ["r1"], name="/relu1/Relu"),
         helper.make_node("Mul", ["r1", "big"], ["m"], name="/bad1/Mul"),
         helper.make_node("Div", ["m", "big"], ["d"], name="/bad1/Div"),
         conv("/conv2", "d", "c2", inits),
         helper.make_node("Add", ["c2", "xc"], ["y"], name="/residual/Add")]
save(make(nodes, [tensor("x", F32, [1, C, H, W])], [tensor("y", F32, [1, C, H, W])], inits, 13, "planted"),
     os.path.join(out, "planted.onnx"))
for i in range(8):
    d = os.path.join(out, "samples", "s%02d" % i)
    os.makedirs(d, exist_ok=True)
    np.save(os.path.join(d, "x.npy"), (3000 + 2 * rng.standard_normal((1, C, H, W))).astype(np.float32))
