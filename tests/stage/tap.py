"""tap.py — tiny TAP producer for the stage tests written in Python."""
import os
import subprocess
import sys

_n = 0
_failed = 0


def ok(cond, name, diag=None):
    global _n, _failed
    _n += 1
    print(("ok %d - %s" if cond else "not ok %d - %s") % (_n, name))
    if not cond:
        _failed += 1
        if diag:
            for line in str(diag).splitlines():
                print("#   " + line)
    sys.stdout.flush()
    return cond


def skip(name, reason):
    """A check that cannot run here: counted in the plan, reported as a skip with its reason, never as a pass."""
    global _n
    _n += 1
    print("ok %d - %s # SKIP %s" % (_n, name, reason))
    sys.stdout.flush()


def done():
    print("1..%d" % _n)
    sys.exit(1 if _failed else 0)


def bindir():
    return os.environ.get("PARITY_BIN") or os.path.join(os.path.dirname(__file__), "..", "..", "build", "bin")


def run(stage, *args):
    """Runs a stage; returns (exit code, stdout, stderr)."""
    p = subprocess.run([os.path.join(bindir(), stage)] + [str(a) for a in args],
                       capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def one_line_error(rc, err, *needles):
    """A bad input must exit 2 with one line on stderr naming what is wrong."""
    lines = [l for l in err.splitlines() if l.strip()]
    return rc == 2 and len(lines) == 1 and all(n in lines[0] for n in needles)


def cpu_levels():
    """The instruction-set levels /proc/cpuinfo's flags allow (util/isa.h's
    rule), best first."""
    flags = set()
    for line in open("/proc/cpuinfo"):
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            break
    levels = ["generic"]
    if {"avx2", "fma", "f16c"} <= flags:
        levels.insert(0, "avx2")
        if "avx512f" in flags:
            levels.insert(0, "avx512")
    return levels
