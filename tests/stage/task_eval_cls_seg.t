#!/usr/bin/python3
# task-eval --task classification and segmentation against independent numpy
# computations on generated runs: top-1/top-5 with numpy.argsort(-s,
# kind="stable") (ties to the lower class index; ties are generated on
# purpose), top-1 flips against a reference run; mIoU, per-class IoU, mAcc and
# pixel accuracy from a numpy confusion matrix (np.bincount) over every pixel,
# ignore_index, classes absent from both sides left out of the mean (NaN),
# logits with ties, label-map outputs, palette PNG GT; matting MAE/MSE and the
# boundary band computed here from its definition. Bad input: unknown classes
# in a label map, a wrong-size GT, a class file whose count is not the
# output's, a missing GT, a missing label: exit 2 naming the file.
import json
import os
import shutil
import sys
import tempfile

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done, run, one_line_error

tmp = tempfile.mkdtemp(prefix="task-eval-cls-seg.")
rng = np.random.default_rng(3535)


def p(*a):
    return os.path.join(tmp, *a)


def evaluate(*args):
    js = p("r.json")
    if os.path.exists(js):
        os.remove(js)
    rc, out, err = run("task-eval", "--json", js, "-q", *args)
    return rc, (json.load(open(js)) if rc == 0 else None), err


# ---- classification ----
NC, N = 7, 60
scores = rng.integers(0, 4, (N, NC)).astype(np.float32)   # few values: many ties
ref_scores = scores.copy()
ref_scores[::5] = rng.normal(0, 1, (len(ref_scores[::5]), NC)).astype(np.float32)
labels = rng.integers(0, NC, N)
for i in range(N):
    for d, s in (("run", scores), ("ref", ref_scores)):
        os.makedirs(p(d, "img%03d" % i))
        np.save(p(d, "img%03d" % i, "logits.npy"), s[i][None])
with open(p("labels.csv"), "w") as f:
    f.write("file,label\n" + "".join("img%03d.jpg,%d\n" % (i, labels[i]) for i in range(N)))
json.dump({"img%03d" % i: int(labels[i]) for i in range(N)}, open(p("labels.json"), "w"))
open(p("classes.txt"), "w").write("".join("c%d\n" % k for k in range(NC)))

order = np.argsort(-scores, axis=1, kind="stable")
top1 = 100 * np.mean(order[:, 0] == labels)
top5 = 100 * np.mean([labels[i] in order[i, :5] for i in range(N)])
flips = 100 * np.mean(np.argmax(scores, 1) != np.argmax(ref_scores, 1))
for lf in ("labels.csv", "labels.json"):
    rc, r, err = evaluate("--task", "classification", "--dt", p("run"), "--ref", p("ref"), "--labels", p(lf),
                          "--classes", p("classes.txt"))
    if ok(rc == 0, "classification with %s: evaluated" % lf, err):
        m = r["metrics"]
        ok(abs(m["top1"]["value"] - top1) < 1e-9 and abs(m["top5"]["value"] - top5) < 1e-9,
           "top-1 %.2f %% and top-5 %.2f %% equal numpy's stable argsort" % (top1, top5), m)
        ok(abs(m["top1_flips"]["value"] - flips) < 1e-9, "top-1 flips %.2f %% against the reference equal numpy's" % flips, m)
ok(0 < top1 < 100 and top5 > top1 and flips > 0, "the generated case has errors, ties and flips")

nan = scores[3].copy()
nan[2] = np.nan
np.save(p("run", "img003", "logits.npy"), nan[None])
rc, r, err = evaluate("--task", "classification", "--dt", p("run"), "--labels", p("labels.json"))
want = 100 * np.mean([order[i, 0] == labels[i] for i in range(N) if i != 3])
ok(rc == 0 and abs(r["metrics"]["top1"]["value"] - want * (N - 1) / N) < 1e-9 and r["per_sample"][3]["rank"] == -1,
   "a NaN score makes its sample wrong", err)
np.save(p("run", "img003", "logits.npy"), scores[3][None])

