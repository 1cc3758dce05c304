#!/usr/bin/python3
# The HTML report in a real browser: headless Chromium (Debian's) loads
# reports/NAME/index.html from a validation run, and the rendered DOM holds
# the charts with their bars and lines; the screenshot is not blank.
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "stage"))
from tap import ok, done

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
tmp = tempfile.mkdtemp(prefix="parity-chromium-")
flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--user-data-dir=" + os.path.join(tmp, "profile")]

# a report with layerwise charts and histograms: nafnet-ln (FP16 overflow)
r = subprocess.run(["make", "-s", "validate", "MODEL=nafnet-ln"], cwd=root, capture_output=True, text=True)
page = os.path.join(root, "reports", "nafnet-ln", "index.html")
ok(os.path.exists(page) and "FAIL" in r.stdout, "make validate MODEL=nafnet-ln writes its report", r.stdout + r.stderr)
html = open(page).read() if os.path.exists(page) else ""
ok("http" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "") and "<script" not in html,
   "the page is self-contained (no external resources, no scripts)")

dom = subprocess.run(["chromium"] + flags + ["--dump-dom", "file://" + page], capture_output=True, text=True, timeout=120)
charts = re.findall(r'<svg class="chart" id="([^"]+)"(.*?)</svg>', dom.stdout, re.S)
ok(dom.returncode == 0 and len(charts) >= 3, "Chromium renders the page with %d charts" % len(charts), dom.stderr[-2000:])
ids = [c[0] for c in charts]
ok("cells" in ids and any(i.startswith("layers-") for i in ids) and any(i.startswith("hist-") for i in ids),
   "cells, per-layer error and histogram charts are present (%s)" % ", ".join(ids))
empty = [cid for cid, body in charts if not re.search(r"<(rect|polyline)\b", body)]
ok(not empty, "every chart has bars or lines (empty: %s)" % empty)
ok("first failure:" in dom.stdout and "Why it fails" in dom.stdout, "the failing cell's first diverging layer is marked")

shot = os.path.join(tmp, "shot.png")
s = subprocess.run(["chromium"] + flags + ["--screenshot=" + shot, "--window-size=1100,1400", "file://" + page],
                   capture_output=True, text=True, timeout=120)
if os.path.exists(shot):
    import numpy as np
    import cv2
    img = cv2.imread(shot)
    ok(img is not None and img.shape[0] > 500 and float(img.std()) > 5,
       "the screenshot is a real page (%s, pixel std %.1f)" % (img.shape if img is not None else None,
                                                              float(img.std()) if img is not None else 0))
else:
    ok(False, "Chromium writes a screenshot", s.stderr[-2000:])
done()
