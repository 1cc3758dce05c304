#!/usr/bin/python3
# Same bytes at every instruction set (issue 16): the bundled models (the seed
# reproducers of build/models, RT-DETR opsets 16 and 17 on samples of
# shapes-val-200) at every precision config, built and run under each
# PARITY_ISA level this CPU supports (read independently from
# /proc/cpuinfo), must give byte-identical engines, outputs and (for one
# model) layerwise dumps; a level the CPU lacks is one line and exit 2.
# The portable level is slow (an fmaf call per multiply-add), so it runs
# RT-DETR on one sample unless PARITY_GOLDEN_FULL=1.
# First, one dispatch shape (issue 37, docs/design.md "ISA dispatch"): code
# for one instruction set lives only in FAM_avx2.c / FAM_avx512.c (and the
# headers they alone include), each family has FAM_impl.h and picks its
# table at one selection point, isa_pick in FAM.c; nothing else in stages/
# branches on isa_active().
import filecmp
import glob
import json
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done, run, one_line_error, cpu_levels

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
models = os.path.join(root, "build", "models")
shapes = os.path.join(root, "build", "datasets", "shapes-val-200")
precisions = ["fp32", "tf32", "fp16", "bf16", "mixed"]
tmp = tempfile.mkdtemp(prefix="parity-isa-")
full = os.environ.get("PARITY_GOLDEN_FULL") == "1"


def same_tree(a, b):
    """Every file of a and b byte-identical, the same names on both sides."""
    cmp = filecmp.dircmp(a, b)
    if cmp.left_only or cmp.right_only or cmp.funny_files:
        return False
    _, mismatch, errors = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    return not mismatch and not errors and all(same_tree(os.path.join(a, d), os.path.join(b, d)) for d in cmp.common_dirs)


levels = cpu_levels()
print("# CPU levels (from /proc/cpuinfo): %s" % ", ".join(levels))

# The one dispatch shape. The allowed selection points: each family's
# driver and the function in it that calls isa_pick (once).
SELECTION_POINTS = {
    "stages/lib/ops/elementwise/vmath.c": "vmath_arch",
    "stages/lib/ops/gemm/fgemm.c": "fgemm_arch",
    "stages/lib/ops/gemm/qgemm.c": "qgemm_arch",
    "stages/lib/ops/nn/norm.c": "norm_arch",
    "stages/lib/ops/nn/poolrow.c": "poolrow_arch",
    "stages/lib/ops/reduce/reduce_walk.c": "reduce_walk_arch",
    "stages/lib/ops/tensor/transpose.c": "transpose_arch",
    "stages/lib/tensor/half.c": "half_arch",
}
# isa_active() outside a selection point: util/isa.c itself (isa_pick, the
# cap) and infer's --stats, which reports the level and selects nothing.
ISA_ACTIVE_OK = {"stages/lib/util/isa.h", "stages/lib/util/isa.c", "stages/infer/run.c"}
# Headers of vector code, each included by per-ISA files only.
ISA_HEADERS = {"stages/lib/ops/elementwise/vmath_avx512.h", "stages/lib/ops/gemm/transpose8x8.h"}
PER_ISA = re.compile(r"_(avx2|avx512)\.c$")


def code_of(path):
    """The file's text without comments (a call named in a comment is no call)."""
    text = open(os.path.join(root, path)).read()
    return re.sub(r"/\*.*?\*/|//[^\n]*", "", text, flags=re.S)


sources = sorted(os.path.relpath(f, root) for f in glob.glob(os.path.join(root, "stages", "**", "*.[ch]"), recursive=True))
code = {f: code_of(f) for f in sources}
active = [f for f in sources if re.search(r"\bisa_active\s*\(", code[f]) and f not in ISA_ACTIVE_OK]
ok(not active, "no file outside util/isa.c and infer's --stats calls isa_active() (kernels pick through isa_pick)",
   "calls isa_active(): %s" % active)
targeted = [f for f in sources if re.search(r"__attribute__\s*\(\(\s*target\s*\(", code[f])
            and not PER_ISA.search(f) and f not in ISA_HEADERS]
