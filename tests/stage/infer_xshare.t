#!/usr/bin/python3
# infer --engine: a later -i/-o pair runs another engine, and its layers
# that compute what the first engine's layers compute (engine/match.c
# decides from the engines' fields and bytes, never from names) take the
# first set's values instead of running (engine/share.c, infer/run.c).
# Checked: every output is byte for byte what a separate run of its engine
# writes -- the RT-DETR fixture at fp16 vs mixed (the backbone alike) and
# fp32 vs tf32 (every convolution differs), on 1 and 2 threads, and with
# the twin variants (another orig_target_sizes) on both engines, four sets
# in one process; the layers a sharing set ran are the layers an
# independent oracle (the layer reports, by name) finds unmatched; engines
# of different models share nothing, and weights that differ only past the
# bytes the signature samples do not match; usage errors exit 2; plan
# groups the fp16 and mixed cells of a variant and its twins in one infer.
import json
import os
import shutil
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done, run, one_line_error
from backend_lib import tmpdir, save_model
from share_lib import fixture_inputs, same_tree, sample_sets

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
fx = os.path.join(root, "tests", "fixtures", "rtdetr-tiny")
tmp = tmpdir("infer-xshare")
rng = np.random.default_rng(11)


def build(model, prec, tag):
    """An engine of model at configs/precisions/PREC.yaml; (path, layer report)."""
    eng = os.path.join(tmp, tag + ".engine")
    rc, _, err = run("build-engine", model, "-o", eng, "--layers-out", eng + ".layers.json",
                     "--config", os.path.join(root, "configs", "precisions", prec + ".yaml"))
    ok(rc == 0, "%s: builds" % tag, err)
    return eng, (json.load(open(eng + ".layers.json")) if rc == 0 else {"layers": []})


def oracle_matched(la, lb, vary=()):
    """The oracle: how many layers of b have a layer of a with the same
    report entry (name, op, opset, precision, storage, input names, output
    names, shapes and types, the fused nodes), whose inputs made by layers
    are such layers' outputs and whose graph inputs do not vary. Names and
    the layer report only: match.c sees neither."""
    def key(l):
        return json.dumps([l["name"], l["op"], l.get("opset"), l.get("domain"), l["precision"], l["storage"],
                           l["inputs"], l["outputs"], sorted(l.get("fused_from", []))])
    in_a = {key(l) for l in la["layers"]}
    made = {o["name"] for l in lb["layers"] for o in l["outputs"]}
    good, n = set(), 0
    for l in lb["layers"]:
        if key(l) in in_a and all(i not in vary and (i not in made or i in good) for i in l["inputs"] if i):
            n += 1
            good.update(o["name"] for o in l["outputs"])
    return n


def shared_run(tag, sets, threads=1):
    """sets: [(engine, input)]; one infer over all, and each alone. Checks
    the outputs and returns each set's stats (None where something failed)."""
    args, stats = [sets[0][0]], []
    for k, (eng, inp) in enumerate(sets):
        if k and eng != sets[k - 1][0]:
            args += ["--engine", eng]
        args += ["-i", inp, "-o", "%s/%s.s%d" % (tmp, tag, k), "--stats", "%s/%s.s%d.json" % (tmp, tag, k)]
    rc, _, err = run("infer", *args, "--threads", threads)
    if not ok(rc == 0, tag + ": the shared run succeeds", err):
        return [None] * len(sets)
    for k, (eng, inp) in enumerate(sets):
        sep = "%s/%s.a%d" % (tmp, tag, k)
        rc, _, err = run("infer", eng, "-i", inp, "-o", sep, "--threads", threads)
        ok(rc == 0 and same_tree("%s/%s.s%d" % (tmp, tag, k), sep),
           "%s: set %d's outputs are a separate run's of its engine, byte for byte" % (tag, k), err)
        stats.append(json.load(open("%s/%s.s%d.json" % (tmp, tag, k))))
    return stats


