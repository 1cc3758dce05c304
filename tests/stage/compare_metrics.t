#!/usr/bin/python3
# compare's statistics against values computed here, independently: by hand
# for one small case, with numpy (Polygraphy's definitions, docs/design.md)
# for the rest: small tensors (quickselect) and large ones (radix select),
# float32, float16 against float32, float64, integers, booleans, NaN and Inf,
# empty and scalar tensors, every --check-error-stat and both rules.
import json
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from compare_util import num, save_set
from tap import ok, done, run

tmp = tempfile.mkdtemp(prefix="parity-cmp-metrics-")
EPS = 2.220446049250313e-16
n_case = 0








def compare(a, b, *args):
    """Writes the two arrays as tensor 't' and runs compare; (rc, json, stdout)."""
    global n_case
    n_case += 1
    da, db = (os.path.join(tmp, "c%d%s" % (n_case, s)) for s in "ab")
    save_set(da, {"t": a})
    save_set(db, {"t": b})
    js = os.path.join(tmp, "c%d.json" % n_case)
    rc, out, err = run("compare", da, db, "--json", js, *args)
    return rc, (json.load(open(js)) if os.path.exists(js) else None), out + err


def close(x, y, rel=1e-9, abs_=0.0):
    x, y = float(x), float(y)
    if np.isnan(y):
        return np.isnan(x)
    if np.isinf(y):
        return x == y
    return abs(x - y) <= max(abs_, rel * abs(y))


def cast_up(x):
    if x.dtype == np.float16:
        return x.astype(np.float32)
    if x.dtype == np.bool_ or x.dtype.kind in "iu":
        return x.astype(np.float64)
    return x


def oracle(a, b, atol=1e-5, rtol=1e-5, stat="elemwise", q=0.99, nan_eq=False, inf_eq=False, rule="polygraphy"):
    """Polygraphy's CompareFunc.simple, plus parity's extra statistics."""
    A, B = cast_up(a), cast_up(b)
    if A.dtype != B.dtype:
        A, B = A.astype(np.float64), B.astype(np.float64)
    with np.errstate(all="ignore"):
        ad = np.array(np.abs(A - B))
        special = np.zeros(ad.shape, bool)
        if inf_eq:
            special |= np.isinf(A) & (A == B)
        if nan_eq:
            special |= np.isnan(A) & np.isnan(B)
        ad[special] = 0
        Be = B.copy()
        if b.dtype.kind == "f":
            Be[Be == 0] += EPS
        rd = np.array(ad / np.abs(Be))
        rd[special] = 0
        if rule == "polygraphy":
            mm = ((ad > atol) | np.isnan(ad)) & ((rd > rtol) | np.isnan(rd))
        else:
            fin = np.isfinite(A) & np.isfinite(B)
            mm = np.where(fin, ~(ad <= A.dtype.type(atol) + A.dtype.type(rtol) * np.abs(B)), ~special)
    o = {"mismatches": int(mm.sum()), "n": ad.size}
    for key, d in (("abs", ad), ("rel", rd)):
        d64 = d.astype(np.float64)
        s = {}
        if d.size == 0:
            s = dict(max=0, min=0, mean=0, median=0, p90=0, p95=0, p99=0, quantile=0)
        else:
            s["max"], s["min"] = d.max(), d.min()
            s["argmax"] = list(np.unravel_index(np.argmax(d), d.shape))
            s["mean"] = d64.mean()
            s["std"] = d64.std() if np.all(np.isfinite(d64)) else np.nan
            s["median"] = np.median(d)
            for k, qq in (("p90", 0.9), ("p95", 0.95), ("p99", 0.99), ("quantile", q)):
                s[k] = np.quantile(d64, qq) if not np.isnan(d64).any() else np.nan
        s["nan"] = int(np.isnan(d).sum())
        o[key] = s
    fin = np.isfinite(A) & np.isfinite(B)
    fa, fb = A[fin].astype(np.float64), B[fin].astype(np.float64)
    if fa.size:
        saa, sbb, sab, noise = (fa * fa).sum(), (fb * fb).sum(), (fa * fb).sum(), ((fa - fb) ** 2).sum()
        o["cosine"] = 1.0 if saa == 0 and sbb == 0 else 0.0 if saa == 0 or sbb == 0 else sab / np.sqrt(saa * sbb)
        o["snr_db"] = np.inf if noise == 0 else -np.inf if sbb == 0 else 10 * np.log10(sbb / noise)
    else:
        o["cosine"] = o["snr_db"] = np.nan
    finite_ad = ad[np.isfinite(ad)].astype(np.float64)
    if finite_ad.size:
        o["hist"], o["edges"] = np.histogram(finite_ad, bins=10)
    o["nonfinite_ad"] = int((~np.isfinite(ad)).sum())
    o["beyond_fp16"] = int((np.isfinite(B) & (np.abs(B) > 65504)).sum())
    o["a_nan"], o["b_nan"] = int(np.isnan(A).sum()), int(np.isnan(B).sum())
    o["a_posinf"], o["b_neginf"] = int(np.isposinf(A).sum()), int(np.isneginf(B).sum())
    with np.errstate(invalid="ignore"):
        sel_a = ~(rd <= rtol)
        sel_r = ~(ad <= atol)
    o["atol_at_rtol"] = np.nan if np.isnan(ad[sel_a]).any() else (ad[sel_a].max() if sel_a.any() else 0.0)
    o["rtol_at_atol"] = np.nan if np.isnan(rd[sel_r]).any() else (rd[sel_r].max() if sel_r.any() else 0.0)
    if stat == "elemwise":
        o["passed"] = o["mismatches"] == 0
    else:
        def failed(v, tol):
            return np.isnan(v) or v > tol
        o["passed"] = not (failed(o["abs"][stat], atol) and failed(o["rel"][stat], rtol))
    return o


