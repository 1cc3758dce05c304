"""layers.py — adversarial single-layer cases for the fidelity measurement:
the MatMuls where the order and the rounding of a long sum part ways --
cancellation, mixed magnitudes, long k -- each as a one-node ONNX model, its
input and its exact result (float64 of the float32 operands), judged against
the exact result on both sides (cpu.py compare)."""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def _case(rng, name):
    if name == "cancellation":   # x and -x, w and w + tiny: the sum is 1e-3 of its terms' size
        m, k, n = 64, 4096, 64
        h = rng.standard_normal((m, k // 2)) * 100
        x = np.concatenate([h, -h], axis=1)
        wh = rng.standard_normal((k // 2, n))
        w = np.concatenate([wh, wh + rng.standard_normal((k // 2, n)) * 1e-3], axis=0)
    elif name == "mixed_magnitudes":   # terms from 2^-12 to 2^12
        m, k, n = 64, 1024, 64
        x = np.exp2(rng.uniform(-12, 12, (m, k))) * rng.choice([-1, 1], (m, k))
        w = np.exp2(rng.uniform(-12, 12, (k, n))) * rng.choice([-1, 1], (k, n))
    elif name == "long_k_65536":
        m, k, n = 8, 65536, 16
        x = np.maximum(rng.standard_normal((m, k)), 0)
        w = rng.standard_normal((k, n)) / np.sqrt(k)
    else:   # box_head_fc6: the 12544 x 64 weights, 32 rows
        m, k, n = 32, 12544, 64
        x = np.maximum(rng.standard_normal((m, k)), 0)
        w = rng.standard_normal((k, n)) / np.sqrt(k)
    return x.astype(np.float32), w.astype(np.float32)


CASES = ["cancellation", "mixed_magnitudes", "long_k_65536", "box_head_fc6"]


def make(data, spec, exact=True):
    """Writes data/layers/CASE/{model.onnx, input/x.npy, exact.npy}; adds each to spec. The data come from
    numpy's PCG64 stream of a fixed seed, the same on every numpy since 1.17, so the GPU side makes them
    itself (exact=False); gpu_run.py records each input's sha256 and cpu.py compare checks them."""
    rng = np.random.default_rng(2026)
    for name in CASES:
        x, w = _case(rng, name)
        d = os.path.join(data, "layers", name)
        os.makedirs(os.path.join(d, "input"), exist_ok=True)
        g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="/layer/MatMul")], name,
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [x.shape[0], w.shape[1]])],
                              [numpy_helper.from_array(w, "w")])
        mdl = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        mdl.ir_version = 7
        onnx.save(mdl, os.path.join(d, "model.onnx"))
        np.save(os.path.join(d, "input", "x.npy"), x)
        if exact:
            np.save(os.path.join(d, "exact.npy"), x.astype(np.float64) @ w.astype(np.float64))
        spec["layer_" + name] = {"onnx": os.path.join("layers", name, "model.onnx"),
                                 "inputs": os.path.join("layers", name, "input"),
                                 "exact": os.path.join("layers", name, "exact.npy")}


if __name__ == "__main__":   # layers.py DATA: add the cases to DATA/models.json (the GPU side)
    import json
    import sys
    path = os.path.join(sys.argv[1], "models.json")
    spec = json.load(open(path)) if os.path.exists(path) else {}
    make(sys.argv[1], spec, exact=False)
    json.dump(spec, open(path, "w"), indent=1)
