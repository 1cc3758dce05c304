#!/usr/bin/python3
# infer with several -i/-o pairs runs them in one session, each sample
# beside the first set's sample of the same name; where it differs from
# that one only in some inputs, only the layers those inputs reach run
# again, on the values the first run kept (engine/share.c, infer/run.c).
# Checked: every output of a shared run is byte for byte what a separate
# run writes (the RT-DETR fixture, whose orig_target_sizes is read in its
# last layers, and a graph built to put the kept values through in-place
# layers, a view and a Concat written in place), at fp32 and fp16, on 1
# and 2 threads; stats.json says which samples reran part (layers_run) and
# the report shows no latency for them; samples whose fixed inputs differ,
# or that only one set has, run whole; bad pairings are usage errors (exit
# 2); plan runs the validation's twin variants (the same preprocessing but
# for extra:) in one infer process, and no others.
import json
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done, run
from backend_lib import tmpdir
from share_lib import fixture_inputs, same_tree, sample_sets

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
fx = os.path.join(root, "tests", "fixtures", "rtdetr-tiny")
tmp = tmpdir("infer-share")
rng = np.random.default_rng(7)


def check_model(tag, model, set_a, set_b, shared_names, whole_names, none_names=()):
    for prec in ("fp32", "fp16"):
        eng = os.path.join(tmp, "%s-%s.engine" % (tag, prec))
        rc, _, err = run("build-engine", model, "-o", eng, "--config", os.path.join(root, "configs", "precisions", prec + ".yaml"))
        if not ok(rc == 0, "%s %s: builds" % (tag, prec), err):
            continue
        for threads in (1, 2):
            t = "%s %s, %d thread%s" % (tag, prec, threads, "s" if threads > 1 else "")
            d = os.path.join(tmp, "%s-%s-%d" % (tag, prec, threads))
            sep_a, sep_b = d + ".a", d + ".b"
            rc1, _, e1 = run("infer", eng, "-i", set_a, "-o", sep_a, "--threads", threads)
            rc2, _, e2 = run("infer", eng, "-i", set_b, "-o", sep_b, "--threads", threads)
            rc, _, err = run("infer", eng, "-i", set_a, "-o", d + ".sa", "--stats", d + ".sa.json",
                             "-i", set_b, "-o", d + ".sb", "--stats", d + ".sb.json", "--threads", threads)
            if not ok(rc == rc1 == rc2 == 0, t + ": separate and shared runs succeed", e1 + e2 + err):
                continue
            ok(same_tree(d + ".sa", sep_a), t + ": the first set's outputs are a separate run's, byte for byte")
            ok(same_tree(d + ".sb", sep_b), t + ": the second set's outputs are a separate run's, byte for byte")
            sb = json.load(open(d + ".sb.json"))
            by = {s["sample"]: s for s in sb["samples"]}
            layers = sb.get("layers", 0)
            ok(sb.get("shared_with") == set_a and layers > 0, t + ": stats name the set it shared with", json.dumps(sb)[:300])
            ok(all(0 < by[n].get("layers_run", layers) < layers for n in shared_names),
               t + ": samples differing only in the varying input reran part of the graph",
               {n: by[n].get("layers_run") for n in shared_names})
            ok(all("layers_run" not in by[n] for n in whole_names), t + ": the others ran whole",
               {n: by[n].get("layers_run") for n in whole_names})
            if none_names:
                ok(all(by[n].get("layers_run") == 0 for n in none_names),
                   t + ": a sample identical to the first set's ran no layer (its outputs are the kept ones)",
                   {n: by[n].get("layers_run") for n in none_names})
            sa = json.load(open(d + ".sa.json"))
            ok("shared_with" not in sa and all("layers_run" not in s for s in sa["samples"]),
               t + ": the first set's stats are a whole run's")


# 1. The RT-DETR fixture: letterbox and letterbox-naive in miniature (the
#    same images, another orig_target_sizes); sample 3's image differs,
#    sample 4 exists in the second set only, sample 0 in the first only,
#    sample 5 is the same in both.
img, sizes, img2 = fixture_inputs(fx, rng)
a = sample_sets(os.path.join(tmp, "rt-a"), {
    "0": {"images": img, "orig_target_sizes": sizes},
    "1": {"images": img, "orig_target_sizes": sizes},
    "2": {"images": img2, "orig_target_sizes": sizes},
    "3": {"images": img, "orig_target_sizes": sizes},
    "5": {"images": img, "orig_target_sizes": sizes}})
b = sample_sets(os.path.join(tmp, "rt-b"), {
    "1": {"images": img, "orig_target_sizes": sizes + np.array([[17, -9]], np.int64)},
    "2": {"images": img2, "orig_target_sizes": np.array([[333, 777]], np.int64)},
    "3": {"images": img2, "orig_target_sizes": np.array([[333, 777]], np.int64)},
    "4": {"images": img, "orig_target_sizes": sizes},
    "5": {"images": img, "orig_target_sizes": sizes}})
check_model("rtdetr-tiny", os.path.join(fx, "rtdetr_tiny_op16.onnx"), a, b, ["1", "2"], ["3", "4"], ["5"])