def check(label, a, b, *args, **kw):
    """Runs compare and checks every statistic of tensor 't' against the oracle."""
    rc, js, out = compare(a, b, *args)
    o = oracle(a, b, **kw)
    judged = np.asarray(b).size > 0   # a set of only empty tensors judged nothing: exit 1 (issue 39)
    if not ok(js is not None and rc == (0 if o["passed"] and judged else 1) and js["judged"] == judged,
              "%s: exit %s (oracle says %s%s)" % (label, rc, "pass" if o["passed"] else "fail", "" if judged else ", nothing judged"), out):
        return
    t = js["tensors"][0]
    bad = []
    for key in ("abs", "rel"):
        for s in ("max", "min", "mean", "std", "median", "p90", "p95", "p99", "quantile"):
            if s in o[key]:
                tol = 1e-6 if s == "median" else 1e-9
                if not close(num(t[key][s]), o[key][s], rel=tol, abs_=1e-300):
                    bad.append("%s.%s %r vs %r" % (key, s, t[key][s], o[key][s]))
        if "argmax" in o[key] and t[key]["argmax"] != [int(i) for i in o[key]["argmax"]]:
            bad.append("%s.argmax %r vs %r" % (key, t[key]["argmax"], o[key]["argmax"]))
        if t[key]["nan"] != o[key]["nan"]:
            bad.append("%s.nan" % key)
    if t["mismatches"] != o["mismatches"]:
        bad.append("mismatches %d vs %d" % (t["mismatches"], o["mismatches"]))
    if not close(num(t["cosine"]), o["cosine"], 1e-9) or not close(num(t["snr_db"]), o["snr_db"], 1e-9):
        bad.append("cosine/snr %r %r vs %r %r" % (t["cosine"], t["snr_db"], o["cosine"], o["snr_db"]))
    if "hist" in o:
        if t["histogram"]["counts"] != [int(c) for c in o["hist"]]:
            bad.append("histogram %r vs %r" % (t["histogram"]["counts"], list(o["hist"])))
        if not all(close(num(x), y, 1e-12) for x, y in zip(t["histogram"]["edges"], o["edges"])):
            bad.append("histogram edges")
    if t["histogram"]["nonfinite"] != o["nonfinite_ad"]:
        bad.append("histogram nonfinite")
    if t["beyond_fp16"] != o["beyond_fp16"]:
        bad.append("beyond_fp16")
    if (t["a"]["nan"], t["b"]["nan"], t["a"]["posinf"], t["b"]["neginf"]) != (o["a_nan"], o["b_nan"], o["a_posinf"], o["b_neginf"]):
        bad.append("nan/inf counts")
    mt = t["min_tolerance"]
    if kw.get("stat", "elemwise") == "elemwise" and kw.get("rule", "polygraphy") == "polygraphy":
        if not close(num(mt["atol_at_rtol"]), o["atol_at_rtol"]) or not close(num(mt["rtol_at_atol"]), o["rtol_at_atol"]):
            bad.append("min tolerance %r vs %r %r" % (mt, o["atol_at_rtol"], o["rtol_at_atol"]))
    ok(not bad, "%s: statistics match numpy (%d elements)" % (label, o["n"]), "\n".join(bad))


