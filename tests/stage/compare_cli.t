#!/usr/bin/python3
# compare as a stage: exit codes 0/1/2, missing and extra tensors and shape
# mismatches reported (never ignored), --per-tensor, folders of samples,
# bad input as one line, byte-identical JSON from run to run.
import json
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from compare_util import encode, save_set
from tap import ok, done, run, one_line_error

tmp = tempfile.mkdtemp(prefix="parity-cmp-cli-")
rng = np.random.default_rng(11)






def path(*p):
    return os.path.join(tmp, *p)


def compare(*args):
    js = path("out%d.json" % len(os.listdir(tmp)))
    rc, out, err = run("compare", *args, "--json", js)
    return rc, (json.load(open(js)) if os.path.exists(js) else None), out, err


ref = {"/head/logits": rng.standard_normal((1, 10)).astype(np.float32),
       "boxes:0": rng.standard_normal((1, 4, 4)).astype(np.float32)}
save_set(path("ref"), ref)
save_set(path("same"), ref)
noisy = {k: (v + 1e-3).astype(np.float32) for k, v in ref.items()}
save_set(path("noisy"), noisy)

rc, js, out, err = compare(path("same"), path("ref"))
ok(rc == 0 and js["passed"] and js["counts"]["passed"] == 2 and "PASSED" in out, "identical sets: exit 0, PASSED", out + err)
rc, js, out, _ = compare(path("noisy"), path("ref"))
ok(rc == 1 and js["counts"]["failed"] == 2 and "FAILED" in out, "1e-3 apart at the default 1e-5: exit 1, FAILED")
rc, js, out, _ = compare(path("noisy"), path("ref"), "--atol", "2e-3")
ok(rc == 0, "1e-3 apart with --atol 2e-3: exit 0")

# --per-tensor: exact names and globs, the last match wins
rc, js, _, _ = compare(path("noisy"), path("ref"), "--per-tensor", "/head/logits=2e-3,0")
st = {t["name"]: t["status"] for t in js["tensors"]}
ok(rc == 1 and st == {"/head/logits": "pass", "boxes:0": "fail"}, "--per-tensor loosens one tensor only (%s)" % st)
tol = [t["tolerance"]["atol"] for t in js["tensors"] if t["name"] == "/head/logits"]
ok(tol == [2e-3], "--per-tensor: the tolerance used is in the JSON")
rc, js, _, _ = compare(path("noisy"), path("ref"), "--per-tensor", "*=2e-3,0")
ok(rc == 0, "--per-tensor with a glob covers every tensor")
rc, js, _, _ = compare(path("noisy"), path("ref"), "--per-tensor", "*=2e-3,0", "--per-tensor", "boxes*=0,0")
ok(rc == 1 and [t["name"] for t in js["tensors"] if t["status"] == "fail"] == ["boxes:0"],
   "--per-tensor: a later specification wins")

# missing, extra, shape mismatch
save_set(path("partial"), {"/head/logits": ref["/head/logits"], "extra/t": ref["/head/logits"],
                           "boxes:0": ref["boxes:0"].reshape(4, 4)})
rc, js, out, _ = compare(path("partial"), path("ref"))
st = {t["name"]: t["status"] for t in js["tensors"]}
ok(rc == 1 and st == {"/head/logits": "pass", "boxes:0": "shape_mismatch", "extra/t": "extra"},
   "a shape mismatch and an extra tensor are reported and fail (%s)" % st)
ok("SHAPE   boxes:0: A float32[4x4], B float32[1x4x4]" in out and "EXTRA   extra/t" in out,
   "the text names the shape mismatch and the extra tensor", out)
rc, js, out, _ = compare(path("ref"), path("partial"))
ok(rc == 1 and js["counts"]["missing"] == 1 and "MISSING extra/t" in out, "a tensor missing in A is reported and fails")

# folders of samples: matched by sample id; a missing sample fails
for s in ("0001", "0002", "0003"):
    save_set(path("treeB", s), ref)
    if s != "0003":
        save_set(path("treeA", s), noisy if s == "0002" else ref)
