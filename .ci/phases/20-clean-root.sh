# The README on a fresh machine: a clean Debian 12 (bookworm) root made from
# Debian's packages by mmdebstrap (as pbuilder and sbuild prove build
# dependencies), with this commit copied in by git archive and nothing else
# from the host. Inside it:
#   1. as a normal user, with the dependencies still missing, the dependency
#      step prints one apt-get line and fails with nothing built;
#   2. as root, the README's `make test`: tools/deps.sh installs the packages
#      (the log shows apt at work), npm ci fetches onnxruntime-node, then the
#      whole suite runs.
# The root is made from scratch every run (no cached base): the phase prints
# the time of each step. The base is minbase plus make, the one tool the
# README's commands assume. Needs root, network (Debian's archive, the npm
# registry) and /proc, /dev, /sys bound in; every mount is undone on exit.
# The full log: build/ci/clean-root.log (mmdebstrap's beside it).
set -euo pipefail
repo=$(pwd)
log=${CLEAN_ROOT_LOG:-$repo/build/ci/clean-root.log}
mkdir -p "$(dirname "$log")"
: >"$log"

step_t0=$(date +%s)
steps=""
step() {   # step NAME: closes the previous step's clock
  local now; now=$(date +%s)
  [ -n "${step_name:-}" ] && steps="$steps$(printf '  %-28s %5ss' "$step_name" $((now - step_t0)))
"
  step_name=$1; step_t0=$now
  [ -n "$1" ] && echo "--- clean-root: $1"
  return 0
}

[ "$(id -u)" = 0 ] || { echo "clean-root: needs root (mmdebstrap, chroot, mounts)" >&2; exit 1; }
step "install mmdebstrap"
if ! command -v mmdebstrap >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mmdebstrap >>"$log" 2>&1
fi

root=$(mktemp -d /var/tmp/parity-root.XXXXXX)
chmod 755 "$root"   # apt downloads as _apt inside
mounts=()
# In memory when there is room: dpkg's syncs cost nothing and cleaning up is
# an unmount instead of a long rm -rf. The root with the suite's outputs peaks
# past 8 GB since the trained YOLO and NAFNet validations joined the e2e tests
# (build/nafnet-shapes* alone 1.3 GB; isa_golden's dumps ran out of room at
# 8 GB): 12 GB, on disk where less memory is free.
if [ "$(awk '/^MemAvailable:/ {print int($2 / 1048576)}' /proc/meminfo)" -ge 16 ]; then
  mount -t tmpfs -o size=12g,mode=755 parity-root "$root" && mounts+=("$root")
fi
cleanup() {
  local i
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -R -l "${mounts[$i]}" 2>/dev/null || true; done
  # rm stays on this file system: nothing is mounted below $root any more
  rm -rf --one-file-system "$root" 2>/dev/null || true
}
trap cleanup EXIT

# The host's apt sources that point at Debian's archive (the same mirror and
# snapshot the host uses); any other repository the host has stays out.
sources=()
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
  [ -f "$f" ] || continue
  uris=$(grep -hoE '(URIs:|^deb)[[:space:]]+(\[[^]]*\][[:space:]]+)?[a-z+]+://[^[:space:]]+' "$f" | grep -oE '[a-z+]+://[^[:space:]]+' || true)
  [ -n "$uris" ] || continue
  if ! grep -qvE '^[a-z+]+://([a-z.-]+\.)?debian\.org/' <<<"$uris"; then sources+=("$f"); fi
done
[ ${#sources[@]} -gt 0 ] || sources=("http://deb.debian.org/debian")
echo "clean-root: Debian sources from the host: ${sources[*]}"

step "mmdebstrap bookworm"
mmdebstrap --variant=minbase --include=make --logfile="$log.mmdebstrap" bookworm "$root" "${sources[@]}"

step "copy the clone"
mkdir -p "$root/root/parity"
git archive --format=tar HEAD | tar -x -C "$root/root/parity"
cp /etc/resolv.conf "$root/etc/resolv.conf"
for m in proc sys dev; do
  case $m in
    proc) mount -t proc proc "$root/proc" ;;
    sys) mount -t sysfs -o ro sysfs "$root/sys" ;;
    dev) mount --rbind /dev "$root/dev" && mount --make-rslave "$root/dev" ;;
  esac
  mounts+=("$root/$m")