# ---- by hand -----------------------------------------------------------------
# a = [1, 2, 3, 4], b = [1, 2.5, 0, 4.5], atol 0.1, rtol 0.15:
#   |a-b| = [0, .5, 3, .5]; |b| with eps = [1, 2.5, 2^-52, 4.5];
#   rel = [0, .2, 3 * 2^52, .5/4.5]; max abs 3 at 2; mean abs 1; median
#   (.5+.5)/2 = .5; p90 = .5 + (3-.5)*.7 = 2.25, p99 = 3 - 2.5*.03 = 2.925;
#   std: deviations 1, .25, 4, .25 -> sqrt(5.5/4); element 1 fails (.5 > .1
#   and .2 > .15), element 2 fails, element 3 passes (.111 <= .15): 2 mismatches;
#   cosine 24 / sqrt(30 * 27.5); SNR 10 log10(27.5 / 9.5); histogram over
#   [0, 3] in bins of .3: [1, 2, 0, 0, 0, 0, 0, 0, 0, 1]; the smallest atol
#   passing at rtol .15 is 3 (elements 1, 2 fail rtol), the smallest rtol at
#   atol .1 is 3 * 2^52.
a = np.array([1, 2, 3, 4], np.float32)
b = np.array([1, 2.5, 0, 4.5], np.float32)
rc, js, out = compare(a, b, "--atol", "0.1", "--rtol", "0.15")
t = js["tensors"][0]
hand = {
    ("abs", "max"): 3, ("abs", "mean"): 1, ("abs", "median"): 0.5, ("abs", "p90"): 2.25, ("abs", "p99"): 2.925,
    ("abs", "std"): (5.5 / 4) ** 0.5, ("abs", "min"): 0, ("rel", "max"): 3 * 2.0 ** 52, ("rel", "median"): (0.2 + 0.5 / 4.5) / 2,
}
ok(rc == 1 and all(close(num(t[k][s]), v, 1e-6) for (k, s), v in hand.items()) and t["abs"]["argmax"] == [2],
   "hand-computed: max/mean/median/p90/p99/std of |a-b|, max and median of the relative difference", out)
ok(t["mismatches"] == 2 and t["first_mismatch"] == [1], "hand-computed: 2 mismatched elements, the first at (1)")
ok(close(t["cosine"], 24 / (30 * 27.5) ** 0.5, 1e-12) and close(t["snr_db"], 10 * np.log10(27.5 / 9.5), 1e-12),
   "hand-computed: cosine similarity and SNR in dB")
ok(t["histogram"]["counts"] == [1, 2, 0, 0, 0, 0, 0, 0, 0, 1], "hand-computed: histogram of |a-b|")
ok(num(t["min_tolerance"]["atol_at_rtol"]) == 3 and num(t["min_tolerance"]["rtol_at_atol"]) == 3 * 2.0 ** 52
   and num(t["min_tolerance"]["atol"]) == 3, "hand-computed: minimum tolerances")
ok("FAIL" in out and "minimum required tolerance (elemwise error): atol 3 or rtol 1.3511e+16" in out,
   "hand-computed: the text summary states the minimum required tolerance", out)

# ---- against numpy -----------------------------------------------------------
rng = np.random.default_rng(5)
for n in (1000, 1001, 300001):
    b = rng.standard_normal(n).astype(np.float32)
    a = (b + rng.standard_normal(n).astype(np.float32) * 1e-3).astype(np.float32)
    a[::5] = b[::5]
    b[7] = 0
    check("float32 n=%d" % n, a, b, "--atol", "1e-3", "--rtol", "1e-2", atol=1e-3, rtol=1e-2)

shape = (2, 3, 17, 19)
b = (rng.standard_normal(shape) * 100).astype(np.float32)
a = (b * (1 + rng.standard_normal(shape) * 1e-3)).astype(np.float16)
check("float16 vs float32, 4-d", a, b, "--atol", "0.05", "--rtol", "1e-3", atol=0.05, rtol=1e-3)

b = rng.standard_normal(200000)
a = b * (1 + rng.standard_normal(200000) * 1e-7)
check("float64 n=200000", a, b, "--atol", "0", "--rtol", "1e-7", atol=0, rtol=1e-7)

