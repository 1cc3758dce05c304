#!/usr/bin/python3
"""pycocotools_ref.py — the reference timing for bench/map_eval.sh.

Times what a user of pycocotools runs for an evaluation (loading both
files, evaluate, accumulate, summarize) and prints one JSON line:
{"seconds": S, "stats": {...12 stats (10 for keypoints)...}}.

Usage: pycocotools_ref.py GT.json DT.json [bbox|segm|keypoints]  (default bbox)
Needs pycocotools (not in Debian: `pip install pycocotools` on any machine,
then pass the measured seconds to bench/map_eval.sh as PYCOCOTOOLS_SECONDS).
"""
import contextlib
import io
import json
import sys
import time

from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

NAMES = ["AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl"]
KP_NAMES = ["AP", "AP50", "AP75", "APm", "APl", "AR", "AR50", "AR75", "ARm", "ARl"]
iou_type = sys.argv[3] if len(sys.argv) > 3 else "bbox"

t0 = time.perf_counter()
with contextlib.redirect_stdout(io.StringIO()):
    gt = COCO(sys.argv[1])
    dt = gt.loadRes(sys.argv[2])
    ev = COCOeval(gt, dt, iou_type)
    ev.evaluate()
    ev.accumulate()
    ev.summarize()
seconds = time.perf_counter() - t0
names = KP_NAMES if iou_type == "keypoints" else NAMES
print(json.dumps({"seconds": seconds, "stats": dict(zip(names, map(float, ev.stats)))}))