def check_layers(tag, st, eng_a, out_a, layers, expect_run):
    """A sharing set's stats: every sample ran expect_run of its layers
    (all: a whole run, no shared_with)."""
    if st is None:
        return
    runs = {s.get("layers_run", layers) for s in st["samples"]}
    if expect_run == layers:
        ok("shared_with" not in st and runs == {layers}, tag + ": ran whole", json.dumps(st)[:300])
        return
    ok(st.get("shared_engine") == eng_a and st.get("shared_output") == out_a and st.get("layers") == layers,
       tag + ": stats name the engine and the output shared with, and the layers", json.dumps(st)[:400])
    ok(runs == {expect_run}, tag + ": each sample ran the layers the oracle finds unmatched (%d of %d)" % (expect_run, layers),
       sorted(runs))


# 1. The RT-DETR fixture at four precisions; three samples (two images).
model = os.path.join(fx, "rtdetr_tiny_op16.onnx")
eng = {p: build(model, p, "rt-" + p) for p in ("fp32", "tf32", "fp16", "mixed")}
img, sizes, img2 = fixture_inputs(fx, rng)
sa = sample_sets(os.path.join(tmp, "rt-a"), {
    "1": {"images": img, "orig_target_sizes": sizes},
    "2": {"images": img2, "orig_target_sizes": sizes},
    "3": {"images": img, "orig_target_sizes": np.array([[321, 123]], np.int64)}})
sb = sample_sets(os.path.join(tmp, "rt-b"), {
    "1": {"images": img, "orig_target_sizes": sizes + np.array([[17, -9]], np.int64)},
    "2": {"images": img2, "orig_target_sizes": np.array([[333, 777]], np.int64)},
    "3": {"images": img, "orig_target_sizes": np.array([[40, 50]], np.int64)}})
m16 = oracle_matched(eng["fp16"][1], eng["mixed"][1])
ok(0 < m16 < len(eng["mixed"][1]["layers"]), "fixture: the oracle finds fp16 and mixed alike in part", m16)
for a, b in (("fp16", "mixed"), ("fp32", "tf32")):
    la, lb = eng[a][1], eng[b][1]
    n_b, m = len(lb["layers"]), oracle_matched(la, lb)
    for threads in (1, 2):
        tag = "rtdetr-tiny %s then %s, %d thread%s" % (a, b, threads, "s" if threads > 1 else "")
        st = shared_run(tag.replace(" ", "_").replace(",", ""), [(eng[a][0], sa), (eng[b][0], sa)], threads)
        if st[0] is not None:
            ok("shared_with" not in st[0], tag + ": the first set ran whole")
        check_layers(tag, st[1], eng[a][0], "%s/%s.s0" % (tmp, tag.replace(" ", "_").replace(",", "")), n_b, n_b - m)

# 2. Twins on both engines: four sets in one process; the second engine's
#    twin shares with that engine's own set, whose run is itself partial
#    (what the twin needs of the layers it did not run is bound too).
st = shared_run("rt-four", [(eng["fp16"][0], sa), (eng["fp16"][0], sb), (eng["mixed"][0], sa), (eng["mixed"][0], sb)])
n16, nmx = len(eng["fp16"][1]["layers"]), len(eng["mixed"][1]["layers"])
check_layers("four sets: fp16's twin", st[1], eng["fp16"][0], tmp + "/rt-four.s0", n16,
             n16 - oracle_matched(eng["fp16"][1], eng["fp16"][1], {"orig_target_sizes"}))
check_layers("four sets: mixed", st[2], eng["fp16"][0], tmp + "/rt-four.s0", nmx, nmx - m16)
check_layers("four sets: mixed's twin (with mixed's partial run)", st[3], eng["mixed"][0], tmp + "/rt-four.s2", nmx,
             nmx - oracle_matched(eng["mixed"][1], eng["mixed"][1], {"orig_target_sizes"}))

