#!/bin/bash
# A fresh clone must reach the dependency step before anything else: make
# resolves every prerequisite before it runs a recipe, so a rule naming a file
# that only an installed package provides (Debian's onnx.proto) stopped `make`
# on a clean machine before tools/deps.sh could install it. Here, on a copy of
# the tree without build/ and with ONNX_PROTO pointing nowhere, `make -n`
# (all, test, one binary) must succeed and schedule tools/deps.sh before any
# compile or protoc-c; and the dependency step run as a normal user with
# packages missing prints one line with the apt-get command and fails,
# running nothing else.
cd "$(dirname "$0")/../.." || exit 2
# the make examined here is a user's fresh one, not a child of `make test`
# (whose MAKEFLAGS, and the command-line variables make exports to its
# recipes' environment, would pass SANITIZE=1 and the like down to it)
unset MAKEFLAGS MFLAGS MAKELEVEL SANITIZE CC_OUT V
tmp=$(mktemp -d /tmp/parity-deps-first-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
n=0
ok() { n=$((n+1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi; }

mkdir -p "$tmp/tree"
tar --exclude=./build --exclude=./node_modules --exclude=./reports --exclude=./.git -cf - . | tar -x -C "$tmp/tree"
for goal in all test build/bin/infer; do
  (cd "$tmp/tree" && make -n "$goal" ONNX_PROTO="$tmp/missing/onnx.proto") >"$tmp/out" 2>&1
  rc=$?
  deps=$(grep -n 'tools/deps.sh' "$tmp/out" | head -1 | cut -d: -f1)
  first=$(grep -nE 'protoc-c|\$\(CC\)| -c [^ ]+\.c|onnx\.proto' "$tmp/out" | head -1 | cut -d: -f1)
  ok $([ $rc = 0 ] && [ -n "$deps" ] && [ -n "$first" ] && [ "$deps" -lt "$first" ]; echo $?) \
     "make -n $goal without onnx.proto: exit $rc, tools/deps.sh at line ${deps:-none}, first build command at line ${first:-none}"
  [ $rc = 0 ] || sed 's/^/# /' "$tmp/out" | head -5
done
ok $([ ! -e "$tmp/tree/build" ]; echo $?) "make -n wrote nothing (no build/)"

# the dependency step as uid 1000 with every package missing: a fake id,
# dpkg-query that knows no package, node, npm and apt-get that leave a mark
mkdir -p "$tmp/bin"
printf '#!/bin/sh\necho 1000\n' >"$tmp/bin/id"
printf '#!/bin/sh\nexit 1\n' >"$tmp/bin/dpkg-query"
for t in node npm apt-get; do printf '#!/bin/sh\ntouch "%s/ran-%s"\n' "$tmp" "$t" >"$tmp/bin/$t"; done
chmod +x "$tmp/bin"/*
PATH="$tmp/bin:$PATH" bash "$tmp/tree/tools/deps.sh" >"$tmp/so" 2>"$tmp/se"
rc=$?
lines=$(wc -l <"$tmp/se")
ok $([ $rc != 0 ] && [ "$lines" = 1 ] && grep -q 'apt-get install -y .*libonnx-dev' "$tmp/se" && [ ! -s "$tmp/so" ]; echo $?) \
   "as a normal user with packages missing: exit $rc, $lines line: $(head -c 100 "$tmp/se")"
ok $(ls "$tmp"/ran-* >/dev/null 2>&1; [ $? != 0 ]; echo $?) "and nothing else ran (no apt-get, no npm)"
echo "1..$n"
