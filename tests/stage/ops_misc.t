#!/usr/bin/python3
# The MISC operator family end to end (build-engine + infer) on what the ONNX
# node tests leave out, each against an independent oracle: NonMaxSuppression
# against OpenCV's cv2.dnn.NMSBoxes (random boxes, several classes and
# batches); per-axis int8 Quantize/DequantizeLinear, MatMulInteger with
# per-row/per-column zero points and batch broadcasting, ConvInteger and
# QLinearConv with groups, strides, dilations and per-channel weights,
# QLinearMatMul with per-row scales — all against numpy; Unique against
# numpy.unique (axis, counts, inverse); RNN/GRU/LSTM in the directions,
# sequence lengths, clip and linear_before_reset the node tests never use,
# against numpy written from the spec's equations; and bad inputs failing
# with one line naming the node.
import os
import sys
import tempfile

import cv2
import numpy as np
import onnx
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done, run, one_line_error

tmp = tempfile.mkdtemp(prefix="parity-ops-misc-")
rng = np.random.default_rng(11)
seq = [0]


def ttype(a):
    return onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(a.dtype)]


def execute(nd, feeds, consts, outs, opset):
    """Runs one node; returns ({name: array}, None) or (None, (rc, stderr))."""
    seq[0] += 1
    base = os.path.join(tmp, "m%d" % seq[0])
    g = helper.make_graph([nd], "g",
                          [helper.make_tensor_value_info(k, ttype(v), v.shape) for k, v in feeds.items()],
                          [helper.make_tensor_value_info(k, onnx.TensorProto.UNDEFINED, None) for k in outs],
                          [numpy_helper.from_array(v, k) for k, v in consts.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.save(m, base + ".onnx")
    rc, _, err = run("build-engine", base + ".onnx", "-o", base + ".engine")
    if rc:
        return None, (rc, err)
    os.makedirs(base + ".in")
    for k, v in feeds.items():
        np.save(os.path.join(base + ".in", k + ".npy"), v)
    rc, _, err = run("infer", base + ".engine", "-i", base + ".in", "-o", base + ".out")
    if rc:
        return None, (rc, err)
    return {k: np.load(os.path.join(base + ".out", k + ".npy")) for k in outs}, None


def check(name, nd, feeds, consts, want, opset=17, tol=0.0):
    """Every output against the oracle: bit for bit, or within tol (floats)."""
    got, err = execute(nd, feeds, consts, list(want), opset)
    if got is None:
        return ok(False, name, "exit %d: %s" % err)
    bad = []
    for k, w in want.items():
        g = got[k]
        good = g.shape == w.shape and g.dtype == w.dtype and (
            np.array_equal(g, w) if tol == 0 else np.allclose(g, w, rtol=tol, atol=tol))
        if not good:
            bad.append("%s: got %s %s %s want %s %s %s" % (k, g.dtype, g.shape, g.ravel()[:8], w.dtype, w.shape,
                                                           w.ravel()[:8]))
    return ok(not bad, name, "\n".join(bad))


def fails(name, nd, feeds, consts, outs, needle, opset=17):
    got, err = execute(nd, feeds, consts, outs, opset)
    return ok(got is None and one_line_error(err[0], err[1], "'bad'", needle), name,
              "no error" if got is not None else "exit %d: %s" % err)


def node(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, name="bad", **attrs)


# ---- NonMaxSuppression against OpenCV ----
def nms_oracle(boxes, scores, max_out, iou, score_thr):
    rows = []
    for b in range(scores.shape[0]):
        xywh = [[float(x1), float(y1), float(x2 - x1), float(y2 - y1)] for y1, x1, y2, x2 in boxes[b]]
        for c in range(scores.shape[1]):
            keep = cv2.dnn.NMSBoxes(xywh, scores[b, c].astype(float).tolist(), score_thr, iou)
            keep = np.array(keep, dtype=np.int64).reshape(-1)[:max_out]
            rows += [[b, c, int(i)] for i in keep]
    return np.array(rows, dtype=np.int64).reshape(-1, 3)


corners = rng.uniform(0, 50, (2, 60, 2, 2)).astype(np.float32)
sizes = rng.uniform(5, 30, (2, 60, 1, 2)).astype(np.float32)
boxes = np.concatenate([corners[:, :, 0], corners[:, :, 0] + sizes[:, :, 0]], axis=2)   # y1 x1 y2 x2
scores = rng.permutation(np.linspace(0.01, 0.99, 2 * 3 * 60)).reshape(2, 3, 60).astype(np.float32)
for iou, sthr, mo in [(0.5, 0.3, 10), (0.3, 0.0, 100), (0.7, 0.6, 3)]:
    want = nms_oracle(boxes, scores, mo, iou, sthr)
    check("NonMaxSuppression iou %.1f score %.1f max %d (%d rows) vs cv2.dnn.NMSBoxes" % (iou, sthr, mo, len(want)),
          helper.make_node("NonMaxSuppression", ["b", "s", "m", "i", "t"], ["y"]), {"b": boxes, "s": scores},
          {"m": np.array([mo], np.int64), "i": np.array([iou], np.float32), "t": np.array([sthr], np.float32)},
          {"y": want}, opset=11)
# the same boxes as [cx, cy, w, h]
centre = np.stack([(boxes[..., 1] + boxes[..., 3]) / 2, (boxes[..., 0] + boxes[..., 2]) / 2,
                   boxes[..., 3] - boxes[..., 1], boxes[..., 2] - boxes[..., 0]], axis=2).astype(np.float32)
check("NonMaxSuppression center_point_box=1 vs cv2.dnn.NMSBoxes",
      helper.make_node("NonMaxSuppression", ["b", "s", "m", "i", "t"], ["y"], center_point_box=1),
      {"b": centre, "s": scores}, {"m": np.array([8], np.int64), "i": np.array([0.4], np.float32),
                                   "t": np.array([0.2], np.float32)},
      {"y": nms_oracle(boxes, scores, 8, 0.4, 0.2)}, opset=11)
check("NonMaxSuppression without max_output_boxes_per_class selects nothing",
      helper.make_node("NonMaxSuppression", ["b", "s"], ["y"]), {"b": boxes, "s": scores}, {},
      {"y": np.zeros((0, 3), np.int64)}, opset=11)
fails("NonMaxSuppression with mismatched scores", node("NonMaxSuppression", ["b", "s"], ["y"]),
      {"b": boxes, "s": scores[:, :, :10]}, {}, ["y"], "do not match")

# ---- quantization against numpy ----
x = (rng.standard_normal((2, 3, 4)) * 40).astype(np.float32)
x.flat[:6] = [0.5, 1.5, 2.5, -0.5, -1.5, 1000.0]   # ties round to even; saturation
sc = np.array([0.5, 1.0, 2.0], np.float32)
zp = np.array([-3, 0, 5], np.int8)
q = np.clip(np.rint(x / sc[None, :, None]) + zp[None, :, None], -128, 127).astype(np.int8)
check("QuantizeLinear per-axis int8 (ties to even, saturation)",
      helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], axis=1), {"x": x}, {"s": sc, "z": zp}, {"y": q},
      opset=13)
