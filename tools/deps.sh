#!/usr/bin/env bash
# Dependency step run by the Makefile before anything is built: checks that the
# Debian packages parity needs are installed; installs the missing ones when run
# as root, otherwise prints the exact apt-get line and fails.
set -eu
pkgs="build-essential pkg-config libpng-dev libyaml-dev libprotobuf-c-dev protobuf-c-compiler
libopenblas-dev libjansson-dev zlib1g-dev libonnx-dev libonnx-testdata
python3 python3-numpy python3-onnx python3-opencv python3-pil"
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "deps: installing$missing" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends $missing >&2
else
  echo "deps: missing Debian packages; run:" >&2
  echo "  sudo apt-get install -y$missing" >&2
  exit 1
fi
