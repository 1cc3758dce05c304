#!/usr/bin/python3
# Graphs ONNX Runtime loads that ONNX's rule (nodes in topological order)
# does not hold for: parity sorts them (graph/toposort.c) and says so in the
# layer report. Models from tests/stage/exported_models.py: a seeded shuffle
# of a Conv/Relu net, and the float16 converter's rewrite of it (FP16
# weights, FP32 I/O through graph_input_cast_0 appended after its reader,
# the graph outputs renamed onto the output Casts). Outputs are checked
# against ONNX Runtime (onnxruntime-node):
#  - FP32: rel <= 1e-4 and allclose(rtol=1e-4, atol=1e-5), as backend_ort.t;
#  - the FP16-weight model: both engines compute each Conv from float16
#    operands into a float16 output, only the accumulation order differs, so
#    they agree to a few float16 roundings: one ulp (2^-10 relative) of the
#    output's scale per layer on the longest path (9 layers), i.e.
#    allclose(rtol=9*2^-10, atol=9*2^-10*max|ort|).
# A sorted graph keeps its order exactly; a shuffled one runs bit-identical
# to the sorted one (the same kernels on the same values); a cycle and a
# missing input are refused with one line.
import json
import os
import sys

import numpy as np
import onnx

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done, run, one_line_error
from backend_lib import run_backend, read_set, write_set, tmpdir, rel_diff, ort_available
from exported_models import conv_net, to_fp16_weights, shuffled
from onnx import TensorProto, helper

tmp = tmpdir("engine-sort")
inp = os.path.join(tmp, "in")
x = np.random.default_rng(5).standard_normal((1, 3, 16, 16)).astype(np.float32)
write_set(inp, {"input": x})


def build_and_run(tag, model, *args):
    path = os.path.join(tmp, tag + ".onnx")
    onnx.save(model, path)
    eng, layers, out = (os.path.join(tmp, tag + s) for s in (".engine", ".layers.json", ".out"))
    rc, _, err = run("build-engine", path, "-o", eng, "--layers-out", layers, *args)
    if rc:
        return None, None, err
    rc, _, err2 = run("infer", eng, "-i", inp, "-o", out)
    if rc:
        return None, None, err2
    return read_set(out), json.load(open(layers)), err


def ort(tag, model):
    path = os.path.join(tmp, tag + ".onnx")
    onnx.save(model, path)
    out = os.path.join(tmp, tag + ".ort")
    rc, _, err = run_backend("onnxruntime", "run", "--model", path, "--input", inp, "--output", out, "--threads", 1)
    return read_set(out) if rc == 0 else None, err


def agree(p, o, rtol, atol_rel):
    bad = []
    if p is None or o is None or sorted(p) != sorted(o):
        return ["outputs: parity %s, onnxruntime %s" % (p and sorted(p), o and sorted(o))]
    for k in sorted(o):
        a, b = p[k].astype(np.float64), o[k].astype(np.float64)
        if p[k].dtype != o[k].dtype or a.shape != b.shape:
            bad.append("%s: %s %s vs %s %s" % (k, p[k].dtype, a.shape, o[k].dtype, b.shape))
            continue
        atol = atol_rel * float(np.max(np.abs(b)))
        if not np.allclose(a, b, rtol=rtol, atol=atol):
            bad.append("%s: rel %.3e beyond rtol %g atol %g" % (k, rel_diff(a, b), rtol, atol))
    return bad


def in_order(layers, expected):
    """The layer report's rows follow `expected` (fused layers leave gaps)."""
    pos = [expected.index(r["name"]) if r["name"] in expected else -1 for r in layers["layers"]]
    return -1 not in pos and pos == sorted(pos)


def note_of(layers):
    return " ".join(n for n in layers.get("notes", []) if "re-sorted" in n)


base = conv_net()
names = [n.name for n in base.graph.node]
p_sorted, l_sorted, err = build_and_run("sorted", base)
ok(p_sorted is not None and in_order(l_sorted, names) and not note_of(l_sorted),
   "a sorted graph keeps the file's order (fused Relus aside) and its layer report has no re-sort note", err)

mix = shuffled(base)
moved = sum(a.name != b for a, b in zip(mix.graph.node, names))
p_mix, l_mix, err = build_and_run("shuffled", mix)
ok(p_mix is not None and "%d moved" % moved in note_of(l_mix),
   "a shuffled graph builds; the layer report notes the re-sort", err if p_mix is None else json.dumps(l_mix.get("notes")))