ok(not targeted, "instruction-set code (target attributes) only in FAM_avx2.c / FAM_avx512.c and their headers",
   "target attributes in: %s" % targeted)
includers = [f for f in sources for h in ISA_HEADERS
             if '#include "%s"' % os.path.relpath(h, "stages/lib") in code[f] and not PER_ISA.search(f) and f not in ISA_HEADERS]
ok(not includers, "the vector headers are included by per-ISA files only", "included by: %s" % includers)
picks = {f: len(re.findall(r"\bisa_pick\s*\(", code[f])) for f in sources}
pickers = {f for f, n in picks.items() if n and f not in ("stages/lib/util/isa.c", "stages/lib/util/isa.h")}
ok(pickers == set(SELECTION_POINTS), "isa_pick is called in exactly the listed selection points",
   "unlisted: %s; listed but not calling it: %s" % (sorted(pickers - set(SELECTION_POINTS)),
                                                    sorted(set(SELECTION_POINTS) - pickers)))
for f, fn in sorted(SELECTION_POINTS.items()):
    body = re.search(r"^(?:static )?const \w+ \*%s\(void\)\n\{(.*?)^\}" % fn, code.get(f, ""), re.M | re.S)
    ok(picks.get(f) == 1 and body and "isa_pick" in body.group(1),
       "%s: one selection point, %s() calling isa_pick" % (f, fn))
families = sorted({PER_ISA.sub("", f) for f in sources if PER_ISA.search(f)})
for fam in families:
    ok(fam + ".c" in SELECTION_POINTS and fam + "_impl.h" in code,
       "%s: its per-ISA files sit behind %s_impl.h and the selection point in %s.c" % (fam, os.path.basename(fam), os.path.basename(fam)))

# a tiny engine for the knob's own checks
conv = os.path.join(models, "convclip")
eng0 = os.path.join(tmp, "knob.engine")
rc, _, err = run("build-engine", os.path.join(conv, "convclip.onnx"), "-o", eng0)
ok(rc == 0, "build-engine convclip", err)
for lv in ["avx512", "avx2", "generic"]:
    st = os.path.join(tmp, "knob-%s.json" % lv)
    rc, _, err = run("infer", eng0, "-i", os.path.join(conv, "input"), "-o", os.path.join(tmp, "knob-" + lv), "--isa", lv,
                     "--stats", st)
    if lv in levels:
        stats = json.load(open(st)) if rc == 0 else {}
        ok(rc == 0 and stats.get("isa") == lv and stats.get("kernels") == "own",
           "infer --isa %s runs, stats say isa %s, kernels own" % (lv, lv), err)
    else:
        ok(one_line_error(rc, err, "--isa", "does not support " + lv), "infer --isa %s on a CPU without it: one line, exit 2" % lv, err)
rc, _, err = run("infer", eng0, "-i", os.path.join(conv, "input"), "-o", os.path.join(tmp, "knob-bad"), "--isa", "sse9")
ok(one_line_error(rc, err, "--isa", "sse9"), "infer --isa sse9: one line, exit 2", err)
st = os.path.join(tmp, "knob-blas.json")
rc, _, err = run("infer", eng0, "-i", os.path.join(conv, "input"), "-o", os.path.join(tmp, "knob-blas"), "--kernels", "blas",
                 "--stats", st)
ok(rc == 0 and json.load(open(st)).get("kernels") == "blas", "infer --kernels blas runs, stats say kernels blas", err)

# RT-DETR's inputs: two samples, the official preprocessing at 320x320
pre = os.path.join(tmp, "rtdetr-in")
imgs = [os.path.join(shapes, "images", "%07d.png" % i) for i in (1, 2)]
rc, _, err = run("preprocess", "--config", os.path.join(root, "configs", "preprocess", "rtdetr-official.yaml"),
                 "--set", "resize.size=320x320", "-o", pre, "-j", "1", *imgs)
ok(rc == 0, "preprocess two shapes-val-200 samples for RT-DETR", err)
one = os.path.join(tmp, "rtdetr-in1")
os.makedirs(one)
shutil.copytree(os.path.join(pre, "0000001"), os.path.join(one, "0000001"))