deq = ((q.astype(np.int32) - zp[None, :, None]) * sc[None, :, None]).astype(np.float32)
check("DequantizeLinear per-axis int8", helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"], axis=1),
      {"x": q}, {"s": sc, "z": zp}, {"y": deq}, opset=13)
a = rng.integers(0, 256, (2, 1, 4, 5), dtype=np.uint8)
b = rng.integers(-128, 128, (3, 5, 6), dtype=np.int8)
az = rng.integers(0, 256, (4,), dtype=np.uint8)
bz = rng.integers(-128, 128, (6,), dtype=np.int8)
mm = np.matmul(a.astype(np.int32) - az[:, None].astype(np.int32), b.astype(np.int32) - bz.astype(np.int32))
check("MatMulInteger per-row/per-column zero points, broadcast batches",
      helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"]), {"a": a, "b": b}, {"az": az, "bz": bz},
      {"y": mm.astype(np.int32)}, opset=10)
asc = np.array([0.02, 0.05, 0.01, 0.03], np.float32)
bsc = np.float32(0.04)
ysc, yz = np.float32(0.7), np.uint8(128)
mult = (asc[:, None] * bsc / ysc).astype(np.float32)
qmm = np.clip(np.rint(mm.astype(np.float32) * mult) + np.float32(yz), 0, 255).astype(np.uint8)
check("QLinearMatMul per-row scales",
      helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"]), {"a": a, "b": b},
      {"as": asc, "az": az, "bs": np.array(bsc), "bz": bz, "ys": np.array(ysc), "yz": np.array(yz)}, {"y": qmm},
      opset=10)


