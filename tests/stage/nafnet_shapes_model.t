#!/usr/bin/python3
# The bundled NAFNet-style restorer (models/nafnet-shapes, issue 36). Without torch:
#  - the committed files are those PROVENANCE.md records (sha256);
#  - the exports are what the committed checkpoint exports: every initializer of
#    both opsets is a checkpoint tensor, bit for bit (LayerNorm weights, which the
#    opset-16 export folds into [1, C, 1, 1] tensors of new names, by content),
#    and every checkpoint tensor is there;
#  - the k=8 twins are rescale_onnx.py of the k=1 exports, byte for byte
#    (nafnet.rescale_stream, the documented weight scaling);
#  - LayerNorm decomposed at opset 16 (Pow, ReduceMean, Sqrt, Div), as
#    LayerNormalization at 17;
#  - degrade.py regenerates the validation pairs the training side scored;
#  - parity's stages on 8 of them (preprocess input255.yaml, build-engine, infer)
#    against PyTorch's per-image PSNR, and the FP16 story: the trained scales do
#    not overflow, the k=8 twin's opset-16 export loses >= 3 dB in FP16 while
#    its opset-17 export does not.
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done, run

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
mdir = os.path.join(root, "models", "nafnet-shapes")
sys.path.insert(0, mdir)
import rescale_onnx  # noqa: E402

tmp = tempfile.mkdtemp(prefix="parity-nafnet-shapes-")
N = 8
files = {(k, op): os.path.join(mdir, "nafnet_shapes%s_op%d.onnx" % ("" if k == 1 else "_k%d" % k, op))
         for k in (1, 8) for op in (16, 17)}
ckpt = os.path.join(mdir, "checkpoint", "model.npz")
manifest = os.path.join(mdir, "reference", "val32-manifest.json")

with open(os.path.join(mdir, "PROVENANCE.md")) as f:
    prov = f.read()
for path in list(files.values()) + [ckpt, manifest]:
    with open(path, "rb") as f:
        h = hashlib.sha256(f.read()).hexdigest()
    ok(h in prov, "%s: sha256 recorded in PROVENANCE.md" % os.path.relpath(path, mdir))

z = np.load(ckpt)
for op in (16, 17):
    m = onnx.load(files[(1, op)])
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    by_bytes = {}
    for n, v in inits.items():
        by_bytes.setdefault((v.dtype.str, v.tobytes()), []).append(n)
    found, used = [], set()
    for k in z.files:
        if k in inits and inits[k].tobytes() == z[k].tobytes() and inits[k].size == z[k].size:
            found.append(k)
            used.add(k)
        elif op == 16 and k.split(".")[-2].startswith("norm"):
            names = [n for n in by_bytes.get((z[k].dtype.str, z[k].tobytes()), []) if n not in used]
            if names:
                found.append(k)
                used.add(names[0])
    ok(len(found) == len(z.files) and used == set(inits),
       "opset %d: the %d initializers are the checkpoint's %d tensors, bit for bit" % (op, len(inits), len(z.files)),
       "not found: %s; not from the checkpoint: %s" % (sorted(set(z.files) - set(found))[:5],
                                                        sorted(set(inits) - used)[:5]))
    ops = [n.op_type for n in m.graph.node]
    io = ([(i.name, [d.dim_value for d in i.type.tensor_type.shape.dim]) for i in m.graph.input],
          [(o.name, [d.dim_value for d in o.type.tensor_type.shape.dim]) for o in m.graph.output])
    ln = ops.count("LayerNormalization")
    ok(io == ([("input", [1, 3, 256, 256])], [("output", [1, 3, 256, 256])]) and m.opset_import[0].version == op
       and (ln == 0 and ops.count("Pow") == 14 and ops.count("Sqrt") == 14 if op == 16 else ln == 14 and "Pow" not in ops)
       and {"GlobalAveragePool", "DepthToSpace"} <= set(ops),
       "opset %d: input/output [1,3,256,256], 14 LayerNorms %s, SCA pooling, PixelShuffle" %
       (op, "decomposed (Pow, Sqrt)" if op == 16 else "as LayerNormalization"))
    twin = rescale_onnx.rescale(onnx.load(files[(1, op)]), 8.0)
    with open(files[(8, op)], "rb") as f:
        ok(twin.SerializeToString() == f.read(),
           "opset %d: the k=8 twin is rescale_onnx.py of the export, byte for byte" % op)

