#!/usr/bin/python3
# The TENSOR operator family end to end (build-engine + infer) on the cases
# the ONNX node tests leave out, each checked against numpy: Pad modes with
# pads wider than the axis and negative pads, Pad-18 axes, Split-18
# num_outputs, Scatter reductions with duplicate indices, GatherND batch
# dims, DepthToSpace/SpaceToDepth (the spec's reshape-transpose formula),
# OneHot out-of-range indices, NonZero on -0.0/NaN, Trilu, Range, Compress,
# ReverseSequence, EyeLike; half and integer types through the byte-moving
# ops; shape inputs known at build time and only at run time; thread-count
# invariance; and bad indices or arguments failing with one line naming the
# node.
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done, run, one_line_error

tmp = tempfile.mkdtemp(prefix="parity-ops-tensor-")
rng = np.random.default_rng(7)
count = [0]


def elem(a):
    return helper.np_dtype_to_tensor_dtype(a.dtype) if hasattr(helper, "np_dtype_to_tensor_dtype") \
        else onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[a.dtype]


def model(nodes, inputs, consts, outputs, opset):
    """inputs/consts: dict name -> array (graph inputs / initializers);
    outputs: dict name -> expected array (for the element type)."""
    g = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(k, elem(v), v.shape) for k, v in inputs.items()],
        [helper.make_tensor_value_info(k, elem(v), None) for k, v in outputs.items()],
        [numpy_helper.from_array(v, k) for k, v in consts.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def infer(nodes, inputs, consts, outputs, opset=17, threads=1):
    """Returns (dict of outputs, None) or (None, (rc, stderr))."""
    count[0] += 1
    base = os.path.join(tmp, "m%d" % count[0])
    onnx.save(model(nodes, inputs, consts, outputs, opset), base + ".onnx")
    rc, _, err = run("build-engine", base + ".onnx", "-o", base + ".engine")
    if rc:
        return None, (rc, err)
    os.makedirs(base + ".in")
    for k, v in inputs.items():
        np.save(os.path.join(base + ".in", k + ".npy"), v)
    rc, _, err = run("infer", base + ".engine", "-i", base + ".in", "-o", base + ".out", "--threads", threads)
    if rc:
        return None, (rc, err)
    return {k: np.load(os.path.join(base + ".out", k + ".npy")) for k in outputs}, None


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def check(name, nodes, inputs, consts, want, opset=17, threads=1):
    """Runs the graph and compares every output bit for bit with numpy's."""
    got, err = infer(nodes, inputs, consts, want, opset, threads)
    if got is None:
        return ok(False, name, "exit %d: %s" % err)
    bad = [k for k in want if not same(got[k], want[k])]
    return ok(not bad, name, "\n".join("%s: got %s %s %s, want %s %s %s" % (
        k, got[k].dtype, got[k].shape, got[k].ravel()[:12], want[k].dtype, want[k].shape,
        want[k].ravel()[:12]) for k in bad))


def fails(name, nodes, inputs, consts, want, needle, opset=17):
    """A bad model or input must stop build-engine or infer with exit 2 and
    one line naming the node and the problem."""
    got, err = infer(nodes, inputs, consts, want, opset)
    return ok(got is None and one_line_error(err[0], err[1], "'bad'", needle), name,
              "no error" if got is not None else "exit %d: %s" % err)


def node(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, name="bad", **attrs)


i64 = lambda *v: np.array(v, dtype=np.int64)

# ---- Pad ----
x = rng.standard_normal((3, 4)).astype(np.float32)


def np_pad(a, pads, mode, value=0):
    """ONNX pads (begins then ends, negative = crop) through numpy."""
    r = a.ndim
    b, e = pads[:r], pads[r:]
    crop = tuple(slice(max(-bb, 0), a.shape[d] - max(-ee, 0)) for d, (bb, ee) in enumerate(zip(b, e)))
    a = a[crop]
    width = [(max(bb, 0), max(ee, 0)) for bb, ee in zip(b, e)]
    if mode == "constant":
        return np.pad(a, width, mode, constant_values=value)
    return np.pad(a, width, mode)


for mode in ["constant", "reflect", "edge"]:
    for pads in [[1, 7, 2, 5], [0, -1, 1, 2], [-1, 2, -2, 0]]:
        check("Pad-13 %s pads %s" % (mode, pads),
              [node("Pad", ["x", "p", "v"], ["y"], mode=mode)], {"x": x},
              {"p": i64(*pads), "v": np.array(1.5, np.float32)},
              {"y": np_pad(x, pads, mode, 1.5)}, opset=13)
check("Pad-2 attributes (reflect wider than the axis)",
      [node("Pad", ["x"], ["y"], mode="reflect", pads=[2, 5, 3, 6])], {"x": x}, {},
      {"y": np_pad(x, [2, 5, 3, 6], "reflect")}, opset=10)
check("Pad-2 constant value attribute",
      [node("Pad", ["x"], ["y"], pads=[1, 0, 0, 2], value=-3.0)], {"x": x}, {},
      {"y": np_pad(x, [1, 0, 0, 2], "constant", -3.0)}, opset=2)
xi = rng.integers(-100, 100, (2, 3, 4)).astype(np.int16)
check("Pad-18 axes (int16, pads known only at run time)",
      [node("Pad", ["x", "p", "v", "ax"], ["y"])], {"x": xi, "p": i64(1, 2, 0, 3)},
      {"v": np.array(7, np.int16), "ax": i64(0, -1)},
      {"y": np_pad(xi, [1, 0, 2, 0, 0, 3], "constant", 7)}, opset=18)
xh = rng.standard_normal((2, 5)).astype(np.float16)
check("Pad edge on float16 keeps the bits",
      [node("Pad", ["x", "p"], ["y"], mode="edge")], {"x": xh}, {"p": i64(3, 1, 0, 4)},
      {"y": np_pad(xh, [3, 1, 0, 4], "edge")})

# ---- Slice, Split, Concat, Expand, Tile on other types ----
x4 = rng.integers(-128, 127, (4, 5, 6)).astype(np.int8)
check("Slice negative steps on int8, starts only known at run time",
      [node("Slice", ["x", "s", "e", "a", "st"], ["y"])], {"x": x4, "s": i64(-1, 4)},
      {"e": i64(-100, 0), "a": i64(2, 0), "st": i64(-2, -3)}, {"y": x4[4:0:-3, :, -1:-100:-2]})
check("Slice-1 attributes with an absurd end",
      [node("Slice", ["x"], ["y"], starts=[1, -3], ends=[2**63 - 1, -1], axes=[1, 2])], {"x": x4}, {},
      {"y": x4[:, 1:, -3:-1]}, opset=9)
xs5 = rng.standard_normal((2, 84, 8, 32)).astype(np.float32)
check("Slice of whole trailing axes: one contiguous run per row",
      [node("Slice", ["x", "s", "e", "a"], ["y"])], {"x": xs5}, {"s": i64(20), "e": i64(84), "a": i64(1)},
      {"y": xs5[:, 20:84]})
check("Slice with a step on an axis before whole ones, and the identity slice",
      [node("Slice", ["x", "s", "e", "a", "st"], ["y"]), node("Slice", ["x", "z", "n"], ["w"])], {"x": xs5},
      {"s": i64(1, 3), "e": i64(84, 8), "a": i64(1, 2), "st": i64(3, 1), "z": i64(0, 0, 0, 0),
       "n": i64(2, 84, 8, 32)}, {"y": xs5[:, 1:84:3, 3:8], "w": xs5})
xs6 = rng.standard_normal((6, 70, 16, 40)).astype(np.float32)
for th in (1, 3):
    check("Slice of 0.9 MB in runs of 150 KB, outer axis reversed, %d thread%s (pool pieces)" % (th, "s" if th > 1 else ""),
          [node("Slice", ["x", "s", "e", "a", "st"], ["y"])], {"x": xs6},
          {"s": i64(-1, 10), "e": i64(-100, 70), "a": i64(0, 1), "st": i64(-1, 1)}, {"y": xs6[::-1, 10:70]}, threads=th)
x5 = np.arange(10, dtype=np.float16).reshape(2, 5)
check("Split-18 num_outputs with a smaller last part",
      [node("Split", ["x"], ["a", "b", "c"], axis=1, num_outputs=3)], {"x": x5}, {},
      {"a": x5[:, 0:2], "b": x5[:, 2:4], "c": x5[:, 4:5]}, opset=18)
check("Split-13 sizes as input, Split-11 sizes as attribute",
      [node("Split", ["x", "s"], ["a", "b"], axis=-1)], {"x": x5}, {"s": i64(1, 4)},
      {"a": x5[:, :1], "b": x5[:, 1:]}, opset=13)
check("Split-11 sizes as attribute",
      [node("Split", ["x"], ["a", "b"], axis=1, split=[3, 2])], {"x": x5}, {},
      {"a": x5[:, :3], "b": x5[:, 3:]}, opset=11)
xb = rng.integers(0, 2, (3, 1, 2)).astype(bool)
check("Expand bool by a run-time shape",
      [node("Expand", ["x", "s"], ["y"])], {"x": xb, "s": i64(2, 1, 4, 1)}, {},
      {"y": np.broadcast_to(xb, (2, 3, 4, 2)).copy()})
check("Tile int64 with zero and non-zero repeats",
      [node("Tile", ["x", "r"], ["y"])], {"x": np.arange(6, dtype=np.int64).reshape(2, 3)},
      {"r": i64(3, 2)}, {"y": np.tile(np.arange(6, dtype=np.int64).reshape(2, 3), (3, 2))})
check("Concat of an empty input",
      [node("Concat", ["x", "e"], ["y"], axis=1)], {"x": x5}, {"e": np.zeros((2, 0), np.float16)},
      {"y": x5})
# large enough that the pool copies it in 256 KiB pieces, pieces crossing inputs and rows
ca = rng.standard_normal((3, 70, 33, 41)).astype(np.float32)
cb = rng.standard_normal((3, 1, 33, 41)).astype(np.float32)
cc = rng.standard_normal((3, 129, 33, 41)).astype(np.float32)
for th in (1, 3):
    check("Concat of 3 inputs, 3.2 MB, axis 1, %d thread%s" % (th, "s" if th > 1 else ""),
          [node("Concat", ["a", "b", "e", "c"], ["y"], axis=1)], {"a": ca, "b": cb, "c": cc},
          {"e": np.zeros((3, 0, 33, 41), np.float32)}, {"y": np.concatenate([ca, cb, cc], axis=1)}, threads=th)
# rows of a few bytes (MSDeformAttn stacks its levels 4 floats at a time): whole rows per pool piece,
# chunks of 16 and 12 bytes (the inline copies) and of 20 (memcpy)
da = rng.standard_normal((8, 32, 300, 1, 4)).astype(np.float32)
db = rng.standard_normal((8, 32, 300, 1, 3)).astype(np.float32)
dc = rng.standard_normal((8, 32, 300, 1, 5)).astype(np.float32)
for th in (1, 3):
    check("Concat of 2.9 MB in 48-byte rows, axis -2, %d thread%s" % (th, "s" if th > 1 else ""),
          [node("Concat", ["a", "b", "c"], ["y"], axis=-2)], {"a": da, "b": da[..., ::-1].copy(), "c": da * 2}, {},
          {"y": np.concatenate([da, da[..., ::-1], da * 2], axis=-2)}, threads=th)
    check("Concat of 1.0 MB in chunks of 16, 12 and 20 bytes, axis -1, %d thread%s" % (th, "s" if th > 1 else ""),
          [node("Concat", ["a", "b", "c"], ["y"], axis=-1)], {"a": da, "b": db, "c": dc}, {},
          {"y": np.concatenate([da, db, dc], axis=-1)}, threads=th)

# ---- Transpose, DepthToSpace, SpaceToDepth ----
xt = rng.standard_normal((2, 64, 48, 40)).astype(np.float32)
want = {"y": xt.transpose(0, 2, 3, 1).copy()}
check("Transpose 2x64x48x40 (0,2,3,1), 1 thread", [node("Transpose", ["x"], ["y"], perm=[0, 2, 3, 1])],
      {"x": xt}, {}, want)
check("Transpose gives the same bytes on 3 threads", [node("Transpose", ["x"], ["y"], perm=[0, 2, 3, 1])],
      {"x": xt}, {}, want, threads=3)
xd = rng.standard_normal((2, 18, 3, 4)).astype(np.float32)
b = 3
n, c, h, w = xd.shape
dcr = xd.reshape(n, b, b, c // 9, h, w).transpose(0, 3, 4, 1, 5, 2).reshape(n, c // 9, h * b, w * b)
crd = xd.reshape(n, c // 9, b, b, h, w).transpose(0, 1, 4, 2, 5, 3).reshape(n, c // 9, h * b, w * b)
check("DepthToSpace DCR blocksize 3", [node("DepthToSpace", ["x"], ["y"], blocksize=3)], {"x": xd}, {}, {"y": dcr})
check("DepthToSpace CRD blocksize 3", [node("DepthToSpace", ["x"], ["y"], blocksize=3, mode="CRD")],
      {"x": xd}, {}, {"y": crd})
xs = rng.standard_normal((1, 2, 6, 9)).astype(np.float32)
s2d = xs.reshape(1, 2, 2, 3, 3, 3).transpose(0, 3, 5, 1, 2, 4).reshape(1, 18, 2, 3)
check("SpaceToDepth blocksize 3", [node("SpaceToDepth", ["x"], ["y"], blocksize=3)], {"x": xs}, {}, {"y": s2d})

# ---- Gather family and Scatter reductions ----
data = rng.standard_normal((2, 3, 4)).astype(np.float32)
ind = np.array([[[1, -1]], [[-3, 0]]], dtype=np.int64)    # [2, 1, 2]: batch 2, tuples of 2
want = np.stack([data[0][1, -1], data[1][-3, 0]])[:, None]
check("GatherND batch_dims=1, negative indices",
      [node("GatherND", ["x", "i"], ["y"], batch_dims=1)], {"x": data}, {"i": ind}, {"y": want})
ind2 = np.array([[[2], [0]], [[1], [1]]], dtype=np.int32)
check("GatherND batch_dims=2 with int32 indices",
      [node("GatherND", ["x", "i"], ["y"], batch_dims=2)], {"x": data[:, :2, :]}, {"i": ind2},
      {"y": np.take_along_axis(data[:, :2, :], ind2.astype(np.int64), 2)[..., 0]})
upd = np.array([10, 20, 30, 40], dtype=np.float32)
idx = np.array([[1], [1], [3], [1]], dtype=np.int64)
base = np.arange(5, dtype=np.float32)
for red, fn in [("add", np.add), ("mul", np.multiply)]:
    want = base.copy()
    fn.at(want, idx[:, 0], upd)
    check("ScatterND-16 reduction %s with duplicate indices" % red,
          [node("ScatterND", ["x", "i", "u"], ["y"], reduction=red)], {"x": base}, {"i": idx, "u": upd},
          {"y": want}, opset=16)
for red, fn in [("max", np.maximum), ("min", np.minimum)]:
    want = base.copy()
    fn.at(want, idx[:, 0], upd / 10 - 1)
    check("ScatterND-18 reduction %s" % red,
          [node("ScatterND", ["x", "i", "u"], ["y"], reduction=red)], {"x": base},
          {"i": idx, "u": upd / 10 - 1}, {"y": want}, opset=18)
xe = np.ones((3, 3), dtype=np.int32)
ie = np.array([[0, -1], [2, 2]], dtype=np.int64)
ue = np.array([[2, 3], [5, 7]], dtype=np.int32)
want = xe.copy()
for r in range(2):
    for col in range(2):
        want[r, ie[r, col]] *= ue[r, col]
check("ScatterElements-16 mul on int32, negative and duplicate indices",
      [node("ScatterElements", ["x", "i", "u"], ["y"], axis=1, reduction="mul")], {"x": xe},
      {"i": ie, "u": ue}, {"y": want}, opset=16)

# ---- generators ----
oi = np.array([[1, -4], [9, 2.7]], dtype=np.float32)     # 9: out of range -> all off
want = np.full((2, 4, 2), 5, np.int64)
for r in range(2):
    for col in range(2):
        v = int(np.trunc(oi[r, col]))
        if -4 <= v < 4:
            want[r, v % 4, col] = 8
check("OneHot axis 1: out-of-range index gives an all-off row",
      [node("OneHot", ["i", "d", "v"], ["y"], axis=1)], {"i": oi},
      {"d": np.array(4, np.int64), "v": np.array([5, 8], np.int64)}, {"y": want})
nz = np.array([[0.0, -0.0, np.nan], [1e-30, 0.0, -2.0]], dtype=np.float32)
check("NonZero: -0.0 is zero, NaN is not", [node("NonZero", ["x"], ["y"])], {"x": nz}, {},
      {"y": np.array(np.nonzero(nz), dtype=np.int64)})
nzh = np.array([0, -0.0, 3, 0], dtype=np.float16)
check("NonZero on float16", [node("NonZero", ["x"], ["y"])], {"x": nzh}, {},
      {"y": np.array(np.nonzero(nzh), dtype=np.int64)})
xtr = rng.standard_normal((2, 3, 5)).astype(np.float32)
for k, upper in [(2, 1), (-1, 0), (100, 0), (-100, 1)]:
    check("Trilu upper=%d k=%d" % (upper, k), [node("Trilu", ["x", "k"], ["y"], upper=upper)], {"x": xtr},
          {"k": np.array(k, np.int64)}, {"y": np.triu(xtr, k) if upper else np.tril(xtr, k)}, opset=14)
check("Range int64 with a negative step, inputs at run time",
      [node("Range", ["a", "b", "d"], ["y"])],
      {"a": np.array(10, np.int64), "b": np.array(-7, np.int64), "d": np.array(-3, np.int64)}, {},
      {"y": np.arange(10, -7, -3, dtype=np.int64)})
check("Range that is empty", [node("Range", ["a", "b", "d"], ["y"])],
      {"a": np.array(3.0, np.float32), "b": np.array(1.0, np.float32), "d": np.array(0.5, np.float32)}, {},
      {"y": np.zeros(0, np.float32)})
cval = numpy_helper.from_array(np.array([-9], np.int32))
check("ConstantOfShape int32 value, shape at run time",
      [node("ConstantOfShape", ["s"], ["y"], value=cval)], {"s": i64(2, 3)}, {},
      {"y": np.full((2, 3), -9, np.int32)})
xc = rng.standard_normal((3, 5)).astype(np.float32)
cond = np.array([True, False, True], dtype=bool)
check("Compress with a condition shorter than the axis",
      [node("Compress", ["x", "c"], ["y"], axis=1)], {"x": xc}, {"c": cond},
      {"y": np.compress(cond, xc, axis=1)})
check("Compress without axis flattens", [node("Compress", ["x", "c"], ["y"])], {"x": xc}, {"c": cond},
      {"y": np.compress(cond, xc)})
xr = rng.standard_normal((3, 4, 2)).astype(np.float32)
lens = np.array([4, 0, 2], dtype=np.int64)
want = xr.copy()
for bb in range(3):
    want[bb, :lens[bb]] = xr[bb, :lens[bb]][::-1]
check("ReverseSequence batch_axis=0", [node("ReverseSequence", ["x", "l"], ["y"], batch_axis=0, time_axis=1)],
      {"x": xr}, {"l": lens}, {"y": want})
check("EyeLike k=-1 on 3x5 as float16", [node("EyeLike", ["x"], ["y"], k=-1, dtype=onnx.TensorProto.FLOAT16)],
      {"x": np.zeros((3, 5), np.int32)}, {}, {"y": np.eye(3, 5, -1, dtype=np.float16)})

# ---- errors ----
gi = np.array([0, 4], dtype=np.int64)
fails("Gather index past the end fails at run time", [node("Gather", ["x", "i"], ["y"], axis=2)],
      {"x": data, "i": gi}, {}, {"y": data}, "out of range")
fails("Gather index past the end fails at build time", [node("Gather", ["x", "i"], ["y"], axis=2)],
      {"x": data}, {"i": np.array([-5], np.int32)}, {"y": data}, "out of range")
fails("GatherND index out of range", [node("GatherND", ["x", "i"], ["y"])], {"x": data, "i": i64(0, 3, 0)},
      {}, {"y": data}, "out of range")
fails("ScatterND index out of range", [node("ScatterND", ["x", "i", "u"], ["y"])],
      {"x": base, "i": np.array([[5]], np.int64)}, {"u": upd[:1]}, {"y": base}, "out of range")
fails("ScatterElements index out of range", [node("ScatterElements", ["x", "i", "u"], ["y"], axis=0)],
      {"x": xe, "i": np.array([[-4, 0, 0]], np.int64)}, {"u": ue[:1, :1].repeat(3, 1)}, {"y": xe}, "out of range")
fails("Reshape to a wrong element count", [node("Reshape", ["x", "s"], ["y"])], {"x": data}, {"s": i64(5, -1)},
      {"y": data}, "cannot infer -1")
fails("Slice with a zero step", [node("Slice", ["x", "s", "e", "a", "st"], ["y"])], {"x": data},
      {"s": i64(0), "e": i64(2), "a": i64(1), "st": i64(0)}, {"y": data}, "steps[0] is 0")
fails("Dropout in training mode is refused", [node("Dropout", ["x", "r", "t"], ["y"])],
      {"x": data, "t": np.array(True)}, {"r": np.array(0.5, np.float32)}, {"y": data}, "training_mode")
fails("Split sizes that do not sum to the axis", [node("Split", ["x", "s"], ["a", "b"], axis=1)], {"x": data},
      {"s": i64(1, 1)}, {"a": data, "b": data}, "split sums to 2")
fails("ReverseSequence length beyond the axis", [node("ReverseSequence", ["x", "l"], ["y"], batch_axis=0,
                                                      time_axis=1)],
      {"x": xr, "l": np.array([1, 5, 0], np.int64)}, {}, {"y": xr}, "sequence_lens[1]")
done()
