"""common.py — what both sides of the fidelity measurement agree on: the
precisions, the models and their inputs, how a large output is subsampled,
and the statistics of a precision's output against its own side's FP32."""
import json
import os

import numpy as np

PRECISIONS = ["fp32", "tf32", "fp16", "bf16"]
MAX_KEPT = 1 << 17   # elements kept per output tensor (a fixed stride over the flat tensor)


def sample_stride(n):
    """Every s-th element of a flat tensor of n: at most MAX_KEPT of them."""
    return max(1, -(-n // MAX_KEPT))


def read_set(folder):
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "pipeline", "backends",
                                    "lib"))
    from names import name_decode
    return {name_decode(f[:-4]): np.load(os.path.join(folder, f)) for f in sorted(os.listdir(folder))
            if f.endswith(".npy")}


def stretch_png(path, size):
    """RT-DETR's official preprocessing (configs/preprocess/rtdetr-official.yaml): Pillow bilinear stretch
    to size x size, RGB, / 255, NCHW float32 -- which parity's preprocess reproduces bit for bit -- and
    orig_target_sizes = (w, h)."""
    from PIL import Image
    im = Image.open(path).convert("RGB")
    w, h = im.size
    x = np.asarray(im.resize((size, size), Image.BILINEAR), dtype=np.float32) / np.float32(255)
    return {"images": np.ascontiguousarray(x.transpose(2, 0, 1)[None]),
            "orig_target_sizes": np.array([[w, h]], dtype=np.int64)}


def load_inputs(data, m):
    """[(sample id, {input name: array})] of one model of models.json."""
    if "pngs" in m:
        return [(os.path.splitext(f)[0], stretch_png(os.path.join(data, m["pngs"], f), m["size"]))
                for f in m["files"]]
    folder = os.path.join(data, m["inputs"])
    return [("0", read_set(folder))]


def snr_db(a, ref):
    noise = np.sum((a - ref) ** 2)
    sig = np.sum(ref ** 2)
    return float("inf") if noise == 0 else float(10 * np.log10(sig / noise)) if sig > 0 else float("-inf")


def stats(a, ref):
    """The error of a (a precision's output) against ref (its side's FP32), both float64 arrays."""
    finite = np.isfinite(a) & np.isfinite(ref)
    out = {"nonfinite": int(a.size - np.count_nonzero(np.isfinite(a))), "elements": int(a.size)}
    a, ref = a[finite], ref[finite]
    d = np.abs(a - ref)
    scale = np.max(np.abs(ref)) if ref.size else 0.0
    rel = d / np.maximum(np.abs(ref), 1e-3 * scale + 1e-30)
    cos = float(np.dot(a, ref) / (np.linalg.norm(a) * np.linalg.norm(ref))) if ref.size and np.any(a) and np.any(
        ref) else 1.0
    out.update({"max_abs": float(d.max()) if d.size else 0.0,
                "rms_rel": float(np.sqrt(np.mean(d ** 2)) / max(np.sqrt(np.mean(ref ** 2)), 1e-30)) if d.size else 0.0,
                "p99_rel": float(np.percentile(rel, 99)) if rel.size else 0.0,
                "snr_db": snr_db(a, ref), "one_minus_cos": 1.0 - cos})
    return out


def load_spec(data):
    return json.load(open(os.path.join(data, "models.json")))


def sha256_of(data, m):
    """sha256 of a layer case's operands as arrays (x's and the initializers' float32 bytes), whatever numpy
    or onnx wrote the files: both sides of a layer case ran the same numbers when these agree."""
    import hashlib
    import onnx
    from onnx import numpy_helper
    h = hashlib.sha256(np.load(os.path.join(data, m["inputs"], "x.npy")).astype("<f4").tobytes())
    for init in onnx.load(os.path.join(data, m["onnx"])).graph.initializer:
        h.update(numpy_helper.to_array(init).astype("<f4").tobytes())
    return h.hexdigest()
