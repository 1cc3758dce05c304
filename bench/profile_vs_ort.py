#!/usr/bin/python3
"""profile_vs_ort.py — where the time goes: parity's per-layer profile
(`infer --profile`) beside ONNX Runtime's (the onnxruntime backend's
`--profile`, ORT's own trace) on the same model, input and thread count,
summed by kind of layer (the work of profile_vs_ort.sh).

Kinds: Conv split into stem (3 input channels), 3x3 stride 1, 3x3 stride 2,
1x1 and other; MatMul (MatMul, Gemm and ORT's FusedMatMul); Transpose;
LayerNorm (LayerNormalization, ORT's SkipLayerNormalization, and the nodes
of the decomposed pattern opset 16 exports: ReduceMean, Sub, Pow, ReduceMean,
Add, Sqrt, Div and the scale's Mul and bias's Add); GridSample; ORT's layout
nodes (ReorderInput/ReorderOutput, which exist only in ORT's NCHWc graph) as
their own kind; everything else by op type. GFLOP per kind comes from the
ONNX model itself (onnx.shape_inference; 2 x multiply-adds of every Conv,
MatMul and Gemm), so both engines are credited with the same work.

Names. parity's profile names the layer that survived its fusions (a Conv
that absorbed its SiLU, a MatMul that absorbed its bias Add): the model's own
node names. ONNX Runtime renames what it fuses: an NCHWc Conv (with its
Relu/Add) is named after its last output tensor plus "_nchwc", a fusion is
named NODE/FusionName (MatMulAddFusion -> Gemm, QuickGeluFusion, ...), and
some nodes are its own (ReorderInput, SkipLayerNormalization_token_N, the
Reshapes around a Gemm). Each ORT event is mapped back to a model node
where it can be (exact name; NODE/Fusion prefix; the producer of the
"_nchwc" tensor, walking up from a fused activation to the Conv whose weight
shape matches); what cannot be mapped is put into a kind by ORT's op type
and its share of ORT's time is printed.

Method: the engine is built once (untimed); then R rounds (BENCH_REPEAT,
default 3), each running parity `infer --warmup 1 --runs N --profile` and
the onnxruntime backend `--runs N+1 --profile` (the backend cuts ORT's
first run, the warm-up, out of its trace), alternating which goes first:
both sides leave one cold run out. (Before --warmup existed parity's
profile averaged the cold first run in: a fifth of its page faults and
weight packing landed on the first layers that touch each buffer, and the
320x320 convolutions looked 15-40% slower than they run.) A layer's time is
its mean per inference within a process; over the rounds, the median of
those (BENCH_PROFILE_STAT=min: the minimum, the least disturbed figure on a
shared machine). Kind totals are sums of the layers' figures.

Environment: PARITY_BIN, BENCH_PROFILE_MODELS (default
"rtdetr_r18vd_640_op17 rtdetr_r18vd_640_op16"; also rtdetr_shapes_op16/17),
BENCH_THREADS (default 1), BENCH_RUNS (default 5), BENCH_REPEAT,
BENCH_PROFILE_STAT, BENCH_ISA (parity's --isa). Results in
build/bench/results.json (key profile_vs_ort) and build/bench/profile_vs_ort.md;
the Markdown is printed.
"""
import collections
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

import onnx
from onnx import shape_inference

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import results  # noqa: E402
from fullsize import fail, fullsize_model, root, shapes_input  # noqa: E402

bindir = os.environ.get("PARITY_BIN") or os.path.join(root, "build", "bin")
ort_cmd = os.path.join(root, "pipeline", "backends", "onnxruntime")
MODELS = {"rtdetr_r18vd_640_op16": (None, 640), "rtdetr_r18vd_640_op17": (None, 640),
          "rtdetr_shapes_op16": ("models/rtdetr/rtdetr_shapes_op16.onnx", 320),
          "rtdetr_shapes_op17": ("models/rtdetr/rtdetr_shapes_op17.onnx", 320)}
MATMUL_OPS = {"MatMul", "Gemm", "FusedMatMul", "FusedGemm"}
LN_OPS = {"LayerNormalization", "SkipLayerNormalization", "SimplifiedLayerNormalization",
          "SkipSimplifiedLayerNormalization"}
LAYOUT = "Reorder (ORT layout)"


def env_int(name, default):
    v = os.environ.get(name, str(default))
    if not v.isdigit() or int(v) < 1:
        fail("%s must be a positive integer, got '%s'" % (name, v))
    return int(v)


# ---- the model: shapes, work and kind of every node ----------------------------------