bi = rng.integers(-1000, 1000, (64, 64)).astype(np.int64)
ai = bi + rng.integers(-2, 3, bi.shape)
bi[bi == 0] = 1
check("int64", ai.astype(np.int64), bi, "--atol", "1", "--rtol", "0.001", atol=1, rtol=0.001)
check("int32 vs int64", ai.astype(np.int32), bi, "--atol", "1", "--rtol", "0.001", atol=1, rtol=0.001)
bb = rng.random(100) > 0.5
ab = bb.copy()
ab[:10] = ~ab[:10]
ab[bb & ~ab] = bb[bb & ~ab]   # keep the relative difference finite (no x/0 for b == False)
check("bool", ab, bb, atol=1e-5, rtol=1e-5)

b = rng.standard_normal(500).astype(np.float32) * 1e5
a = b.copy()
a[3], a[10], a[11] = np.nan, np.inf, -np.inf
b[11], b[20] = -np.inf, np.inf
a[20] = np.inf
b[30] = np.nan
a[30] = np.nan
check("NaN and Inf (default)", a, b, atol=1e-5, rtol=1e-5)
check("NaN and Inf, --inf-equal", a, b, "--inf-equal", inf_eq=True)
a2 = a.copy()
a2[3] = b[3]
check("NaN and Inf, --inf-equal --nan-equal", a2, b, "--inf-equal", "--nan-equal", inf_eq=True, nan_eq=True)
c = b.copy()
check("identical with NaN and Inf: mismatches by default", c, c)
check("identical with NaN and Inf: equal with --nan-equal --inf-equal", c, c, "--nan-equal", "--inf-equal",
      nan_eq=True, inf_eq=True)
check("values beyond the FP16 range are counted", b[np.isfinite(b)], b[np.isfinite(b)] * 1.5, atol=1e-5, rtol=1e-5)

# large: vectorised blocks and scalar blocks (those holding NaN/Inf) together
b3 = rng.standard_normal(300000).astype(np.float32)
a3 = (b3 + rng.standard_normal(300000).astype(np.float32) * 1e-3).astype(np.float32)
a3[150000], a3[200001], b3[250002] = np.nan, np.inf, np.inf
check("float32 n=300000 with NaN and Inf in three blocks", a3, b3, "--atol", "1e-3", atol=1e-3)
a3[150000], a3[200001], b3[250002] = 3e38, 3e38, -3e38       # |a-b| overflows to inf in one block
check("float32 n=300000, |a-b| overflowing in one block", a3, b3, "--atol", "1e-3", atol=1e-3)
a3[250002] = b3[250002] = 0
check("float32 n=300000, finite except one block of large values", a3, b3, "--atol", "1e-3", atol=1e-3)

check("empty tensor", np.zeros((0, 3), np.float32), np.zeros((0, 3), np.float32))
check("scalar", np.array(1.5, np.float32), np.array(1.25, np.float32), "--atol", "0.1", atol=0.1)
check("scalar within tolerance", np.array(1.5, np.float32), np.array(1.25, np.float32), "--atol", "0.3", atol=0.3)

b = rng.standard_normal(5000).astype(np.float32)
a = (b + rng.standard_normal(5000).astype(np.float32) * 1e-3).astype(np.float32)
a[:5] += 10
for stat in ("max", "mean", "median", "quantile"):
    for atol in (1e-4, 2e-3, 20.0):
        check("--check-error-stat %s, atol %g" % (stat, atol), a, b, "--check-error-stat", stat, "--quantile", "0.95",
              "--atol", str(atol), "--rtol", "1e-3", stat=stat, q=0.95, atol=atol, rtol=1e-3)
for atol, rtol in ((1e-3, 1e-3), (1e-2, 0), (0, 1e-1), (11, 0)):
    check("--rule allclose atol %g rtol %g" % (atol, rtol), a, b, "--rule", "allclose", "--atol", str(atol),
          "--rtol", str(rtol), rule="allclose", atol=atol, rtol=rtol)
    # numpy's own allclose agrees where both sides are finite
    rc, js, _ = compare(a, b, "--rule", "allclose", "--atol", str(atol), "--rtol", str(rtol))
    ok(rc == (0 if np.allclose(a, b, rtol=rtol, atol=atol) else 1),
       "--rule allclose atol %g rtol %g agrees with numpy.allclose" % (atol, rtol))
done()
