#!/usr/bin/python3
# parity's emulated TF32/FP16/BF16 held to the GPU's measured behaviour
# without a GPU: tools/gpu-fidelity/h100.json holds what an H100 computed on
# the seed reproducers (each precision's error against its own FP32, from
# gpu_run.py; TF32 on the layers the GPU ran in TF32, h100-tf32-layers.json)
# and the band parity's emulation stayed in; this test runs
# parity's engines on the same inputs (build/models, made by make), computes
# the same statistics (tools/gpu-fidelity/common.py) and checks each ratio
# parity / GPU lies in that band, and that an overflow one side shows the
# other shows too. An emulation change that moves a seed out of the band
# fails here; the note beside the band in h100.json says what it covers.
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done  # noqa: E402

root = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(root, "tools", "gpu-fidelity"))
import cpu  # noqa: E402
from common import stats  # noqa: E402

import numpy as np  # noqa: E402

ref = json.load(open(os.path.join(root, "tools", "gpu-fidelity", "h100.json")))
lo, hi = ref["band"]["rms_rel_ratio"]
tmp = tempfile.mkdtemp(prefix="parity-fidelity-")
try:
    data = os.path.join(tmp, "data")

    class A:   # cpu.py's arguments
        pass
    a = A()
    a.data, a.images, a.no_images, a.threads, a.precisions = data, 0, True, 2, "fp32,fp16,bf16"
    a.tf32_layers = json.load(open(os.path.join(root, "tools", "gpu-fidelity", "h100-tf32-layers.json")))
    cpu.prepare(a)
    spec = json.load(open(os.path.join(data, "models.json")))
    for name, rows in sorted(ref["models"].items()):
        if name not in cpu.SEEDS:
            continue
        work = os.path.join(tmp, name)
        os.makedirs(work)
        par, _ = cpu.parity_outputs(a, name, spec[name], work)
        keys = sorted(k for k in par["fp32"] if np.issubdtype(par["fp32"][k].dtype, np.floating))
        cat = (lambda d: np.concatenate([d[k].astype(np.float64) for k in keys]))
        for p in ("tf32_as_gpu", "fp16", "bf16"):
            mine, gpu = stats(cat(par[p]), cat(par["fp32"])), rows[p]["gpu"]
            r = cpu.ratio(mine["rms_rel"], gpu["rms_rel"])
            ok(lo <= r <= hi, "%s %s: parity's rms error against its FP32 %.3g, the H100's %.3g: ratio %.2f in [%g, %g]"
               % (name, p, mine["rms_rel"], gpu["rms_rel"], r, lo, hi))
            ok((mine["nonfinite"] > 0) == (gpu["nonfinite"] > 0),
               "%s %s: non-finite outputs on both sides or neither (parity %d, H100 %d)"
               % (name, p, mine["nonfinite"], gpu["nonfinite"]))
finally:
    shutil.rmtree(tmp, ignore_errors=True)
done()