def np_conv(x, w, group, strides, dil, pads):
    """Integer grouped 2-D convolution straight from the definition."""
    x = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    n, cin, h, wd = x.shape
    m, cg, kh, kw = w.shape
    oh = (h - dil[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (wd - dil[1] * (kw - 1) - 1) // strides[1] + 1
    y = np.zeros((n, m, oh, ow), np.int64)
    mg = m // group
    for o in range(m):
        g = o // mg
        for i in range(kh):
            for j in range(kw):
                patch = x[:, g * cg:(g + 1) * cg, i * dil[0]:i * dil[0] + strides[0] * oh:strides[0],
                          j * dil[1]:j * dil[1] + strides[1] * ow:strides[1]]
                y[:, o] += np.einsum("nchw,c->nhw", patch, w[o, :, i, j])
    return y


xi = rng.integers(0, 256, (2, 4, 9, 8), dtype=np.uint8)
wi = rng.integers(-128, 128, (6, 2, 3, 2), dtype=np.int8)
xz, wz = np.uint8(7), rng.integers(-5, 5, (6,), dtype=np.int8)
ci = np_conv(xi.astype(np.int64) - int(xz), wi.astype(np.int64) - wz[:, None, None, None], 2, (2, 1), (1, 2),
             (1, 0, 2, 1))
attrs = dict(group=2, strides=[2, 1], dilations=[1, 2], pads=[1, 0, 2, 1])
check("ConvInteger groups, strides, dilations, per-channel w_zero_point",
      helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], **attrs), {"x": xi},
      {"w": wi, "xz": np.array(xz), "wz": wz}, {"y": ci.astype(np.int32)}, opset=10)
wsc = np.array([0.01, 0.02, 0.03, 0.015, 0.025, 0.005], np.float32)
bias = rng.integers(-5000, 5000, (6,), dtype=np.int32)
xsc, ysc2, yz2 = np.float32(0.05), np.float32(2.5), np.int8(-10)
mult = (xsc * wsc / ysc2).astype(np.float32)[None, :, None, None]
qc = np.clip(np.rint((ci + bias[None, :, None, None]).astype(np.float32) * mult) + np.float32(yz2), -128, 127)
check("QLinearConv per-channel scales, bias, int8 output",
      helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"], **attrs),
      {"x": xi}, {"xs": np.array(xsc), "xz": np.array(xz), "w": wi, "ws": wsc, "wz": wz, "ys": np.array(ysc2),
                  "yz": np.array(yz2), "b": bias}, {"y": qc.astype(np.int8)}, opset=10)
fails("QuantizeLinear scale of the wrong length", node("QuantizeLinear", ["x", "s"], ["y"], axis=2), {"x": x},
      {"s": sc}, ["y"], "scale has 3 values", opset=13)

# ---- Unique against numpy.unique ----
u = rng.integers(0, 3, (4, 5, 3)).astype(np.float32)
u[:, 2] = u[:, 0]
for axis in [None, 1, -1, 0]:
    kw = {} if axis is None else {"axis": axis}
    yv, idx, inv, cnt = np.unique(u, return_index=True, return_inverse=True, return_counts=True, axis=axis)
    check("Unique sorted axis=%s vs numpy.unique" % axis,
          helper.make_node("Unique", ["x"], ["y", "i", "v", "c"], **kw), {"x": u}, {},
          {"y": yv, "i": idx.astype(np.int64), "v": inv.reshape(-1).astype(np.int64), "c": cnt.astype(np.int64)},
          opset=11)
ui = rng.integers(-4, 4, (30,)).astype(np.int32)
yv, idx, inv, cnt = np.unique(ui, return_index=True, return_inverse=True, return_counts=True)
order = np.argsort(idx, kind="stable")
rank = np.empty_like(order)
rank[order] = np.arange(len(order))
check("Unique sorted=0 int32 (first-occurrence order)",
      helper.make_node("Unique", ["x"], ["y", "i", "v", "c"], sorted=0), {"x": ui}, {},
      {"y": yv[order], "i": idx[order].astype(np.int64), "v": rank[inv].astype(np.int64),
       "c": cnt[order].astype(np.int64)}, opset=11)


# ---- recurrent layers against numpy from the spec ----
def sig(v):
    return 1 / (1 + np.exp(-v))


