#!/usr/bin/python3
"""seeds.py BIN — writes the seed corpora tests/fuzz/corpus/NAME/ (committed;
rerun only to change them). BIN is a built parity's build/bin (for the
engine, layer report and plan seeds). Small inputs on purpose: libFuzzer
mutates them fastest, and every reader's main paths are reached by one."""
import base64, io, json, os, shutil, struct, subprocess, sys, tempfile
import numpy as np
from PIL import Image

bindir = sys.argv[1]
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
data = "/usr/share/libonnx-testdata/data/node"
tmp = tempfile.mkdtemp(prefix="parity-seeds-")


def put(name, file, blob):
    os.makedirs(os.path.join(root, name), exist_ok=True)
    with open(os.path.join(root, name, file), "wb") as f:
        f.write(blob if isinstance(blob, bytes) else blob.encode())


def npy(a):
    b = io.BytesIO()
    np.save(b, a)
    return b.getvalue()


models = ["test_relu", "test_add_bcast", "test_conv_with_strides_padding", "test_slice"]
for m in models:
    put("onnx", m + ".onnx", open(f"{data}/{m}/model.onnx", "rb").read())
    put("onnx_subgraph", m + ".onnx", open(f"{data}/{m}/model.onnx", "rb").read())
    put("pb", m + ".pb", open(f"{data}/{m}/test_data_set_0/input_0.pb", "rb").read())
# an If whose branches read an outer-scope value (reduce's implicit inputs)
put("onnx_subgraph", "test_if.onnx", open(f"{data}/test_if/model.onnx", "rb").read())
for m in models[:2]:
    eng, lay = os.path.join(tmp, m + ".engine"), os.path.join(tmp, m + ".json")
    subprocess.run([f"{bindir}/build-engine", f"{data}/{m}/model.onnx", "-o", eng, "--layers-out", lay], check=True)
    put("engine", m + ".engine", open(eng, "rb").read())
    put("layers", m + ".json", open(lay, "rb").read())

arrays = {"f32": np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5, "i64": np.array([1, -2, 3], np.int64),
          "f16": np.array([[0.5, 65504]], np.float16), "u8": np.zeros((1, 2, 2), np.uint8), "scalar": np.float32(7)}
for k, a in arrays.items():
    put("npy", k + ".npy", npy(a))
b = io.BytesIO(); np.savez(b, x=arrays["f32"], y=arrays["i64"]); put("npz", "stored.npz", b.getvalue())
b = io.BytesIO(); np.savez_compressed(b, x=arrays["f32"]); put("npz", "deflated.npz", b.getvalue())

def poly_array(a):
    return {"array": base64.b64encode(npy(a)).decode(), "polygraphy_class": "ndarray"}
put("polygraphy", "runresults.json", json.dumps({"lst": [["trt-runner", [{"outputs": {
    "y": {"values": poly_array(arrays["f32"]), "polygraphy_class": "LazyArray"}}, "runtime": 0.1,
    "runner_name": "trt-runner", "polygraphy_class": "IterationResult"}]]], "polygraphy_class": "RunResults"}))
put("polygraphy", "inputs.json", json.dumps([{"x": poly_array(arrays["i64"]), "z": poly_array(arrays["scalar"])}]))
put("polygraphy", "latin1.json", json.dumps([{"x": {"array": npy(arrays["u8"]).decode("latin-1")}}]))

put("trtexec_json", "output.json", '[\n  { "name" : "y"\n  , "dimensions" : "2x3"\n  , "values" : [ -2.5, -1.5, -0.5, 0.5, nan, -inf ]\n  },\n'
    '  { "name" : "s"\n  , "dimensions" : ""\n  , "values" : [ 7 ]\n  }\n]\n')
put("trtexec_raw", "fp32.raw", b"y.output.2.3.fp32.raw\n" + arrays["f32"].tobytes())
put("trtexec_raw", "int64.raw", b"labels.output.3.int64.raw\n" + arrays["i64"].tobytes())
put("trtexec_raw", "scalar.raw", b"s.output..fp16.raw\n" + np.float16(1).tobytes())