# 2b. The same with a value the second engine's twin needs that its
#    engine's own set neither runs nor reads (c: made by layers the engines
#    compute alike, read only by the layer s reaches): the partial run
#    must be given it to keep (exec_share_also), else the twin runs whole.
x_info = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6, 6]),
          helper.make_tensor_value_info("s", TensorProto.FLOAT, [1, 1])]
yz_info = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y", "z")]
chain = save_model(tmp, "chain", [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Exp", ["a"], ["c"]),
                                  helper.make_node("Mul", ["c", "s"], ["y"]), helper.make_node("Softmax", ["x"], ["z"], axis=1)],
                   x_info, yz_info)
ch = {p: build(chain, p, "chain-" + p) for p in ("fp16", "mixed")}
x = rng.standard_normal((1, 4, 6, 6)).astype(np.float32)
ca = sample_sets(os.path.join(tmp, "ch-a"), {"1": {"x": x, "s": np.array([[1.5]], np.float32)}})
cb = sample_sets(os.path.join(tmp, "ch-b"), {"1": {"x": x, "s": np.array([[-0.75]], np.float32)}})
st = shared_run("chain", [(ch["fp16"][0], ca), (ch["fp16"][0], cb), (ch["mixed"][0], ca), (ch["mixed"][0], cb)])
nch = len(ch["mixed"][1]["layers"])
check_layers("chain: mixed", st[2], ch["fp16"][0], tmp + "/chain.s0", nch, nch - oracle_matched(ch["fp16"][1], ch["mixed"][1]))
check_layers("chain: mixed's twin", st[3], ch["mixed"][0], tmp + "/chain.s2", nch,
             nch - oracle_matched(ch["mixed"][1], ch["mixed"][1], {"s"}))

# 3. Different models. w2 differs from w in one value in the middle, where
#    the signature's sample of the bytes (128 from each end) does not look:
#    only the byte-for-byte check keeps the Conv from matching.
w = rng.standard_normal((8, 4, 3, 3)).astype(np.float32)
w2 = w.copy()
w2.flat[w.size // 2] += 1.0
x_info = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6, 6])]
y_info = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
conv = [helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Conv", ["s", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Tanh", ["c"], ["y"])]
m1 = save_model(tmp, "conv-w", conv, x_info, y_info, [numpy_helper.from_array(w, "w")])
m2 = save_model(tmp, "conv-w2", conv, x_info, y_info, [numpy_helper.from_array(w2, "w")])
m3 = save_model(tmp, "other", [helper.make_node("Neg", ["x"], ["n"]), helper.make_node("Exp", ["n"], ["y"])],
                x_info, y_info)
e1, l1 = build(m1, "fp32", "conv-w")
e1b, _ = build(m1, "fp32", "conv-w-again")
e2, l2 = build(m2, "fp32", "conv-w2")
e3, l3 = build(m3, "fp32", "other")
xs = sample_sets(os.path.join(tmp, "x"), {str(i): {"x": rng.standard_normal((1, 4, 6, 6)).astype(np.float32)} for i in range(3)})
n_c = len(l2["layers"])
st = shared_run("w-w2", [(e1, xs), (e2, xs)])
check_layers("weights differing mid-tensor", st[1], e1, tmp + "/w-w2.s0", n_c, n_c - 1)
st = shared_run("w-again", [(e1, xs), (e1b, xs)])
check_layers("the same model built twice", st[1], e1, tmp + "/w-again.s0", n_c, 0)
st = shared_run("w-other", [(e1, xs), (e3, xs)])
check_layers("another model", st[1], e1, tmp + "/w-other.s0", len(l3["layers"]), len(l3["layers"]))