def np_recurrent(cell, X, W, R, B, lens, h0, c0=None, P=None, direction="forward", clip=None, lbr=0, act=None):
    """Returns Y [S, D, B, H], Y_h [D, B, H] (and Y_c) by the spec's equations, in float64."""
    S, N, _ = X.shape
    D, GH, _ = W.shape
    H = R.shape[2]
    Y = np.zeros((S, D, N, H))
    Yh = np.zeros((D, N, H))
    Yc = np.zeros((D, N, H))
    cl = (lambda v: np.clip(v, -clip, clip)) if clip else (lambda v: v)
    for d in range(D):
        rev = direction == "reverse" or d == 1
        Wb, Rb = B[d, :GH], B[d, GH:]
        for n in range(N):
            h = h0[d, n].astype(np.float64)
            cs = c0[d, n].astype(np.float64) if c0 is not None else np.zeros(H)
            steps = range(lens[n] - 1, -1, -1) if rev else range(lens[n])
            for t in steps:
                xw = W[d] @ X[t, n] + Wb
                hr = R[d] @ h + Rb
                if cell == "RNN":
                    h = act(cl(xw + hr))
                elif cell == "GRU":
                    z = sig(cl(xw[:H] + hr[:H]))
                    r = sig(cl(xw[H:2 * H] + hr[H:2 * H]))
                    if lbr:
                        hh = np.tanh(cl(xw[2 * H:] + r * hr[2 * H:]))
                    else:
                        hh = np.tanh(cl(xw[2 * H:] + R[d, 2 * H:] @ (r * h) + Rb[2 * H:]))
                    h = (1 - z) * hh + z * h
                else:
                    g = xw + hr
                    i = sig(cl(g[:H] + P[d, :H] * cs))
                    f = sig(cl(g[2 * H:3 * H] + P[d, 2 * H:] * cs))
                    cs = f * cs + i * np.tanh(cl(g[3 * H:]))
                    o = sig(cl(g[H:2 * H] + P[d, H:2 * H] * cs))
                    h = o * np.tanh(cs)
                Y[t, d, n] = h
            Yh[d, n] = h
            Yc[d, n] = cs
    return Y, Yh, Yc


def rnn_case(name, cell, gates, direction, **kw):
    S, N, I, H = 5, 3, 4, 3
    D = 2 if direction == "bidirectional" else 1
    X = rng.standard_normal((S, N, I)).astype(np.float32)
    W = (rng.standard_normal((D, gates * H, I)) * 0.5).astype(np.float32)
    R = (rng.standard_normal((D, gates * H, H)) * 0.5).astype(np.float32)
    B = (rng.standard_normal((D, 2 * gates * H)) * 0.3).astype(np.float32)
    lens = np.array([5, 2, 4], np.int32)
    h0 = rng.standard_normal((D, N, H)).astype(np.float32)
    feeds = {"X": X}
    consts = {"W": W, "R": R, "B": B, "L": lens, "H0": h0}
    ins = ["X", "W", "R", "B", "L", "H0"]
    outs = ["Y", "Yh"]
    attrs = dict(hidden_size=H, direction=direction)
    c0 = P = None
    if cell == "LSTM":
        c0 = rng.standard_normal((D, N, H)).astype(np.float32)
        P = (rng.standard_normal((D, 3 * H)) * 0.3).astype(np.float32)
        consts.update(C0=c0, P=P)
        ins += ["C0", "P"]
        outs.append("Yc")
    if kw.get("clip"):
        attrs["clip"] = kw["clip"]
    if kw.get("lbr"):
        attrs["linear_before_reset"] = 1
    act = np.tanh
    if kw.get("relu"):
        attrs["activations"] = ["Relu"] * D
        act = lambda v: np.maximum(v, 0)
    Y, Yh, Yc = np_recurrent(cell, X.astype(np.float64), W.astype(np.float64), R.astype(np.float64),
                             B.astype(np.float64), lens, h0, c0, P, direction, kw.get("clip"), kw.get("lbr", 0), act)
    want = {"Y": Y.astype(np.float32), "Yh": Yh.astype(np.float32)}
    if cell == "LSTM":
        want["Yc"] = Yc.astype(np.float32)
    check(name, helper.make_node(cell, ins, outs, **attrs), feeds, consts, want, opset=14, tol=1e-5)


rnn_case("RNN bidirectional Relu with sequence_lens", "RNN", 1, "bidirectional", relu=True)
rnn_case("GRU bidirectional linear_before_reset with sequence_lens", "GRU", 3, "bidirectional", lbr=True)
rnn_case("GRU reverse with clip", "GRU", 3, "reverse", clip=0.8)
rnn_case("LSTM bidirectional peepholes, initial states, sequence_lens", "LSTM", 4, "bidirectional")
rnn_case("LSTM reverse with clip", "LSTM", 4, "reverse", clip=0.5)
fails("LSTM sequence_lens beyond the sequence", node("LSTM", ["X", "W", "R", "", "L"], ["Y"], hidden_size=2),
      {"X": np.zeros((2, 1, 3), np.float32)},
      {"W": np.zeros((1, 8, 3), np.float32), "R": np.zeros((1, 8, 2), np.float32), "L": np.array([3], np.int32)},
      ["Y"], "sequence_lens[0]", opset=14)
done()