for mode, size in [("RGB", (3, 2)), ("L", (2, 2)), ("RGBA", (1, 3)), ("P", (2, 1))]:
    b = io.BytesIO(); Image.new(mode, size, 90).save(b, "PNG")
    put("png", mode + ".png", b"\0" + b.getvalue())
b = io.BytesIO(); Image.new("RGB", (2, 2), (10, 200, 30)).save(b, "PNG"); put("png", "gray.png", b"\1" + b.getvalue())
b = io.BytesIO(); Image.new("P", (5, 3), 1).save(b, "PNG", bits=2); put("png", "palette-index.png", b"\2" + b.getvalue())

for kind, folder in [("config_precision", "precisions"), ("config_preprocess", "preprocess"), ("config_model", "models")]:
    for f in sorted(os.listdir(f"configs/{folder}")):
        put(kind, f, open(f"configs/{folder}/{f}", "rb").read())
# tensor names holding dots are single keys (PyTorch's exports: input.1)
put("config_model", "dotted-tensor-names.yaml", "# tensor names holding dots are single keys (PyTorch's exports: input.1)\nmodel: m.onnx\ninputs: sets\n"
    "input_shapes:\n  input.1: 1x3x8x8\nprecisions: [fp32]\ncompare:\n  outputs:\n    out.0: {atol: 0.25, rtol: 0.5}\n"
    "    logits: {atol: 1}\n")
put("config_preprocess", "dotted-extra.yaml", "# an extra input whose name holds dots is one key\ninput: {name: input.1}\n"
    "resize: {size: 64x64}\nextra:\n  orig_target_sizes.1: orig_wh\n  im_shape: im_shape\n")
# issue 34: outputs the application reads, ignored side outputs (globs), a dump budget; fit-height padding
put("config_model", "outputs-ignore-budget.yaml", "model: m.onnx\ndataset: {images: imgs}\nvariants: [opencv-stretch]\n"
    "precisions: [fp32, fp16]\noutputs: [output, 'side*']\ncompare:\n  ignore: ['d[1-6]']\n  outputs:\n"
    "    'out*': {atol: 0.1, rtol: 0.1}\ndump: {budget: 500MB}\n")
put("config_preprocess", "fit-height.yaml", "input: {name: x}\nresize: {size: 48x320, mode: fit-height, fill: 0}\n"
    "color: bgr\nscale: 1/255\nmean: 0.5\nstd: 0.5\n")
# a large mapping (issue 39: duplicate keys were found by a quadratic scan):
# 600 keys (the key index is built, then doubled as it fills) and, in a
# nested one, a duplicate at its end; small enough to keep libFuzzer's max_len low
big = "".join("  t%04d: {atol: 0.5}\n" % i for i in range(600))
put("config_model", "large-mapping.yaml", "model: m.onnx\ninputs: sets\nprecisions: [fp32]\ncompare:\n  outputs:\n"
    + big.replace("\n  ", "\n    ").replace("  t", "    t", 1) + "input_shapes:\n" + "".join("  i%03d: 1x3\n" % i for i in range(40))
    + "  i000: 1x3\n")
put("config_detection", "rtdetr.yaml", "labels: labels\nboxes: boxes\nscores: scores\nbox_format: xyxy\n"
    "box_coords: original\nlabel_map: [1, 2, 3, 4, 5, 6]\n")
put("config_detection", "yolo.yaml", "boxes: out0\nbox_format: cxcywh\nbox_coords: normalized\nthreshold: 0.25\ntop_k: 100\nclip: true\n")
put("config_detection", "yolo-head.yaml", "head: yolov8\noutput: output0\nlabel_map: [1, 2, 3]\nconf_threshold: 0.001\n"
    "nms_iou: 0.7\nmax_det: 300\nmax_nms: 30000\nmulti_label: true\nagnostic: false\nnum_classes: 3\n"
    "letterbox_inverse: ultralytics\nclip: true\n")
