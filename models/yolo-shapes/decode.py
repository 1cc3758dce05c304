#!/usr/bin/python3
"""Decodes yolo-shapes' raw output [1, 4 + nc, N] (cx, cy, w, h in input pixels,
sigmoid scores) into COCO results, as Ultralytics' val does: every (box, class)
with score > conf (multi-label), per-class NMS (a box is dropped when its IoU
with a better one of its class is > iou), the max_det best, boxes mapped back to
the original image through the letterbox (meta.json: input = original * scale +
offset) and clipped to it.  numpy only: train.py uses it on PyTorch's outputs on
the GPU machine and the CPU side on parity's (infer's output folders):

    decode.py OUTDIR META_DIR RESULTS.json [--tensor output0] [--conf 0.001]
        [--iou 0.7] [--max-det 300]

OUTDIR/<sample-id>/<tensor>.npy and META_DIR/<sample-id>/meta.json; the sample
id is the COCO image id (preprocess --dataset names them so).
"""
import argparse
import json
import os
import sys

import numpy as np

CONF, IOU, MAX_DET, MAX_NMS = 0.001, 0.7, 300, 30000


def nms(boxes, scores, iou):
    """Greedy NMS on xyxy boxes, best first (stable order for ties); the kept
    indices. IoU as torchvision computes it (no +1)."""
    order = np.argsort(-scores, kind="stable")
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    keep = []
    while order.size:
        i = order[0]
        keep.append(i)
        rest = order[1:]
        w = np.clip(np.minimum(boxes[i, 2], boxes[rest, 2]) - np.maximum(boxes[i, 0], boxes[rest, 0]), 0, None)
        h = np.clip(np.minimum(boxes[i, 3], boxes[rest, 3]) - np.maximum(boxes[i, 1], boxes[rest, 1]), 0, None)
        inter = w * h
        ov = inter / (area[i] + area[rest] - inter)
        order = rest[~(ov > iou)]
    return np.array(keep, dtype=np.int64)


def decode_one(pred, conf=CONF, iou=IOU, max_det=MAX_DET):
    """pred [4 + nc, N] float32 -> (boxes xyxy input pixels [K,4], scores [K], labels [K])."""
    pred = np.asarray(pred, dtype=np.float32)
    box, cls = pred[:4].T, pred[4:].T
    xyxy = np.concatenate((box[:, :2] - box[:, 2:] / 2, box[:, :2] + box[:, 2:] / 2), 1)
    i, j = np.nonzero(cls > conf)
    boxes, scores, labels = xyxy[i], cls[i, j], j.astype(np.int64)
    if scores.size > MAX_NMS:
        top = np.argsort(-scores, kind="stable")[:MAX_NMS]
        boxes, scores, labels = boxes[top], scores[top], labels[top]
    keep = []
    for c in np.unique(labels):
        idx = np.nonzero(labels == c)[0]
        keep.append(idx[nms(boxes[idx].astype(np.float64), scores[idx], iou)])
    keep = np.concatenate(keep) if keep else np.zeros(0, np.int64)
    keep = keep[np.argsort(-scores[keep], kind="stable")][:max_det]
    return boxes[keep], scores[keep], labels[keep]


def to_coco(image_id, boxes, scores, labels, meta):
    """Input-pixel xyxy -> original-pixel COCO [x, y, w, h], clipped to the image."""
    sx, sy, ox, oy = meta["scale_x"], meta["scale_y"], meta["offset_x"], meta["offset_y"]
    w, h = meta["width"], meta["height"]
    out = []
    for b, s, l in zip(boxes.astype(np.float64), scores, labels):
        x1 = min(max((b[0] - ox) / sx, 0.0), w)
        y1 = min(max((b[1] - oy) / sy, 0.0), h)
        x2 = min(max((b[2] - ox) / sx, 0.0), w)
        y2 = min(max((b[3] - oy) / sy, 0.0), h)
        out.append({"image_id": int(image_id), "category_id": int(l) + 1,
                    "bbox": [x1, y1, x2 - x1, y2 - y1], "score": float(s)})
    return out


def decode_dir(outdir, metadir, tensor="output0", conf=CONF, iou=IOU, max_det=MAX_DET):
    res = []
    for sid in sorted(os.listdir(metadir)):
        mpath = os.path.join(metadir, sid, "meta.json")
        if not os.path.isfile(mpath):
            continue
        with open(mpath) as f:
            meta = json.load(f)
        pred = np.load(os.path.join(outdir, sid, tensor + ".npy"))
        res += to_coco(int(sid), *decode_one(pred.reshape(pred.shape[-2:]), conf, iou, max_det), meta)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("metadir")
    ap.add_argument("results")
    ap.add_argument("--tensor", default="output0")
    ap.add_argument("--conf", type=float, default=CONF)
    ap.add_argument("--iou", type=float, default=IOU)
    ap.add_argument("--max-det", type=int, default=MAX_DET)
    a = ap.parse_args()
    res = decode_dir(a.outdir, a.metadir, a.tensor, a.conf, a.iou, a.max_det)
    tmp = a.results + ".tmp"
    with open(tmp, "w") as f:
        json.dump(res, f)
    os.replace(tmp, a.results)
    print(f"{len(res)} detections -> {a.results}", file=sys.stderr)


if __name__ == "__main__":
    main()
