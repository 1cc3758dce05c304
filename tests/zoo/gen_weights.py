#!/usr/bin/env python3
"""gen_weights.py -- fills a zoo graph's dropped weights and writes the
model and its inputs (deterministic: the same bytes on any machine).

  gen_weights.py GRAPH.onnx INPUT_SPECS OUTDIR

Every initializer export_zoo.py replaced by a stub (external data with
location 'zoo-generated') becomes a float32 tensor with the mean and
standard deviation recorded at export (the library's own initialisation,
so scales follow each layer's shape), drawn uniformly and clipped to the
recorded [min, max] (variances stay positive). The random stream is PCG64
seeded from the SHA-256 of the tensor's name. Inputs (INPUT_SPECS:
name:dtype:shape:lo:hi;...) are drawn the same way, seeded by their names.
Writes OUTDIR/model.onnx and OUTDIR/inputs/NAME.npy.
"""
import hashlib, os, sys
import numpy as np
import onnx
from onnx import numpy_helper

def rng_for(name):
    seed = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little")
    return np.random.Generator(np.random.PCG64(seed))

def fill(init):
    meta = {e.key: e.value for e in init.external_data}
    if meta.get("location") != "zoo-generated":
        return None
    shape = tuple(init.dims)
    mean, std = float(meta["mean"]), float(meta["std"])
    lo, hi = float(meta["min"]), float(meta["max"])
    if std == 0.0 and len(shape) >= 2:
        # a constant-initialised matrix (zero-init heads): a fan-in scale
        # instead, so the layer does not hide everything after it
        std = 1.0 / np.sqrt(float(np.prod(shape[1:])))
        lo, hi = -np.inf, np.inf
    u = rng_for(init.name).random(int(np.prod(shape, dtype=np.int64)))
    x = mean + std * np.sqrt(3.0) * (2.0 * u - 1.0)
    x = np.clip(x, lo, hi).astype(np.float32).reshape(shape)
    return numpy_helper.from_array(x, init.name)

def make_input(spec):
    name, dtype, shape, lo, hi = spec.split(":")
    shape = tuple(int(d) for d in shape.split("x"))
    n = int(np.prod(shape, dtype=np.int64))
    r = rng_for("input:" + name)
    if dtype.startswith("int"):
        return name, r.integers(int(lo), int(hi), n).astype(dtype).reshape(shape)
    return name, (float(lo) + (float(hi) - float(lo)) * r.random(n)).astype(dtype).reshape(shape)

def main():
    src, specs, out = sys.argv[1], sys.argv[2], sys.argv[3]
    m = onnx.load(src, load_external_data=False)
    for i, init in enumerate(m.graph.initializer):
        t = fill(init)
        if t is not None:
            m.graph.initializer[i].CopyFrom(t)
    os.makedirs(os.path.join(out, "inputs"), exist_ok=True)
    tmp = os.path.join(out, "model.onnx.tmp")
    onnx.save(m, tmp)
    os.replace(tmp, os.path.join(out, "model.onnx"))
    for spec in specs.split(";"):
        name, x = make_input(spec)
        np.save(os.path.join(out, "inputs", name + ".npy"), x)

if __name__ == "__main__":
    main()
