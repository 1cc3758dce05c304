#!/usr/bin/python3
# Layerwise dumps held to dump.budget (issue 34: 17 GB of dumps for three
# 1024x1024 images): dump.budget is what the whole run keeps (engines,
# outputs, dumps); the reference's dump gets its share of what the engines
# and the cells' outputs leave (its judged outputs included), keeps every k-th dumped tensor
# in execution order (k the smallest that fits), and the other cells' dumps
# and local runs hold exactly the same tensors; the run prints what the dumps
# take. On the sideout reproducer with a budget a few tensors wide; the
# expected selection is recomputed here from an unlimited dump and the layer
# report's order.
import glob
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "stage"))
from tap import ok, done, run, one_line_error

root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
os.chdir(root)
tmp = tempfile.mkdtemp(prefix="parity-dumpb-")
name = "dumpb-test-%d" % os.getpid()
cfg = "configs/models/%s.yaml" % name
B = "build/" + name
OUT1 = 64 * 64 * 4                # one float32 1x1x64x64 output
SAMPLES = 4
# dump.budget is the run's: 2 engines, 2 cells' outputs (output judged in all
# 4 samples; d1..d3 not judged, kept for the shown sample), then 3 dumps
# (fp32, the reference; fp16 and fp16's local run) of `output` and about
# 40 kB of other tensors each (issue 34)
rc0, _, _ = run("build-engine", "build/models/sideout/sideout.onnx", "-o", tmp + "/est.engine")
E_EST = os.path.getsize(tmp + "/est.engine")
OUTS = 2 * (SAMPLES * OUT1 + 3 * OUT1)
BUDGET = 2 * E_EST + OUTS + 3 * (OUT1 + 40000)


def names(d):
    return sorted(os.path.basename(f)[:-4] for f in glob.glob(os.path.join(d, "*.npy")))


