#!/usr/bin/python3
# The formats other tools write, each produced here the way that tool writes
# it (numpy's savez/savez_compressed, Polygraphy's serde: base64 of np.save
# bytes under "polygraphy_class" markers, trtexec's hand-written
# --exportOutput JSON and --dumpRawBindingsToFile names, ONNX TensorProto via
# onnx.numpy_helper), read by compare; and the Polygraphy JSON compare writes,
# decoded the way Polygraphy's JSON decoder does.
import base64
import io
import json
import os
import sys
import tempfile
import zipfile

import numpy as np
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(__file__))
from compare_util import save_set
from tap import ok, done, run, one_line_error

tmp = tempfile.mkdtemp(prefix="parity-cmp-formats-")
rng = np.random.default_rng(3)


def path(*p):
    return os.path.join(tmp, *p)






def compare(a, b, *args):
    js = path("r%d.json" % len(os.listdir(tmp)))
    rc, out, err = run("compare", a, b, "--json", js, *args)
    return rc, (json.load(open(js)) if os.path.exists(js) else None), out + err


def exact(js):
    """Every tensor compared, none failing, and bit-equal (max |a-b| == 0)."""
    return js is not None and js["passed"] and all(t["status"] == "pass" and t["abs"]["max"] == 0 for t in js["tensors"])


ref = {"/head/logits": rng.standard_normal((1, 10)).astype(np.float32),
       "boxes:0": rng.standard_normal((1, 5, 4)).astype(np.float32),
       "mask": (rng.standard_normal((2, 3)) * 10).astype(np.float16)}
save_set(path("ref"), ref)

# ---- .npz ----------------------------------------------------------------------
np.savez(path("stored.npz"), **ref)
np.savez_compressed(path("deflated.npz"), **ref)
for f in ("stored.npz", "deflated.npz"):
    rc, js, out = compare(path(f), path("ref"))
    ok(rc == 0 and exact(js) and len(js["tensors"]) == 3, "numpy %s reads bit-exact (names with / and :)" % f, out)
with zipfile.ZipFile(path("deflated.npz")) as z:
    ok(any(i.compress_type == zipfile.ZIP_DEFLATED for i in z.infolist()), "savez_compressed really deflates")
