#!/bin/bash
# Staging names left by a killed step (NAME.tmp.PID, NAME.old.PID: util/fsutil
# atomic files, util/dirswap staged folders) are removed when the step that
# writes NAME runs again, if their process is gone; a live process's staging
# names and other names are left alone (issue 15).
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
echo "1..$n"
[ $failed = 0 ]
