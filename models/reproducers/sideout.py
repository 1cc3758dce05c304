#!/usr/bin/python3
"""sideout — a matting-like net (issue 34's IS-Net shape, small): one
`output` the application reads and deep-supervision side outputs d1..d3 it
never reads. output and d2 are sigmoids (FP16 is harmless there, |a-b| about
1e-4); d1 and d3 are differences of two large products of the same feature
(3000*f - 2999*f = f): FP16 stores each product with a step of 2, so the
difference loses the feature (|a-b| up to about 2). A folder of PNG images
and no ground truth, as a matting data set comes. Writes OUTDIR/sideout.onnx
and OUTDIR/images/NN.png (4 images, 48x40, drawn from a fixed seed).
Usage: sideout.py OUTDIR [SIZE]  (SIZE: the input's height and width, 64)."""
import os
import sys

import cv2
import numpy as np
from onnx import helper

from common import F32, init, make, save, tensor

if len(sys.argv) not in (2, 3):
    sys.exit("usage: %s OUTDIR [SIZE]" % sys.argv[0])
out, S = sys.argv[1], int(sys.argv[2]) if len(sys.argv) == 3 else 64
rng = np.random.default_rng(34)
C = 8


def conv(name, x, y, cin, cout, k, inits):
    inits.append(init(name + ".weight", (rng.standard_normal((cout, cin, k, k)) / np.sqrt(k * k * cin)).astype(np.float32)))
    inits.append(init(name + ".bias", (0.1 * rng.standard_normal(cout)).astype(np.float32)))
    return helper.make_node("Conv", [x, name + ".weight", name + ".bias"], [y], name=name + "/Conv",
                            kernel_shape=[k, k], pads=[k // 2] * 4)


inits = [init("big", np.array(3000, np.float32)), init("big1", np.array(2999, np.float32))]
nodes = [conv("/enc", "input", "e", 3, C, 3, inits),
         helper.make_node("Relu", ["e"], ["r"], name="/enc/Relu"),
         conv("/head", "r", "h", C, 1, 3, inits),
         helper.make_node("Sigmoid", ["h"], ["output"], name="/head/Sigmoid"),
         conv("/side2", "r", "s2", C, 1, 1, inits),
         helper.make_node("Sigmoid", ["s2"], ["d2"], name="/side2/Sigmoid")]
for k in (1, 3):
    nodes += [conv("/side%d" % k, "r", "s%d" % k, C, 1, 1, inits),
              helper.make_node("Mul", ["s%d" % k, "big"], ["p%d" % k], name="/side%d/Mul" % k),
              helper.make_node("Mul", ["s%d" % k, "big1"], ["q%d" % k], name="/side%d/Mul_1" % k),
              helper.make_node("Sub", ["p%d" % k, "q%d" % k], ["d%d" % k], name="/side%d/Sub" % k)]
outs = [tensor(n, F32, [1, 1, S, S]) for n in ("output", "d1", "d2", "d3")]
save(make(nodes, [tensor("input", F32, [1, 3, S, S])], outs, inits, 13, "sideout"), os.path.join(out, "sideout.onnx"))
os.makedirs(os.path.join(out, "images"), exist_ok=True)
for i in range(4):
    img = cv2.GaussianBlur(rng.integers(0, 256, (48, 40, 3), dtype=np.uint8), (5, 5), 0)
    cv2.imwrite(os.path.join(out, "images", "%02d.png" % i), img)
