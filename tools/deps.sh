#!/usr/bin/env bash
# Dependency step run by the Makefile before anything is built: checks that the
# Debian packages parity needs are installed; installs the missing ones when run
# as root, otherwise prints the exact apt-get line and fails. Then installs the
# npm packages of package-lock.json (ONNX Runtime's CPU library, for the
# onnxruntime backend and the agreement tests) into node_modules/ when missing.
set -eu
cd "$(dirname "$0")/.."
pkgs="build-essential pkg-config libpng-dev libyaml-dev libprotobuf-c-dev protobuf-c-compiler
libopenblas-dev libjansson-dev zlib1g-dev libonnx-dev libonnx-testdata
python3 python3-numpy python3-onnx python3-opencv python3-pil python3-yaml python3-skimage time chromium qemu-user
clang libclang-rt-14-dev slurmctld slurmd slurm-client munge"
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# Node.js may come from elsewhere than Debian (any node >= 18 with npm will do).
command -v node >/dev/null 2>&1 || missing="$missing nodejs"
command -v npm >/dev/null 2>&1 || missing="$missing npm"
if [ -n "$missing" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "deps: installing$missing" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends $missing >&2
  else
    # One line, the command to copy; nothing has been built yet.
    echo "deps: missing Debian packages; as root run: apt-get install -y --no-install-recommends$missing" >&2
    exit 1
  fi
fi
# onnxruntime-node ships its CPU library in the npm tarball; its install
# script would fetch GPU binaries from a host outside the registries, so it
# is told to skip that. npm ci installs exactly the committed lockfile,
# again whenever the lockfile is newer than the installed tree's record.
if [ ! -f node_modules/onnxruntime-node/package.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "deps: npm ci (onnxruntime-node, from package-lock.json)" >&2
  ONNXRUNTIME_NODE_INSTALL=skip npm ci --onnxruntime-node-install=skip --no-audit --no-fund >&2
fi