try:
    open(cfg, "w").write(open("configs/models/sideout.yaml").read() + "dump: {budget: %d}\n" % BUDGET)
    p = subprocess.run(["make", "-s", "validate", "MODEL=" + name], capture_output=True, text=True)
    out = p.stdout + p.stderr
    ok(p.returncode == 0 and "PASS" in out, "validate runs with a small dump.budget", out)
    args = json.load(open(B + "/dump.args"))
    ok(args == ["--run-budget", str(BUDGET), "--dumps", "3", "--engines", "2", "--cells", "2"],
       "plan gives the reference's dump the run's budget, the dumps (3), engines (2) and cells (2) it shares with", args)
    E = os.path.getsize(B + "/engines/fp32.engine")
    SHARE = (BUDGET - 2 * E - OUTS) // 3

    # the expected selection: an unlimited dump of the same sample, in the layer report's order;
    # only `output` (judged) is kept whatever the budget, the side outputs are tensors like the others
    sample = sorted(os.listdir(B + "/pre/stretch"))[0]
    rc, _, err = run("infer", B + "/engines/fp32.engine", "-i", "%s/pre/stretch/%s" % (B, sample), "-o", tmp + "/full",
                     "--dump", "all")
    order = [o["name"] for l in json.load(open(B + "/engines/fp32.layers.json"))["layers"] for o in l["outputs"]]
    full = names(tmp + "/full")
    graph_outs = ["output"]
    inter = [t for t in order if t in full and t not in graph_outs]
    size = {t: np.load(os.path.join(tmp, "full", t + ".npy")).nbytes for t in full}
    room = SHARE - sum(size[t] for t in graph_outs)
    want = None
    for k in range(1, len(inter) + 1):
        pick = [t for i, t in enumerate(inter) if i % k == k - 1 and size[t] <= room]
        if sum(size[t] for t in pick) <= room:
            want = sorted(pick + graph_outs)
            break
    ref = names(B + "/cells/stretch__fp32/dump")
    ok(rc == 0 and ref == want and len(inter) > len(want) - 1 > 0,
       "the reference's dump keeps every k-th tensor that fits (%d of %d) and the judged output" % (len(want) - 1, len(inter)),
       {"dumped": ref, "expected": want, "all": inter, "share": SHARE})
    used = sum(np.load(f).nbytes for f in glob.glob(B + "/cells/stretch__fp32/dump/*.npy"))
    ok(used <= SHARE, "its tensors take %d bytes, within its share %d" % (used, SHARE))
    ok(names(B + "/cells/stretch__fp16/dump") == ref and names(B + "/cells/stretch__fp16/local") == ref,
       "the fp16 dump and its local run hold exactly the reference's tensors")
    rows = json.load(open(B + "/cells/stretch__fp16/layerwise.json"))["layerwise"]["samples"][0]["rows"]
    ok(rows and {r["tensor"] for r in rows} <= set(ref), "the layerwise walk compares what the dumps hold",
       [r["tensor"] for r in rows])
    total = sum(np.load(f).nbytes for d in ("stretch__fp32/dump", "stretch__fp16/dump", "stretch__fp16/local")
                for f in glob.glob("%s/cells/%s/*.npy" % (B, d)))
    kept = sum(os.path.getsize(f) for f in glob.glob(B + "/engines/*.engine")) + \
        sum(np.load(f).nbytes for f in glob.glob(B + "/cells/*/out/*/*.npy"))
    ok(total <= 3 * SHARE and kept + total <= BUDGET
       and "infer: dump %s/cells/stretch__fp32/dump: %d of %d tensors" % (B, len(want) - 1, len(inter)) in out
       and "validate: %s: %s takes " % (name, B) in out and "(dump.budget)" in out,
       "engines, outputs and dumps take %d bytes of the %d budget; infer and validate print what they take" % (kept + total, BUDGET),
       out)

    # a budget the engines and outputs alone exceed: said, and the dumps hold the judged output only
    open(cfg, "w").write(open("configs/models/sideout.yaml").read() + "dump: {budget: %d}\n" % (BUDGET // 4))
    p = subprocess.run(["make", "-s", "validate", "MODEL=" + name], capture_output=True, text=True)
    out = p.stdout + p.stderr
    ok(p.returncode == 0 and "cannot be kept: engines and outputs take" in out
       and names(B + "/cells/stretch__fp32/dump") == ["output"],
       "dump.budget below what the engines and outputs take: said, the dumps hold the judged output only", out)

    # the default: 950 MB for engines, outputs and dumps (rtdetr: 4 parity precisions, 7 dumps, 6 variants x 4 precisions)
    rc, _, err = run("plan", "configs/models/rtdetr.yaml", "-o", tmp + "/rt")
    pj = json.load(open(tmp + "/rt/plan.json"))
    n = 1 + 2 * (len([c for c in pj["cells"] if c["layerwise"]]))
    args = json.load(open(tmp + "/rt/dump.args"))
    ok(rc == 0 and n == 7 and args[:4] == ["--run-budget", "950000000", "--dumps", "7"]
       and args[args.index("--cells") + 1] == str(len(pj["cells"])),
       "default budget 950 MB for the run: rtdetr's %d dumps share what its engines and %d cells leave" % (n, len(pj["cells"])),
       args)

    # bad values: one line, exit 2
    open(cfg, "w").write(open("configs/models/sideout.yaml").read() + "dump: {budget: lots}\n")
    rc, _, err = run("plan", cfg, "-o", tmp + "/bad")
    ok(one_line_error(rc, err, "dump.budget: 'lots' is not a size"), "dump.budget: lots is refused", err)
    rc, _, err = run("infer", B + "/engines/fp32.engine", "-i", "%s/pre/stretch/%s" % (B, sample), "-o", tmp + "/x",
                     "--dump-budget", "100")
    ok(rc == 2 and "--dump-budget and --dump-like need --dump" in err and not os.path.exists(tmp + "/x"),
       "infer --dump-budget without --dump: usage error", err)
finally:
    subprocess.run(["rm", "-rf", cfg, B, "reports/" + name, tmp])
done()
