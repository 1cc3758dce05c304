#!/bin/sh
# compare.sh — `make bench`: compare's throughput on large float32 tensor
# pairs, in MB/s of A+B data per core (compare runs on one core), with the
# files in the page cache; best of BENCH_REPEAT (3) runs. Also the same pair
# through numpy computing the same statistics, as a yardstick. Wall and CPU
# time are both shown: on a busy machine CPU time is the per-core figure.
# BENCH_MB (256) is the size of each side; BENCH_TENSORS (4) how it is split.
set -e
bin=${PARITY_BIN:-$(dirname "$0")/../build/bin}
py=${PYTHON:-/usr/bin/python3}
mb=${BENCH_MB:-256}
nt=${BENCH_TENSORS:-4}
rep=${BENCH_REPEAT:-3}
dir=$(mktemp -d /tmp/parity-bench-compare-XXXXXX)
trap 'rm -rf "$dir"' EXIT

"$py" - "$dir" "$mb" "$nt" <<'EOF'
import os, sys
import numpy as np
d, mb, nt = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
n = mb * (1 << 20) // 4 // nt
rng = np.random.default_rng(0)
for side in "ab":
    os.makedirs(os.path.join(d, side))
for i in range(nt):
    b = rng.standard_normal(n, dtype=np.float32)
    a = b + (rng.standard_normal(n, dtype=np.float32) * 1e-3).astype(np.float32)
    np.save(os.path.join(d, "b", "t%d.npy" % i), b)
    np.save(os.path.join(d, "a", "t%d.npy" % i), a)
EOF
bytes=$(cat "$dir"/a/*.npy "$dir"/b/*.npy | wc -c)
# best wall time and best CPU time (user + sys) over the runs: on a busy
# machine the CPU time is the fairer per-core figure
times=$("$py" - "$rep" "$bin/compare" -q "$dir/a" "$dir/b" --json "$dir/r.json" <<'EOF'
import resource, subprocess, sys, time
rep, cmd = int(sys.argv[1]), sys.argv[2:]
wall = cpu = 1e9
for _ in range(rep):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL)
    assert r.returncode in (0, 1), r.returncode      # 1: the pair differs, as generated
    wall = min(wall, time.perf_counter() - t)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = min(cpu, r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
print("%.6f %.6f" % (wall, cpu))
EOF
)
best=${times% *}
cpu=${times#* }
"$py" - "$dir" "$bytes" "$best" "$cpu" <<'EOF'
import os, sys, time
import numpy as np
d, nbytes, best, cpu = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
t = time.perf_counter()
for f in sorted(os.listdir(os.path.join(d, "a"))):
    a, b = np.load(os.path.join(d, "a", f)), np.load(os.path.join(d, "b", f))
    ad = np.abs(a - b)
    be = b.copy()
    be[be == 0] += 2.220446049250313e-16
    rd = ad / np.abs(be)
    for x in (ad, rd):
        x.max(), x.argmax(), x.mean(), x.std(), np.median(x), np.quantile(x, [0.9, 0.95, 0.99])
    np.histogram(ad, bins=10)
    (a.astype(np.float64) * b).sum(), ((a - b).astype(np.float64) ** 2).sum()
tn = time.perf_counter() - t
print("compare: %d MB of float32 pairs (A+B), one core: %.3f s wall (%.0f MB/s), %.3f s CPU (%.0f MB/s per core; "
      "target >= 500)" % (nbytes / 1e6, best, nbytes / best / 1e6, cpu, nbytes / cpu / 1e6))
print("numpy, the same statistics on one core: %.3f s wall (%.0f MB/s); compare is %.1fx faster"
      % (tn, nbytes / tn / 1e6, tn / best))
EOF
