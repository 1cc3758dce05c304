#!/usr/bin/python3
# A check that judged nothing is never a PASS (issue 39): report over a
# hand-made plan whose cells' results judged nothing — compare's "judged":
# false (no reference detection above the score floor, only empty tensors),
# a missing compare result, no mAP (-1: no ground truth) — says "not judged"
# in results.json, JUnit (failure type not-judged) and the verdict, which
# fails; no expected failure excuses it; a report of no check at all fails,
# unless its cells are the reference alone (said so, not a failure: issue 34);
# --cells naming a cell the plan lacks is refused.
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done, bindir, one_line_error

tmp = tempfile.mkdtemp(prefix="parity-judged-")
report = os.path.join(bindir(), "report")


def write(name, obj):
    p = os.path.join(tmp, name)
    json.dump(obj, open(p, "w"))
    return p


def mapj(ap):
    return {"stats": {"AP": ap, "AP50": ap}}


def plan(case, fp16_compare, fp16_map, expected=None):
    """A two-cell plan: the reference (fp32) and fp16 checked by compare, map_drop, finite."""
    cells = []
    for prec, cmp, mp in (("fp32", None, mapj(0.6)), ("fp16", fp16_compare, fp16_map)):
        c = {"name": "v__" + prec, "variant": "v", "precision": prec, "is_reference": prec == "fp32",
             "checks": ["finite"] if prec == "fp32" else ["compare", "map_drop", "finite"], "expected_failure": expected if prec == "fp16" else None}
        if cmp is not None:
            c["compare"] = write("%s-%s-compare.json" % (case, prec), cmp)
        if mp is not None:
            c["map"] = write("%s-%s-map.json" % (case, prec), mp)
        cells.append(c)
    return write(case + "-plan.json", {"model": "m", "reference": "v__fp32", "variants": ["v"],
                                       "precisions": [{"name": "fp32"}, {"name": "fp16"}],
                                       "thresholds": {"max_map_drop": 5.0}, "cells": cells})


def run_report(planf, case, cells=None):
    out = os.path.join(tmp, "out-" + case)
    args = [report, "--plan", planf, "-o", out] + (["--cells", cells] if cells else [])
    p = subprocess.run(args, capture_output=True, text=True)
    res = json.load(open(os.path.join(out, "results.json"))) if p.returncode == 0 else None
    junit = ET.parse(os.path.join(out, "junit.xml")) if p.returncode == 0 else None
    v = subprocess.run([report, "--verdict", os.path.join(out, "results.json")], capture_output=True, text=True) if res else None
    return p, res, junit, v


judged_ok = {"passed": True, "judged": True, "tensors": []}
CASES = {   # case: (fp16 compare.json, fp16 map.json, the check not judged, words in its reason)
    "below-floor": ({"passed": False, "judged": False, "tensors": [],
                     "not_judged": "no reference detection at or above the score floor 0.3 (the reference's best score is 0.052)"},
                    mapj(0.6), "compare", "score floor 0.3"),
    "empty-tensors": ({"passed": False, "judged": False, "tensors": [], "not_judged": "every compared tensor is empty (0 elements)"},
                      mapj(0.6), "compare", "empty"),
    "no-compare": (None, mapj(0.6), "compare", "no compare result"),
    "no-map": (judged_ok, mapj(-1.0), "map_drop", "no mAP"),
}
for case, (cmp, mp, check, words) in CASES.items():
    for expected in (None, "known to fail"):
        name = case + ("-xfail" if expected else "")
        p, res, junit, v = run_report(plan(name, cmp, mp, expected), name)
        ks = [k for k in (res or {}).get("checks", []) if k["check"] == check and k["cell"] == "v__fp16"]
        k = ks[0] if ks else {}
        fails = [t for t in (junit.iter("failure") if junit else []) if t.get("type") == "not-judged"]
        ok(p.returncode == 0 and res["verdict"] == "FAIL" and res["checks_not_judged"] == 1 and k.get("judged") is False
           and k.get("passed") is False and k.get("expected") is False and k["reason"].startswith("not judged:") and words in k["reason"]
           and "(1 not judged)" in res["verdict_line"] and len(fails) == 1 and v.returncode == 1 and "not judged" in v.stdout,
           "%s%s: %s not judged: FAIL in results.json, JUnit and --verdict%s" % (case, " (cell expected to fail)" if expected else "",
                                                                              check, ", no xfail excuses it" if expected else ""),
           p.stderr + json.dumps(res)[:600])

# the same plan with everything judged passes (the cases above fail for what they lack)
p, res, junit, v = run_report(plan("good", judged_ok, mapj(0.6)), "good")
ok(p.returncode == 0 and res["verdict"] == "PASS" and res["checks_not_judged"] == 0 and v.returncode == 0
   and all(k["judged"] for k in res["checks"]), "control: the plan with judged results passes", p.stderr + json.dumps(res)[:400])

# the reference alone (make validate PRECISIONS=fp32, issue 34): no check applies to it (its finite
# check needs a compare result), and there is nothing to compare it with. Nothing judged is never a
# PASS: the run fails, and the verdict says why (reference only) and how to judge something
p, res, junit, v = run_report(plan("good", judged_ok, mapj(0.6)), "ref-only", "v__fp32")
ok(p.returncode == 0 and res["verdict"] == "FAIL" and res.get("reference_only") is True and res["checks_total"] == 0
   and "reference only" in res["verdict_line"] and "v__fp32" in res["verdict_line"] and "nothing was compared" in res["verdict_line"]
   and "AP: 60.0" in res["verdict_line"] and "add a precision or variant" in res["verdict_line"]
   and v.returncode == 1 and "reference only" in v.stdout
   and [t for t in junit.iter("failure") if t.get("type") == "not-judged"] and not list(junit.iter("skipped")),
   "the reference cell alone: FAIL, reference only, nothing compared, its AP named, how to judge one (results.json, JUnit failure, --verdict)",
   json.dumps(res)[:600])

# nothing to judge at all and not the reference: a cell whose checks are none still fails
pl = json.load(open(plan("good", judged_ok, mapj(0.6))))
pl["cells"][1]["checks"] = []
p, res, junit, v = run_report(write("nocheck-plan.json", pl), "no-check", "v__fp16")
ok(p.returncode == 0 and res["verdict"] == "FAIL" and res["checks_total"] == 0 and "nothing judged" in res["verdict_line"]
   and "reference_only" not in res and v.returncode == 1 and [t for t in junit.iter("failure") if t.get("type") == "not-judged"],
   "a report with no check over a non-reference cell: FAIL, nothing judged (results.json, JUnit, --verdict)", json.dumps(res)[:400])
p, res, junit, v = run_report(plan("good", judged_ok, mapj(0.6)), "nosuch", "nosuchcell__fp32")
ok(one_line_error(p.returncode, p.stderr, "'nosuchcell__fp32' is not a cell"), "report --cells nosuchcell__fp32: refused, exit 2",
   p.stderr)
ok(not os.path.exists(os.path.join(tmp, "out-nosuch")), "and nothing written")
done()
