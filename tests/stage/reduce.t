#!/usr/bin/python3
# reduce (issue 40): from a failing cell to the smallest ONNX that still fails.
#  - The seed reproducers at their failing precision, each against its FP32
#    reference dump (made here with build-engine + infer --dump all) and its
#    config's compare rule: NAFNet's LayerNorm Pow overflow at FP16, the TF32
#    Conv(+Clip), the UNet attention's QK MatMul at FP16: a handful of nodes,
#    the guilty layer named.
#  - A planted fault in the trained RT-DETR (one Conv forced to BF16 by a
#    precision config, everything else FP32): at most 2% of the nodes, the
#    planted layer returned.
#  - Accumulating error (NAFNet with the mixed config: every layer within
#    the rule on its own, the chain not): said so, every layer's own error
#    passing, the window's output failing.
#  - An If and a Loop on the path (the overflow inside the then-branch or the
#    body, reading an outer-scope value): the node kept whole, its outer value
#    a graph input.
#  - Every reduced model: valid ONNX whose nodes are the original's byte for
#    byte (names, attributes, opset); ONNX Runtime runs it on the recorded
#    inputs and agrees with the reference output; parity at the failing
#    precision fails compare's check on it with the recorded error (numpy's
#    own max |a-b| or count of new non-finite values).
#  - Deterministic: a second run at another thread count gives the same bytes.
#  - Bad input: a passing cell exits 1 "nothing to reduce"; a missing, empty
#    or another sample's dump, a plan cell that does not exist or runs on another backend, a file that is
#    no ONNX: exit 2, one line naming it; make refuses a CELL with odd characters.
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from tap import skip, ok, done, run, one_line_error
from backend_lib import read_set, run_backend, write_set, ort_available

import onnx
from onnx import helper, numpy_helper, TensorProto as TP

root = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
tmp = tempfile.mkdtemp(prefix="parity-reduce-")
bm = os.path.join(root, "build", "models")
prec = os.path.join(root, "configs", "precisions")


def dump_of(model, inputs, tag, shapes=()):
    """The FP32 engine's dump of every tensor on the sample: the reference dump."""
    eng = os.path.join(tmp, tag + ".fp32.engine")
    args = []
    for s in shapes:
        args += ["--input-shape", s]
    rc, _, err = run("build-engine", model, "-o", eng, *args)
    if rc:
        return None, err
    d = os.path.join(tmp, tag + ".dump")
    rc, _, err = run("infer", eng, "-i", inputs, "-o", d, "--dump", "all")
    return (d if rc == 0 else None), err


def reduce_cell(tag, model, inputs, dump, cfg, rule, *extra):
    out = os.path.join(tmp, tag)
    rc, _, err = run("reduce", model, "--inputs", inputs, "--reference", dump, "--config", cfg, *rule, "-o", out, "-q",
                     *extra)
    return rc, out, err


def nodes_preserved(orig, red):
    by = {n.name: n.SerializeToString() for n in orig.graph.node}
    same = all(n.name in by and by[n.name] == n.SerializeToString() for n in red.graph.node)
    ops = {(o.domain, o.version) for o in orig.opset_import} == {(o.domain, o.version) for o in red.opset_import}
    return same and ops


def new_nonfinite(a, b):
    return int(np.sum(~np.isfinite(a))) - int(np.sum(~np.isfinite(b)))


