#!/usr/bin/python3
# Write errors say what happened (issue 39): every stage writing to a full
# file system (a 256 KiB tmpfs filled up) or a read-only one exits 2 with
# one line naming the file (or its folder) and the system's reason
# (strerror: "No space left on device", "Read-only file system"), and leaves
# nothing behind. shard merge, whose hard links fail across file systems
# (EXDEV) and fall back to copying, reports the copy's failure. The file
# systems are mounted in a private mount namespace (unshare -rm), so no root
# is needed where user namespaces are allowed; the test is skipped, with the
# reason, where they are not.
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, skip, done, bindir

repo = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
B = os.path.abspath(bindir())
tmp = tempfile.mkdtemp(prefix="parity-fulldisk-")
D = os.path.join(tmp, "disk")
os.makedirs(D)

# The driver, run inside the namespace: mount, fill (or mount read-only),
# run the stage, then list what the stage left on the disk.
DRIVER = r'''
d=$1 mode=$2; shift 2
if [ "$mode" = ro ]; then mount -t tmpfs -o size=256k,ro tmpfs "$d" || exit 99
else mount -t tmpfs -o size=256k tmpfs "$d" || exit 99; cat /dev/zero > "$d/fill" 2>/dev/null; fi
"$@" >/dev/null 2>"$d/../stderr"; rc=$?
echo "rc=$rc"; ls -A "$d" | grep -vx fill
exit 0
'''


def in_namespace(mode, argv):
    """(exit code, stderr, names left on the disk) of argv writing to D, full or read-only."""
    p = subprocess.run(["unshare", "-rm", "sh", "-c", DRIVER, "sh", D, mode] + argv, capture_output=True, text=True)
    if p.returncode == 99 or not p.stdout.startswith("rc="):
        return None
    lines = p.stdout.split("\n")
    return int(lines[0][3:]), open(os.path.join(tmp, "stderr")).read(), [l for l in lines[1:] if l]


probe = subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=256k tmpfs \"$0\"", D], capture_output=True, text=True) \
    if shutil.which("unshare") else None
if probe is None or probe.returncode != 0:
    skip("stages on a full and a read-only file system", "no private mount namespace here (unshare -rm: %s)"
         % ("not installed" if probe is None else probe.stderr.strip() or probe.returncode))
    shutil.rmtree(tmp)
    done()

# fixtures, on the ordinary disk
onnx = os.path.join(repo, "build/models/convclip/convclip.onnx")
inset = os.path.join(repo, "build/models/convclip/input")
eng = os.path.join(tmp, "m.engine")
subprocess.run([os.path.join(B, "build-engine"), onnx, "-o", eng], check=True, capture_output=True)
outA, outB = os.path.join(tmp, "A"), os.path.join(tmp, "B")
for o in (outA, outB):
    subprocess.run([os.path.join(B, "infer"), eng, "-i", inset, "-o", o], check=True, capture_output=True)
pcfg = os.path.join(tmp, "pre.yaml")
open(pcfg, "w").write(open(os.path.join(repo, "configs/preprocess/rtdetr-official.yaml")).read().replace("640x640", "64x64"))
img = os.path.join(repo, "build/datasets/shapes-val-200/images/0000001.png")   # make tools (datasets)
gt = {"images": [{"id": 1, "width": 12, "height": 10}], "categories": [{"id": 1, "name": "x"}],
      "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [1, 1, 4, 4], "area": 16, "iscrowd": 0}]}
gtf, dtf = os.path.join(tmp, "gt.json"), os.path.join(tmp, "dt.json")
json.dump(gt, open(gtf, "w"))
json.dump([{"image_id": 1, "category_id": 1, "bbox": [1, 1, 4, 4], "score": 0.9}], open(dtf, "w"))
shards = []
for i in range(2):   # two shards of 64 KiB samples: more than the full disk holds
    s = os.path.join(tmp, "shard%d" % i, "out")
    os.makedirs(os.path.join(s, str(i)))
    np.save(os.path.join(s, str(i), "y.npy"), np.zeros(16384, np.float32))
    shards.append(s)

CASES = [   # what, argv (OUT: the output on the disk), the name the line must hold
    ("preprocess -o", [B + "/preprocess", "--config", pcfg, "-o", D + "/pre", img], D + "/pre"),
    ("build-engine -o", [B + "/build-engine", onnx, "-o", D + "/m.engine"], D + "/m.engine"),
    ("infer --dump", [B + "/infer", eng, "-i", inset, "-o", D + "/out", "--dump", "all"], D + "/out"),
    ("compare --json", [B + "/compare", outA, outB, "--json", D + "/c.json", "-q"], D + "/c.json"),
    ("map-eval --json", [B + "/map-eval", "--gt", gtf, "--dt", dtf, "--json", D + "/m.json", "-q"], D + "/m.json"),
    ("shard merge -o", [B + "/shard", "merge", "-o", D + "/merged"] + shards, D + "/merged"),
]
for mode, reason in (("full", "No space left on device"), ("ro", "Read-only file system")):
    for what, argv, name in CASES:
        r = in_namespace(mode, argv)
        if r is None:
            ok(False, "%s on a %s file system: the namespace ran" % (what, mode))
            continue
        rc, err, left = r
        lines = [l for l in err.splitlines() if l.strip()]
        ok(rc == 2 and len(lines) == 1 and name in lines[0] and reason in lines[0] and "cross-device" not in lines[0] and not left,
           "%s on a %s disk: exit 2, one line naming %s and '%s', nothing left" % (what, mode, os.path.basename(name), reason),
           "exit %d, stderr %r, left %s" % (rc, err[-300:], left))
# the same commands write where there is room (so each failure above is the disk's)
bad = []
for what, argv, name in CASES:
    p = subprocess.run([a.replace(D, os.path.join(tmp, "room")) for a in argv], capture_output=True, text=True)
    if p.returncode not in (0, 1):
        bad.append("%s: exit %d %s" % (what, p.returncode, p.stderr[-200:]))
ok(not bad, "control: every command succeeds with room to write", "\n".join(bad))
shutil.rmtree(tmp)
done()
