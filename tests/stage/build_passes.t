#!/usr/bin/python3
# The build is a visible list of passes (issue 37):
#  1. docs/design.md's pass picture names the passes of engine_build's
#     table (build-engine --list-passes), in order, and each row's function
#     is the one that pass calls in stages/lib/engine/build.c;
#  2. build-engine -v runs them in that order, and on a model made for it
#     each fold removes the nodes it folds (counts derived from the model
#     below, one fold at a time), none with --no-fusion or its fold: off;
#     The folds reach inside control flow: in both branches of an If, a
#     Conv takes its BatchNormalization and Relu, another its SiLU;
#  3. the IR includes no kernel header, and the GEMM tiles no IR header.
import json
import os
import re
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done, run
from backend_lib import tmpdir

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
tmp = tmpdir("build-passes")

# 1. the doc's picture against the table and the code
rc, out, err = run("build-engine", "--list-passes")
table = out.split()
ok(rc == 0 and len(table) > 5, "build-engine --list-passes prints the table", err)
doc = open(os.path.join(root, "docs", "design.md")).read()
m = re.search(r"^    pass +calls +where\n((?:    \S.*\n)+)", doc, re.M)
rows = [l.split()[:2] for l in m.group(1).splitlines()] if m else []
ok([r[0] for r in rows] == table, "docs/design.md lists the table's passes in its order",
   "doc: %s\ntable: %s" % ([r[0] for r in rows], table))
src = open(os.path.join(root, "stages", "lib", "engine", "build.c")).read()
for name, fn in rows:
    body = re.search(r"^static int pass_%s\(build_t \*b, perr_t \*e\)(.*?)^(?:\}|static)" % name, src + "\nstatic",
                     re.M | re.S)
    ok(body and re.search(r"\b%s\b" % fn, body.group(1)), "pass %s calls %s, as the doc says" % (name, fn))

# 2. a model where each fold has one thing to do:
#    x -> Conv c0 -> Conv c1 -> BatchNormalization -> Mul(per-channel k)
#      -> Add(c0: a residual) -> Relu -> Conv c2 -> Mul(c2, Sigmoid(c2)) -> y
C = 4
rng = np.random.default_rng(5)


def const(name, shape):
    return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)


inits = [const("W0", (C, C, 3, 3)), const("W1", (C, C, 3, 3)), const("W2", (C, C, 1, 1)),
         const("k", (1, C, 1, 1)), const("g", (C,)), const("bt", (C,)), const("mu", (C,)),
         numpy_helper.from_array(rng.uniform(0.5, 2, C).astype(np.float32), "var")]
nodes = [helper.make_node("Conv", ["x", "W0"], ["c0"], pads=[1, 1, 1, 1], name="c0"),
         helper.make_node("Conv", ["c0", "W1"], ["c1"], pads=[1, 1, 1, 1], name="c1"),
         helper.make_node("BatchNormalization", ["c1", "g", "bt", "mu", "var"], ["bn"], name="bn"),
         helper.make_node("Mul", ["bn", "k"], ["sc"], name="scale"),
         helper.make_node("Add", ["sc", "c0"], ["res"], name="residual"),
         helper.make_node("Relu", ["res"], ["r"], name="relu"),
         helper.make_node("Conv", ["r", "W2"], ["c2"], name="c2"),
         helper.make_node("Sigmoid", ["c2"], ["s"], name="sig"),
         helper.make_node("Mul", ["c2", "s"], ["y"], name="silu")]
graph = helper.make_graph(nodes, "folds", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, C, 8, 8])], inits)
model = os.path.join(tmp, "folds.onnx")
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), model)
n = len(nodes)
# what each pass removes: BN (1), the scale Mul (1), Sigmoid and its Mul (2),
# the residual Add (1), the Relu (1); nothing else changes the count
removes = {"fold_batchnorm": 1, "fold_scale_bias": 1, "fuse_silu": 2, "fold_residual": 1, "fuse_activations": 1}


def trace(*args):
    rc, _, err = run("build-engine", model, "-o", os.path.join(tmp, "e.engine"), "-v", *args)
    lines = [re.match(r"build-engine: pass (\w+) +(\d+) -> +(\d+) nodes$", l) for l in err.splitlines()]
    return rc, [(x.group(1), int(x.group(2)), int(x.group(3))) for x in lines if x], err


