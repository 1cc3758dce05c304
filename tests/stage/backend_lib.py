"""backend_lib.py — shared helpers of the backend tests (tests/stage/backend_*.t):
running a backend of pipeline/backends/ through its contract, reading tensor
sets back with numpy, and the agreement measures the tests print."""
import os
import subprocess
import sys
import tempfile

import numpy as np

from tap import bindir

root = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
backends = os.path.join(root, "pipeline", "backends")
sys.path.insert(0, os.path.join(backends, "lib"))
sys.dont_write_bytecode = True          # no __pycache__ inside pipeline/
from names import name_decode, name_encode  # noqa: E402,F401  (re-exported to the tests)


def write_set(folder, tensors):
    """Writes {name: array} as a tensor-set folder (numpy's own .npy writer)."""
    os.makedirs(folder, exist_ok=True)
    for name, a in tensors.items():
        np.save(os.path.join(folder, name_encode(name) + ".npy"), a)


def read_set(folder):
    """Reads a tensor-set folder into {tensor name: array}."""
    return {name_decode(f[:-4]): np.load(os.path.join(folder, f))
            for f in sorted(os.listdir(folder)) if f.endswith(".npy")}


def run_backend(name, *args, env=None):
    """Runs pipeline/backends/NAME with args; returns (exit code, stdout, stderr)."""
    e = dict(os.environ, PARITY_BIN=bindir())
    e.update(env or {})
    p = subprocess.run([os.path.join(backends, name)] + [str(a) for a in args],
                       capture_output=True, text=True, env=e)
    return p.returncode, p.stdout, p.stderr


def tmpdir(prefix):
    return tempfile.mkdtemp(prefix="parity-%s-" % prefix)


def save_model(folder, name, nodes, inputs, outputs, inits=(), opset=13):
    """folder/NAME.onnx: a one-graph model (IR version 7) of these nodes; its path."""
    import onnx
    from onnx import helper
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 7
    path = os.path.join(folder, name + ".onnx")
    onnx.save(m, path)
    return path


def rel_diff(a, b):
    """max |a-b| / max(max |b|, tiny): one number per tensor, b the reference."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if a64.size == 0:
        return 0.0
    return float(np.max(np.abs(a64 - b64)) / max(float(np.max(np.abs(b64))), 1e-30))


def ort_available():
    return os.path.isfile(os.path.join(root, "node_modules", "onnxruntime-node", "package.json"))
