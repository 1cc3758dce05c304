#!/usr/bin/python3
# Control flow (If, Loop, Scan) through build-engine and infer: values the
# subgraphs capture from outside (across two levels), loop-carried values
# and scan outputs against numpy; an If with a constant condition folded
# into its branch; subgraph tensors dumped under their subgraph path;
# precision globs reaching inside a body; the same bytes at 1 and 2
# threads. Bad subgraphs: one line naming the node, exit 2.
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as TP, helper as h, numpy_helper

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done, run, one_line_error
from backend_lib import tmpdir, write_set, read_set, save_model

tmp = tmpdir("control-flow")
F = TP.FLOAT


def save(name, nodes, inputs, outputs, inits=(), opset=13):
    return save_model(tmp, name, nodes, inputs, outputs, inits, opset)


def build(model, *extra):
    eng = model + ".engine"
    lay = model + ".layers.json"
    rc, _, err = run("build-engine", model, "-o", eng, "--layers-out", lay, *extra)
    return rc, err, eng, (json.load(open(lay))["layers"] if rc == 0 else None)


def infer(eng, inputs, tag, *extra):
    ind, outd = os.path.join(tmp, tag + ".in"), os.path.join(tmp, tag + ".out")
    write_set(ind, inputs)
    rc, _, err = run("infer", eng, "-i", ind, "-o", outd, *extra)
    return rc, err, (read_set(outd) if rc == 0 else None)


vi = h.make_tensor_value_info

# ---- Loop: carried value, scan output, a captured outer value, and an If
#      inside the body that captures a top-level value (two levels out) ----
then_b = h.make_graph([h.make_node("Add", ["x_in", "bias"], ["t_out"], name="add_bias")], "then",
                      [], [vi("t_out", F, [3])])
else_b = h.make_graph([h.make_node("Sub", ["x_in", "bias"], ["e_out"], name="sub_bias")], "else",
                      [], [vi("e_out", F, [3])])
body = h.make_graph([
    h.make_node("Mul", ["x_in", "scale"], ["x_scaled"], name="scale_x"),
    h.make_node("Identity", ["cond_in"], ["cond_out"], name="keep_going"),
    h.make_node("Cast", ["iter"], ["iter_f"], to=F, name="iter_float"),
    h.make_node("Less", ["iter_f", "half"], ["early"], name="is_early"),
    h.make_node("If", ["early"], ["branch"], then_branch=then_b, else_branch=else_b, name="pick"),
    h.make_node("Add", ["x_scaled", "branch"], ["x_out"], name="step"),
    h.make_node("Identity", ["x_out"], ["scan_out"], name="emit"),
], "body", [vi("iter", TP.INT64, []), vi("cond_in", TP.BOOL, []), vi("x_in", F, [3])],
   [vi("cond_out", TP.BOOL, []), vi("x_out", F, [3]), vi("scan_out", F, [3])])
loop_model = save("loop", [
    h.make_node("Loop", ["M", "", "x0"], ["x_final", "xs"], body=body, name="Loop_0"),
], [vi("x0", F, [3]), vi("scale", F, [3]), vi("bias", F, [3])], [vi("x_final", F, [3]), vi("xs", F, [5, 3])],
   [numpy_helper.from_array(np.array(5, np.int64), "M"), numpy_helper.from_array(np.array(2.0, np.float32), "half")])

x0 = np.array([0.1, -0.3, 0.7], np.float32)
scale = np.array([0.37, 1.3, -1.1], np.float32)
bias = np.array([0.23, 1.01, -2.9], np.float32)
x, xs = x0.copy(), []
for it in range(5):
    x = (x * scale + (x + bias if it < 2 else x - bias)).astype(np.float32)
    xs.append(x.copy())
rc, err, eng, layers = build(loop_model)
ok(rc == 0, "Loop with a nested If builds", err)
rc, err, out = infer(eng, {"x0": x0, "scale": scale, "bias": bias}, "loop1", "--threads", "1", "--dump", "all")
ok(rc == 0 and np.array_equal(out["x_final"], x) and np.array_equal(out["xs"], np.stack(xs)),
   "Loop: carried value and scan output equal numpy's, the If inside reading a top-level value", err or out)
