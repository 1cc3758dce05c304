#!/usr/bin/python3
"""zoo.py -- the model-zoo test: real architectures exported by PyTorch's
two exporters (tests/zoo/export_zoo.py; graphs in graphs.tar.xz, their
weights dropped), their weights filled by gen_weights.py, run by parity's
FP32 engine and by ONNX Runtime (onnxruntime-node) on the same inputs.

  zoo.py [--subset default|full] [--filter REGEX] [--work DIR]

A model passes when every output agrees at a normalised max error
max |parity - ort| / max |ort| <= 1e-4 (integer outputs exactly, the same
shapes: detections must keep exactly the same boxes). Models listed in
tests/zoo/by_detection.txt (with the reason) are judged by detection
instead: compare --detection against ONNX Runtime, every detection counted
(score floor 0), none missed, extra or relabelled at IoU >= 0.5; their
element-wise error is printed. Models listed in tests/zoo/skip.txt are run
as well and reported as skipped with the reason (and noted when they
pass). The torchvision detectors also run at TF32 and FP16: they must
build and run, and their detections are matched against ONNX Runtime's
FP32 ones and the counts printed (random weights make low-precision
detections diverge: a note, not a criterion). Prints TAP, one line per
model, with error and times.
"""
import argparse, json, os, re, subprocess, sys, tarfile, tempfile, time
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "stage"))
from tap import ok, done, bindir  # noqa: E402
from backend_lib import root, run_backend, read_set, rel_diff, ort_available  # noqa: E402

LIMIT = 1e-4

def load_reasons(fname):
    """{model: reason} from a list of 'name reason' lines (# comments)."""
    out = {}
    for line in open(os.path.join(here, fname)):
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, reason = line.partition(" ")
            out[name] = reason.strip()
    return out

def detection_names(o):
    """The scores, boxes and labels outputs of a detector's set (one of
    each: 1-D float, [N, 4] float, 1-D integer), or None."""
    scores = [k for k, v in o.items() if v.ndim == 1 and v.dtype.kind == "f"]
    boxes = [k for k, v in o.items() if v.ndim == 2 and v.shape[1:] == (4,) and v.dtype.kind == "f"]
    labels = [k for k, v in o.items() if v.ndim == 1 and v.dtype.kind in "iu"]
    if len(scores) != 1 or len(boxes) != 1 or len(labels) != 1:
        return None
    return scores[0], boxes[0], labels[0]

def match_by_detection(a_dir, ref_dir, names):
    """compare --detection A REF, every detection counted (score floor 0):
    its 'detections' statistics, or None when compare could not judge."""
    s, b, l = names
    fd, js = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        subprocess.run([os.path.join(bindir(), "compare"), a_dir, ref_dir, "-q", "--json", js, "--detection",
                        "labels=%s,boxes=%s,scores=%s,score_floor=0" % (l, b, s)], capture_output=True)
        with open(js) as f:
            return json.load(f).get("detections") if os.path.getsize(js) else None
    finally:
        os.unlink(js)

def describe(d):
    if not d:
        return "no detection statistics"
    iou = d.get("iou") or {}
    drift = d.get("score_drift") or {}
    return "%d/%d matched, %d missed, %d extra, %d flips, IoU min %s, score drift max %s" % (
        d["matched"], d["reference_above_floor"], d["missed"], d["extra"], d["label_flips"],
        "%.4f" % iou["min"] if "min" in iou else "-", "%.1e" % drift["max"] if "max" in drift else "-")

def match_detections(p, o):
    """Detections whose scores tie (within 1e-5 of the top score: float
    rounding decides their order, in ONNX Runtime as in parity) may come in
    either order: parity's are put in ONNX Runtime's order, each matched to
    the tied one with the same label and the nearest box. Other outputs
    with one row per detection follow. Returns the reordered parity set."""
    n = {k: v.shape[0] for k, v in o.items() if v.ndim >= 1}
    scores = [k for k, v in o.items() if v.ndim == 1 and v.dtype.kind == "f"]
    boxes = [k for k, v in o.items() if v.ndim == 2 and v.shape[1:] == (4,) and v.dtype.kind == "f"]
    labels = [k for k, v in o.items() if v.ndim == 1 and v.dtype.kind in "iu"]
    if len(scores) != 1 or len(boxes) != 1 or not all(k in p and p[k].shape == o[k].shape for k in o):
        return p
    s, b = scores[0], boxes[0]
    N = o[s].shape[0]
    tol = 1e-5 * max(float(np.max(np.abs(o[s]))) if N else 0.0, 1e-30)
    used, perm = np.zeros(N, bool), np.arange(N)
    for i in range(N):
        cand = [j for j in range(N) if not used[j] and abs(float(p[s][j]) - float(o[s][i])) <= tol
                and all(p[l][j] == o[l][i] for l in labels)]
        if not cand:
            return p
        j = min(cand, key=lambda j: float(np.abs(p[b][j] - o[b][i]).max()))
        used[j], perm[i] = True, j
    return {k: (v[perm] if v.ndim >= 1 and v.shape[0] == N and n.get(k) == N else v) for k, v in p.items()}

