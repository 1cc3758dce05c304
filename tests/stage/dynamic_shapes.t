#!/usr/bin/python3
# Data-dependent shapes against ONNX Runtime (onnxruntime-node, the oracle):
# NonZero, TopK with a k computed in the graph, NonMaxSuppression keeping
# exactly ONNX Runtime's boxes (tied scores, score and IoU thresholds, an IoU
# exactly at the threshold, center_point_box, corners in either order),
# RoiAlign in both modes, both coordinate transformations and opset 10,
# sampling_ratio 0 and 2, and empty detections: zero-sized tensors flowing
# through Gather, Concat, Reshape, TopK and RoiAlign to the outputs, and
# samples of different detection counts through one engine in one run.
#
# Integer outputs (indices, selections, shapes) must be equal. RoiAlign's
# float outputs are held to a bound from the arithmetic: each output is an
# average (or maximum) of g bilinear samples, each 4 products of a weight in
# [0, 1] and an input value; both engines evaluate the same formula, so
# beyond the sum's rounding (bounds.py: gamma(4g + 2) * sum |term|) they
# may differ only through the sample positions, which are within a few ulps
# of the coordinates (<= 2 H u each), moving a weight by at most that much:
# bound = gamma(4g + 2) * max|x| + 8 * 4 * (H + W) * u * max|x| per output.
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as TP, helper as h, numpy_helper

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done
from backend_lib import run_backend, read_set, write_set, tmpdir, ort_available, save_model
from bounds import U32, gamma

tmp = tmpdir("dynamic-shapes")
F, I64 = TP.FLOAT, TP.INT64
vi = h.make_tensor_value_info

if not ort_available():
    ok(False, "onnxruntime-node is installed (node_modules/onnxruntime-node)", "run tools/deps.sh")
    done()


def save(name, nodes, inputs, outputs, inits=(), opset=13):
    return save_model(tmp, name, nodes, inputs, outputs, inits, opset)


def run_both(name, model, inputs):
    """(parity outputs, onnxruntime outputs), or (None, failure text)."""
    ind = os.path.join(tmp, name + ".in")
    write_set(ind, inputs)
    res = []
    for be in ("parity", "onnxruntime"):
        out = os.path.join(tmp, name + "." + be)
        rc, _, err = run_backend(be, "run", "--model", model, "--input", ind, "--output", out, "--threads", 2)
        if rc:
            return None, "%s exit %d: %s" % (be, rc, err.strip()[-500:])
        res.append(read_set(out))
    return res, None


def same(p, o, names=None):
    """Every output (or the named ones) of the same dtype, shape and bytes."""
    bad = []
    for k in names or sorted(o):
        if k not in p:
            bad.append("%s missing" % k)
        elif p[k].dtype != o[k].dtype or p[k].shape != o[k].shape:
            bad.append("%s: parity %s %s, onnxruntime %s %s" % (k, p[k].dtype, p[k].shape, o[k].dtype, o[k].shape))
        elif not np.array_equal(p[k], o[k]):
            bad.append("%s: %d of %d values differ" % (k, int(np.sum(p[k] != o[k])), o[k].size))
    return not bad, "; ".join(bad)


def check(name, model, inputs, names=None):
    res, err = run_both(name, model, inputs)
    if res is None:
        ok(False, name, err)
        return None
    good, why = same(*res, names)
    ok(good, name, why)
    return res


rng = np.random.default_rng(18)
c = lambda v, n: numpy_helper.from_array(np.array(v), n)

# ---- NonZero: data with zeros, all zeros ([rank, 0]) --------------------
nz = save("nonzero", [h.make_node("NonZero", ["x"], ["idx"])], [vi("x", F, None)], [vi("idx", I64, None)])
x = rng.integers(-2, 3, (3, 4, 5)).astype(np.float32)
check("NonZero: 3-D float with zeros", nz, {"x": x})
res = check("NonZero: all zeros gives [3, 0]", nz, {"x": np.zeros((2, 3, 4), np.float32)})
ok(res is not None and res[1]["idx"].shape == (3, 0), "NonZero of all zeros is [3, 0] in ONNX Runtime too",
   "onnxruntime gave %s" % (res[1]["idx"].shape,) if res else "")