open(p("classes6.txt"), "w").write("".join("c%d\n" % k for k in range(NC - 1)))
rc, r, err = evaluate("--task", "classification", "--dt", p("run"), "--labels", p("labels.json"), "--classes", p("classes6.txt"))
ok(one_line_error(rc, err, "classes6.txt", "6 class names", "7 classes"), "a class file that does not match the output width", err)
json.dump({"img%03d" % i: int(labels[i]) for i in range(1, N)}, open(p("labels_short.json"), "w"))
rc, r, err = evaluate("--task", "classification", "--dt", p("run"), "--labels", p("labels_short.json"))
ok(one_line_error(rc, err, "labels_short.json", "img000"), "a sample without a label is named", err)
open(p("labels_bad.csv"), "w").write("a,1\nb,x\n")
rc, r, err = evaluate("--task", "classification", "--dt", p("run"), "--labels", p("labels_bad.csv"))
ok(one_line_error(rc, err, "labels_bad.csv:2", "not a class index"), "a bad labels line names file and line", err)
json.dump({"img%03d" % i: 9 for i in range(N)}, open(p("labels_big.json"), "w"))
rc, r, err = evaluate("--task", "classification", "--dt", p("run"), "--labels", p("labels_big.json"))
ok(one_line_error(rc, err, "labels_big.json", "outside the output's 7 classes"), "a label beyond the output width", err)

# ---- segmentation ----
C, IGN = 6, 255
SIZES = [(9, 13), (17, 5), (32, 24), (1, 1), (20, 20)]
gts, preds = [], []
for i, (h, w) in enumerate(SIZES):
    sid = "m%d" % i
    logits = rng.integers(0, 3, (1, C, h, w)).astype(np.float32)   # ties across classes
    logits[:, 5] = -1   # class 5 never predicted ...
    gt = rng.integers(0, C - 2, (h, w)).astype(np.uint8)   # ... nor in GT (absent: NaN); class 4 predicted only
    gt[rng.random((h, w)) < 0.1] = IGN
    os.makedirs(p("seg", sid))
    np.save(p("seg", sid, "logits.npy"), logits)
    os.makedirs(p("gt"), exist_ok=True)
    im = Image.fromarray(gt, mode="P")
    im.putpalette([v for k in range(256) for v in (k, 255 - k, (7 * k) % 256)])
    im.save(p("gt", sid + ".png"))   # palette PNG: the indices are the classes
    gts.append(gt.reshape(-1))
    preds.append(np.argmax(logits[0], axis=0).reshape(-1))
g, q = np.concatenate(gts), np.concatenate(preds)
keep = g != IGN
cm = np.bincount(g[keep].astype(np.int64) * C + q[keep], minlength=C * C).reshape(C, C)
tp = np.diag(cm).astype(np.float64)
with np.errstate(invalid="ignore", divide="ignore"):
    iou = tp / (cm.sum(0) + cm.sum(1) - tp)
    acc = tp / cm.sum(1)
miou, macc, aacc = np.nanmean(iou) * 100, np.nanmean(acc) * 100, tp.sum() / cm.sum() * 100
rc, r, err = evaluate("--task", "segmentation", "--dt", p("seg"), "--gt-maps", p("gt"))
if ok(rc == 0, "segmentation: evaluated", err):
    m = r["metrics"]
    ok(abs(m["miou"]["value"] - miou) < 1e-9, "mIoU %.4f equals the numpy confusion matrix's" % miou, (m, miou))
    ok(abs(m["macc"]["value"] - macc) < 1e-9 and abs(m["aacc"]["value"] - aacc) < 1e-9, "mAcc and pixel accuracy equal numpy's", m)
    got = [c["iou"] for c in r["per_class"]]
    ok(got[5] is None and all(abs(got[k] - 100 * iou[k]) < 1e-9 for k in range(5)),
       "per-class IoU equal; the class absent from both sides is null (NaN) and out of the mean", got)
    ok(r["ignored_pixels"] == int((g == IGN).sum()) and r["classes_present"] == 5, "ignored pixels and present classes counted")

# a label-map output (int64 [1, H, W]) is taken as it is
for i, (h, w) in enumerate(SIZES):
    os.makedirs(p("segmap", "m%d" % i))
    np.save(p("segmap", "m%d" % i, "labels.npy"), preds[i].reshape(1, h, w).astype(np.int64))
