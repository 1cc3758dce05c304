#!/usr/bin/python3
# Precision configs: bad files give one clear line and exit 2; a glob that
# matches nothing warns; rules, constraints and strongly_typed show in the
# layer report.
import json
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done, run, one_line_error

tmp = tempfile.mkdtemp(prefix="parity-precision-config-")
W = numpy_helper.from_array(np.eye(4, dtype=np.float32), "W")
nodes = [helper.make_node("MatMul", ["x", "W"], ["h"], name="/blk/fc/MatMul"),
         helper.make_node("Softmax", ["h"], ["y"], name="/blk/attn/Softmax", axis=-1)]
g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], [W])
model = os.path.join(tmp, "m.onnx")
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), model)


def build(cfg_text, *extra):
    cfg = os.path.join(tmp, "c%d.yaml" % len(os.listdir(tmp)))
    open(cfg, "w").write(cfg_text)
    eng, lay = cfg + ".engine", cfg + ".layers.json"
    rc, _, err = run("build-engine", model, "-o", eng, "--layers-out", lay, "--config", cfg, *extra)
    layers = json.load(open(lay))["layers"] if rc == 0 else None
    return rc, err, cfg, layers, os.path.exists(eng)


rc, err, cfg, _, made = build("precision: fp64\n")
ok(one_line_error(rc, err, cfg, ":1:", "fp64") and not made, "an unknown global precision is an error with its place", err)
rc, err, cfg, _, made = build("precision: fp16\nlayers:\n  - op: Softmax\n    precision: half\n")
ok(one_line_error(rc, err, cfg, ":4:", "half") and not made, "an unknown rule precision is an error with its place", err)
rc, err, cfg, _, made = build("precision: fp16\nlayers: [\n")
ok(one_line_error(rc, err, cfg) and not made, "malformed YAML is an error naming the file", err)
rc, err, cfg, _, made = build("precison: fp16\n")
ok(one_line_error(rc, err, cfg, "precison") and not made, "a misspelt key is an error", err)
rc, err, cfg, _, made = build("precision: fp16\nlayers:\n  - precision: fp32\n")
ok(one_line_error(rc, err, cfg, "match") and not made, "a rule without match or op is an error", err)

rc, err, cfg, layers, made = build("precision: fp16\nlayers:\n  - match: '*LayerNorm*'\n    precision: fp32\n")
ok(rc == 0 and made and "warning" in err and "*LayerNorm*" in err and "matches no layer" in err,
   "a glob matching nothing warns and still builds", err)

rc, err, cfg, layers, _ = build("precision: fp16\nconstraints: obey\nlayers:\n  - op: Softmax\n    precision: fp32\n")
by = {l["name"]: l for l in layers or []}
ok(by and by["/blk/attn/Softmax"]["precision"] == "fp32" and by["/blk/attn/Softmax"]["storage"] == "float32"
   and ":4:" in by["/blk/attn/Softmax"]["reason"] and by["/blk/fc/MatMul"]["precision"] == "fp16"
   and by["/blk/fc/MatMul"]["storage"] == "float16",
   "obeyed rule pins Softmax to fp32 and the report says which rule", by)

rc, err, cfg, layers, _ = build("precision: fp16\nconstraints: none\nlayers:\n  - op: Softmax\n    precision: fp32\n")
by = {l["name"]: l for l in layers or []}
ok(by and by["/blk/attn/Softmax"]["precision"] == "fp16" and "ignored" in by["/blk/attn/Softmax"]["reason"],
   "constraints: none ignores rules, as TensorRT does without precisionConstraints", by)

rc, err, cfg, layers, _ = build("precision: fp16\n", "--precision", "tf32")
by = {l["name"]: l for l in layers or []}
ok(by and by["/blk/fc/MatMul"]["precision"] == "tf32" and by["/blk/attn/Softmax"]["precision"] == "fp32",
   "--precision overrides the config; tf32 touches only GEMM-class layers", by)
done()
