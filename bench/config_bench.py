"""config_bench.py — times plan's YAML reader on large configs (bench/config.sh):
wall time, best of BENCH_REPEAT, for a config of N keys ending in a
duplicate of its first, and PyYAML's load of the same file. Result in
build/bench/results.json under "config" and build/bench/config.md."""
import os
import subprocess
import sys
import tempfile
import time

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from results import save

here = os.path.dirname(os.path.abspath(__file__))
repo = os.path.dirname(here)
plan = os.path.join(os.environ.get("PARITY_BIN") or os.path.join(repo, "build", "bin"), "plan")
sizes = [int(k) for k in os.environ.get("BENCH_KEYS", "10000 40000 80000").split()]
repeat = int(os.environ.get("BENCH_REPEAT", "3"))
loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
tmp = tempfile.mkdtemp(prefix="parity-bench-config-")


def best_of(fn):
    best = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        t = time.perf_counter() - t0
        best = t if best is None else min(best, t)
    return best


rows, result, slow = [], {}, False
for n in sizes:
    path = os.path.join(tmp, "k%d.yaml" % n)
    with open(path, "w") as f:
        f.write("".join("k%07d: %d\n" % (i, i % 10) for i in range(n)) + "k0000000: 1\n")

    def run_plan():
        p = subprocess.run([plan, path, "-o", os.path.join(tmp, "out")], capture_output=True, text=True)
        if p.returncode != 2 or "duplicate key 'k0000000'" not in p.stderr:
            sys.exit("config.sh: plan did not refuse the duplicate: %s" % p.stderr.strip())

    t_plan = best_of(run_plan)
    t_py = best_of(lambda: yaml.load(open(path), Loader=loader))
    mb = os.path.getsize(path) / 1e6
    result[str(n)] = {"bytes": os.path.getsize(path), "plan_s": round(t_plan, 4), "pyyaml_s": round(t_py, 4)}
    rows.append("| %d | %.2f | %.3f | %.3f (%s) |" % (n, mb, t_plan, t_py, loader.__name__))
    print("config: %6d keys %.2f MB: plan refuses in %.3f s; PyYAML loads in %.3f s" % (n, mb, t_plan, t_py))
    slow = slow or (n >= 80000 and t_plan >= 0.5)
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
md = ("| keys | MB | plan refuses (s) | PyYAML loads (s) |\n|---:|---:|---:|---:|\n" + "\n".join(rows) +
      "\n\nBest of %d, %d CPUs, %s. The duplicate is the last key: every key is read and checked.\n" % (repeat, os.cpu_count(), cpu))
save(os.path.join(repo, "build", "bench"), "config", result, md)
if slow:
    sys.exit("config.sh: 80,000 keys took 0.5 s or more (goal: under 0.5 s)")