def conv_kind(cin, kshape, strides, group):
    if cin == 3:
        return "Conv stem (3 in)"
    if group == 1 and list(kshape) == [3, 3] and set(strides) == {1}:
        return "Conv 3x3 s1"
    if group == 1 and list(kshape) == [3, 3] and set(strides) == {2}:
        return "Conv 3x3 s2"
    if group == 1 and list(kshape) == [1, 1]:
        return "Conv 1x1"
    return "Conv other"


def layernorm_nodes(graph, consumers):
    """Names of the nodes of every decomposed LayerNorm: ReduceMean(x) ->
    Sub(x, mean) -> Pow(d, 2) -> ReduceMean -> Add(eps) -> Sqrt -> Div(d, .)
    [-> Mul(gamma) -> Add(beta)]."""
    def only(t, op):
        c = [n for n in consumers.get(t, []) if n.op_type == op]
        return c[0] if len(c) == 1 else None
    found = set()
    for r1 in graph.node:
        if r1.op_type != "ReduceMean":
            continue
        x = r1.input[0]
        for sub in consumers.get(r1.output[0], []):
            if sub.op_type != "Sub" or list(sub.input) != [x, r1.output[0]]:
                continue
            pw = only(sub.output[0], "Pow") or only(sub.output[0], "Mul")
            r2 = pw and only(pw.output[0], "ReduceMean")
            add = r2 and only(r2.output[0], "Add")
            sq = add and only(add.output[0], "Sqrt")
            div = sq and only(sq.output[0], "Div")
            if not div or div.input[0] != sub.output[0]:
                continue
            chain = [r1, sub, pw, r2, add, sq, div]
            mul = only(div.output[0], "Mul")
            if mul:
                chain.append(mul)
                bias = only(mul.output[0], "Add")
                if bias:
                    chain.append(bias)
            found.update(n.name for n in chain)
    return found


def analyse(path):
    """{node name: (kind, flops)}, producers, nodes by name, per-kind GFLOP."""
    m = onnx.load(path)
    g = shape_inference.infer_shapes(m).graph
    dims = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        t = vi.type.tensor_type
        if t.HasField("shape"):
            dims[vi.name] = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
    for init in g.initializer:
        dims[init.name] = list(init.dims)
    consumers = collections.defaultdict(list)
    for n in g.node:
        for t in n.input:
            consumers[t].append(n)
    ln = layernorm_nodes(g, consumers)
    info, shapes = {}, {}
    for n in g.node:
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
        flops = None if n.op_type in ("Conv", "MatMul", "Gemm") else 0     # None: shapes unknown
        if n.op_type == "Conv":
            x, w, y = dims.get(n.input[0]), dims.get(n.input[1]), dims.get(n.output[0])
            kind = conv_kind(x[1] if x else None, (w or [0, 0])[2:], attrs.get("strides", [1]), attrs.get("group", 1))
            if w and y and None not in y:
                flops = 2 * prod(y) * prod(w[1:])
            if x and w and None not in x:
                shapes[n.name] = "%d -> %d, %dx%d, %s / %d" % (x[1], w[0], x[2], x[3], "x".join(map(str, w[2:])),
                                                               attrs.get("strides", [1])[0])
        elif n.op_type in ("MatMul", "Gemm"):
            kind = "MatMul"
            a, y = dims.get(n.input[0]), dims.get(n.output[0])
            k = a and (a[-2] if n.op_type == "Gemm" and attrs.get("transA") else a[-1])
            if k and y and None not in y:
                flops = 2 * prod(y) * k
        elif n.op_type == "LayerNormalization" or n.name in ln:
            kind = "LayerNorm"
        else:
            kind = n.op_type
        info[n.name] = (kind, flops)
    producer = {o: n for n in g.node for o in n.output}
    return info, producer, {n.name: n for n in g.node}, dims, shapes


def event_flops(args):
    """2 x MACs of a Conv, MatMul or Gemm from the shapes ORT's trace gives
    its kernel event (inputs A or X, W; output Y), or None."""
    try:
        x, w = args["input_type_shape"][0]["float"], args["input_type_shape"][1]["float"]
        y = args["output_type_shape"][0]["float"]
    except (KeyError, IndexError, TypeError):
        return None
    if args.get("op_name") in ("Conv", "FusedConv", "NchwcConv"):
        return 2 * prod(y) * prod(w[1:])
    return 2 * prod(y) * x[-1]


def prod(xs):
    r = 1
    for x in xs:
        r *= x
    return r


# ---- ORT's names back to the model's ---------------------------------------------------