# YOLO raw heads: the settings line, then the head (coco/yolo.c)
head = np.zeros((1, 7, 10), np.float32)
head[0, :4] = [[5 + 3 * i for i in range(10)], [5] * 10, [8] * 10, [6] * 10]
head[0, 4:] = np.linspace(0, 0.9, 30).reshape(3, 10)
put("yolo_head", "v8.bin", b"head=yolov8,nms_iou=0.5,max_det=5\n" + npy(head))
put("yolo_head", "v5.bin", b"head=yolov5,multi_label=false,conf_threshold=0.25\n" + npy(np.ascontiguousarray(
    np.concatenate([head[0, :4], head[0, 4:5], head[0, 4:]]).T[None])))
# yolov8-seg (2 mask coefficients per anchor) and yolov8-pose (2 keypoints), boxes inside the 32x32 input
small = head.copy()
small[0, :4] = [[2 + 3 * i for i in range(10)], [12] * 10, [8] * 10, [6] * 10]
put("yolo_head", "seg.bin", b"head=yolov8-seg,mask_coefs=2,max_det=5\n" + npy(np.ascontiguousarray(
    np.concatenate([small[0], np.linspace(-1, 1, 20).reshape(2, 10)])[None].astype(np.float32))))
put("yolo_head", "pose.bin", b"head=yolov8-pose,keypoints=2,max_det=5\n" + npy(np.ascontiguousarray(
    np.concatenate([small[0], np.tile([[4], [6], [0.9]], (2, 10))])[None].astype(np.float32))))

gt = {"images": [{"id": 1, "width": 8, "height": 6}, {"id": 2, "width": 4, "height": 4}],
      "categories": [{"id": 1, "name": "a"}, {"id": 3, "name": "b"}],
      "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [1, 1, 3, 2], "area": 6, "iscrowd": 0},
                      {"id": 2, "image_id": 2, "category_id": 3, "bbox": [0, 0, 4, 4], "area": 16, "iscrowd": 1}]}
put("coco_gt", "small.json", json.dumps(gt))
put("coco_results", "small.json", json.dumps([{"image_id": 1, "category_id": 1, "bbox": [1, 1, 3, 2.5], "score": 0.9},
                                              {"image_id": 2, "category_id": 3, "bbox": [0, 0, 1, 1], "score": 0.25}]))

# task-eval's labels (JSON object or CSV) and class-name files (JSON list or lines)
put("labels", "csv", b"file,label\na.png,3\nb.png,0\n")
put("labels", "json", b'{"a": 1, "b.jpg": 0}')
put("classes", "lines", b"cat\ndog\r\nbird\n")
put("classes", "json", b'["cat", "dog"]')
# segm and keypoints ground truth and results (the coco_gt / coco_results
# harnesses read each file for every iou type): polygons (two parts),
# uncompressed RLE with a zero-length run, compressed RLE, a crowd region;
# 17 keypoints with unlabelled ones and num_keypoints 0
sq = [1, 1, 5, 1, 5, 4, 1, 4]
kp = [3, 3, 2, 0, 0, 0] * 8 + [4.5, 2, 1]
gt = {"images": [{"id": 1, "width": 8, "height": 6}, {"id": 2, "width": 4, "height": 4}],
      "categories": [{"id": 1, "name": "a"}, {"id": 3, "name": "b"}],
      "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [1, 1, 4, 3], "area": 12, "iscrowd": 0,
                       "segmentation": [sq, [6, 0, 7.5, 0.5, 6.5, 5.5]], "keypoints": kp, "num_keypoints": 9},
                      {"id": 2, "image_id": 2, "category_id": 3, "bbox": [0, 0, 4, 4], "area": 16, "iscrowd": 1,
                       "segmentation": {"size": [4, 4], "counts": [0, 5, 0, 3, 8]}, "keypoints": [0] * 51,
                       "num_keypoints": 0},
                      {"id": 3, "image_id": 1, "category_id": 1, "bbox": [0, 0, 2, 6], "area": 11, "iscrowd": 0,
                       "segmentation": {"size": [6, 8], "counts": "081KS1"}, "keypoints": kp, "num_keypoints": 9}]}