def check_reproducer(tag, model, out, cfg, rule, max_nodes):
    """The checks every reduced model must pass; returns the report."""
    rep = json.load(open(os.path.join(out, "report.json")))
    orig, red = onnx.load(model), onnx.load(os.path.join(out, "model.onnx"))
    try:
        onnx.checker.check_model(red)
        valid = ""
    except Exception as ex:          # the checker's message is the diagnostic
        valid = str(ex)
    n = len(red.graph.node)
    ok(not valid and n == rep["nodes_after"] and 1 <= n <= max_nodes and rep["nodes_before"] == len(orig.graph.node),
       "%s: a valid ONNX of %d of %d nodes (at most %d)" % (tag, n, len(orig.graph.node), max_nodes), valid)
    ok(nodes_preserved(orig, red), "%s: its nodes are the model's own (names, attributes, opset)" % tag)
    ins = read_set(os.path.join(out, "inputs"))
    ok(sorted(ins) == sorted(i.name for i in red.graph.input) == sorted(rep["inputs"]),
       "%s: inputs/ holds exactly the cut tensors %s" % (tag, sorted(ins)))
    ref = read_set(os.path.join(out, "reference"))
    target = rep["target"]
    if ort_available():
        o = os.path.join(tmp, tag + ".ort")
        rc, _, err = run_backend("onnxruntime", "run", "--model", os.path.join(out, "model.onnx"), "--input",
                                 os.path.join(out, "inputs"), "--output", o)
        got = read_set(o) if rc == 0 else {}
        b = ref[target].astype(np.float64)
        good = target in got and got[target].shape == b.shape and \
            np.allclose(got[target].astype(np.float64), b, rtol=1e-4, atol=1e-5 * float(np.max(np.abs(b))))
        ok(good, "%s: ONNX Runtime runs it on the recorded inputs and agrees with the FP32 reference" % tag, err)
    else:
        skip("%s: ONNX Runtime runs the reduced model" % tag, "node/onnxruntime-node not usable")
    eng = os.path.join(tmp, tag + ".red.engine")
    rc, _, err = run("build-engine", os.path.join(out, "model.onnx"), "-o", eng, "--config",
                     os.path.join(out, "precision.yaml"))
    po = os.path.join(tmp, tag + ".red.out")
    if rc == 0:
        rc, _, err = run("infer", eng, "-i", os.path.join(out, "inputs"), "-o", po)
    crc, _, cerr = run("compare", po, os.path.join(out, "reference"), *rule, "-q") if rc == 0 else (rc, "", err)
    ok(crc == 1, "%s: parity at the failing precision fails compare's check on it (exit %d)" % (tag, crc), cerr)
    m = rep["measured"]
    if rc == 0:
        a, b = read_set(po)[target], ref[target]
        nf = new_nonfinite(a, b)
        fin = np.isfinite(a) & np.isfinite(b)
        mx = float(np.max(np.abs(a[fin].astype(np.float64) - b[fin]))) if fin.any() else 0.0
        if nf > 0:
            good, what = nf == m["extra_nonfinite"], "%d new non-finite values (recorded %d)" % (nf, m["extra_nonfinite"])
        else:
            good = m["max_abs"] is not None and abs(mx - m["max_abs"]) <= 1e-6 * max(mx, 1e-30)
            what = "max |a-b| %.6g (recorded %s)" % (mx, m["max_abs"])
        ok(good and m["fail"], "%s: the recorded error is what the rerun measures: %s" % (tag, what))
    else:
        ok(False, "%s: the reduced model builds and runs in parity" % tag, err)
    return rep


# ---- the seed reproducers ---------------------------------------------------------
SEEDS = [
    # tag, model, inputs, precision config, compare rule (the config's), most nodes, guilty op, guilty name part
    ("nafnet-ln", os.path.join(bm, "nafnet_ln", "nafnet_ln_op16.onnx"), os.path.join(bm, "nafnet_ln", "input"),
     os.path.join(prec, "fp16.yaml"), ["--atol", "1e-2", "--rtol", "2e-2", "--check-error-stat", "max"], 5, "Pow",
     "LayerNorm"),
    ("convclip", os.path.join(bm, "convclip", "convclip.onnx"), os.path.join(bm, "convclip", "input"),
     os.path.join(prec, "tf32.yaml"), ["--atol", "1e-5", "--rtol", "1e-5", "--check-error-stat", "elemwise"], 2, "Conv",
     "conv"),
    ("unet-attn", os.path.join(bm, "unet_attn", "unet_attn.onnx"), os.path.join(bm, "unet_attn", "input"),
     os.path.join(prec, "fp16.yaml"), ["--atol", "1e-2", "--rtol", "1e-2", "--check-error-stat", "max"], 5, "MatMul",
     "attn"),
]
dumps = {}
for tag, model, inputs, cfg, rule, most, op, part in SEEDS:
    d, err = dump_of(model, inputs, tag)
    dumps[tag] = d
    if not ok(d is not None, "%s: FP32 reference dump" % tag, err):
        continue
    rc, out, err = reduce_cell(tag, model, inputs, d, cfg, rule)
    if not ok(rc == 0, "%s: reduced (exit 0)" % tag, err):
        continue
    rep = check_reproducer(tag, model, out, cfg, rule, most)
    orig = {n.name: n.op_type for n in onnx.load(model).graph.node}
    g = rep["guilty_layers"]
    ok(rep["verdict"] == "layer" and len(g) >= 1 and all(orig[x] == op and part in x for x in g),
       "%s: a layer fails on its own: %s (%s)" % (tag, g, op))
    md = open(os.path.join(out, "repro.md")).read()
    ok(all(s in md for s in ("build-engine model.onnx", "pipeline/backends/onnxruntime run", "trtexec --onnx=model.onnx",
                             "--loadInputs=", "polygraphy run model.onnx", "compare out reference --atol %.10g" % float(rule[1]))),
       "%s: repro.md gives the parity, ONNX Runtime, trtexec and Polygraphy commands" % tag)