dumped = sorted(k for k in (out or {}) if k.startswith("Loop_0/body/"))
ok("Loop_0/body/x_scaled" in dumped and "Loop_0/body/pick/then_branch/t_out" in dumped and
   "Loop_0/body/pick/else_branch/e_out" in dumped,
   "--dump names subgraph tensors by their subgraph path (%s)" % ", ".join(dumped[:4]), dumped)
rc2, err2, out2 = infer(eng, {"x0": x0, "scale": scale, "bias": bias}, "loop2", "--threads", "2")
ok(rc2 == 0 and all(out2[k].tobytes() == out[k].tobytes() for k in ("x_final", "xs")),
   "the same bytes at 1 and 2 threads", err2)
names = [l["name"] for l in layers or []]
ok("Loop_0/body/scale_x" in names and "Loop_0/body/pick/then_branch/add_bias" in names,
   "the layer report lists subgraph layers by path", names)

cfg = os.path.join(tmp, "p.yaml")
open(cfg, "w").write('precision: fp32\nconstraints: obey\nlayers:\n  - match: "Loop_0/body/scale*"\n    precision: fp16\n')
rc, err, eng16, layers = build(loop_model, "--config", cfg)
prec = {l["name"]: l["precision"] for l in layers or []}
ok(rc == 0 and prec.get("Loop_0/body/scale_x") == "fp16" and prec.get("Loop_0/body/step") == "fp32",
   "a precision glob reaches a layer inside a Loop body", err or prec)
rc, err, out = infer(eng16, {"x0": x0, "scale": scale, "bias": bias}, "loop16")
ok(rc == 0 and not np.array_equal(out["x_final"], x) and np.allclose(out["x_final"], x, rtol=1e-2),
   "the body's fp16 layer computes in fp16 (close to, not equal to, fp32)", err or out)

# ---- If: a runtime condition, a constant one folded into its branch ----
then_b = h.make_graph([h.make_node("Mul", ["a", "k"], ["y_t"], name="times_k")], "t", [], [vi("y_t", F, [2])])
else_b = h.make_graph([h.make_node("Neg", ["a"], ["y_e"], name="negate")], "e", [], [vi("y_e", F, [2])])
if_model = save("if", [h.make_node("If", ["c"], ["y"], then_branch=then_b, else_branch=else_b, name="If_7")],
                [vi("c", TP.BOOL, []), vi("a", F, [2])], [vi("y", F, [2])],
                [numpy_helper.from_array(np.array([3.0, 4.0], np.float32), "k")])
rc, err, eng, _ = build(if_model)
a = np.array([1.5, -2.0], np.float32)
r1 = infer(eng, {"c": np.array(True), "a": a}, "if_t")
r0 = infer(eng, {"c": np.array(False), "a": a}, "if_f")
ok(rc == 0 and r1[0] == 0 and r0[0] == 0 and np.array_equal(r1[2]["y"], a * np.float32([3, 4])) and
   np.array_equal(r0[2]["y"], -a), "If runs the branch its condition picks", err + r1[1] + r0[1])
folded = save("if_const", [h.make_node("If", ["cc"], ["y"], then_branch=then_b, else_branch=else_b, name="If_7")],
              [vi("a", F, [2])], [vi("y", F, [2])],
              [numpy_helper.from_array(np.array([3.0, 4.0], np.float32), "k"),
               numpy_helper.from_array(np.array(False), "cc")])
rc, err, eng, layers = build(folded)
r = infer(eng, {"a": a}, "if_c")
ok(rc == 0 and [l["op"] for l in layers] == ["Neg", "Identity"] and np.array_equal(r[2]["y"], -a),
   "an If whose condition is constant becomes its branch", err or layers)

# ---- Scan: a running sum (state) and its scan output, reversed input ----
sbody = h.make_graph([h.make_node("Add", ["s_in", "row"], ["s_out"], name="acc"),
                      h.make_node("Identity", ["s_out"], ["row_out"], name="emit")], "sb",
                     [vi("s_in", F, [2]), vi("row", F, [2])], [vi("s_out", F, [2]), vi("row_out", F, [2])])