put("coco_gt", "segm-keypoints.json", json.dumps(gt))
put("coco_results", "segm.json", json.dumps([
    {"image_id": 1, "category_id": 1, "segmentation": {"size": [6, 8], "counts": "0<T1"}, "score": 0.9},
    {"image_id": 2, "category_id": 3, "segmentation": {"size": [4, 4], "counts": [2, 14]}, "score": 0.5},
    {"image_id": 1, "category_id": 3, "segmentation": [sq], "score": 0.25}]))
put("coco_results", "keypoints.json", json.dumps([
    {"image_id": 1, "category_id": 1, "keypoints": kp, "score": 0.9, "bbox": [1, 1, 4, 3]},
    {"image_id": 2, "category_id": 3, "keypoints": [1.5] * 51, "score": 0.5, "bbox": [0, 0, 1, 1]}]))

# box annotations for coco/jsonrec.c's streamed path: iscrowd as booleans and
# 0/1, an integral real id, a zero area, polygons and other members skipped,
# a repeated key; images/categories through the quick lexer
put("coco_gt", "streamed.json", """{"info": {"v": [1.5, true, null]}, "images": [{"id": 1, "width": 8, "height": 6}, {"id": 2.0, "width": 4, "height": 4}],
 "categories": [{"id": 1, "name": "a\\/b"}, {"id": 3}],
 "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [1, 1, 3, 2], "area": 6, "iscrowd": false, "segmentation": [[1, 1, 4, 1, 4, 3]]},
  {"id": 2.0, "image_id": 2, "category_id": 3, "bbox": [0, 0, 4.5e0, 4], "area": 0, "iscrowd": true, "iscrowd": 1},
  {"id": 3, "image_id": 1, "category_id": 3, "bbox": [0.25, 0, 1, 1e-400], "area": 1.0, "iscrowd": 0, "x": {"y": []}}]}
""")

# box results for coco/jsonrec.c's streamed path: numbers at the edges of its
# quick conversion (exact powers, 2^53 + 1, underflow, more than 19 digits),
# an integral real id, a repeated key, skipped members of every kind, and an
# escaped key that only jansson may read
put("coco_results", "numbers.json", """[{"image_id": 1, "category_id": 3, "bbox": [0.5, 1e0, 2.25E+1, 0.0675], "score": 0.9012},
 {"image_id": 2.0, "category_id": 1, "bbox": [-0.0, 9007199254740993.0, 1e-400, 4.9406564584124654e-324], "score": 1},
 {"category_id": 1, "image_id": 1, "bbox": [1, 2, 3, 4], "score": 0.1000000000000000055511151231257827, "area": 12, "id": 7, "segmentation": [[1, 2, 3, 4, 5, 6]], "extra": {"a": [true, false, null, "x\\/y"]}},
 {"image_id": 1, "image_id": 2, "category_id": 3, "bbox": [100000000000000000000000.5, 2, 3, 4], "score": 0.5},
 {"image_id": 1, "category_id": 1, "bbox": [1, 2, 3, 4], "score": 12.5e-3, "im\\u0061ge_id": 2}
]
""")

# plan.json as plan writes it, with its cells' result files beside it (relative paths)
subprocess.run([f"{bindir}/plan", "configs/models/convclip.yaml", "-o", os.path.join(tmp, "plan")], check=True,
               stdout=subprocess.DEVNULL)
put("plan", "convclip.json", open(os.path.join(tmp, "plan", "plan.json"), "rb").read())
# reduce's reading of a cell: the cell's name, then plan.json
put("reduce_plan", "convclip-tf32.txt", b"inputs__tf32\n" + open(os.path.join(tmp, "plan", "plan.json"), "rb").read())
# a timing log as timed appends it: a cell's stage that failed, one without a cell
log = os.path.join(tmp, "timing.jsonl")
subprocess.run([f"{bindir}/timed", "--log", log, "--stage", "compare", "--cell", "bgr__fp16", "--", "false"])
subprocess.run([f"{bindir}/timed", "--log", log, "--stage", "report", "--", "true"], check=True)
put("timing", "two.jsonl", open(log, "rb").read())
shutil.rmtree(tmp)
