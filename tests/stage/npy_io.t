#!/usr/bin/python3
# .npy and .pb tensor files through the engine: numpy's files (v1, v2, v3
# headers, every supported dtype) read exactly; parity's files load in numpy
# bit-identically with 64-byte aligned headers; ONNX TensorProto .pb inputs
# are read by name.
import os
import struct
import sys
import tempfile

import numpy as np
import onnx
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done, run

tmp = tempfile.mkdtemp(prefix="parity-npy-")
rng = np.random.default_rng(5)
types = {np.float32: 1, np.float64: 11, np.float16: 10, np.int8: 3, np.int16: 5, np.int32: 6, np.int64: 7,
         np.uint8: 2, np.uint16: 4, np.uint32: 12, np.uint64: 13, np.bool_: 9}


def identity_engine(np_type, elem):
    path = os.path.join(tmp, "id_%s.onnx" % np.dtype(np_type).name)
    g = helper.make_graph([helper.make_node("Identity", ["in/put:0"], ["out/put:0"])], "g",
                          [helper.make_tensor_value_info("in/put:0", elem, [2, 3, 4])],
                          [helper.make_tensor_value_info("out/put:0", elem, [2, 3, 4])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    eng = path + ".engine"
    rc, _, err = run("build-engine", path, "-o", eng)
    return eng if rc == 0 else None


def write_npy_version(path, arr, version):
    """numpy's format with an explicit header version (v3 = utf-8 header)."""
    header = ("{'descr': '%s', 'fortran_order': False, 'shape': %r, }" % (arr.dtype.str, arr.shape)).encode()
    lenfmt = "<H" if version == 1 else "<I"
    pre = 10 if version == 1 else 12
    pad = (-(pre + len(header) + 1)) % 64
    header += b" " * pad + b"\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY" + bytes([version, 0]) + struct.pack(lenfmt, len(header)) + header + arr.tobytes())


for np_type, elem in types.items():
    name = np.dtype(np_type).name
    eng = identity_engine(np_type, elem)
    if not ok(eng is not None, "%s: identity engine builds" % name):
        continue
    if np_type == np.bool_:
        x = rng.random((2, 3, 4)) > 0.5
    elif np.issubdtype(np_type, np.floating):
        x = rng.standard_normal((2, 3, 4)).astype(np_type)
    else:
        info = np.iinfo(np_type)
        x = rng.integers(info.min, info.max, (2, 3, 4), dtype=np_type, endpoint=True)
    for version in (1, 2, 3):
        d = os.path.join(tmp, "in_%s_v%d" % (name, version))
        os.makedirs(d)
        write_npy_version(os.path.join(d, "in%2Fput%3A0.npy"), x, version)
        out = os.path.join(tmp, "out_%s_v%d" % (name, version))
        rc, _, err = run("infer", eng, "-i", d, "-o", out)
        f = os.path.join(out, "out%2Fput%3A0.npy")
        good = rc == 0 and os.path.exists(f)
        if good:
            y = np.load(f)
            raw = open(f, "rb").read()
            hlen = struct.unpack("<H", raw[8:10])[0]
            good = y.dtype == x.dtype and y.shape == x.shape and y.tobytes() == x.tobytes() and (10 + hlen) % 64 == 0
        ok(good, "%s: a v%d .npy reads exactly and is written back bit-identical with a 64-byte aligned header"
           % (name, version), err)

# .pb (TensorProto) inputs, bound by their name
eng = identity_engine(np.float32, 1)
d = os.path.join(tmp, "pb")
os.makedirs(d)
x = rng.standard_normal((2, 3, 4)).astype(np.float32)
t = numpy_helper.from_array(x, "in/put:0")
open(os.path.join(d, "input_0.pb"), "wb").write(t.SerializeToString())
rc, _, err = run("infer", eng, "-i", d, "-o", os.path.join(tmp, "pbout"))
ok(rc == 0 and np.array_equal(np.load(os.path.join(tmp, "pbout", "out%2Fput%3A0.npy")), x),
   "a TensorProto .pb input is read by its name", err)
# a Fortran-order or big-endian .npy is refused clearly
for label, arr in (("fortran", np.asfortranarray(x)), ("big-endian", x.astype(">f4"))):
    d = os.path.join(tmp, "bad_" + label)
    os.makedirs(d)
    np.save(os.path.join(d, "in%2Fput%3A0.npy"), arr)
    rc, _, err = run("infer", eng, "-i", d, "-o", os.path.join(tmp, "badout_" + label))
    ok(rc == 2 and "in%2Fput%3A0.npy" in err and not os.path.exists(os.path.join(tmp, "badout_" + label)),
       "a %s .npy is refused with the file named" % label, err)
done()
