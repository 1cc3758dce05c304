#!/usr/bin/python3
"""trtexec_io.py — conversions between parity tensor sets and the files
TensorRT's trtexec reads and writes; the file side of trtexec.sh.

  trtexec_io.py inputs SET WORK
      Writes each tensor of SET (a folder of NAME.npy) as WORK/in/<k>.bin,
      raw C-order bytes as --loadInputs=name:file wants them, and prints the
      option: --loadInputs='name':in/0.bin,... (paths relative to WORK).
  trtexec_io.py outputs WORK OUT [--json FILE] [--model MODEL.onnx]
      Turns what trtexec left in WORK into the tensor set OUT (an existing,
      empty folder): the --dumpRawBindingsToFile files (exact bytes) for
      every output they hold, else the --exportOutput JSON (values printed
      with about 6 significant digits: lossy; typed by the ONNX model's
      output type when --model is given, else float32). Raw file names carry
      trtexec's file-safe form of the tensor name (every byte outside
      [A-Za-z0-9._,-] becomes '_'); the real name is recovered from the JSON
      and the model's outputs.
  trtexec_io.py times FILE SAMPLE
      Reads --exportTimes JSON and prints one sample's latency statistics as
      parity's infer --stats has them: {"min_ms", "median_ms", "max_ms",
      "runs", "sample"} over its "latencyMs" values.

Exit 0 done, 2 bad input (one line on stderr naming the file and the problem).
File formats: trtexec's sampleInference.cpp (dumpRawBindingToFiles, file
"<safe name>.<input|output>.<d0>.<d1>...<type>.raw") and sampleReporting.cpp
(exportJSONOutput, exportJSONTrace); summarised in docs/design.md "Data formats".
"""
import json
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
sys.dont_write_bytecode = True          # no __pycache__ inside pipeline/
from names import PLAIN, name_decode, name_encode  # noqa: E402

# trtexec's DataType names (sampleOptions.cpp operator<<) -> .npy descr.
RAW_TYPES = {"fp32": "<f4", "fp16": "<f2", "bf16": "<V2", "int8": "|i1", "int32": "<i4", "int64": "<i8",
             "bool": "|b1", "uint8": "|u1"}
UNSUPPORTED_RAW = {"fp8", "int4", "fp4", "e8m0"}
# ONNX TensorProto element types -> numpy, for typing JSON values.
ONNX_TYPES = {1: np.float32, 2: np.uint8, 3: np.int8, 5: np.int16, 6: np.int32, 7: np.int64, 9: np.bool_,
              10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64}


class Bad(Exception):
    pass


def safe_name(name, shorten=True):
    """trtexec's genFilenameSafeString: bytes outside [A-Za-z0-9._,-] -> '_';
    a name over 150 bytes keeps its first and last 73 around '...' (newer
    trtexec; older ones never shorten)."""
    b = name.encode("utf-8")
    safe = lambda part: "".join(chr(c) if c in PLAIN or c == ord(",") else "_" for c in part)
    if len(b) <= 150 or not shorten:
        return safe(b)
    return safe(b[:73]) + "..." + safe(b[-73:])


def npy_write(path, descr, shape, data):
    """Writes .npy v1 with a 64-byte aligned header, as numpy.save does (and
    for '<V2', parity's bfloat16 convention, which numpy.save cannot write)."""
    shape_s = "%d," % shape[0] if len(shape) == 1 else ", ".join(str(d) for d in shape)
    head = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, shape_s)
    total = (10 + len(head) + 1 + 63) // 64 * 64
    head = head + " " * (total - 10 - len(head) - 1) + "\n"
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + (total - 10).to_bytes(2, "little") + head.encode("latin1") + data)
    os.replace(tmp, path)


# ---- inputs --------------------------------------------------------------