rc, js, out, _ = compare(path("treeA"), path("treeB"))
st = [(t["sample"], t["name"], t["status"]) for t in js["tensors"]]
ok(rc == 1 and ("0001", "/head/logits", "pass") in st and ("0002", "boxes:0", "fail") in st
   and ("0003", None, "sample_missing") in st, "folders of samples: matched by id, a missing sample reported", st)
ok("[sample 0002]" in out, "the text groups results by sample")

# bad input: one line, exit 2, no JSON written
js = path("never.json")
rc, out, err = run("compare", path("nope"), path("ref"), "--json", js)
ok(one_line_error(rc, err, "nope", "no such file") and not os.path.exists(js), "a missing path: exit 2, one line", err)
os.makedirs(path("corrupt"))
open(path("corrupt", encode("/head/logits") + ".npy"), "wb").write(b"\x93NUMPY\x01\x00garbage")
rc, out, err = run("compare", path("corrupt"), path("ref"), "--json", js)
ok(one_line_error(rc, err, "corrupt") and not os.path.exists(js), "a damaged .npy: exit 2, one line naming it", err)
rc, out, err = run("compare", path("ref"))
ok(one_line_error(rc, err, "expected A and B"), "one operand: exit 2", err)
rc, out, err = run("compare", path("ref"), path("ref"), "--rule", "allclose", "--check-error-stat", "max")
ok(one_line_error(rc, err, "allclose"), "--rule allclose with a statistic: exit 2", err)
rc, out, err = run("compare", path("ref"), path("ref"), "--atol", "-1")
ok(one_line_error(rc, err, "--atol"), "a negative tolerance: exit 2", err)
rc, out, err = run("compare", path("ref"), path("ref"), "--per-tensor", "x=1")
ok(one_line_error(rc, err, "NAME=atol,rtol"), "a malformed --per-tensor: exit 2", err)
rc, out, err = run("compare", path("treeA"), path("ref"))
ok(one_line_error(rc, err, "cannot pair"), "a folder of 2 samples against one set: exit 2", err)

os.makedirs(path("empty1"))
os.makedirs(path("empty2"))
rc, out, err = run("compare", path("empty1"), path("empty2"))
ok(one_line_error(rc, err, "nothing to compare"), "two empty folders: exit 2, nothing to compare", err)

# deterministic: the same inputs give the same bytes
j1, j2 = path("d1.json"), path("d2.json")
r1 = run("compare", path("treeA"), path("treeB"), "--json", j1)
r2 = run("compare", path("treeA"), path("treeB"), "--json", j2)
ok(open(j1, "rb").read() == open(j2, "rb").read() and r1[1] == r2[1], "JSON and text are byte-identical across runs")
rc, out, err = run("compare", "-q", path("noisy"), path("ref"))
ok(rc == 1 and out == "", "--quiet prints nothing and keeps the exit status")

# only empty tensors: nothing judged (issue 39), exit 1, never PASSED; one
# non-empty tensor beside an empty one is judged
save_set(path("empty_a"), {"boxes": np.zeros((1, 0, 4), np.float32)})
save_set(path("empty_b"), {"boxes": np.zeros((1, 0, 4), np.float32)})
rc, j, out, err = compare(path("empty_a"), path("empty_b"))
ok(rc == 1 and j and j["passed"] is False and j["judged"] is False and "empty" in j["not_judged"] and "not judged" in out
   and "FAILED" in out, "only empty tensors: not judged, exit 1", out + err)
save_set(path("empty_a"), {"scores": np.ones((1, 3), np.float32)})
save_set(path("empty_b"), {"scores": np.ones((1, 3), np.float32)})
rc, j, out, err = compare(path("empty_a"), path("empty_b"))
ok(rc == 0 and j and j["passed"] is True and j["judged"] is True and "not_judged" not in j,
   "an empty tensor beside a non-empty one: judged, passes", out + err)
rc, out, _ = run("compare", "--help")
ok(rc == 0 and "usage: compare" in out, "--help")
done()