# determinism: the same inputs, another thread count, the same bytes
tag, model, inputs, cfg, rule = SEEDS[0][:5]
if dumps[tag]:
    rc, out2, err = reduce_cell(tag + ".again", model, inputs, dumps[tag], cfg, rule, "--threads", "2")
    a, b = os.path.join(tmp, tag), out2
    files = sorted(os.path.relpath(os.path.join(p, f), a) for p, _, fs in os.walk(a) for f in fs)
    files2 = sorted(os.path.relpath(os.path.join(p, f), b) for p, _, fs in os.walk(b) for f in fs)
    same = rc == 0 and files == files2 and all(open(os.path.join(a, f), "rb").read() == open(os.path.join(b, f), "rb").read()
                                               for f in files)
    ok(same and "model.onnx" in files, "nafnet-ln again at 2 threads: the same %d files, byte for byte" % len(files), err)

# ---- accumulating error: NAFNet with the mixed config -------------------------------
tag = "nafnet-mixed"
model, inputs = SEEDS[0][1], SEEDS[0][2]
rule = SEEDS[0][4]
if dumps["nafnet-ln"]:
    rc, out, err = reduce_cell(tag, model, inputs, dumps["nafnet-ln"], os.path.join(prec, "mixed.yaml"), rule)
    if ok(rc == 0, "%s: reduced (exit 0)" % tag, err):
        rep = check_reproducer(tag, model, out, os.path.join(prec, "mixed.yaml"), rule, 8)
        prof = rep["profile"]
        own_pass = all(p["own"] is not None and not p["own"]["fail"] for p in prof)
        ok(rep["verdict"] == "accumulating" and rep["guilty_layers"] == [] and len(prof) >= 2 and own_pass and
           prof[-1]["in_reduced"]["fail"],
           "%s: no single guilty layer: each of the %d layers passes on its own, the window fails" % (tag, len(prof)))
        md = open(os.path.join(out, "repro.md")).read()
        ok("the error accumulates" in md, "%s: repro.md says the error accumulates" % tag)

# ---- an If on the path -----------------------------------------------------------
tag = "if-branch"
then_g = helper.make_graph([helper.make_node("Pow", ["y", "two"], ["z"], name="/then/Pow")], "then", [],
                           [helper.make_tensor_value_info("z", TP.FLOAT, [1, 64])],
                           [numpy_helper.from_array(np.array(2.0, np.float32), "two")])
else_g = helper.make_graph([helper.make_node("Identity", ["y"], ["z2"], name="/else/Identity")], "else", [],
                           [helper.make_tensor_value_info("z2", TP.FLOAT, [1, 64])])
nodes = [helper.make_node("Mul", ["x", "k"], ["y"], name="/scale/Mul"),
         helper.make_node("If", ["c"], ["o"], name="/branch/If", then_branch=then_g, else_branch=else_g),
         helper.make_node("Add", ["o", "b"], ["out"], name="/tail/Add")]
g = helper.make_graph(nodes, "ifmodel", [helper.make_tensor_value_info("x", TP.FLOAT, [1, 64]),
                                         helper.make_tensor_value_info("c", TP.BOOL, [])],
                      [helper.make_tensor_value_info("out", TP.FLOAT, [1, 64])],
                      [numpy_helper.from_array(np.array(300.0, np.float32), "k"),
                       numpy_helper.from_array(np.full((1, 64), 0.5, np.float32), "b")])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 7
ifm = os.path.join(tmp, "if.onnx")
onnx.save(m, ifm)
ifin = os.path.join(tmp, "if.in")
write_set(ifin, {"x": np.linspace(0.5, 1.0, 64, dtype=np.float32).reshape(1, 64), "c": np.array(True)})
d, err = dump_of(ifm, ifin, tag)
if ok(d is not None, "%s: FP32 reference dump" % tag, err):
    rule = ["--atol", "1e-2", "--rtol", "1e-2", "--check-error-stat", "max"]
    rc, out, err = reduce_cell(tag, ifm, ifin, d, os.path.join(prec, "fp16.yaml"), rule)
    if ok(rc == 0, "%s: reduced (exit 0)" % tag, err):
        rep = check_reproducer(tag, ifm, out, os.path.join(prec, "fp16.yaml"), rule, 2)
        red = onnx.load(os.path.join(out, "model.onnx"))
        ok([n.name for n in red.graph.node] == ["/branch/If"] and sorted(rep["inputs"]) == ["c", "y"] and
           rep["guilty_layers"] == ["/branch/If"],
           "%s: the If kept whole, its outer-scope value y and its condition the inputs: %s" % (tag, rep["inputs"]))