# ---- TopK with k computed in the graph: k = number of x above t ---------
# (the detectors' min(pre_nms_top_n, count) pattern), values with ties
topk_nodes = [
    h.make_node("Greater", ["x", "t"], ["above"]),
    h.make_node("Cast", ["above"], ["above_i"], to=I64),
    h.make_node("ReduceSum", ["above_i"], ["k"], keepdims=1),
    h.make_node("TopK", ["x", "k"], ["v_hi", "i_hi"], axis=-1, largest=1, sorted=1),
    h.make_node("TopK", ["x", "k"], ["v_lo", "i_lo"], axis=-1, largest=0, sorted=1),
]
topk = save("topk_k", topk_nodes, [vi("x", F, [None]), vi("t", F, [])],
            [vi("v_hi", F, None), vi("i_hi", I64, None), vi("v_lo", F, None), vi("i_lo", I64, None)])
xt = rng.integers(0, 6, 40).astype(np.float32) / 2     # many ties
check("TopK, k computed (count above t), ties broken by index, largest 1 and 0", topk,
      {"x": xt, "t": np.array(1.0, np.float32)})
check("TopK, k computed as 0: empty values and indices", topk, {"x": xt, "t": np.array(100.0, np.float32)})
check("TopK, k computed as the whole axis", topk, {"x": xt, "t": np.array(-1.0, np.float32)})

# ---- NonMaxSuppression ----------------------------------------------------
# Boxes on a grid of quarter pixels so IoUs are exact in float32; a pair at
# IoU exactly 0.5 (kept by a strict '>' test at iou_threshold 0.5), tied
# scores, corners given in either order, and scores at the score threshold.
def nms_model(name, cpb):
    outs, nodes = [], []
    for j, (iou, sthr, mx) in enumerate([(0.5, None, 100), (0.5, 0.25, 100), (0.3, 0.0, 2), (0.7, None, 3),
                                         (0.0, None, 100), (1.0, 0.5, 100)]):
        ins = ["boxes", "scores", "mx%d" % j, "iou%d" % j] + (["st%d" % j] if sthr is not None else [])
        nodes.append(h.make_node("NonMaxSuppression", ins, ["sel%d" % j], center_point_box=cpb))
        nodes += [h.make_node("Constant", [], ["mx%d" % j], value=numpy_helper.from_array(np.array([mx], np.int64))),
                  h.make_node("Constant", [], ["iou%d" % j], value=numpy_helper.from_array(np.array([iou], np.float32)))]
        if sthr is not None:
            nodes.append(h.make_node("Constant", [], ["st%d" % j],
                                     value=numpy_helper.from_array(np.array([sthr], np.float32))))
        outs.append(vi("sel%d" % j, I64, None))
    return save(name, nodes, [vi("boxes", F, None), vi("scores", F, None)], outs, opset=11)


nb, nc, n = 2, 3, 24
pts = rng.integers(0, 40, (nb, n, 4)).astype(np.float32) / 4
boxes = pts.copy()
boxes[:, :, 2:] = pts[:, :, :2] + 0.25 + np.abs(pts[:, :, 2:]) / 2
boxes[0, 0] = [0, 0, 4, 4]
boxes[0, 1] = [0, 0, 4, 2]             # IoU with box 0: 8 / 16 = 0.5 exactly
boxes[0, 2] = [4, 4, 0, 0]             # box 0 with its corners swapped
boxes[1, 3, [0, 2]] = boxes[1, 3, [2, 0]]
scores = (rng.integers(0, 8, (nb, nc, n)) / 8).astype(np.float32)   # ties and values at 0.25, 0.5
scores[0, :, :3] = 0.875
check("NonMaxSuppression corners (ties, thresholds, IoU at the threshold, swapped corners, max per class)",
      nms_model("nms_corners", 0), {"boxes": boxes, "scores": scores})
cb = boxes.copy()
cb[:, :, :2] = (boxes[:, :, :2] + boxes[:, :, 2:]) / 2
cb[:, :, 2:] = np.abs(boxes[:, :, 2:] - boxes[:, :, :2])
check("NonMaxSuppression center_point_box=1 (the same cases as centres and sizes)",
      nms_model("nms_center", 1), {"boxes": cb, "scores": scores})