# 2. Kept values through the memory plan's sharing: a view (Reshape), layers
#    in place on a value that dies there, a Concat whose inputs are written
#    into its output, a graph output outside the rerun part.
nodes = [
    helper.make_node("Relu", ["x"], ["a"]),
    helper.make_node("Sigmoid", ["x"], ["fixed"]),
    helper.make_node("Reshape", ["a", "shape"], ["v"]),
    helper.make_node("Mul", ["v", "s"], ["w"]),
    helper.make_node("Neg", ["x"], ["n"]),
    helper.make_node("Reshape", ["n", "shape"], ["nv"]),
    helper.make_node("Concat", ["nv", "w"], ["cc"], axis=1),
    helper.make_node("Add", ["cc", "s"], ["y"]),
    helper.make_node("Exp", ["nv"], ["e"]),
    helper.make_node("Add", ["e", "w"], ["y2"]),
]
graph = helper.make_graph(
    nodes, "share",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4]),
     helper.make_tensor_value_info("s", TensorProto.FLOAT, [1, 1])],
    [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y", "y2", "fixed")],
    [numpy_helper.from_array(np.array([1, 32], np.int64), "shape")])
model = os.path.join(tmp, "share.onnx")
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), model)
x = rng.standard_normal((1, 2, 4, 4)).astype(np.float32)
x2 = rng.standard_normal((1, 2, 4, 4)).astype(np.float32)
a = sample_sets(os.path.join(tmp, "g-a"), {
    "1": {"x": x, "s": np.array([[1.5]], np.float32)},
    "2": {"x": x2, "s": np.array([[0.25]], np.float32)},
    "3": {"x": x, "s": np.array([[-2.0]], np.float32)}})
b = sample_sets(os.path.join(tmp, "g-b"), {
    "1": {"x": x, "s": np.array([[-3.0]], np.float32)},
    "2": {"x": x2, "s": np.array([[7.0]], np.float32)},
    "3": {"x": x2, "s": np.array([[-2.0]], np.float32)}})
check_model("kept-values", model, a, b, ["1", "2"], ["3"])

# 3. Usage errors: exit 2, one line, nothing written.
eng = os.path.join(tmp, "kept-values-fp32.engine")
for args, what, words in (
        (["-i", a, "-o", os.path.join(tmp, "u1"), "-i", b], "an -i without its -o", "give one -o for each -i"),
        (["-i", a, "-o", os.path.join(tmp, "u2"), "-i", b, "-o", os.path.join(tmp, "u2")], "one -o twice", "given twice"),
        (["-i", a, "-o", os.path.join(tmp, "u3"), "--stats", os.path.join(tmp, "s.json"), "-i", b, "-o", os.path.join(tmp, "u4")],
         "--stats for one of two sets", "give one for each -i"),
        (["-i", a, "-o", os.path.join(tmp, "u5"), "-i", b, "-o", os.path.join(tmp, "u6"), "--dump", "all"],
         "--dump with two sets", "not with --dump")):
    rc, _, err = run("infer", eng, *args)
    ok(rc == 2 and words in err and err.count("\n") == 1, "usage: %s is refused (exit 2, says why)" % what, err)
ok(not any(os.path.exists(os.path.join(tmp, u)) for u in ("u1", "u2", "u3", "u4", "u5", "u6")), "usage errors write nothing")

# 4. The plan: rtdetr's letterbox and letterbox-naive (the same
#    preprocessing but for extra:) run in one infer per precision, the
#    other variants without another variant (precisions grouped in one
#    infer: infer_xshare.t); the sharded form keeps a rule per cell.
pd = os.path.join(tmp, "plan")
rc, _, err = run("plan", os.path.join(root, "configs", "models", "rtdetr.yaml"), "-o", pd)
if ok(rc == 0, "plan: rtdetr plans", err):
    mk = open(os.path.join(pd, "plan.mk")).read()
    infers = [l.split("INFER   rtdetr ", 1)[1].rstrip("'") for l in mk.splitlines()
              if "@echo '  INFER   rtdetr " in l and " shard " not in l]
    groups = [{c.split("__")[0] for c in l.split("+")} for l in infers]
    ok(all(any({"letterbox__" + p, "letterbox-naive__" + p} <= set(l.split("+")) for l in infers)
           for p in ("fp32", "tf32", "fp16", "mixed")),
       "plan: letterbox and letterbox-naive share one infer per precision", infers)
    ok(all(len(g) == 1 or g == {"letterbox", "letterbox-naive"} for g in groups),
       "plan: no other variants share an infer", groups)
    ok(all(("%s/cells/letterbox-naive__%s/out.done &:" % (pd, p)) in mk for p in ("fp32", "tf32")),
       "plan: one grouped rule makes both cells' outputs")
    ok(all(("INFER   rtdetr letterbox-naive__%s shard $*" % p) in mk for p in ("fp32", "fp16")),
       "plan: shards still run each cell alone")
    ok("%s/plan.mk: configs/preprocess/letterbox-naive.yaml" % pd in mk, "plan: a changed preprocess config plans again")

shutil.rmtree(tmp, ignore_errors=True)
done()
