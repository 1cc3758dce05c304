#!/usr/bin/python3
# Integer kernels of dynamically quantized models (ops/misc/qlinear.c) against
# numpy's int64 arithmetic and ONNX Runtime (onnxruntime-node), exactly
# (int32 results): ConvInteger with strides, dilations, groups, asymmetric
# pads, zero points per tensor and per output channel (numpy only there: ORT's
# CPU ConvInteger refuses per-channel zero points), uint8 and int8 weights; MatMulInteger with batch
# broadcasting, every operand type pair (u8 x u8, u8 x s8, s8 x s8), zero
# points per tensor, per row of A and per column of B, K odd, K not a
# multiple of the vector width, M = 1, sums at the int32 limit and past it
# (wrapping), each at every instruction set of this CPU (ops/gemm/qgemm.c's
# kernels: the same bytes); and a DynamicQuantizeLinear -> ConvInteger -> Cast -> Mul
# chain as onnxruntime's quantize_dynamic writes it (float32 output, agreeing
# within float32 rounding of ORT's: the same integer sums, one scale product).
# Thread count does not change a bit.
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done, run, cpu_levels
from backend_lib import run_backend, read_set, write_set, tmpdir, ort_available

tmp = tmpdir("engine-qint")
rng = np.random.default_rng(21)


def both(tag, model, inputs, variants=(("--threads", 1),)):
    """infer's outputs (a tensor set, None where it failed) with each tuple
    of extra arguments in variants, ONNX Runtime's, and the errors."""
    path = os.path.join(tmp, tag + ".onnx")
    onnx.save(model, path)
    d = os.path.join(tmp, tag + ".in")
    write_set(d, inputs)
    eng = os.path.join(tmp, tag + ".engine")
    rc, _, err = run("build-engine", path, "-o", eng)
    res = []
    for i, extra in enumerate(variants):
        out = os.path.join(tmp, "%s.p%d" % (tag, i))
        rc2, _, err2 = run("infer", eng, "-i", d, "-o", out, *extra) if rc == 0 else (rc, "", err)
        res.append(read_set(out) if rc2 == 0 else None)
        err += err2
    out = os.path.join(tmp, tag + ".ort")
    rc3, _, err3 = run_backend("onnxruntime", "run", "--model", path, "--input", d, "--output", out)
    return res, (read_set(out) if rc3 == 0 else None), err + err3


THREADS_1_2 = (("--threads", 1), ("--threads", 2))


def at_each_isa(tag, model, inputs):
    """Output y of infer --isa L --runs 2 (the second run reads B packed by
    the first: the node cache) for every level L of this CPU (the qgemm
    kernels: avx512 runs VNNI where the CPU has it), ONNX Runtime's, and
    the errors."""
    levels = cpu_levels()
    res, o, err = both(tag, model, inputs, [("--isa", isa, "--runs", 2) for isa in levels])
    return {isa: r["y"] if r else None for isa, r in zip(levels, res)}, o["y"] if o else None, err


if not ort_available():
    ok(False, "onnxruntime-node is installed (node_modules/onnxruntime-node)", "run tools/deps.sh")
    done()