# 4. Usage errors: exit 2, one line, nothing written.
o = lambda n: os.path.join(tmp, "u%d" % n)
bad = os.path.join(tmp, "not-an-engine")
open(bad, "wb").write(b"\x08\x99garbage")
for args, what, words in (
        (["--engine", e2, "-i", xs, "-o", o(1)], "--engine before the first pair", "before the first -i"),
        (["-i", xs, "-o", o(2), "--engine", e2], "--engine with no pair after it", "no -i/-o pair follows"),
        (["-i", xs, "-o", o(3), "--engine", e2, "--engine", e3, "-i", xs, "-o", o(4)], "two --engine in a row",
         "has no -i/-o pair"),
        (["-i", xs, "-o", o(5), "--engine", e2, "-i", xs, "-o", o(6), "--dump", "all"], "--engine with --dump",
         "not with --dump"),
        (["-i", xs, "-o", o(7), "--engine", bad, "-i", xs, "-o", o(8)], "an --engine that is no engine", bad)):
    rc, _, err = run("infer", e1, *args)
    ok(one_line_error(rc, err, words), "usage: %s is refused (exit 2, says why)" % what, err)
ok(not any(os.path.exists(o(n)) for n in range(1, 9)), "usage errors write nothing")

# 5. The plan: rtdetr's fp16 and mixed (both `precision: fp16`) run each
#    variant (and letterbox's twin) in one infer, the mixed engine after
#    --engine; fp32 and tf32 (other global precisions) alone; the sharded
#    form keeps a rule per cell; make -n prints the grouped recipe once.
pd = os.path.join(tmp, "plan")
rc, _, err = run("plan", os.path.join(root, "configs", "models", "rtdetr.yaml"), "-o", pd)
if ok(rc == 0, "plan: rtdetr plans", err):
    mk = open(os.path.join(pd, "plan.mk")).read()
    lines = mk.splitlines()
    infers = [l.split("INFER   rtdetr ", 1)[1].rstrip("'") for l in lines
              if "@echo '  INFER   rtdetr " in l and " shard " not in l]
    variants = ("rtdetr-official", "opencv-stretch", "letterbox", "bgr", "imagenet-norm")
    want = []
    for v in variants:
        vs = [v, "letterbox-naive"] if v == "letterbox" else [v]
        for ps in (["fp32"], ["tf32"], ["fp16", "mixed"]):
            want.append("+".join("%s__%s" % (w, p) for p in ps for w in vs))
    ok(sorted(infers) == sorted(want), "plan: fp16 and mixed cells of a variant and its twin in one infer, the others by precision",
       sorted(set(infers) ^ set(want)))
    group = [l for l in lines if "INFER   rtdetr letterbox__fp16+" in l]
    i = lines.index(group[0]) if group else 0
    rule, recipe = lines[i - 1], lines[i + 1]
    cells = ["letterbox__fp16", "letterbox-naive__fp16", "letterbox__mixed", "letterbox-naive__mixed"]
    ok(rule.startswith(" ".join("%s/cells/%s/out.done" % (pd, c) for c in cells) + " &: ") and
       all("%s/engines/%s.engine" % (pd, p) in rule.split("&:")[1] for p in ("fp16", "mixed")),
       "plan: one grouped rule makes the four cells' outputs, after both engines", rule[:300])
    ok(recipe.count(" --engine ") == 1 and recipe.index("--engine '%s/engines/mixed.engine'" % pd) <
       recipe.index("-o '%s/cells/letterbox__mixed/out'" % pd) and
       recipe.index("-o '%s/cells/letterbox-naive__fp16/out'" % pd) < recipe.index(" --engine "),
       "plan: the mixed cells come after --engine mixed.engine", recipe[:300])
    ok(all(("INFER   rtdetr letterbox__%s shard $*" % p) in mk for p in ("fp16", "mixed")),
       "plan: shards still run each cell alone")
    ok(all(("%s/plan.mk: configs/precisions/%s.yaml" % (pd, p)) in mk for p in ("fp32", "tf32", "fp16", "mixed")),
       "plan: a changed precision config plans again")

shutil.rmtree(tmp, ignore_errors=True)
done()
