#!/usr/bin/python3
"""Writes the k-rescaled twin of a nafnet-shapes export without torch: the same
graph with the initializers nafnet.rescale_stream changes (intro conv weight
and bias, every block's beta and gamma, every down conv's bias: times k; the
ending conv's weight: divided by k).  For k a power of two every product is
exact in float32, so this writes the bytes torch's exporter writes for
rescale_stream(state, k) (checked: the k=4 twin exported on the GPU machine is
reproduced byte for byte; tests/stage/shapes_models.t checks the committed one).

    rescale_onnx.py IN.onnx OUT.onnx K
"""
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def factor(name, k):
    """How rescale_stream scales the tensor of this name (1.0: untouched)."""
    if name in ("intro.weight", "intro.bias") or name.endswith((".beta", ".gamma")) or \
            (name.startswith("downs.") and name.endswith(".bias")):
        return k
    if name == "ending.weight":
        return 1.0 / k
    return 1.0


def rescale(model, k):
    for init in model.graph.initializer:
        f = factor(init.name, k)
        if f != 1.0:
            arr = numpy_helper.to_array(init)
            init.CopyFrom(numpy_helper.from_array((arr * np.float32(f)).astype(np.float32), init.name))
    return model


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: rescale_onnx.py IN.onnx OUT.onnx K")
    k = float(sys.argv[3])
    if k <= 0 or np.log2(k) != int(np.log2(k)):
        sys.exit(f"rescale_onnx.py: K = {sys.argv[3]}: not a power of two (the products would round)")
    model = rescale(onnx.load(sys.argv[1]), k)
    tmp = sys.argv[2] + ".tmp"
    onnx.save(model, tmp)
    os.replace(tmp, sys.argv[2])


if __name__ == "__main__":
    main()