def cmd_inputs(src, work):
    files = sorted(f for f in os.listdir(src) if f.endswith(".npy"))
    if not files:
        raise Bad("%s: no .npy tensors in the input set" % src)
    os.makedirs(os.path.join(work, "in"), exist_ok=True)
    specs = []
    for k, f in enumerate(files):
        path = os.path.join(src, f)
        name = name_decode(f[:-4])
        if name is None:
            raise Bad("%s: file name is not a valid encoded tensor name" % path)
        if "," in name or "'" in name:
            raise Bad("%s: tensor name %r cannot be passed to trtexec --loadInputs (',' or quote)" % (path, name))
        try:
            a = np.load(path, allow_pickle=False)
        except Exception as ex:
            raise Bad("%s: not a readable .npy file: %s" % (path, ex))
        if a.dtype.kind not in "fiub" or a.dtype == np.float64 or a.dtype.byteorder == ">":
            raise Bad("%s: element type %s has no TensorRT binding type (fp32, fp16, int8, int32, int64, "
                      "uint8, bool)" % (path, a.dtype))
        rel = "in/%d.bin" % k
        with open(os.path.join(work, rel), "wb") as fh:
            fh.write(np.ascontiguousarray(a).tobytes())
        specs.append(("'%s'" % name if ":" in name else name) + ":" + rel)
    print("--loadInputs=" + ",".join(specs))


# ---- outputs -------------------------------------------------------------


def parse_raw_name(fname):
    """'<safe>.output.1.1000.fp32.raw' -> (safe, is_input, dims, type) or None."""
    if not fname.endswith(".raw"):
        return None
    parts = fname[:-4].split(".")
    if len(parts) < 4 or parts[-1] not in RAW_TYPES and parts[-1] not in UNSUPPORTED_RAW:
        return None
    dtype = parts[-1]
    i = len(parts) - 2
    dims = []
    if parts[i] == "" and parts[i - 1] in ("input", "output"):     # a scalar: "name.output..fp32.raw"
        i -= 1
    else:
        while i > 0 and parts[i].isdigit():
            dims.insert(0, int(parts[i]))
            i -= 1
    if i < 1 or parts[i] not in ("input", "output"):
        return None
    return ".".join(parts[:i]), parts[i] == "input", dims, dtype


def tolerant_json(text, path):
    """Parses trtexec's JSON, whose numbers may be printed as nan, -nan, inf, -inf."""
    pieces = re.split(r'("(?:[^"\\]|\\.)*")', text)
    for k in range(0, len(pieces), 2):          # outside string literals only
        pieces[k] = re.sub(r"-?nan\b", "NaN", pieces[k], flags=re.I)
        pieces[k] = re.sub(r"(-?)inf(inity)?\b", lambda m: m.group(1) + "Infinity", pieces[k], flags=re.I)
    try:
        return json.loads("".join(pieces))
    except ValueError as ex:
        raise Bad("%s: not trtexec --exportOutput JSON: %s" % (path, ex))


def parse_dims(s, path, name):
    s = s.strip()
    if s in ("", "()", "scalar"):
        return []
    body = s[1:-1] if s.startswith("(") and s.endswith(")") else s
    toks = [t.strip() for t in re.split(r"[x,]", body) if t.strip()]
    if not all(t.isdigit() for t in toks):
        raise Bad("%s: output %r: bad dimensions %r" % (path, name, s))
    return [int(t) for t in toks]


def model_outputs(model):
    """The model's graph outputs: {name: numpy type or None}."""
    import onnx
    try:
        m = onnx.load(model, load_external_data=False)
    except Exception as ex:
        raise Bad("%s: cannot read the ONNX model: %s" % (model, ex))
    return {o.name: ONNX_TYPES.get(o.type.tensor_type.elem_type) for o in m.graph.output}