np.savez(path("positional.npz"), ref["/head/logits"])
save_set(path("arr0"), {"arr_0": ref["/head/logits"]})
rc, js, out = compare(path("positional.npz"), path("arr0"))
ok(rc == 0 and exact(js), "positional savez arrays are named arr_0 ... as numpy.load names them", out)
data = open(path("deflated.npz"), "rb").read()
open(path("truncated.npz"), "wb").write(data[:len(data) // 2])
rc, _, out = compare(path("truncated.npz"), path("ref"))
ok(one_line_error(rc, out, "truncated.npz"), "a truncated .npz: exit 2, one line", out)
bad = bytearray(open(path("stored.npz"), "rb").read())
pos = bad.find(b"\x93NUMPY") + 130   # inside the first array's data
bad[pos] ^= 0xFF
open(path("flipped.npz"), "wb").write(bytes(bad))
rc, _, out = compare(path("flipped.npz"), path("ref"))
ok(one_line_error(rc, out, "CRC"), "a damaged member fails its CRC: exit 2", out)

# ---- Polygraphy ------------------------------------------------------------------
def ndarray(x):
    f = io.BytesIO()
    np.save(f, x, allow_pickle=False)
    return {"array": base64.b64encode(f.getvalue()).decode(), "polygraphy_class": "ndarray"}


def iteration(tensors, runner):
    return {"outputs": {k: {"values": ndarray(v), "polygraphy_class": "LazyArray"} for k, v in tensors.items()},
            "runtime": 0.0123, "runner_name": runner, "polygraphy_class": "IterationResult"}


def run_results(runners):
    return {"lst": [[r, [iteration(t, r) for t in its]] for r, its in runners], "polygraphy_class": "RunResults"}


json.dump(run_results([("onnxrt-runner-N0-01/01/25-00:00:00", [ref])]), open(path("poly.json"), "w"), indent=4)
rc, js, out = compare(path("poly.json"), path("ref"))
ok(rc == 0 and exact(js) and js["a"]["format"] == "Polygraphy RunResults", "Polygraphy --save-outputs JSON reads bit-exact", out)
noisy = {k: (v * 1.01).astype(v.dtype) for k, v in ref.items()}
json.dump(run_results([("onnxrt", [ref]), ("trt", [noisy])]), open(path("two.json"), "w"), indent=4)
rc, _, out = compare(path("two.json"), path("ref"))
ok(one_line_error(rc, out, "2 runners", "onnxrt", "trt"), "two runners: exit 2 naming them", out)
rc, js, out = compare(path("two.json") + ":onnxrt", path("ref"))
ok(rc == 0 and exact(js), "FILE.json:RUNNER picks one runner (onnxrt matches)", out)
rc, js, out = compare(path("two.json") + ":trt", path("two.json") + ":onnxrt")
ok(rc == 1 and js["counts"]["failed"] == 3, "two runners of one file compared with each other (trt fails)", out)
# several iterations are samples, matched by position with a folder of samples
for i in range(3):
    save_set(path("tree", "s%d" % i), {k: v + i for k, v in ref.items()})
json.dump(run_results([("r", [{k: v + i for k, v in ref.items()} for i in range(3)])]), open(path("iters.json"), "w"))
rc, js, out = compare(path("iters.json"), path("tree"))
ok(rc == 0 and exact(js) and len(js["tensors"]) == 9, "3 iterations pair with 3 sample folders in order", out)
# --save-inputs: a list of {name: ndarray}
json.dump([{k: ndarray(v) for k, v in ref.items()}], open(path("inputs.json"), "w"), indent=4)
rc, js, out = compare(path("inputs.json"), path("ref"))
ok(rc == 0 and exact(js) and js["a"]["format"] == "Polygraphy inputs", "Polygraphy --save-inputs list reads bit-exact", out)
# arrays from Polygraphy before 0.30 were .npz images
legacy = {"lst": [["old", [{"outputs": {}, "runtime": 0, "runner_name": "old"}]]]}
for k, v in ref.items():
    f = io.BytesIO()
    np.savez(f, v)
    legacy["lst"][0][1][0]["outputs"][k] = {"array": base64.b64encode(f.getvalue()).decode()}
json.dump(legacy, open(path("legacy.json"), "w"))
rc, js, out = compare(path("legacy.json"), path("ref"))
ok(rc == 0 and exact(js), "legacy Polygraphy arrays (base64 .npz) read", out)

# ---- trtexec ----------------------------------------------------------------------
def trtexec_export(tensors):
    """sampleReporting.cpp exportJSONOutput: ostream formatting (6 digits, nan/inf)."""
    s, sep = "[\n", "  "
    for name, v in tensors.items():
        s += sep + '{ "name" : "' + name + '"\n'
        sep = ", "
        s += "  " + sep + '"dimensions" : "' + "x".join(str(d) for d in v.shape) + '"\n'
        s += "  " + sep + '"values" : [ ' + sep.join("%g" % x for x in v.ravel().astype(np.float64)) + " ]\n  }\n"
    return s + "]\n"


special = ref["/head/logits"].copy()
special[0, 1], special[0, 2], special[0, 3] = np.nan, np.inf, -np.inf
open(path("trt.json"), "w").write(trtexec_export({"/head/logits": special, "boxes:0": ref["boxes:0"]}))
save_set(path("special"), {"/head/logits": special, "boxes:0": ref["boxes:0"]})
rc, js, out = compare(path("trt.json"), path("special"), "--atol", "0", "--rtol", "5e-6", "--nan-equal", "--inf-equal")
t = {x["name"]: x for x in js["tensors"]} if js else {}
ok(rc == 0 and js["a"]["format"] == "trtexec --exportOutput" and t["/head/logits"]["a"]["nan"] == 1
   and t["/head/logits"]["a"]["posinf"] == 1 and t["/head/logits"]["a"]["neginf"] == 1,
   "trtexec --exportOutput (nan, inf, -inf as ostream prints them) reads, within 6 significant digits", out)
rel = max(float(x["rel"]["max"]) for x in js["tensors"] if x["name"] == "boxes:0")
ok(0 < rel < 5e-6, "trtexec --exportOutput values are lossy (6 digits): the difference shows (max rel %.3g)" % rel)
os.makedirs(path("raw"))
ref["/head/logits"].tofile(path("raw", "_head_logits.output.1.10.fp32.raw"))
ref["mask"].tofile(path("raw", "mask.output.2.3.fp16.raw"))
ref["boxes:0"].tofile(path("raw", "boxes_0.output.1.5.4.fp32.raw"))
rc, js, out = compare(path("raw"), path("ref"))
ok(rc == 0 and exact(js) and sorted(t.get("name_in_a", "") for t in js["tensors"]) == ["", "_head_logits", "boxes_0"],
   "trtexec --dumpRawBindingsToFile files read, matched through trtexec's file-name sanitising", out)
np.zeros(3, np.float32).tofile(path("raw", "short.output.1.10.fp32.raw"))
rc, _, out = compare(path("raw"), path("ref"))
ok(one_line_error(rc, out, "short.output.1.10.fp32.raw", "bytes"), "a raw file of the wrong size: exit 2", out)
os.remove(path("raw", "short.output.1.10.fp32.raw"))

# ---- ONNX TensorProto --------------------------------------------------------------
os.makedirs(path("pb"))
for i, (k, v) in enumerate(ref.items()):
    open(path("pb", "output_%d.pb" % i), "wb").write(numpy_helper.from_array(v, k).SerializeToString())
rc, js, out = compare(path("pb"), path("ref"))
ok(rc == 0 and exact(js), "ONNX .pb tensors (onnx.numpy_helper) read bit-exact, named by the TensorProto", out)
rc, js, out = compare(path("pb", "output_0.pb"), path("stored.npz"))
ok(rc == 1 and js["counts"]["passed"] == 1 and js["counts"]["missing"] == 2, "a single .pb file is a set of one tensor", out)

# ---- writing Polygraphy JSON -----------------------------------------------------------
def poly_decode(pairs):
    """Polygraphy's Decoder, for the classes compare writes."""
    d = dict(pairs)
    cls = d.get("polygraphy_class")
    if cls == "ndarray":
        return np.load(io.BytesIO(base64.b64decode(d["array"].encode(), validate=True)), allow_pickle=False)
    if cls in ("LazyArray", "LazyNumpyArray"):
        return d["values"]
    if cls == "IterationResult":
        return ("IterationResult", d["outputs"], d["runtime"], d["runner_name"])
    if cls == "RunResults":
        return ("RunResults", [tuple(x) for x in d["lst"]])
    return d


out_json = path("to_poly.json")
rc, out, err = run("compare", "--to-polygraphy", out_json, path("tree"))
rr = json.load(open(out_json), object_pairs_hook=poly_decode) if rc == 0 else None
good = rr and rr[0] == "RunResults" and len(rr[1]) == 1 and rr[1][0][0] == "parity" and len(rr[1][0][1]) == 3
for i in range(3):
    it = rr[1][0][1][i] if good else None
    good = good and it[0] == "IterationResult" and it[3] == "parity" and set(it[1]) == set(ref) and all(
        it[1][k].dtype == v.dtype and np.array_equal(it[1][k], v + i) for k, v in ref.items())
ok(good, "--to-polygraphy writes RunResults Polygraphy decodes: runner 'parity', one iteration per sample, exact arrays",
   out + err)
rc, js, out = compare(out_json, path("tree"))
ok(rc == 0 and exact(js), "compare reads back what it wrote", out)
rc, out, err = run("compare", "--to-polygraphy", path("to_inputs.json"), "--inputs", "--runner", "x", path("ref"))
inp = json.load(open(path("to_inputs.json")), object_pairs_hook=poly_decode) if rc == 0 else None
ok(isinstance(inp, list) and len(inp) == 1 and all(np.array_equal(inp[0][k], v) for k, v in ref.items()),
   "--to-polygraphy --inputs writes the --load-inputs list", out + err)
rc, out, err = run("compare", "--to-polygraphy", path("never.json"), path("nope"))
ok(one_line_error(rc, err, "nope") and not os.path.exists(path("never.json")), "--to-polygraphy of a missing source: exit 2, no file")
done()