def compare(p, o, detection=False):
    if detection:
        p = match_detections(p, o)
    if sorted(p) != sorted(o):
        return None, "output names differ: parity %s, onnxruntime %s" % (sorted(p), sorted(o))
    worst, bad = 0.0, []
    for name in sorted(o):
        a, b = p[name], o[name]
        if a.dtype != b.dtype or a.shape != b.shape:
            bad.append("%s: parity %s %s, onnxruntime %s %s" % (name, a.dtype, a.shape, b.dtype, b.shape))
            continue
        if b.dtype.kind in "biu":
            n = int(np.sum(a != b))
            if n:
                bad.append("%s: %d of %d integer values differ" % (name, n, b.size))
            continue
        if not np.all(np.isfinite(b)) or not np.all(np.isfinite(a)):
            if not np.array_equal(np.isfinite(a), np.isfinite(b)):
                bad.append("%s: non-finite values differ" % name)
                continue
            a, b = np.where(np.isfinite(b), a, 0), np.where(np.isfinite(b), b, 0)
        r = rel_diff(a, b)
        worst = max(worst, r)
        if r > LIMIT:
            bad.append("%s: normalised max error %.3e" % (name, r))
    return worst, "; ".join(bad)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--subset", default=os.environ.get("ZOO", "default"))
    ap.add_argument("--filter", default=os.environ.get("ZOO_FILTER", ""))
    ap.add_argument("--work", default=os.path.join(root, "build", "zoo"))
    a = ap.parse_args()
    if not ort_available():
        ok(False, "onnxruntime-node is installed", "run tools/deps.sh")
        done()
    gdir = os.path.join(a.work, "graphs")
    stamp = os.path.join(gdir, ".extracted")
    tarpath = os.path.join(here, "graphs.tar.xz")
    if not os.path.exists(stamp) or os.path.getmtime(stamp) < os.path.getmtime(tarpath):
        os.makedirs(gdir, exist_ok=True)
        with tarfile.open(tarpath) as t:
            t.extractall(gdir)
        open(stamp, "w").close()
    skips = load_reasons("skip.txt")
    by_detection = load_reasons("by_detection.txt")
    rows = [l.rstrip("\n").split("\t") for l in open(os.path.join(gdir, "manifest.tsv")) if l.strip()]
    rows.sort(key=lambda r: r[0])
    for name, lib, exporter, opset, task, specs, subset in rows:
        if a.subset != "full" and subset != "default":
            continue
        if a.filter and not re.search(a.filter, name):
            continue
        tag = "%s (%s, %s exporter, opset %s, %s)" % (name, lib, exporter, opset, task)
        mdir = os.path.join(a.work, name)
        model = os.path.join(mdir, "model.onnx")
        if not os.path.exists(model) or os.path.getmtime(model) < os.path.getmtime(os.path.join(gdir, name + ".onnx")):
            subprocess.run([sys.executable, os.path.join(here, "gen_weights.py"), os.path.join(gdir, name + ".onnx"),
                            specs, mdir], check=True)
        inp = os.path.join(mdir, "inputs")
        times, res, err = {}, {}, None
        for be in ("parity", "onnxruntime"):
            out = os.path.join(mdir, "out." + be)
            t = time.time()
            rc, _, e = run_backend(be, "run", "--model", model, "--input", inp, "--output", out, "--threads", 2)
            times[be] = time.time() - t
            if rc:
                err = "%s backend exit %d: %s" % (be, rc, e.strip()[-600:])
                break
            res[be] = read_set(out)
        worst, extra = None, ""
        names = detection_names(res["onnxruntime"]) if not err and task == "detection" else None
        ort_out = os.path.join(mdir, "out.onnxruntime")
        if not err:
            worst, err = compare(res["parity"], res["onnxruntime"], task == "detection")
        if names:
            d = match_by_detection(os.path.join(mdir, "out.parity"), ort_out, names)
            if name in by_detection:
                extra += "; judged by detection: %s (element-wise: %s)" % (describe(d), err or "within 1e-4")
                err = None if d and d["passed"] else "detections differ: " + describe(d)
            else:
                extra += "; detections: %s" % describe(d)
        if not err and lib == "torchvision" and names:
            for prec in ("tf32", "fp16"):
                out = os.path.join(mdir, "out." + prec)
                rc, _, e = run_backend("parity", "run", "--model", model, "--input", inp, "--output", out,
                                       "--threads", 2, "--precision", prec)
                if rc:
                    err = "parity %s exit %d: %s" % (prec, rc, e.strip()[-300:])
                    break
                extra += "; %s vs ort fp32: %s" % (prec, describe(match_by_detection(out, ort_out, names)))
        line = "%s: max err %s, parity %.1fs, ort %.1fs%s" % (
            tag, "%.2e" % worst if worst is not None else "-", times.get("parity", 0), times.get("onnxruntime", 0), extra)
        if name in skips:
            if not err:
                print("# note: %s passes now; its skip entry is stale" % name)
            ok(True, line + " # SKIP " + skips[name])
            if err:
                print("#   " + err.replace("\n", "\n#   "))
            continue
        ok(not err, line, err or "")
    done()

if __name__ == "__main__":
    main()