def expected(off):
    want, count = [], 0
    for name in table:
        before = count
        count = n if name == "load" else count - (0 if name in off else removes.get(name, 0))
        want.append((name, before, count))
    return want


rc, got, err = trace()
ok(rc == 0 and got == expected(()), "-v: every pass in the table's order, each fold removing its nodes",
   "got %s\nwant %s\n%s" % (got, expected(()), err))
rc, got, err = trace("--no-fusion")
ok(rc == 0 and got == expected(tuple(removes)), "--no-fusion: no fold removes a node", "got %s\n%s" % (got, err))
cfg = os.path.join(tmp, "nobn.yaml")
open(cfg, "w").write("fold: {batchnorm: false}\n")
rc, got, err = trace("--config", cfg)
# the BN stays, so the scale Mul follows a BN, not a Conv, and the residual
# Add a Mul: neither folds; the Relu then follows the Add, no Conv
ok(rc == 0 and got == expected(("fold_batchnorm", "fold_scale_bias", "fold_residual", "fuse_activations")),
   "fold: {batchnorm: false}: the BN and what depends on its fold stay", "got %s\n%s" % (got, err))



def branch(tag):
    """x -> Conv -> BatchNormalization -> Relu -> Conv -> Mul(., Sigmoid(.))"""
    p = tag + "_"
    nodes = [helper.make_node("Conv", ["x", "W0"], [p + "c"], pads=[1, 1, 1, 1], name=p + "conv"),
             helper.make_node("BatchNormalization", [p + "c", "g", "bt", "mu", "var"], [p + "bn"], name=p + "bn"),
             helper.make_node("Relu", [p + "bn"], [p + "r"], name=p + "relu"),
             helper.make_node("Conv", [p + "r", "W2"], [p + "d"], name=p + "conv2"),
             helper.make_node("Sigmoid", [p + "d"], [p + "s"], name=p + "sig"),
             helper.make_node("Mul", [p + "d", p + "s"], [p + "y"], name=p + "silu")]
    return helper.make_graph(nodes, tag, [], [helper.make_tensor_value_info(p + "y", TensorProto.FLOAT, [1, C, 8, 8])])


zero = numpy_helper.from_array(np.array(0, np.float32), "zero")
cf = helper.make_graph([helper.make_node("ReduceSum", ["x"], ["sum"], keepdims=0, name="sum"),
                        helper.make_node("Greater", ["sum", "zero"], ["cond"], name="cond"),
                        helper.make_node("If", ["cond"], ["y"], then_branch=branch("t"), else_branch=branch("e"),
                                         name="if")],
                       "cf", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, 8, 8])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, C, 8, 8])], inits + [zero])
cf_model = os.path.join(tmp, "cf.onnx")
onnx.save(helper.make_model(cf, opset_imports=[helper.make_opsetid("", 13)]), cf_model)
lay = os.path.join(tmp, "cf.layers.json")
rc, _, err = run("build-engine", cf_model, "-o", os.path.join(tmp, "cf.engine"), "--layers-out", lay)
fused = {l["name"]: l["fused_from"] for l in json.load(open(lay))["layers"]} if rc == 0 else {}
for tag, where in (("t", "then_branch"), ("e", "else_branch")):
    q = "if/%s/%s_" % (where, tag)
    ok(fused.get(q + "conv") == [q + "conv", q + "bn", q + "relu"] and
       fused.get(q + "conv2") == [q + "conv2", q + "sig", q + "silu"],
       "the folds reach the If's %s" % where, "%s\n%s" % (fused, err))

# 3. layering
lib = os.path.join(root, "stages", "lib")
p = subprocess.run(["grep", "-rn", '#include "ops/', os.path.join(lib, "graph")], capture_output=True, text=True)
ok(p.returncode == 1 and not p.stdout, "no file of graph/ includes an ops/ header", p.stdout)
tiles = [os.path.join(lib, "ops", "gemm", f) for f in ("fgemm.h", "fgemm_impl.h", "fgemm_avx2.c", "fgemm_avx512.c",
                                                  "fgemm_generic.c")]
p = subprocess.run(["grep", "-n", '#include "graph/graph.h"'] + tiles, capture_output=True, text=True)
ok(p.returncode == 1 and not p.stdout, "the GEMM tiles take ACT_* from graph/act.h, not the IR", p.stdout)
done()