open(p("classes_seg.txt"), "w").write("".join("k%d\n" % k for k in range(C)))
rc, r, err = evaluate("--task", "segmentation", "--dt", p("segmap"), "--gt-maps", p("gt"), "--classes", p("classes_seg.txt"))
ok(rc == 0 and abs(r["metrics"]["miou"]["value"] - miou) < 1e-9 and r["per_class"][0]["name"] == "k0",
   "a label-map output gives the same mIoU, with class names", err)

# bad input
bad = np.array(Image.open(p("gt", "m2.png")))
bad[3, 4] = 7
Image.fromarray(bad).save(p("gt", "m2.png"))
rc, r, err = evaluate("--task", "segmentation", "--dt", p("seg"), "--gt-maps", p("gt"))
ok(one_line_error(rc, err, "m2.png", "class 7", "pixel %d" % (3 * 24 + 4)), "a label map with an unknown class names file and pixel", err)
Image.fromarray(np.zeros((24, 31), np.uint8)).save(p("gt", "m2.png"))
rc, r, err = evaluate("--task", "segmentation", "--dt", p("seg"), "--gt-maps", p("gt"))
ok(one_line_error(rc, err, "m2.png", "31x24", "24x32"), "a wrong-size GT names both sizes", err)
os.remove(p("gt", "m2.png"))
rc, r, err = evaluate("--task", "segmentation", "--dt", p("seg"), "--gt-maps", p("gt"))
ok(one_line_error(rc, err, "m2.png", "no such file"), "a missing GT label map is named", err)
rc, r, err = evaluate("--task", "segmentation", "--dt", p("seg"), "--gt-maps", p("gt"), "--classes", p("classes6.txt"))
open(p("classes5.txt"), "w").write("".join("k%d\n" % k for k in range(5)))
rc, r, err = evaluate("--task", "segmentation", "--dt", p("seg"), "--gt-maps", p("gt"), "--classes", p("classes5.txt"))
ok(one_line_error(rc, err, "classes5.txt", "5 class names", "6 classes"), "a class file that does not match the logits", err)
ok(not os.path.exists(p("r.json")), "no output after a failure")

# ---- matting ----
h, w, R = 23, 31, 2
alpha = np.zeros((h, w), np.uint8)
alpha[5:15, 8:25] = 255
alpha[10:12, 3:9] = 128
pred = np.clip(alpha / 255.0 + rng.normal(0, 0.2, (h, w)), -0.2, 1.2).astype(np.float32)
os.makedirs(p("mat", "a"))
os.makedirs(p("alpha"))
np.save(p("mat", "a", "alpha.npy"), pred[None, None])
Image.fromarray(alpha).save(p("alpha", "a.png"))
a = alpha.astype(np.float32) / np.float32(255)
hi = np.pad(a > 0.5, 1, constant_values=False)
lo = np.pad(a <= 0.5, 1, constant_values=False)
win = lambda m: np.max([m[1 + dy:1 + dy + h, 1 + dx:1 + dx + w] for dy in (-1, 0, 1) for dx in (-1, 0, 1)], axis=0)
edge = win(hi) & win(lo)
band = np.zeros_like(edge)
ys, xs = np.nonzero(edge)
for y, x in zip(ys, xs):
    band[max(0, y - R):y + R + 1, max(0, x - R):x + R + 1] = True
d = np.abs(np.clip(pred.astype(np.float64), 0, 1) - a.astype(np.float64))
rc, r, err = evaluate("--task", "matting", "--dt", p("mat"), "--gt-maps", p("alpha"), "--band-radius", str(R))
if ok(rc == 0, "matting: evaluated", err):
    m = r["metrics"]
    ok(abs(m["mae"]["value"] - d.mean()) < 1e-12 and abs(m["mse"]["value"] - (d ** 2).mean()) < 1e-12,
       "matting MAE and MSE equal numpy's", m)
    ok(abs(m["boundary_mae"]["value"] - d[band].mean()) < 1e-12 and r["band_pixels"] == int(band.sum()) and 0 < band.sum() < h * w,
       "boundary-band MAE equals the definition computed here (%d band pixels)" % band.sum(), m)

shutil.rmtree(tmp)
done()