# ---- a Loop on the path: its body squares the carried value by an outer-scope one --
tag = "loop-body"
body = helper.make_graph([helper.make_node("Identity", ["cin"], ["cout"], name="/body/cond"),
                          helper.make_node("Mul", ["v", "y"], ["v2"], name="/body/Mul")], "body",
                         [helper.make_tensor_value_info("i", TP.INT64, []), helper.make_tensor_value_info("cin", TP.BOOL, []),
                          helper.make_tensor_value_info("v", TP.FLOAT, [1, 64])],
                         [helper.make_tensor_value_info("cout", TP.BOOL, []),
                          helper.make_tensor_value_info("v2", TP.FLOAT, [1, 64])])
nodes = [helper.make_node("Mul", ["x", "k"], ["y"], name="/scale/Mul"),
         helper.make_node("Loop", ["trips", "go", "y"], ["l"], name="/repeat/Loop", body=body),
         helper.make_node("Add", ["l", "b"], ["out"], name="/tail/Add")]
g = helper.make_graph(nodes, "loopmodel", [helper.make_tensor_value_info("x", TP.FLOAT, [1, 64])],
                      [helper.make_tensor_value_info("out", TP.FLOAT, [1, 64])],
                      [numpy_helper.from_array(np.array(300.0, np.float32), "k"),
                       numpy_helper.from_array(np.array(1, np.int64), "trips"),
                       numpy_helper.from_array(np.array(True), "go"),
                       numpy_helper.from_array(np.full((1, 64), 0.5, np.float32), "b")])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 7
loopm = os.path.join(tmp, "loop.onnx")
onnx.save(m, loopm)
loopin = os.path.join(tmp, "loop.in")
write_set(loopin, {"x": np.linspace(0.5, 1.0, 64, dtype=np.float32).reshape(1, 64)})
d, err = dump_of(loopm, loopin, tag)
if ok(d is not None, "%s: FP32 reference dump" % tag, err):
    rule = ["--atol", "1e-2", "--rtol", "1e-2", "--check-error-stat", "max"]
    rc, out, err = reduce_cell(tag, loopm, loopin, d, os.path.join(prec, "fp16.yaml"), rule)
    if ok(rc == 0, "%s: reduced (exit 0)" % tag, err):
        rep = check_reproducer(tag, loopm, out, os.path.join(prec, "fp16.yaml"), rule, 2)
        red = onnx.load(os.path.join(out, "model.onnx"))
        ok([n.name for n in red.graph.node] == ["/repeat/Loop"] and rep["inputs"] == ["y"] and
           sorted(i.name for i in red.graph.initializer) == ["go", "trips"],
           "%s: the Loop kept whole, y (carried and read by the body) its one input, its trip count and condition "
           "the initializers it reads" % tag)

# ---- a planted fault in the trained RT-DETR ---------------------------------------
tag = "rtdetr-planted"
rt = os.path.join(root, "models", "rtdetr", "rtdetr_shapes_op16.onnx")
PLANTED = "/model/model/encoder/fpn_blocks.1/bottlenecks/bottlenecks.1/conv1/conv/Conv"
pcfg = os.path.join(tmp, "planted.yaml")
with open(pcfg, "w") as f:
    f.write("precision: fp32\nlayers:\n  - match: '%s'\n    precision: bf16\n" % PLANTED)
rtin = os.path.join(tmp, "rt.in")
rng = np.random.default_rng(2024)
write_set(rtin, {"images": rng.random((1, 3, 320, 320), dtype=np.float32),
                 "orig_target_sizes": np.array([[320, 320]], np.int64)})
d, err = dump_of(rt, rtin, tag)
if ok(d is not None, "%s: FP32 reference dump" % tag, err):
    rule = ["--atol", "1e-3", "--rtol", "1e-3", "--check-error-stat", "max"]     # rtdetr.yaml's tolerances
    rc, out, err = reduce_cell(tag, rt, rtin, d, pcfg, rule)
    if ok(rc == 0, "%s: reduced (exit 0)" % tag, err):
        n_all = len(onnx.load(rt).graph.node)
        rep = check_reproducer(tag, rt, out, pcfg, rule, int(0.02 * n_all))
        ok(rep["guilty_layers"] == [PLANTED] and PLANTED in [k["name"] for k in rep["kept"]],
           "%s: the planted layer is returned: %s" % (tag, rep["guilty_layers"]))

