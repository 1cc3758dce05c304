#!/usr/bin/env python3
"""gpu_run.py — the GPU side of the fidelity measurement (README.md beside
this file): runs each bundled model's graph with PyTorch (onnx_torch.py) on
a CUDA GPU at FP32 (TF32 off), TF32, FP16 and BF16, on the inputs parity
uses, and saves the outputs -- for large outputs a fixed subsample (every
element whose flat index is a multiple of the stride sample_stride() gives,
the same on the CPU side) -- as OUT/gpu-MODEL.npz, plus OUT/gpu-meta.json
(GPU, driver, CUDA/cuDNN/PyTorch versions, the flags that decide precision).

Usage (on the GPU machine, from the repository root):
    gpu_run.py --data DIR --out DIR [--device cuda]
DIR holds models.json (written by prepare.py on the CPU side: each model's
ONNX path and its input sets, as .npy folders or PNG images to stretch).
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import onnx
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import onnx_torch  # noqa: E402
from common import PRECISIONS, load_inputs, sample_stride, sha256_of  # noqa: E402

DTYPE = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def set_precision(p):
    tf32 = p == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    # GEMMs accumulate in FP32 as TensorRT's FP16/BF16 tactics and parity's model do: no reduced-precision
    # split-K reductions (PyTorch's default allows them for FP16)
    for flag in ("allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction"):
        try:
            setattr(torch.backends.cuda.matmul, flag, False)
        except (AssertionError, AttributeError):   # an older PyTorch (a trial on a CPU) has no such flag
            pass
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False


GEMM_OPS = ("Conv", "ConvTranspose", "MatMul", "Gemm", "Einsum")


def probe_tf32(model, feeds, device):
    """{layer: 1 if the GPU runs it in TF32, 0 if in FP32} for each GEMM-class layer: the layer again on
    the same inputs with TF32 off -- equal bits mean cuBLAS/cuDNN picked a kernel without TF32 (allow_tf32
    permits TF32, it does not force it: small channel counts and some shapes keep FP32 kernels)."""
    used = {}

    def probe(runner, n, ins, outs):
        if n.op_type not in GEMM_OPS:
            return
        set_precision("fp32")
        ref = runner.node(n.op_type, ins, onnx_torch.attrs_of(n))
        set_precision("tf32")
        ref = ref[0] if isinstance(ref, (list, tuple)) else ref
        out = outs[0] if isinstance(outs, (list, tuple)) else outs
        used[n.name] = int(not torch.equal(ref, out))

    set_precision("tf32")
    with torch.no_grad():
        onnx_torch.Runner(model, device, torch.float32).run(feeds, probe)
    return used


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--precisions", default=",".join(PRECISIONS), help="a trial of the script on a CPU: fp32,tf32")
    ap.add_argument("--images", type=int, help="the first N images of an image model only (a trial)")
    ap.add_argument("--probe-tf32", action="store_true",
                    help="only which GEMM-class layers the GPU runs in TF32 (first sample): OUT/gpu-tf32-layers.json")
    a = ap.parse_args()
    spec = json.load(open(os.path.join(a.data, "models.json")))
    cuda = a.device.startswith("cuda")
    meta = {"torch": torch.__version__, "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version(), "device": torch.cuda.get_device_name(0) if cuda else a.device,
            "date": time.strftime("%Y-%m-%d"),
            "flags": {"cudnn.deterministic": True, "fp16/bf16 reduced-precision reduction": False,
                      "tf32": "matmul and cudnn allow_tf32 on for tf32 only"}, "models": {}}
    try:
        import subprocess
        meta["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                        capture_output=True, text=True).stdout.strip()
    except OSError:
        meta["driver"] = "?"
    if a.probe_tf32:
        layers = {}
        for name, m in spec.items():
            model = onnx.load(m["repo_onnx"] if "repo_onnx" in m else os.path.join(a.data, m["onnx"]))
            layers[name] = probe_tf32(model, load_inputs(a.data, m)[0][1], a.device)
            print("gpu_run: %s: %d of %d GEMM-class layers in TF32" % (name, sum(layers[name].values()),
                                                                     len(layers[name])), flush=True)
        with open(os.path.join(a.out, "gpu-tf32-layers.json"), "w") as f:
            json.dump(layers, f, indent=1, sort_keys=True)
        return
    for name, m in spec.items():
        model = onnx.load(m["repo_onnx"] if "repo_onnx" in m else os.path.join(a.data, m["onnx"]))
        sets = load_inputs(a.data, m)
        arrays, t0 = {}, time.time()
        if a.images and "pngs" in m:
            sets = sets[:a.images]
        for p in a.precisions.split(","):
            set_precision(p)
            for sid, feeds in sets:
                outs = onnx_torch.run(model, feeds, a.device, DTYPE[p])
                for tname, v in outs.items():
                    v = v.float().cpu().numpy() if v.is_floating_point() else v.cpu().numpy()
                    arrays["%s/%s/%s" % (p, sid, tname)] = v.reshape(-1)[::sample_stride(v.size)]
        if cuda:
            torch.cuda.synchronize()
        np.savez_compressed(os.path.join(a.out, "gpu-%s.npz" % name), **arrays)
        meta["models"][name] = {"samples": len(sets), "seconds": round(time.time() - t0, 1)}
        if "exact" in m:   # data made here (layers.py): which bytes ran
            meta["models"][name]["sha256"] = sha256_of(a.data, m)
        print("gpu_run: %s: %d samples x %d precisions in %.1f s" % (name, len(sets), len(a.precisions.split(",")),
                                                                      time.time() - t0), flush=True)
    with open(os.path.join(a.out, "gpu-meta.json"), "w") as f:
        json.dump(meta, f, indent=1)


if __name__ == "__main__":
    main()