rb = rng.random((1, 200, 2)).astype(np.float32) * 50
rboxes = np.concatenate([rb, rb + 1 + rng.random((1, 200, 2)).astype(np.float32) * 20], axis=2)
check("NonMaxSuppression, 200 random boxes, random scores", nms_model("nms_random", 0),
      {"boxes": rboxes, "scores": rng.random((1, 2, 200)).astype(np.float32)})


# ---- RoiAlign ---------------------------------------------------------------
def roi_bound(p, o, x, grid):
    H, W = x.shape[2:]
    mag = float(np.max(np.abs(x)))
    bound = gamma(4 * grid + 2) * mag + 8 * 4 * (H + W) * U32 * mag
    err = float(np.max(np.abs(p["y"].astype(np.float64) - o["y"]))) if o["y"].size else 0.0
    return err <= bound, "max |parity - ort| %.3g over the bound %.3g" % (err, bound)


x = rng.standard_normal((2, 3, 12, 10)).astype(np.float32)
rois = np.array([[0, 0, 9, 11], [1.3, 2.7, 6.1, 5.2], [-3, -2, 4, 3], [7.5, 9.5, 14, 15], [2, 2, 2.2, 2.1],
                 [5.25, 3.75, 5.25, 3.75], [0.4, 8.9, 9.6, 11.9]], np.float32)
bi = np.array([0, 1, 0, 1, 0, 1, 1], np.int64)
for opset, ctm in ((10, None), (16, "output_half_pixel"), (16, "half_pixel")):
    for mode in ("avg", "max"):
        for sr in (0, 2):
            attrs = dict(mode=mode, output_height=3, output_width=4, sampling_ratio=sr, spatial_scale=0.75)
            if ctm:
                attrs["coordinate_transformation_mode"] = ctm
            tag = "roialign_op%d_%s_%s_sr%d" % (opset, ctm or "default", mode, sr)
            m = save(tag, [h.make_node("RoiAlign", ["x", "rois", "bi"], ["y"], **attrs)],
                     [vi("x", F, None), vi("rois", F, None), vi("bi", I64, None)], [vi("y", F, None)], opset=opset)
            # the adaptive grid is at most ceil(roi size / bins) per axis: <= ceil(15 * 0.75 / 3) ^ 2 samples
            grid = sr * sr if sr else 4 * 3
            res, err = run_both(tag, m, {"x": x, "rois": rois, "bi": bi})
            if res is None:
                ok(False, "RoiAlign opset %d %s %s sampling_ratio %d" % (opset, ctm or "", mode, sr), err)
                continue
            good, why = roi_bound(res[0], res[1], x, grid)
            ok(good and res[0]["y"].shape == res[1]["y"].shape,
               "RoiAlign opset %d%s mode %s sampling_ratio %d agrees with ONNX Runtime" % (opset, " " + ctm if ctm else "", mode, sr),
               why)

# ---- empty detections: NMS keeps nothing; zero-sized tensors to the outputs --
empty_nodes = [
    h.make_node("NonMaxSuppression", ["boxes", "scores", "mx", "iou", "st"], ["sel"]),
    h.make_node("Gather", ["sel", "two"], ["box_idx"], axis=1),          # [K]
    h.make_node("Squeeze", ["boxes", "zero"], ["boxes2"]),                # [N, 4]
    h.make_node("Gather", ["boxes2", "box_idx"], ["kept"], axis=0),        # [K, 4]
    h.make_node("Squeeze", ["scores", "zero1"], ["scores2"]),             # [N]
    h.make_node("Gather", ["scores2", "box_idx"], ["kept_scores"], axis=0),  # [K]
    h.make_node("Concat", ["kept", "kept"], ["both"], axis=0),            # [2K, 4]
    h.make_node("Shape", ["kept"], ["kshape"]),
    h.make_node("Slice", ["kshape", "zero", "one", "zero"], ["kn"]),
    h.make_node("Concat", ["kn", "two_two"], ["rshape"], axis=0),
    h.make_node("Reshape", ["kept", "rshape"], ["pairs"]),                 # [K, 2, 2]
    h.make_node("Shape", ["kept_scores"], ["k"]),
    h.make_node("TopK", ["kept_scores", "k"], ["top_v", "top_i"]),       # k = K = 0
    h.make_node("Unsqueeze", ["zero_f", "zero"], ["batch_col"]),
    h.make_node("Expand", ["batch_col", "kn"], ["bcol"]),
    h.make_node("Cast", ["bcol"], ["bidx"], to=I64),
    h.make_node("RoiAlign", ["feat", "kept", "bidx"], ["pooled"], output_height=2, output_width=2),  # [K, C, 2, 2]
    h.make_node("Add", ["kept_scores", "half"], ["shifted"]),
]
empty_inits = [c(np.array([10], np.int64), "mx"), c(np.array([0.5], np.float32), "iou"),
               c(np.array([0.99], np.float32), "st"), c(np.array(2, np.int64), "two"),
               c(np.array([0], np.int64), "zero"), c(np.array([0, 1], np.int64), "zero1"),
               c(np.array([1], np.int64), "one"), c(np.array([2, 2], np.int64), "two_two"),
               c(np.array(0, np.float32), "zero_f"), c(np.array(0.5, np.float32), "half")]
