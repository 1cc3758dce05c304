#!/usr/bin/python3
# The backend contract (docs/backends.md) as the parity and onnxruntime
# backends keep it: tensor names percent-encoded in file names, a single set
# or a folder of samples mirrored, .npy written as numpy.save writes it and
# read in versions 1-3, --stats with infer's keys, exit codes, one-line
# errors and atomic output (nothing at OUT, no OUT.tmp.* left, after a failure).
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done
from backend_lib import name_encode, read_set, write_set, tmpdir, run_backend, ort_available

tmp = tmpdir("backend-contract")
rng = np.random.default_rng(3)

# y/0:out = x + 1 over a name with '/' and ':'; ".n" (leading dot) passes through.
model = os.path.join(tmp, "add.onnx")
onnx.save(helper.make_model(helper.make_graph(
    [helper.make_node("Add", ["in/x:0", "one"], ["y/0:out"], name="add"),
     helper.make_node("Identity", [".hid"], [".n"], name="id")], "g",
    [helper.make_tensor_value_info("in/x:0", TensorProto.FLOAT, [2, 3]),
     helper.make_tensor_value_info(".hid", TensorProto.INT64, [2])],
    [helper.make_tensor_value_info("y/0:out", TensorProto.FLOAT, [2, 3]),
     helper.make_tensor_value_info(".n", TensorProto.INT64, [2])],
    [numpy_helper.from_array(np.ones((2, 3), np.float32), "one")]),
    opset_imports=[helper.make_opsetid("", 17)]), model)

# Identity over the element types of the .npy contract.
TYPES = {"f16": (np.float16, TensorProto.FLOAT16), "f64": (np.float64, TensorProto.DOUBLE),
         "i8": (np.int8, TensorProto.INT8), "u8": (np.uint8, TensorProto.UINT8),
         "i16": (np.int16, TensorProto.INT16), "u16": (np.uint16, TensorProto.UINT16),
         "i32": (np.int32, TensorProto.INT32), "u32": (np.uint32, TensorProto.UINT32),
         "u64": (np.uint64, TensorProto.UINT64), "b": (np.bool_, TensorProto.BOOL)}
types_model = os.path.join(tmp, "types.onnx")
onnx.save(helper.make_model(helper.make_graph(
    [helper.make_node("Identity", ["in_" + k], ["out_" + k], name="id_" + k) for k in TYPES], "g",
    [helper.make_tensor_value_info("in_" + k, t, [3, 2]) for k, (_, t) in TYPES.items()],
    [helper.make_tensor_value_info("out_" + k, t, [3, 2]) for k, (_, t) in TYPES.items()]),
    opset_imports=[helper.make_opsetid("", 17)]), types_model)


def npy_bytes(a):
    p = os.path.join(tmp, "ref.npy")
    np.save(p, a)
    return open(p, "rb").read()


def write_npy_version(path, a, version):
    """Writes a .npy with a version 2 or 3 header (numpy writes those only when needed)."""
    head = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (a.dtype.str, repr(a.shape))
    total = (12 + len(head) + 1 + 63) // 64 * 64
    head += " " * (total - 12 - len(head) - 1) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY" + bytes([version, 0]) + (total - 12).to_bytes(4, "little") + head.encode() + a.tobytes())


def leftovers(folder):
    return [f for f in os.listdir(folder) if ".tmp." in f or ".old." in f]


def one_line(rc, err, *needles):
    lines = [l for l in err.splitlines() if l.strip()]
    return rc == 2 and len(lines) == 1 and all(n in lines[0] for n in needles)


x = rng.standard_normal((2, 3)).astype(np.float32)
hid = np.array([5, -7], np.int64)
single = os.path.join(tmp, "single")
write_set(single, {"in/x:0": x, ".hid": hid})
samples = os.path.join(tmp, "samples")
xs = {s: rng.standard_normal((2, 3)).astype(np.float32) for s in ("s0", "s1", "s2")}
for s, v in xs.items():
    write_set(os.path.join(samples, s), {"in/x:0": v, ".hid": hid})

backends = ["parity"] + (["onnxruntime"] if ort_available() else [])
if not ort_available():
    ok(False, "onnxruntime-node is installed", "run tools/deps.sh")

