"""common.py — shared helpers for the seed reproducer generators (python3-onnx,
fixed seeds, so every run writes the same bytes)."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def init(name, array):
    return numpy_helper.from_array(np.ascontiguousarray(array), name)


def save(model, path):
    onnx.checker.check_model(model)
    onnx.save(model, path)


def make(nodes, inputs, outputs, inits, opset, name):
    g = helper.make_graph(nodes, name, inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="parity-reproducers")
    m.ir_version = 8
    return m


def tensor(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def out_path():
    if len(sys.argv) != 2:
        sys.exit("usage: %s OUTDIR" % sys.argv[0])
    return sys.argv[1]


F32, F16, I64 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT64