def cmd_outputs(work, out, json_path, model):
    types = model_outputs(model) if model else {}
    entries = {}
    if json_path and os.path.exists(json_path):
        with open(json_path, encoding="utf-8", errors="replace") as fh:
            doc = tolerant_json(fh.read(), json_path)
        if not isinstance(doc, list) or not all(isinstance(e, dict) and "name" in e and "values" in e for e in doc):
            raise Bad("%s: expected a list of {\"name\", \"dimensions\", \"values\"}" % json_path)
        entries = {e["name"]: e for e in doc}
    known = list(types) + [n for n in entries if n not in types]
    by_safe, by_safe_long = {}, {}
    for n in known:
        by_safe.setdefault(safe_name(n), []).append(n)
        by_safe_long.setdefault(safe_name(n, shorten=False), []).append(n)

    written = set()
    for f in sorted(os.listdir(work)):
        parsed = parse_raw_name(f)
        if not parsed or parsed[1]:
            continue
        safe, _, dims, rtype = parsed
        path = os.path.join(work, f)
        if rtype in UNSUPPORTED_RAW:
            raise Bad("%s: binding type %s has no .npy form parity reads" % (path, rtype))
        names = by_safe.get(safe, []) or by_safe_long.get(safe, [])
        if len(names) > 1:
            raise Bad("%s: outputs %s share this file name; cannot tell them apart" % (path, names))
        name = names[0] if names else safe
        descr = RAW_TYPES[rtype]
        count = int(np.prod(dims)) if dims else 1
        size = count * int(descr[2:])
        data = open(path, "rb").read()
        if len(data) != size:
            raise Bad("%s: holds %d bytes, %s %s needs %d" % (path, len(data), rtype, "x".join(map(str, dims)), size))
        if rtype == "bool":
            data = bytes(1 if b else 0 for b in data)
        npy_write(os.path.join(out, name_encode(name) + ".npy"), descr, dims, data)
        written.add(name)

    for name, e in entries.items():
        if name in written:
            continue
        dims = parse_dims(str(e.get("dimensions", "")), json_path, name)
        t = types.get(name) or np.float32
        try:
            vals = np.array(e["values"], dtype=np.float64)
        except (TypeError, ValueError):
            raise Bad("%s: output %r: values are not numbers" % (json_path, name))
        count = int(np.prod(dims)) if dims else 1
        if vals.size != count:
            raise Bad("%s: output %r: %d values for dimensions %s" % (json_path, name, vals.size, e.get("dimensions")))
        a = vals.reshape(dims).astype(t)
        np.save(os.path.join(out, name_encode(name) + ".npy"), a)
        written.add(name)

    missing = [n for n in types if n not in written]
    if not written:
        raise Bad("%s: trtexec left no output (no *.output.*.raw file, no --exportOutput JSON)" % work)
    if missing:
        raise Bad("%s: trtexec left nothing for the model output(s) %s" % (work, ", ".join(missing)))


# ---- times ---------------------------------------------------------------


def cmd_times(path, sample):
    try:
        with open(path) as fh:
            doc = tolerant_json(fh.read(), path)
        lat = sorted(float(e["latencyMs"]) for e in doc)
    except (OSError, KeyError, TypeError, ValueError) as ex:
        raise Bad("%s: not trtexec --exportTimes JSON: %s" % (path, ex))
    if not lat:
        raise Bad("%s: no timed iterations" % path)
    n = len(lat)
    med = lat[n // 2] if n % 2 else 0.5 * (lat[n // 2 - 1] + lat[n // 2])
    print(json.dumps({"min_ms": lat[0], "median_ms": med, "max_ms": lat[-1], "runs": n, "sample": sample}))


def main(argv):
    try:
        if len(argv) == 3 and argv[0] == "inputs":
            cmd_inputs(argv[1], argv[2])
        elif len(argv) >= 3 and argv[0] == "outputs":
            opts = dict(zip(argv[3::2], argv[4::2]))
            if len(argv[3:]) % 2 or set(opts) - {"--json", "--model"}:
                raise Bad("outputs: expected WORK OUT [--json FILE] [--model MODEL.onnx]")
            cmd_outputs(argv[1], argv[2], opts.get("--json"), opts.get("--model"))
        elif len(argv) == 3 and argv[0] == "times":
            cmd_times(argv[1], argv[2])
        else:
            raise Bad("usage: trtexec_io.py inputs SET WORK | outputs WORK OUT [--json F] [--model M] | times FILE SAMPLE")
    except Bad as ex:
        print("trtexec_io: %s" % ex, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