rt = os.path.join(root, "models", "rtdetr")
cases = [  # name, onnx, input, build-engine extras, input at the generic level
    ("convclip", os.path.join(conv, "convclip.onnx"), os.path.join(conv, "input"), []),
    ("nafnet-ln-op16", os.path.join(models, "nafnet_ln", "nafnet_ln_op16.onnx"), os.path.join(models, "nafnet_ln", "input"), []),
    ("nafnet-ln-op17", os.path.join(models, "nafnet_ln", "nafnet_ln_op17.onnx"), os.path.join(models, "nafnet_ln", "input"), []),
    ("mixed-cast", os.path.join(models, "mixed_cast", "mixed_cast.onnx"), os.path.join(models, "mixed_cast", "input"), []),
    ("unet-attn", os.path.join(models, "unet_attn", "unet_attn.onnx"), os.path.join(models, "unet_attn", "input"), []),
    ("rtdetr-op16", os.path.join(rt, "rtdetr_shapes_op16.onnx"), pre, ["--input-shape", "images=1x3x320x320"]),
    ("rtdetr-op17", os.path.join(rt, "rtdetr_shapes_op17.onnx"), pre, ["--input-shape", "images=1x3x320x320"]),
]
for name, onnx, inp, extra in cases:
    for p in precisions:
        cfg = os.path.join(root, "configs", "precisions", p + ".yaml")
        outs, engines, errs = {}, {}, []
        for lv in levels:
            src = one if lv == "generic" and inp == pre and not full else inp
            eng = os.path.join(tmp, "%s.%s.%s.engine" % (name, p, lv))
            out = os.path.join(tmp, "%s.%s.%s" % (name, p, lv))
            rc, _, err = run("build-engine", onnx, "-o", eng, "--config", cfg, "--isa", lv, *extra)
            if rc == 0:
                rc, _, err = run("infer", eng, "-i", src, "-o", out, "--isa", lv)
            if rc:
                errs.append("%s: %s" % (lv, err.strip()))
                continue
            engines[lv], outs[lv] = eng, out
        best = levels[0]
        good = not errs and all(filecmp.cmp(engines[best], engines[lv], shallow=False) for lv in levels)
        ok(good, "%s %s: the same engine bytes at %s" % (name, p, ", ".join(levels)), "\n".join(errs))
        same = not errs
        for lv in levels[1:]:
            if same and outs[lv] and os.path.basename(inp) == "rtdetr-in" and lv == "generic" and not full:
                same = same_tree(os.path.join(outs[best], "0000001"), os.path.join(outs[lv], "0000001"))
            elif same:
                same = same_tree(outs[best], outs[lv])
        ok(same, "%s %s: the same output bytes at %s" % (name, p, ", ".join(levels)))

# layerwise: every intermediate tensor of RT-DETR op17 at fp16 (one sample),
# and at two threads on the best level
dumps = {}
eng = os.path.join(tmp, "rtdetr-op17.fp16.%s.engine" % levels[0])
for lv in levels:
    out = os.path.join(tmp, "dump-" + lv)
    rc, _, err = run("infer", eng, "-i", one, "-o", out, "--isa", lv, "--dump", "all")
    dumps[lv] = out if rc == 0 else None
    ok(rc == 0, "rtdetr-op17 fp16 --dump all at %s" % lv, err)
rc, _, err = run("infer", eng, "-i", one, "-o", os.path.join(tmp, "dump-t2"), "--dump", "all", "--threads", "2")
n = len(os.listdir(os.path.join(dumps[levels[0]], "0000001"))) if dumps[levels[0]] else 0
ok(rc == 0 and n > 500 and all(dumps[lv] and same_tree(dumps[levels[0]], dumps[lv]) for lv in levels)
   and same_tree(dumps[levels[0]], os.path.join(tmp, "dump-t2")),
   "rtdetr-op17 fp16: every one of %d dumped tensors byte-identical at %s and at 2 threads" % (n, ", ".join(levels)))

shutil.rmtree(tmp)
done()