def map_ort(name, args, nodes, producer, dims):
    """The model node an ORT kernel event stands for, or None."""
    if name in nodes:
        return name
    stem = name.rstrip("/")
    for _ in range(2):                       # NODE/FusionName or NODE/FusionName/
        if "/" not in stem:
            break
        stem = stem.rsplit("/", 1)[0]
        if stem in nodes:
            return stem
    tensor = name[:-len("_nchwc")] if name.endswith("_nchwc") else name
    node = producer.get(tensor)
    if node is None:
        return None
    if args.get("op_name") in ("Conv", "FusedConv") and node.op_type != "Conv":
        # an activation (and residual Add) fused into the Conv: walk up to
        # the Conv whose weight has the event's weight shape
        shapes = args.get("input_type_shape") or []
        want = list(shapes[1].get("float", [])) if len(shapes) > 1 else None
        frontier = [node]
        for _ in range(4):
            nxt = []
            for n in frontier:
                for t in n.input:
                    p = producer.get(t)
                    if p is None:
                        continue
                    if p.op_type == "Conv" and (want is None or dims.get(p.input[1]) == want):
                        return p.name
                    nxt.append(p)
            frontier = nxt
        return None
    return node.name


def ort_kind(args):
    """The kind of an ORT event that maps to no model node, from its op type."""
    op = args.get("op_name", "?")
    if op.startswith("Reorder"):
        return LAYOUT
    if op in MATMUL_OPS:
        return "MatMul"
    if op in LN_OPS:
        return "LayerNorm"
    if op in ("Conv", "FusedConv", "NchwcConv"):
        s = args.get("input_type_shape") or []
        try:
            x, w, y = s[0]["float"], s[1]["float"], args["output_type_shape"][0]["float"]
            return conv_kind(x[1], w[2:], [max(1, x[2] // y[2])], 1)
        except (IndexError, KeyError, TypeError, ZeroDivisionError):
            return "Conv other"
    return op


# ---- running both ---------------------------------------------------------------------

def run(cmd, what):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        fail("%s failed (exit %d): %s" % (what, p.returncode, p.stderr.strip()[-400:]))


def parity_round(engine, inp, th, runs, tmp, isa):
    prof, stats = os.path.join(tmp, "parity-profile.json"), os.path.join(tmp, "parity-stats.json")
    run([os.path.join(bindir, "infer"), engine, "-i", inp, "-o", os.path.join(tmp, "pout"), "--threads", str(th),
         "--warmup", "1", "--runs", str(runs), "--profile", prof, "--stats", stats] + (["--isa", isa] if isa else []), "parity infer")
    layers = {}
    for e in json.load(open(prof))[1:]:
        layers[e["name"]] = (e["op"], e["averageMs"])
    return layers, json.load(open(stats))["samples"][0]["median_ms"]


def ort_round(model, inp, th, runs, tmp):
    prof = os.path.join(tmp, "ort-profile.json")
    run([ort_cmd, "run", "--model", model, "--input", inp, "--output", os.path.join(tmp, "oout"), "--threads", str(th),
         "--runs", str(runs + 1), "--profile", prof], "onnxruntime backend")
    trace = json.load(open(prof))
    kept = [e["dur"] / 1e3 for e in trace if e.get("cat") == "Session" and e.get("name") == "model_run"]
    events = {}
    for e in trace:
        if e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time"):
            n = e["name"][:-len("_kernel_time")]
            args, ms = events.get(n, (e.get("args", {}), 0.0))
            events[n] = (args, ms + e["dur"] / 1e3 / len(kept))
    return events, statistics.median(kept)


def combine(rounds, stat):
    """Per layer over the rounds: median (or min) of its per-inference ms."""
    out = {}
    for name in rounds[0]:
        vals = [r[name][1] for r in rounds if name in r]
        out[name] = (rounds[0][name][0], stat(vals))
    return out


def profile_model(name, th, runs, repeat, stat, isa, tmp):
    rel, size = MODELS[name]
    model = os.path.join(root, rel) if rel else fullsize_model(name)
    inp = shapes_input(tmp, bindir, size)
    engine = os.path.join(tmp, name + ".engine")
    run([os.path.join(bindir, "build-engine"), model, "-o", engine, "--precision", "fp32"], "build-engine")
    info, producer, nodes, dims, shapes = analyse(model)
    prounds, orounds, ptot, otot = [], [], [], []
    for r in range(repeat):
        order = (0, 1) if r % 2 == 0 else (1, 0)
        for which in order:
            if which == 0:
                layers, t = parity_round(engine, inp, th, runs, tmp, isa)
                prounds.append(layers)
                ptot.append(t)
            else:
                events, t = ort_round(model, inp, th, runs, tmp)
                orounds.append(events)
                otot.append(t)
    play, olay = combine(prounds, stat), combine(orounds, stat)

    kinds = collections.defaultdict(lambda: {"gflop": 0.0, "parity_ms": 0.0, "ort_ms": 0.0,
                                             "parity_layers": 0, "ort_layers": 0})
    unmapped_p = 0.0
    convs = collections.defaultdict(lambda: {"gflop": 0.0, "parity_ms": 0.0, "ort_ms": 0.0,
                                             "parity_layers": 0, "ort_layers": 0})
    for n, (op, ms) in play.items():
        if n in shapes:
            convs[shapes[n]]["parity_ms"] += ms
            convs[shapes[n]]["parity_layers"] += 1
        if n in info:
            kind = info[n][0]
        else:
            kind, unmapped_p = ("MatMul" if op in MATMUL_OPS else "LayerNorm" if op in LN_OPS else op), unmapped_p + ms
        kinds[kind]["parity_ms"] += ms
        kinds[kind]["parity_layers"] += 1
    unmapped = collections.defaultdict(float)
    from_trace = 0
    for n, (args, ms) in olay.items():
        node = map_ort(n, args, nodes, producer, dims)
        if node in shapes:
            convs[shapes[node]]["ort_ms"] += ms
            convs[shapes[node]]["ort_layers"] += 1
        if node is not None:
            kind = info[node][0]
            if info[node][1] is None and event_flops(args) is not None:
                info[node] = (kind, event_flops(args))
                from_trace += 1
        else:
            kind = ort_kind(args)
            unmapped[args.get("op_name", "?")] += ms
        kinds[kind]["ort_ms"] += ms
        kinds[kind]["ort_layers"] += 1
    no_shape = 0
    for n, (kind, flops) in info.items():
        no_shape += flops is None
        kinds[kind]["gflop"] += (flops or 0) / 1e9
        if n in shapes:
            convs[shapes[n]]["gflop"] += (flops or 0) / 1e9
    total_p = sum(k["parity_ms"] for k in kinds.values())
    total_o = sum(k["ort_ms"] for k in kinds.values())
    return {"model": name, "threads": th, "runs": runs, "rounds": repeat,
            "parity_isa": isa or "best", "total_gflop": round(sum(k["gflop"] for k in kinds.values()), 3),
            "parity_inference_ms": stat(ptot), "ort_inference_ms": stat(otot),
            "parity_layers_ms": total_p, "ort_layers_ms": total_o,
            "parity_unmapped_ms": unmapped_p, "flops_from_ort_shapes": from_trace, "flops_unknown": no_shape, "ort_unmapped_ms": dict(unmapped),
            "kinds": {k: dict(v) for k, v in kinds.items()}, "convs": {k: dict(v) for k, v in convs.items()}}


def table(res, stat_name):
    kinds = res["kinds"]
    order = sorted(kinds, key=lambda k: -max(kinds[k]["parity_ms"], kinds[k]["ort_ms"]))
    lines = ["### %s, %d thread%s (parity --isa %s)" % (res["model"], res["threads"], "s" if res["threads"] > 1 else "",
                                                        res["parity_isa"]), "",
             "| kind | layers parity / ORT | GFLOP | parity ms | ORT ms | ratio | parity GFLOP/s | ORT GFLOP/s |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]

    def rate(gf, ms):
        return "%.1f" % (gf / ms * 1e3) if gf > 0 and ms > 0 else "-"

    def row(k, v):
        ratio = "%.2f" % (v["parity_ms"] / v["ort_ms"]) if v["ort_ms"] > 0 and v["parity_ms"] > 0 else "-"
        return "| %s | %d / %d | %s | %.2f | %.2f | %s | %s | %s |" % (
            k, v["parity_layers"], v["ort_layers"], "%.2f" % v["gflop"] if v["gflop"] else "-", v["parity_ms"],
            v["ort_ms"], ratio, rate(v["gflop"], v["parity_ms"]), rate(v["gflop"], v["ort_ms"]))
    small = {"gflop": 0.0, "parity_ms": 0.0, "ort_ms": 0.0, "parity_layers": 0, "ort_layers": 0}
    nsmall = 0
    for k in order:
        v = kinds[k]
        if max(v["parity_ms"], v["ort_ms"]) < 0.5 and not v["gflop"]:
            nsmall += 1
            for f in small:
                small[f] += v[f]
            continue
        lines.append(row(k, v))
    if nsmall:
        lines.append(row("%d other kinds under 0.5 ms each" % nsmall, small))
    total = {f: sum(v[f] for v in kinds.values()) for f in small}
    lines.append(row("**all layers**", total))
    un = res["ort_unmapped_ms"]
    un_total = sum(un.values())
    top = ", ".join("%s %.2f" % (k, v) for k, v in sorted(un.items(), key=lambda x: -x[1]) if v >= 0.05)
    lines += ["", "Whole inference (%s over rounds of the stats median / of ORT's model_run median): parity %.2f ms, "
              "ORT %.2f ms, ratio %.2f. Per-layer figures are the %s over %d rounds of each layer's mean over %d "
              "inferences in one process. ORT time not mapped to a node of the model: %.2f ms of %.2f ms (%.1f%%), "
              "by ORT op: %s; parity time not mapped: %.2f ms. Model: %.2f GFLOP (2 x MACs of Conv, MatMul, Gemm; "
              "shapes from onnx.shape_inference, and for the %d such nodes it left without shapes, from ORT's trace; "
              "%d without either)."
              % (stat_name, res["parity_inference_ms"], res["ort_inference_ms"],
                 res["parity_inference_ms"] / res["ort_inference_ms"], stat_name, res["rounds"], res["runs"],
                 un_total, res["ort_layers_ms"], 100 * un_total / max(res["ort_layers_ms"], 1e-9), top or "-",
                 res["parity_unmapped_ms"], res["total_gflop"], res["flops_from_ort_shapes"], res["flops_unknown"])]
    convs = res.get("convs") or {}
    if convs:
        lines += ["", "Conv layers by shape (cin -> cout, input, kernel / stride), the same layers as above, "
                  "largest gap first:", "",
                  "| Conv | layers parity / ORT | GFLOP | parity ms | ORT ms | ratio | parity GFLOP/s | ORT GFLOP/s |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for k in sorted(convs, key=lambda k: convs[k]["ort_ms"] - convs[k]["parity_ms"]):
            lines.append(row(k, convs[k]))
    return "\n".join(lines) + "\n"


def main():
    for exe in ("build-engine", "infer", "gen-shapes", "preprocess"):
        if not os.access(os.path.join(bindir, exe), os.X_OK):
            fail("%s/%s is not built (run make)" % (bindir, exe))
    if not os.path.isfile(os.path.join(root, "node_modules", "onnxruntime-node", "package.json")):
        fail("onnxruntime-node is not installed (run tools/deps.sh)")
    names = os.environ.get("BENCH_PROFILE_MODELS", "rtdetr_r18vd_640_op17 rtdetr_r18vd_640_op16").split()
    for n in names:
        if n not in MODELS:
            fail("BENCH_PROFILE_MODELS: no model named '%s' (known: %s)" % (n, " ".join(sorted(MODELS))))
    stat_name = os.environ.get("BENCH_PROFILE_STAT", "median")
    if stat_name not in ("median", "min"):
        fail("BENCH_PROFILE_STAT must be median or min, got '%s'" % stat_name)
    stat = statistics.median if stat_name == "median" else min
    isa = os.environ.get("BENCH_ISA") or None
    if isa not in (None, "avx512", "avx2", "generic"):
        fail("BENCH_ISA must be avx512, avx2 or generic, got '%s'" % isa)
    try:
        threads = [int(t) for t in os.environ.get("BENCH_THREADS", "1").split()]
    except ValueError:
        fail("BENCH_THREADS must be thread counts, got '%s'" % os.environ["BENCH_THREADS"])
    runs, repeat = env_int("BENCH_RUNS", 5), env_int("BENCH_REPEAT", 3)
    tmp = tempfile.mkdtemp(prefix="parity-profile-")
    load0 = os.getloadavg()
    out = []
    try:
        for n in names:
            for th in threads:
                out.append(profile_model(n, th, runs, repeat, stat, isa, tmp))
                print("  %s threads %d: done" % (n, th), file=sys.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    load1 = os.getloadavg()
    md = "\n".join(table(r, stat_name) for r in out)
    md += "\nLoad average %s at the start, %s at the end; %d CPUs.\n" % (
        " / ".join("%.1f" % x for x in load0), " / ".join("%.1f" % x for x in load1), os.cpu_count())
    results.save(os.path.join(root, "build", "bench"), "profile_vs_ort",
                 {"stat": stat_name, "load_average_at_start": [round(x, 2) for x in load0],
                  "load_average_at_end": [round(x, 2) for x in load1], "results": out}, md)
    print(md, end="")


if __name__ == "__main__":
    main()