def conv_int(x, w, xzp, wzp, strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1), group=1, **_):
    """ConvInteger in int64: padding holds the zero point (0 once subtracted)."""
    xd = x.astype(np.int64) - np.int64(xzp)
    wd = w.astype(np.int64) - np.asarray(wzp, np.int64).reshape(-1, 1, 1, 1)
    xp = np.pad(xd, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    n, cin, h, wi = xp.shape
    cout, cg, kh, kw = wd.shape
    oh = (h - dilations[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (wi - dilations[1] * (kw - 1) - 1) // strides[1] + 1
    y = np.zeros((n, cout, oh, ow), np.int64)
    mg = cout // group
    for i in range(kh):
        for j in range(kw):
            tap = xp[:, :, i * dilations[0]: i * dilations[0] + strides[0] * (oh - 1) + 1: strides[0],
                     j * dilations[1]: j * dilations[1] + strides[1] * (ow - 1) + 1: strides[1]]
            for gi in range(group):
                y[:, gi * mg:(gi + 1) * mg] += np.einsum("nchw,oc->nohw", tap[:, gi * cg:(gi + 1) * cg],
                                                         wd[gi * mg:(gi + 1) * mg, :, i, j])
    return y.astype(np.int32)


cases = [
    ("3x3 pads 1", dict(pads=[1, 1, 1, 1]), 8, 6, 1, np.uint8, False, 3),
    ("stride 2, asymmetric pads", dict(strides=[2, 2], pads=[0, 1, 2, 1]), 5, 7, 1, np.uint8, True, 3),
    ("dilation 2, group 2", dict(dilations=[2, 2], group=2, pads=[2, 2, 2, 2]), 6, 4, 2, np.int8, False, 3),
    ("depthwise, stride 3", dict(group=6, strides=[3, 1], pads=[1, 0, 1, 0]), 6, 6, 6, np.uint8, True, 3),
    ("1x1 (the input is the column matrix)", dict(), 16, 8, 1, np.int8, False, 1),
    ("1x1, stride 2", dict(strides=[2, 2]), 8, 5, 1, np.int8, True, 1),
]
# 1 and 2 threads, then every instruction set of this CPU
conv_variants = THREADS_1_2 + tuple(("--isa", isa) for isa in cpu_levels())
for name, attrs, cin, cout, group, wt, per_channel, ks in cases:
    x = rng.integers(0, 256, (2, cin, 11, 13), dtype=np.uint8)
    info = np.iinfo(wt)
    w = rng.integers(info.min, info.max + 1, (cout, cin // group, ks, ks)).astype(wt)
    xzp = np.array(rng.integers(0, 256), np.uint8)
    wzp = (rng.integers(info.min, info.max + 1, cout) if per_channel else np.array(rng.integers(info.min, 10))).astype(wt)
    g = helper.make_graph([helper.make_node("ConvInteger", ["x", "w", "xzp", "wzp"], ["y"], kernel_shape=[ks, ks],
                                            **attrs)],
                          "ci", [helper.make_tensor_value_info("x", TensorProto.UINT8, list(x.shape))],
                          [helper.make_tensor_value_info("y", TensorProto.INT32, None)],
                          initializer=[numpy_helper.from_array(w, "w"), numpy_helper.from_array(xzp, "xzp"),
                                       numpy_helper.from_array(wzp, "wzp")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    res, o, err = both("ci%d" % len(os.listdir(tmp)), m, {"x": x}, conv_variants)
    want = conv_int(x, w, xzp, wzp, **attrs)
    good = all(r is not None and r["y"].dtype == np.int32 and np.array_equal(r["y"], want) for r in res) \
        and (per_channel or (o is not None and np.array_equal(o["y"], want)))
    ok(good, "ConvInteger %s (%s weights, zero point per %s): equal to numpy's int64 sums%s, 1 and 2 threads and %s "
       "alike" % (name, np.dtype(wt).name, "channel" if per_channel else "tensor",
                  "" if per_channel else " and onnxruntime", ", ".join(cpu_levels())), err if not good else "")

a = rng.integers(0, 256, (2, 3, 5, 17), dtype=np.uint8)
b = rng.integers(-128, 128, (3, 17, 9)).astype(np.int8)
g = helper.make_graph([helper.make_node("MatMulInteger", ["a", "b", "azp", "bzp"], ["y"])], "mmi",
                      [helper.make_tensor_value_info("a", TensorProto.UINT8, list(a.shape))],
                      [helper.make_tensor_value_info("y", TensorProto.INT32, None)],
                      initializer=[numpy_helper.from_array(b, "b"), numpy_helper.from_array(np.array(131, np.uint8), "azp"),
                                   numpy_helper.from_array(np.array(-3, np.int8), "bzp")])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 7
(p1, p2), o, err = both("mmi", m, {"a": a}, THREADS_1_2)
want = np.matmul(a.astype(np.int64) - 131, b.astype(np.int64) + 3).astype(np.int32)
ok(p1 is not None and o is not None and np.array_equal(p1["y"], o["y"]) and np.array_equal(p1["y"], want)
   and np.array_equal(p1["y"], p2["y"]),
   "MatMulInteger with batch broadcasting: equal to onnxruntime and to numpy's int64 product", err)


def mmi_model(a_shape, adt, b, azp, bzp, azp_input=False):
    """MatMulInteger y = (a - azp) x (b - bzp): b and bzp initializers, azp an
    initializer or (as DynamicQuantizeLinear gives it) an input."""
    tp = {np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.int8): TensorProto.INT8}
    ins = [helper.make_tensor_value_info("a", tp[np.dtype(adt)], list(a_shape))]
    inits = [numpy_helper.from_array(b, "b")]
    names = ["a", "b", "", ""]
    if azp is not None:
        names[2] = "azp"
        if azp_input:
            ins.append(helper.make_tensor_value_info("azp", tp[np.dtype(adt)], list(np.shape(azp))))
        else:
            inits.append(numpy_helper.from_array(np.asarray(azp, adt), "azp"))
    if bzp is not None:
        names[3] = "bzp"
        inits.append(numpy_helper.from_array(np.asarray(bzp, b.dtype), "bzp"))
    while names[-1] == "":
        names.pop()
    g = helper.make_graph([helper.make_node("MatMulInteger", names, ["y"])], "mmi", ins,
                          [helper.make_tensor_value_info("y", TensorProto.INT32, None)], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    return m


def mmi_want(a, b, azp, bzp):
    """The definition: int64 sums of the zero-point-subtracted products, reduced mod 2^32 to int32."""
    za = np.zeros(1, np.int64) if azp is None else np.asarray(azp, np.int64).reshape(-1, 1)
    zb = np.zeros(1, np.int64) if bzp is None else np.asarray(bzp, np.int64).reshape(1, -1)
    s = np.matmul(a.astype(np.int64) - za, b.astype(np.int64) - zb)
    return (s & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


def q8(shape, dt):
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max + 1, shape).astype(dt)


U8, S8 = np.uint8, np.int8
# (name, M, K, N, A type, B type, A zero point form, B zero point form): forms
# "none", "scalar", "row" (per row of A: numpy only, ORT's CPU MatMulInteger
# takes a scalar), "col" (per column of B)
qgemm_cases = [
    ("u8 x s8, K odd", 37, 91, 70, U8, S8, "scalar", "none"),
    ("u8 x u8, per-column B zero points", 20, 100, 130, U8, U8, "scalar", "col"),
    ("s8 x s8, K not a multiple of 4 or 64", 13, 67, 65, S8, S8, "scalar", "col"),
    ("u8 x s8, M = 1, N past one 64-column panel", 1, 768, 200, U8, S8, "scalar", "col"),
    ("u8 x u8, M = 1, K = 1", 1, 1, 5, U8, U8, "scalar", "scalar"),
    ("u8 x s8, per-row A zero points", 19, 45, 33, U8, S8, "row", "col"),
    ("s8 x s8, per-row A zero points", 7, 130, 64, S8, S8, "row", "scalar"),
    ("u8 x s8, 196 x 768 x 96 (transformer rows)", 196, 768, 96, U8, S8, "scalar", "none"),
]
for name, M, K, N, adt, bdt, af, bf in qgemm_cases:
    a, b = q8((M, K), adt), q8((K, N), bdt)
    azp = None if af == "none" else q8(M if af == "row" else (), adt)
    bzp = None if bf == "none" else q8(N if bf == "col" else (), bdt)
    res, o, err = at_each_isa("q%d" % len(os.listdir(tmp)), mmi_model(a.shape, adt, b, azp, bzp, azp_input=True),
                              {"a": a, **({} if azp is None else {"azp": azp})})
    want = mmi_want(a, b, azp, bzp)
    ort_too = af != "row"
    good = all(r is not None and r.dtype == np.int32 and np.array_equal(r, want) for r in res.values()) \
        and (not ort_too or (o is not None and np.array_equal(o, want)))
    ok(good, "MatMulInteger %s: at %s equal to numpy's int64 sums%s" % (name, ", ".join(res), " and onnxruntime"
                                                                       if ort_too else ""), err if not good else "")

# Batches of A against one B (one taller product in qgemm), a zero point
# per row of each matrix of A (repeated over the batches)
a, b = q8((3, 4, 25), U8), q8((25, 70), S8)
azp, bzp = q8(4, U8), q8(70, S8)
res, o, err = at_each_isa("batchrows", mmi_model(a.shape, U8, b, azp, bzp, azp_input=True), {"a": a, "azp": azp})
want = mmi_want(a, b, azp, bzp)
good = all(r is not None and np.array_equal(r, want) for r in res.values())
ok(good, "MatMulInteger 3 batches of 4x25 against one 25x70 B, per-row A and per-column B zero points: at %s "
   "equal to numpy's int64 sums" % ", ".join(res), err if not good else "")

# Sums at the int32 limit and past it: a = 255, b = 0 with zero point 255,
# so every product is -65,025; K = 33,025 gives -2,147,450,625 (in range),
# K = 33,100 wraps as the int32 accumulator does (ONNX: "the accumulation
# may overflow if and only if in 32 bits"), as ORT's does
for K in (33025, 33100):
    a, b = np.full((2, K), 255, np.uint8), np.zeros((K, 3), np.uint8)
    res, o, err = at_each_isa("lim%d" % K, mmi_model(a.shape, U8, b, None, np.array(255, np.uint8)), {"a": a})
    want = mmi_want(a, b, None, 255)
    good = all(r is not None and np.array_equal(r, want) for r in res.values()) and o is not None \
        and np.array_equal(o, want) and want[0, 0] == np.int64(-65025 * K + (2 ** 32 if K > 33025 else 0))
    ok(good, "MatMulInteger K = %d of -65,025 products: %d at %s, as numpy's int64 sum mod 2^32 and onnxruntime"
       % (K, want[0, 0], ", ".join(res)), err if not good else "")

# DynamicQuantizeLinear -> ConvInteger -> Cast -> Mul(scales), as quantize_dynamic writes it
w = rng.standard_normal((8, 4, 3, 3)).astype(np.float32)
ws = np.float32(np.abs(w).max() / 127)
wq = np.clip(np.rint(w / ws), -127, 127).astype(np.int8)
nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
         helper.make_node("ConvInteger", ["xq", "wq", "xz", "wz"], ["acc"], pads=[1, 1, 1, 1]),
         helper.make_node("Cast", ["acc"], ["accf"], to=TensorProto.FLOAT),
         helper.make_node("Mul", ["xs", "ws"], ["s"]),
         helper.make_node("Mul", ["accf", "s"], ["y"])]
g = helper.make_graph(nodes, "dq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 9, 9])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 9, 9])],
                      initializer=[numpy_helper.from_array(wq, "wq"), numpy_helper.from_array(np.array(0, np.int8), "wz"),
                                   numpy_helper.from_array(np.array(ws, np.float32), "ws")])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 7
x = rng.standard_normal((1, 4, 9, 9)).astype(np.float32)
(p1,), o, err = both("dq", m, {"x": x})
# each output is float(int32 sum) * s: one float32 rounding of the conversion (sums below 2^24 are exact)
# and one of the product, on both sides
good = p1 is not None and o is not None and np.allclose(p1["y"], o["y"], rtol=2 * 2.0 ** -24, atol=0)
ok(good, "DynamicQuantizeLinear -> ConvInteger -> scale: onnxruntime's result within one float32 rounding",
   err if not good or p1 is None else "max diff %g" % np.abs(p1["y"] - o["y"]).max())
done()
