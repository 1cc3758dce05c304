#!/bin/bash
# Staging names left by a killed step (NAME.tmp.PID, NAME.old.PID: util/fsutil
# atomic files, util/dirswap staged folders) are removed when the step that
# writes NAME runs again, if their process is gone (or a zombie); a live
# process's staging names and other names are left alone (issue 15). Single
# files are cleaned like folders, and a stage stopped by SIGTERM or SIGINT
# removes its own staging names (issue 39).
cd "$(dirname "$0")/../.." || exit 2
bin=${PARITY_BIN:-build/bin}
tmp=$(mktemp -d /tmp/parity-stale-XXXXXX)
sleep 60 & live=$!
trap 'kill $live 2>/dev/null; rm -rf "$tmp"' EXIT
n=0; failed=0
ok() { n=$((n+1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=$((failed+1)); fi; }
sh -c 'exit 0' & dead=$!; wait $dead   # a PID that no longer runs
kill -0 $dead 2>/dev/null && { echo "1..0 # SKIP PID $dead was reused at once"; exit 0; }

"$bin/build-engine" build/models/convclip/convclip.onnx -o "$tmp/m.engine" 2>"$tmp/err" || { cat "$tmp/err"; exit 2; }
# a file written atomically: compare --json
mkdir -p "$tmp/o"
for s in "out.json.tmp.$dead" "out.json.tmp.$live" "other.json.tmp.$dead" "out.json.tmp.x$dead"; do : > "$tmp/o/$s"; done
"$bin/infer" "$tmp/m.engine" -i build/models/convclip/input -o "$tmp/A" 2>"$tmp/err"
"$bin/compare" "$tmp/A" "$tmp/A" --json "$tmp/o/out.json" -q
ok $([ $? = 0 ] && [ -f "$tmp/o/out.json" ] && [ ! -e "$tmp/o/out.json.tmp.$dead" ]; echo $?) "compare --json removes out.json.tmp.<dead PID>"
ok $([ -e "$tmp/o/out.json.tmp.$live" ] && [ -e "$tmp/o/other.json.tmp.$dead" ] && [ -e "$tmp/o/out.json.tmp.x$dead" ]; echo $?) \
   "and keeps a live process's, another output's, and a name that is not a staging name"
# a staged folder: infer -o
mkdir -p "$tmp/B.tmp.$dead/sub" "$tmp/B.old.$dead" "$tmp/B.tmp.$live"
: > "$tmp/B.tmp.$dead/sub/x.npy"
"$bin/infer" "$tmp/m.engine" -i build/models/convclip/input -o "$tmp/B" 2>"$tmp/err"
ok $([ $? = 0 ] && [ -d "$tmp/B" ] && [ ! -e "$tmp/B.tmp.$dead" ] && [ ! -e "$tmp/B.old.$dead" ] && [ -d "$tmp/B.tmp.$live" ]; echo $?) \
   "infer -o B removes B.tmp.<dead PID> (a tree) and B.old.<dead PID>, keeps B.tmp.<live PID>"
# single files: build-engine's ENGINE.tmp.PID and LAYERS.tmp.PID of a dead
# process, and of a killed one its parent has not reaped yet (a zombie
# holds its PID), are removed by the rerun
head -c 2097152 /dev/zero > "$tmp/e.engine.tmp.$dead"
: > "$tmp/e.layers.json.tmp.$dead"
"$bin/build-engine" build/models/convclip/convclip.onnx -o "$tmp/e.engine" --layers-out "$tmp/e.layers.json" 2>"$tmp/err"
ok $([ $? = 0 ] && [ -f "$tmp/e.engine" ] && [ ! -e "$tmp/e.engine.tmp.$dead" ] && [ ! -e "$tmp/e.layers.json.tmp.$dead" ]; echo $?) \
   "build-engine removes ENGINE.tmp.<dead PID> (2 MiB) and LAYERS.tmp.<dead PID>"
/usr/bin/python3 - "$bin" "$tmp" <<'PY' > "$tmp/zombie"
import os, subprocess, sys, time
bin, tmp = sys.argv[1], sys.argv[2]
z = subprocess.Popen(["sh", "-c", "exit 0"])   # not waited for: a zombie until the end
time.sleep(0.3)
state = open("/proc/%d/stat" % z.pid).read().rsplit(")", 1)[1].split()[0]
open(os.path.join(tmp, "z.engine.tmp.%d" % z.pid), "wb").write(b"\0" * 4096)
r = subprocess.run([os.path.join(bin, "build-engine"), "build/models/convclip/convclip.onnx", "-o", os.path.join(tmp, "z.engine")])
print(state, r.returncode, int(os.path.exists(os.path.join(tmp, "z.engine.tmp.%d" % z.pid))))
z.wait()
PY
ok $([ "$(cat "$tmp/zombie")" = "Z 0 0" ]; echo $?) "and ENGINE.tmp.<PID of a zombie> (killed, not yet reaped): $(cat "$tmp/zombie")"

# SIGTERM, SIGINT: the stage removes its own staging names before it ends
for sig in TERM INT; do
/usr/bin/python3 - "$bin" "$tmp" "$sig" <<'PY' > "$tmp/sig"
import os, signal, subprocess, sys, time
bin, tmp, sig = sys.argv[1], sys.argv[2], sys.argv[3]
d = os.path.join(tmp, "sig" + sig)
os.makedirs(d)
p = subprocess.Popen([os.path.join(bin, "infer"), os.path.join(tmp, "m.engine"),
                      "-i", "build/models/convclip/input", "-o", os.path.join(d, "OUT"), "--dump", "all", "--runs", "200"])
t0, seen = time.time(), False
while time.time() - t0 < 20 and p.poll() is None and not seen:   # until its staging folder holds something
    st = [n for n in os.listdir(d) if n.startswith("OUT.tmp.")]
    seen = bool(st) and bool(os.listdir(os.path.join(d, st[0])))
    time.sleep(0.001)
p.send_signal(getattr(signal, "SIG" + sig))
rc = p.wait()
print(int(seen), rc, " ".join(os.listdir(d)) or "-")
PY
ok $(read s rc left < "$tmp/sig"; [ "$s" = 1 ] && [ "$rc" = -$(kill -l $sig) ] && [ "$left" = - ]; echo $?) \
   "infer stopped by SIG$sig while writing leaves no OUT.tmp.PID and dies of the signal (seen, rc, left: $(cat "$tmp/sig"))"
done
echo "1..$n"
[ $failed = 0 ]