# The validation pairs, regenerated.
val = os.path.join(tmp, "val")
rc, _, err = run("gen-shapes", "--split", "val", "--count", N, "-o", val)
ok(rc == 0, "gen-shapes: the first %d images of shapes-val-200" % N, err)
pairs = os.path.join(tmp, "pairs")
p = subprocess.run([sys.executable, os.path.join(mdir, "degrade.py"), "--images", os.path.join(val, "images"),
                    "--gt", os.path.join(val, "annotations.json"), "-o", pairs, "--count", str(N)],
                   capture_output=True, text=True)
with open(manifest) as f:
    ref_man = json.load(f)
got_man = json.load(open(os.path.join(pairs, "manifest.json"))) if p.returncode == 0 else {"images": []}
key = lambda e: (e["id"], e["clean_sha256"], e["degraded_sha256"])  # noqa: E731
ok(p.returncode == 0 and [key(e) for e in got_man["images"]] == [key(e) for e in ref_man["images"][:N]],
   "degrade.py: images 1..%d, clean and degraded pixels = the training side's (sha256)" % N, p.stderr)

pre = os.path.join(tmp, "pre")
rc, _, err = run("preprocess", "--config", os.path.join(mdir, "input255.yaml"), "-o", pre,
                 *[os.path.join(pairs, "degraded", "%d.png" % e["id"]) for e in ref_man["images"][:N]])
ok(rc == 0, "preprocess: the degraded images as 0..255 float32", err)


def cell(k, op, precision):
    eng = os.path.join(tmp, "k%d-%d-%s.engine" % (k, op, precision))
    out = os.path.join(tmp, "out-k%d-%d-%s" % (k, op, precision))
    rc, _, err = run("build-engine", files[(k, op)], "-o", eng, "--precision", precision)
    if rc == 0:
        rc, _, err = run("infer", eng, "-i", pre, "-o", out, "--threads", "2")
    if rc:
        return None, err
    from PIL import Image
    vals = []
    for e in ref_man["images"][:N]:
        o = np.load(os.path.join(out, str(e["id"]), "output.npy"))[0].transpose(1, 2, 0).astype(np.float64)
        o = np.clip(np.nan_to_num(o, nan=0.0), 0, 255)
        c = np.asarray(Image.open(os.path.join(pairs, "clean", e["file"])).convert("RGB"), dtype=np.float64)
        vals.append(10 * np.log10(255.0 ** 2 / np.mean((o - c) ** 2)))
    return np.array(vals), ""


with open(os.path.join(mdir, "logs", "run1-report.json")) as f:
    torch_psnr = np.array(json.load(f)["psnr"]["per_image_fp32"][:N])
bad = np.array([e["psnr_degraded_db"] for e in ref_man["images"][:N]])
p32, err = cell(1, 16, "fp32")
# PSNR is 10 log10 of a mean of squares: float32 outputs a few ulps apart move
# it by ~1e-5 dB; the report rounds to 1e-4
ok(p32 is not None and np.abs(p32 - torch_psnr).max() < 1e-3 and (p32 - bad).mean() >= 3,
   "FP32 opset 16: PSNR per image = PyTorch's within 1e-3 dB; gain over the degraded input %.2f dB >= 3"
   % ((p32 - bad).mean() if p32 is not None else float("nan")), err)
k32, err = cell(8, 16, "fp32")
ok(k32 is not None and p32 is not None and np.abs(k32 - p32).max() < 1e-3,
   "FP32: the k=8 twin restores as the trained model does (the same function)", err)
h1, err = cell(1, 16, "fp16")
ok(h1 is not None and p32 is not None and abs(h1.mean() - p32.mean()) < 0.01,
   "FP16 opset 16, trained scales: no overflow, %.3f dB from FP32" %
   (abs(h1.mean() - p32.mean()) if h1 is not None else float("nan")), err)
h8, err = cell(8, 16, "fp16")
ok(h8 is not None and p32 is not None and p32.mean() - h8.mean() >= 3,
   "FP16 opset 16, k=8 twin: the LayerNorm square overflows, -%.2f dB (>= 3)" %
   (p32.mean() - h8.mean() if h8 is not None else float("nan")), err)
h17, err = cell(8, 17, "fp16")
ok(h17 is not None and p32 is not None and abs(h17.mean() - p32.mean()) < 0.01,
   "FP16 opset 17 (LayerNormalization), k=8 twin: %.3f dB from FP32" %
   (abs(h17.mean() - p32.mean()) if h17 is not None else float("nan")), err)
shutil.rmtree(tmp, ignore_errors=True)
done()