empty = save("empty", empty_nodes, [vi("boxes", F, [1, None, 4]), vi("scores", F, [1, 1, None]),
                                    vi("feat", F, [1, 2, 6, 6])],
             [vi(o, I64 if o in ("sel", "top_i") else F, None) for o in
              ("sel", "kept", "kept_scores", "both", "pairs", "top_v", "top_i", "pooled", "shifted")],
             empty_inits, opset=16)
eb = rng.random((1, 5, 4)).astype(np.float32)
eb[:, :, 2:] += eb[:, :, :2]
res = check("empty detections: NMS keeps none; Gather, Concat, Reshape, TopK, RoiAlign, Add of zero rows",
            empty, {"boxes": eb, "scores": rng.random((1, 1, 5)).astype(np.float32) * 0.5,
                    "feat": rng.random((1, 2, 6, 6)).astype(np.float32)})
if res:
    shapes = {k: v.shape for k, v in res[0].items()}
    want = {"sel": (0, 3), "kept": (0, 4), "kept_scores": (0,), "both": (0, 4), "pairs": (0, 2, 2), "top_v": (0,),
            "top_i": (0,), "pooled": (0, 2, 2, 2), "shifted": (0,)}
    ok(shapes == want, "empty detections: every output zero-sized with the right shape", "got %s" % shapes)
# the same graph keeping detections: the shapes follow the data
check("the same graph with detections kept", empty,
      {"boxes": eb, "scores": np.array([[[0.995, 0.2, 0.999, 0.3, 0.9995]]], np.float32),
       "feat": rng.random((1, 2, 6, 6)).astype(np.float32)},
      names=["sel", "kept", "kept_scores", "both", "pairs", "top_v", "top_i"])

# one engine, samples of different detection counts in one run (3, 0, 5, 1):
# buffers sized at run time grow and shrink between samples
samples = os.path.join(tmp, "samples.in")
kept = [np.array([[[0.995, 0.2, 0.999, 0.3, 0.9995]]], np.float32), np.full((1, 1, 5), 0.1, np.float32),
        np.full((1, 1, 5), 0.999, np.float32), np.array([[[0.2, 0.2, 0.2, 0.995, 0.2]]], np.float32)]
for i, sc_i in enumerate(kept):
    fb = rng.random((1, 5, 4)).astype(np.float32) * 0.2
    fb[0, :, 0] += 2 * np.arange(5)                       # side by side: no two overlap
    fb[:, :, 2:] += fb[:, :, :2] + 1
    write_set(os.path.join(samples, "s%d" % i), {"boxes": fb, "scores": sc_i,
                                                 "feat": rng.random((1, 2, 6, 6)).astype(np.float32)})
outs = []
for be in ("parity", "onnxruntime"):
    out = os.path.join(tmp, "samples." + be)
    rc, _, err = run_backend(be, "run", "--model", empty, "--input", samples, "--output", out, "--threads", 2)
    outs.append([read_set(os.path.join(out, "s%d" % i)) if not rc else None for i in range(len(kept))])
    if rc:
        break
if outs[-1][0] is None:
    ok(False, "samples of 3, 0, 5 and 1 detections in one run", err.strip()[-500:])
else:
    bad = [why for i in range(len(kept)) for good, why in [same(outs[0][i], outs[1][i])] if not good]
    counts = [outs[1][i]["sel"].shape[0] for i in range(len(kept))]
    ok(not bad and counts == [3, 0, 5, 1],
       "samples of %s detections in one run: every sample as ONNX Runtime's" % counts, "; ".join(bad))
done()