for be in backends:
    work = os.path.join(tmp, be)
    os.makedirs(work)
    out = os.path.join(work, "out")
    rc, _, err = run_backend(be, "run", "--model", model, "--input", single, "--output", out)
    files = sorted(os.listdir(out)) if rc == 0 else []
    ok(rc == 0 and files == sorted([name_encode(".n") + ".npy", name_encode("y/0:out") + ".npy"])
       and files == ["%2En.npy", "y%2F0%3Aout.npy"],
       "%s: output files named by the encoded tensor names" % be, err or files)
    got = read_set(out) if rc == 0 else {}
    y = got.get("y/0:out")
    ok(y is not None and np.array_equal(y, x + np.float32(1)) and np.array_equal(got.get(".n"), hid),
       "%s: y = x + 1 and the int64 pass-through, exact" % be)
    ok(rc == 0 and open(os.path.join(out, "y%2F0%3Aout.npy"), "rb").read() == npy_bytes(x + np.float32(1)),
       "%s: .npy bytes identical to numpy.save's (64-byte aligned v1 header)" % be)

    # a folder of samples, mirrored, with stats
    outs = os.path.join(work, "outs")
    stats = os.path.join(work, "stats.json")
    rc, _, err = run_backend(be, "run", "--model", model, "--input", samples, "--output", outs,
                             "--runs", 3, "--threads", 2, "--stats", stats)
    ok(rc == 0 and sorted(os.listdir(outs)) == sorted(xs) and all(
        np.array_equal(read_set(os.path.join(outs, s))["y/0:out"], v + np.float32(1)) for s, v in xs.items()),
       "%s: a folder of samples is mirrored, one output set per sample" % be, err)
    st = json.load(open(stats)) if os.path.exists(stats) else {}
    keys_ok = st.get("threads") == 2 and [s.get("sample") for s in st.get("samples", [])] == sorted(xs) and all(
        set(s) == {"sample", "min_ms", "median_ms", "max_ms", "runs"} and s["runs"] == 3
        and 0 <= s["min_ms"] <= s["median_ms"] <= s["max_ms"] for s in st["samples"])
    ok(keys_ok, "%s: --stats has infer's keys (threads; per sample min/median/max_ms, runs)" % be, st)

    # an older OUT is replaced whole
    os.makedirs(os.path.join(work, "old"), exist_ok=True)
    open(os.path.join(work, "old", "stale.npy"), "w").close()
    rc, _, err = run_backend(be, "run", "--model", model, "--input", single, "--output", os.path.join(work, "old"))
    ok(rc == 0 and "stale.npy" not in os.listdir(os.path.join(work, "old")),
       "%s: an existing OUT is replaced, not merged" % be, err)

    # bad input: exit 2, one line, nothing at OUT
    miss = os.path.join(work, "miss")
    write_set(miss, {"in/x:0": x})
    bad_out = os.path.join(work, "bad_out")
    rc, _, err = run_backend(be, "run", "--model", model, "--input", miss, "--output", bad_out)
    ok(one_line(rc, err, ".hid") and not os.path.exists(bad_out) and not leftovers(work),
       "%s: a missing input: one line naming it, exit 2, no output, no staging left" % be, err)
    trunc = os.path.join(work, "trunc")
    write_set(trunc, {"in/x:0": x, ".hid": hid})
    p = os.path.join(trunc, "in%2Fx%3A0.npy")
    data = open(p, "rb").read()
    open(p, "wb").write(data[:-5])
    rc, _, err = run_backend(be, "run", "--model", model, "--input", trunc, "--output", bad_out)
    ok(one_line(rc, err, "in%2Fx%3A0.npy") and not os.path.exists(bad_out) and not leftovers(work),
       "%s: a truncated .npy: one line naming the file, exit 2, no output" % be, err)
    rc, _, err = run_backend(be, "run", "--model", os.path.join(work, "nope.onnx"), "--input", single, "--output", bad_out)
    ok(one_line(rc, err, "nope.onnx") and not os.path.exists(bad_out), "%s: a missing model: one line, exit 2" % be, err)
    rc, _, err = run_backend(be, "run", "--model", model, "--input", single, "--output", bad_out, "--bogus", 1)
    ok(rc == 2 and "--bogus" in err, "%s: an unknown option: exit 2" % be, err)
    rc, so, _ = run_backend(be, "--help")
    ok(rc == 0 and "usage:" in so and "--stats" in so, "%s: --help" % be)

    # element types of the contract, and .npy v2/v3 headers on input
    tin = os.path.join(work, "types_in")
    os.makedirs(tin)
    vals = {}
    for i, (k, (t, _)) in enumerate(TYPES.items()):
        a = (rng.standard_normal((3, 2)) * 50).astype(t) if t != np.bool_ else rng.random((3, 2)) > 0.5
        vals[k] = a
        path = os.path.join(tin, "in_%s.npy" % k)
        if i % 3 == 0:
            np.save(path, a)
        else:
            write_npy_version(path, a, 2 if i % 3 == 1 else 3)
    tout = os.path.join(work, "types_out")
    rc, _, err = run_backend(be, "run", "--model", types_model, "--input", tin, "--output", tout)
    got = read_set(tout) if rc == 0 else {}
    bad = [k for k, a in vals.items() if not (("out_" + k) in got and got["out_" + k].dtype == a.dtype
                                               and np.array_equal(got["out_" + k], a))]
    ok(rc == 0 and not bad, "%s: float16/64, int8-32, uint8-64, bool round-trip exactly; .npy v1, v2, v3 read" % be,
       err or "differ: %s" % bad)

done()