scan_model = save("scan", [h.make_node("Scan", ["s0", "rows"], ["s", "sums"], body=sbody, num_scan_inputs=1,
                                       scan_input_directions=[1], name="Scan_0")],
                  [vi("s0", F, [2]), vi("rows", F, [4, 2])], [vi("s", F, [2]), vi("sums", F, [4, 2])])
rows = np.arange(8, dtype=np.float32).reshape(4, 2)
rc, err, eng, _ = build(scan_model)
r = infer(eng, {"s0": np.zeros(2, np.float32), "rows": rows}, "scan")
want = np.cumsum(rows[::-1], axis=0)
ok(rc == 0 and r[0] == 0 and np.array_equal(r[2]["sums"], want) and np.array_equal(r[2]["s"], want[-1]),
   "Scan: state and scan output (input scanned in reverse) equal numpy's", err + r[1])

# ---- bad subgraphs: one line naming the node, exit 2 ----
nowhere = h.make_graph([h.make_node("Add", ["a", "ghost"], ["y_t"], name="bad_add")], "t", [], [vi("y_t", F, [2])])
bad = save("bad_nowhere", [h.make_node("If", ["c"], ["y"], then_branch=nowhere, else_branch=else_b, name="If_ghost")],
           [vi("c", TP.BOOL, []), vi("a", F, [2])], [vi("y", F, [2])])
rc, err, _, _ = build(bad)
ok(one_line_error(rc, err, "If_ghost", "ghost", "exists nowhere"), "a subgraph reading a name that exists nowhere", err)
two = h.make_graph([h.make_node("Neg", ["a"], ["p"]), h.make_node("Abs", ["a"], ["q"])], "e2", [],
                   [vi("p", F, [2]), vi("q", F, [2])])
bad = save("bad_count", [h.make_node("If", ["c"], ["y"], then_branch=then_b, else_branch=two, name="If_count")],
           [vi("c", TP.BOOL, []), vi("a", F, [2])], [vi("y", F, [2])],
           [numpy_helper.from_array(np.array([3.0, 4.0], np.float32), "k")])
rc, err, _, _ = build(bad)
ok(one_line_error(rc, err, "If_count", "then_branch gives 1", "else_branch 2"),
   "an If whose branches give different output counts", err)
tbody = h.make_graph([h.make_node("Identity", ["cond_in"], ["cond_out"]),
                      h.make_node("Cast", ["v_in"], ["v_out"], to=TP.INT64)], "tb",
                     [vi("i", TP.INT64, []), vi("cond_in", TP.BOOL, []), vi("v_in", F, [2])],
                     [vi("cond_out", TP.BOOL, []), vi("v_out", TP.INT64, [2])])
bad = save("bad_type", [h.make_node("Loop", ["M", "", "v"], ["vf"], body=tbody, name="Loop_type")],
           [vi("v", F, [2])], [vi("vf", F, [2])], [numpy_helper.from_array(np.array(3, np.int64), "M")])
rc, err, _, _ = build(bad)
ok(one_line_error(rc, err, "Loop_type", "changes type", "float32", "int64"), "a Loop whose carried value changes type", err)
cbody = h.make_graph([h.make_node("Identity", ["cond_in"], ["cond_out"]), h.make_node("Identity", ["v_in"], ["v_out"])],
                     "cb", [vi("i", TP.INT64, []), vi("cond_in", TP.BOOL, []), vi("v_in", F, [2])],
                     [vi("cond_out", TP.BOOL, []), vi("v_out", F, [2])])
bad = save("bad_trips", [h.make_node("Loop", ["M", "", "v"], ["vf"], body=cbody, name="Loop_huge")],
           [vi("v", F, [2])], [vi("vf", F, [2])], [numpy_helper.from_array(np.array(10 ** 12, np.int64), "M")])
rc, err, _, _ = build(bad)
ok(one_line_error(rc, err, "Loop_huge", "trip count", "limit"), "a Loop trip count beyond the limit, caught while folding", err)
done()