ok(p_mix is not None and p_sorted is not None and all(np.array_equal(p_mix[k], p_sorted[k]) for k in p_sorted),
   "the shuffled graph's outputs are bit-identical to the sorted graph's")
rc1 = run("build-engine", os.path.join(tmp, "shuffled.onnx"), "-o", os.path.join(tmp, "again.engine"))[0]
same = rc1 == 0 and open(os.path.join(tmp, "again.engine"), "rb").read() == \
    open(os.path.join(tmp, "shuffled.engine"), "rb").read()
ok(same, "building the shuffled graph twice writes the same engine bytes")

if not ort_available():
    ok(False, "onnxruntime-node is installed (node_modules/onnxruntime-node)", "run tools/deps.sh")
else:
    o_base, err = ort("sorted", base)
    bad = agree(p_mix, o_base, 1e-4, 1e-5 / max(1e-30, float(np.max(np.abs(o_base["output"])))) if o_base else 0)
    ok(o_base is not None and not bad, "shuffled graph: parity FP32 agrees with onnxruntime", err + "\n".join(bad))
    o_mix, err = ort("shuffled-ort", mix)
    ok(o_mix is not None, "onnxruntime runs the shuffled graph too (the behaviour parity matches)", err)

    f16 = to_fp16_weights(base)
    first_cast = [n.name for n in f16.graph.node].index("graph_input_cast_0")
    reader = [i for i, n in enumerate(f16.graph.node) if "graph_input_cast_0" in n.input][0]
    assert reader < first_cast    # the mechanism under test: the Cast comes after its reader
    p16, l16, err = build_and_run("fp16w", f16)
    ok(p16 is not None and note_of(l16), "converter-written FP16-weight model (graph_input_cast_0 after its reader) "
       "builds, with the re-sort noted", err)
    f16_names = [n.name for n in f16.graph.node]
    expected = ["graph_input_cast_0"] + [n for n in f16_names if n != "graph_input_cast_0"]
    ok(l16 is not None and in_order(l16, expected) and "%d moved" % (first_cast + 1) in note_of(l16),
       "stable: only the misplaced Cast moves (to the front), the rest keep the file's order",
       l16 and [r["name"] for r in l16["layers"]])
    o16, err = ort("fp16w", f16)
    tol = 9 * 2.0 ** -10
    bad = agree(p16, o16, tol, tol)
    ok(not bad, "FP16-weight model: parity agrees with onnxruntime within 9 float16 roundings", err + "\n".join(bad))
    ok(p16 is not None and sorted(p16) == ["output", "side"] and all(v.dtype == np.float32 for v in p16.values()),
       "renamed outputs: the output Casts write 'output' and 'side' as float32", p16 and sorted(p16))

# refused, one line each: a cycle, a missing input, and single assignment
# broken (the fuzzer's find: a second writer or a second graph input of one
# name left readers with the last one's shape)
x_vi = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
y_vi = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])


def refused(name, nodes, inputs, needles, what):
    model = helper.make_model(helper.make_graph(nodes, name, inputs, [y_vi]), opset_imports=[helper.make_opsetid("", 17)])
    path = os.path.join(tmp, name + ".onnx")
    onnx.save(model, path)
    rc, _, err = run("build-engine", path, "-o", os.path.join(tmp, name + ".engine"))
    ok(one_line_error(rc, err, path, *needles), what, err)


N = helper.make_node
refused("cycle", [N("Add", ["x", "b"], ["a"], name="first"), N("Relu", ["a"], ["b"], name="second"),
                  N("Relu", ["a"], ["y"], name="out")], [x_vi], ["'first'", "cycle"],
        "a cycle is refused with one line naming a node on it")
refused("missing", [N("Relu", ["x"], ["a"], name="r"), N("Add", ["a", "ghost"], ["y"], name="add")], [x_vi],
        ["'add'", "'ghost'", "no node produces"],
        "a value no node produces is refused with one line naming the reader and the value")
refused("twice", [N("Relu", ["x"], ["a"], name="r"), N("Neg", ["x"], ["a"], name="n"), N("Relu", ["a"], ["y"], name="out")],
        [x_vi], ["'n'", "'a'", "also writes"],
        "a value written by two nodes is refused with one line naming the second writer and the value")
refused("dupin", [N("Relu", ["x"], ["y"], name="r")], [x_vi, helper.make_tensor_value_info("x", TensorProto.INT64, [3])],
        ["'x'", "listed twice"], "a graph input listed twice is refused with one line")
done()