# ---- bad input ------------------------------------------------------------------------
tag, model, inputs, cfg = SEEDS[2][:4]
if dumps[tag]:
    out = os.path.join(tmp, "passing")
    rc, _, err = run("reduce", model, "--inputs", inputs, "--reference", dumps[tag], "--config", cfg, "--atol", "1",
                     "--rtol", "1", "--check-error-stat", "max", "-o", out)
    ok(rc == 1 and "nothing to reduce" in err and not os.path.exists(out),
       "a passing cell (unet-attn fp16 within atol 1): exit 1, 'nothing to reduce', no output", err)
missing = os.path.join(tmp, "no-such-dump")
rc, _, err = run("reduce", SEEDS[0][1], "--inputs", SEEDS[0][2], "--reference", missing, "--config", SEEDS[0][3],
                 "-o", os.path.join(tmp, "x"))
ok(one_line_error(rc, err, missing, "dump"), "a missing dump: exit 2, one line naming it", err)
if dumps["nafnet-ln"]:
    flipped = os.path.join(tmp, "flipped.in")
    write_set(flipped, {"x": np.ascontiguousarray(np.load(os.path.join(SEEDS[0][2], "x.npy"))[:, :, ::-1])})
    rc, _, err = run("reduce", SEEDS[0][1], "--inputs", flipped, "--reference", dumps["nafnet-ln"], "--config",
                     SEEDS[0][3], "-o", os.path.join(tmp, "x"))
    ok(one_line_error(rc, err, dumps["nafnet-ln"], "output", "another sample"),
       "a dump of another sample (the input flipped): exit 2, one line naming the dump", err)
    empty = os.path.join(tmp, "empty.dump")
    os.makedirs(empty)
    rc, _, err = run("reduce", SEEDS[0][1], "--inputs", SEEDS[0][2], "--reference", empty, "--config", SEEDS[0][3],
                     "-o", os.path.join(tmp, "x"))
    ok(one_line_error(rc, err, empty, "no tensor"), "an empty dump folder: exit 2, one line naming it", err)
notonnx = os.path.join(tmp, "not.onnx")
open(notonnx, "w").write("hello")
rc, _, err = run("reduce", notonnx, "--inputs", SEEDS[0][2], "--reference", missing, "--precision", "fp16",
                 "-o", os.path.join(tmp, "x"))
ok(one_line_error(rc, err, notonnx), "a file that is no ONNX: exit 2, one line naming it", err)
pl = os.path.join(tmp, "plan-unet")
rc, _, err = run("plan", os.path.join(root, "configs", "models", "unet-attn.yaml"), "-o", pl)
if ok(rc == 0, "plan of unet-attn", err):
    pj = os.path.join(pl, "plan.json")
    rc, _, err = run("reduce", "--plan", pj, "--cell", "inputs__nosuch", "-o", os.path.join(tmp, "x"))
    ok(one_line_error(rc, err, pj, "inputs__nosuch"), "--cell not in the plan: exit 2 naming it", err)
    rc, _, err = run("reduce", "--plan", pj, "--cell", "inputs__onnxruntime", "-o", os.path.join(tmp, "x"))
    ok(one_line_error(rc, err, "inputs__onnxruntime", "onnxruntime"), "a cell on another backend: exit 2 naming it", err)
    ref_dump = json.load(open(pj))["cells"][0]["dir"] + "/dump"
    rc, _, err = run("reduce", "--plan", pj, "--cell", "inputs__fp16", "-o", os.path.join(tmp, "x"))
    ok(one_line_error(rc, err, "reference dump", ref_dump, "not found"),
       "--plan before the reference dump exists: exit 2 naming it", err)
p = subprocess.run(["make", "-s", "-C", root, "reduce", "MODEL=nafnet-ln", "CELL=x;touch " + os.path.join(tmp, "pwn")],
                   capture_output=True, text=True)
ok(p.returncode != 0 and "CELL=" in p.stderr and "letters, digits" in p.stderr and
   not os.path.exists(os.path.join(tmp, "pwn")), "make reduce refuses CELL='x;touch ...' before any rule runs",
   p.stderr)
done()