done
# The network's own TLS trust, where the host has one (an egress proxy's CA
# that Node.js is told about): copied in like resolv.conf, so npm ci reaches
# the registry; it is a certificate, not a package.
ca_env=()
if [ -n "${NODE_EXTRA_CA_CERTS:-}" ] && [ -f "$NODE_EXTRA_CA_CERTS" ]; then
  cp "$NODE_EXTRA_CA_CERTS" "$root/etc/ci-network-ca.crt"
  ca_env=(NODE_EXTRA_CA_CERTS=/etc/ci-network-ca.crt)
fi
# MAKEFLAGS: the README's command, on every CPU of the machine.
in_root() { chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
  MAKEFLAGS=-j"$(nproc)" "${ca_env[@]}" "$@"; }

step "normal user, deps missing"
# uid 1000 needs no account (minbase has no useradd); it owns its own copy
mkdir -p "$root/home/ci"
cp -a "$root/root/parity" "$root/home/ci/parity"
chown -R 1000:1000 "$root/home/ci"
rc=0
in_root setpriv --reuid=1000 --regid=1000 --clear-groups /usr/bin/env HOME=/home/ci \
  sh -c 'cd /home/ci/parity && make' >"$root/tmp/user.out" 2>&1 || rc=$?
cat "$root/tmp/user.out"
built=$(cd "$root/home/ci/parity" && { find build -type f 2>/dev/null || true; } | awk 'NR <= 5')
apt_lines=$(grep -c 'apt-get install -y' "$root/tmp/user.out" || true)
if [ $rc = 0 ] || [ "$apt_lines" != 1 ] || [ -n "$built" ]; then
  echo "clean-root: as a normal user make should fail with one apt-get line and build nothing" \
       "(exit $rc, $apt_lines apt-get lines, built: ${built:-nothing})" >&2
  exit 1
fi
echo "clean-root: normal user: exit $rc, one apt-get line, nothing built"

step "root: make test"
rc=0
# each line stamped with the second it came, for the step times below
{ in_root sh -c 'cd /root/parity && make test' 2>&1 || echo "clean-root-exit $?"; } |
  while IFS= read -r line; do printf '%(%s)T %s\n' -1 "$line"; done >"$log.stamped"
cut -d' ' -f2- "$log.stamped" >>"$log"
rc=$(awk '$2 == "clean-root-exit" {print $3}' "$log.stamped"); rc=${rc:-0}
# inside make test: apt, npm ci, the build, the suite (first line of each)
at() { awk -v re="$1" '$0 ~ re {print $1; exit}' "$log.stamped"; }
t_apt=$(at ' deps: installing'); t_npm=$(at ' deps: npm ci'); t_cc=$(at '  (CC|PROTOC) ')
t_prove=$(at '(build/tests/|tests/(unit|stage|e2e|conformance)/)[^ ]* [.][.]'); t_end=$(tail -n 1 "$log.stamped" | cut -d' ' -f1)
if [ -n "$t_apt" ] && [ -n "$t_npm" ] && [ -n "$t_cc" ] && [ -n "$t_prove" ]; then
  printf 'clean-root: inside make test: apt-get %ss, npm ci %ss, build %ss, suite %ss\n' \
    $((t_npm - t_apt)) $((t_cc - t_npm)) $((t_prove - t_cc)) $((t_end - t_prove))
fi
echo "clean-root: packages the dependency step installed inside the root:"
grep -E '^deps: |^Setting up ' "$log" | sed 's/^/  /' | awk 'NR <= 400'   # awk reads to the end: head would SIGPIPE the pipeline (exit 141 under pipefail)
tail -n 25 "$log"
if [ $rc != 0 ]; then echo "clean-root: make test failed in the clean root (exit $rc); log: $log" >&2; exit $rc; fi
grep -q '^deps: installing' "$log" || { echo "clean-root: the dependency step installed nothing: the root was not clean" >&2; exit 1; }

step "clean up"
cleanup; mounts=(); trap - EXIT
step ""
printf 'clean-root: step times\n%s' "$steps"
