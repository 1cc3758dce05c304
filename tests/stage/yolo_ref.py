"""yolo_ref.py — an independent reference decoding of YOLO raw heads, written
from the published rules with numpy (no torch here), for tests/stage/yolo_decode.t.

What it encodes (docs/metrics-detection.md):
- Ultralytics non_max_suppression (ultralytics/utils/nms.py) for the
  [4+nc, N] head: candidates where the anchor's best class score > conf,
  then multi-label every (anchor, class) with score > conf in row-major
  order (torch.where), or single-label the first argmax with score > conf;
  YOLOv5's utils/general.py for the [N, 5+nc] head: anchors with
  objectness > conf, scores = class * objectness in float32.
- conf compared in float32 (a float32 tensor against a Python float).
- xywh2xyxy in float32: xy -/+ wh / 2.
- more than max_nms candidates: the best max_nms by a STABLE descending
  sort (torch's argsort is not stable; ties here go to the lower index).
- torchvision's CPU nms kernel (csrc/ops/cpu/nms_kernel.cpp) run per class,
  exactly (no max_wh coordinate offset): order by score, stable; keep i,
  suppress every later j with float32 IoU inter / (area_i + area_j - inter)
  > threshold compared in double.
- the kept detections of every class in that global order, the first max_det.
- boxes to original pixels in float64: letterbox as Ultralytics scale_boxes
  (gain = min(h1/h0, w1/w0), pad = round((w1 - w0*gain)/2 - 0.1) with
  Python's round), else (v - offset) / scale; clipped to [0, W] x [0, H].
It is deliberately not the C code's structure: suppression runs forward
over every candidate (as the kernel does) and per class separately, where
the C decoder checks each candidate against kept boxes and stops at max_det.
"""
import numpy as np


def candidates(raw, layout, conf, multi_label):
    """(boxes xyxy float32 [M,4], scores float32 [M], classes [M], anchors [M]) in candidate order."""
    f = np.asarray(raw)
    f = f.reshape(f.shape[-2], f.shape[-1]).astype(np.float32)
    c32 = np.float32(conf)
    if layout == "yolov8":
        x = f.T                              # [N, 4+nc]
        xywh, cls = x[:, :4], x[:, 4:]
        xc = cls.max(1) > c32
    else:
        x = f                                # [N, 5+nc]
        xywh = x[:, :4]
        xc = x[:, 4] > c32
        cls = x[:, 5:] * x[:, 4:5]           # float32 products
    nc = cls.shape[1]
    multi = multi_label and nc > 1
    idx = np.nonzero(xc)[0]
    c = cls[idx]
    if multi:
        i, j = np.nonzero(c > c32)           # row-major: anchor, then class
        anchors, classes, scores = idx[i], j, c[i, j]
    else:
        j = c.argmax(1)                      # first of the maxima
        s = c[np.arange(len(idx)), j]
        k = s > c32
        anchors, classes, scores = idx[k], j[k], s[k]
    b = xywh[anchors]
    half = b[:, 2:] / np.float32(2)
    boxes = np.concatenate([b[:, :2] - half, b[:, :2] + half], 1).astype(np.float32)
    return boxes, scores.astype(np.float32), classes.astype(np.int64), anchors.astype(np.int64)


def nms_kernel(boxes, scores, order, thr):
    """torchvision's CPU nms over the candidates `order` (already in score order): kept indices."""
    x1, y1, x2, y2 = (boxes[:, k] for k in range(4))
    areas = (x2 - x1) * (y2 - y1)
    sup = np.zeros(len(boxes), bool)
    keep = []
    for a in range(len(order)):
        i = order[a]
        if sup[i]:
            continue
        keep.append(i)
        rest = order[a + 1:]
        rest = rest[~sup[rest]]
        if len(rest) == 0:
            continue
        xx1 = np.maximum(x1[i], x1[rest])
        yy1 = np.maximum(y1[i], y1[rest])
        xx2 = np.minimum(x2[i], x2[rest])
        yy2 = np.minimum(y2[i], y2[rest])
        w = np.maximum(np.float32(0), xx2 - xx1)
        h = np.maximum(np.float32(0), yy2 - yy1)
        inter = w * h
        with np.errstate(invalid="ignore", divide="ignore"):
            ovr = inter / (areas[i] + areas[rest] - inter)
        sup[rest[ovr.astype(np.float64) > thr]] = True
    return keep


def decode(raw, layout, conf=0.001, iou=0.7, max_det=300, max_nms=30000, multi_label=True, agnostic=False,
           offset_wh=None):
    """The detections in input pixels: list of (box float32[4], score float32, class, anchor).
    offset_wh: instead of per-class NMS, Ultralytics' trick (boxes + class * offset_wh in float32, one
    NMS) -- only to show that the tests tell the two apart."""
    boxes, scores, classes, anchors = candidates(raw, layout, conf, multi_label)
    if offset_wh is not None and not agnostic:
        shifted = (boxes + (classes.astype(np.float32) * np.float32(offset_wh))[:, None]).astype(np.float32)
        order = np.argsort(-scores.astype(np.float64), kind="stable")[:max_nms]
        kept = nms_kernel(shifted, scores, order, iou)[:max_det]
        return [(boxes[i], scores[i], int(classes[i]), int(anchors[i])) for i in kept]
    order = np.argsort(-scores.astype(np.float64), kind="stable")[:max_nms]
    rank = np.empty(len(scores), np.int64)
    rank[order] = np.arange(len(order))
    kept = []
    groups = [None] if agnostic else sorted(set(classes[order].tolist()))
    for g in groups:
        sel = order if g is None else order[classes[order] == g]
        kept += nms_kernel(boxes, scores, sel, iou)
    kept.sort(key=lambda i: rank[i])
    kept = kept[:max_det]
    return [(boxes[i], scores[i], int(classes[i]), int(anchors[i])) for i in kept]


def to_original(box, meta, letterbox_inverse="ultralytics", clip=True):
    """One float32 xyxy box to original pixels (float64), as a COCO [x, y, w, h] list."""
    b = [float(v) for v in box]
    W, H = meta["width"], meta["height"]
    if meta.get("mode") == "letterbox" and letterbox_inverse == "ultralytics":
        iw, ih = meta["input_width"], meta["input_height"]
        gain = min(ih / H, iw / W)
        px = round((iw - W * gain) / 2 - 0.1)
        py = round((ih - H * gain) / 2 - 0.1)
        b = [(v - (py if k & 1 else px)) / gain for k, v in enumerate(b)]
    else:
        b = [(v - meta["offset_y"]) / meta["scale_y"] if k & 1 else (v - meta["offset_x"]) / meta["scale_x"]
             for k, v in enumerate(b)]
    if clip:
        b = [min(max(v, 0.0), H if k & 1 else W) for k, v in enumerate(b)]
    return [b[0], b[1], b[2] - b[0], b[3] - b[1]]


def meta_for(w, h, iw, ih, mode):
    """meta.json as parity's preprocess writes it (stages/preprocess/geometry.c)."""
    if mode == "letterbox":
        r = min(ih / h, iw / w)
        rw, rh = round(w * r), round(h * r)
        left, top = round((iw - rw) / 2 - 0.1), round((ih - rh) / 2 - 0.1)
        sx, sy, ox, oy = rw / w, rh / h, float(left), float(top)
    else:
        sx, sy, ox, oy = iw / w, ih / h, 0.0, 0.0
    return {"width": w, "height": h, "input_width": iw, "input_height": ih, "scale_x": sx, "scale_y": sy,
            "offset_x": ox, "offset_y": oy, "mode": mode}
