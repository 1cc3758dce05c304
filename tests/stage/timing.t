#!/usr/bin/python3
# The matrix's timing (docs/design.md "Timing"): `timed` runs a stage with no
# shell between, passes its exit status on and appends one record per run,
# whole under concurrency; `report --timing` sums the log per stage, and a
# malformed log is bad input naming the file and line; plan.mk sends every
# stage it runs through `timed` and empties the log once per make run.
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done, run, bindir, one_line_error

tmp = tempfile.mkdtemp(prefix="parity-timing-")
log = os.path.join(tmp, "timing.jsonl")
timed = os.path.join(bindir(), "timed")


def records(path):
    return [json.loads(l) for l in open(path).read().splitlines()]


# 1. exit status passed on; one record per run, with its status
for code in (0, 1, 3):
    rc, _, _ = run("timed", "--log", log, "--stage", "st", "--cell", "c", "--", "/bin/sh", "-c", f"exit {code}")
    ok(rc == code, f"timed exits with the command's status {code}", f"rc={rc}")
rc, _, _ = run("timed", "--log", log, "--stage", "sig", "--", "/bin/sh", "-c", "kill -TERM $$")
ok(rc == 128 + 15, "a command killed by SIGTERM gives 143, as the shell says it", f"rc={rc}")
rc, _, err = run("timed", "--log", log, "--stage", "none", "--", os.path.join(tmp, "no-such-program"))
ok(rc == 127 and "no-such-program" in err, "a command that cannot start: 127 and its name", f"rc={rc} {err!r}")
recs = records(log)
ok([(r["stage"], r["rc"]) for r in recs] == [("st", 0), ("st", 1), ("st", 3), ("sig", 143), ("none", 127)],
   "one record per run, in order, with each exit status", recs)
ok(all(r["wall_s"] >= 0 and r["user_s"] >= 0 and r["sys_s"] >= 0 for r in recs) and recs[0]["cell"] == "c"
   and recs[3]["cell"] is None, "times are non-negative; the cell as given, null without")

# 2. the times are the command's: a busy loop's CPU and a sleep's wall
os.remove(log)
run("timed", "--log", log, "--stage", "busy", "--", "/usr/bin/python3", "-c",
    "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass")
run("timed", "--log", log, "--stage", "sleep", "--", "/bin/sleep", "0.3")
busy, sleep = records(log)
ok(busy["user_s"] + busy["sys_s"] >= 0.3 and busy["wall_s"] >= 0.3, "a 0.3 s busy loop: at least 0.3 s of CPU and wall", busy)
ok(sleep["wall_s"] >= 0.3 and sleep["user_s"] + sleep["sys_s"] < 0.3, "a 0.3 s sleep: 0.3 s of wall, less CPU", sleep)

# 3. arguments reach the command as they are: no shell, no expansion
out = os.path.join(tmp, "args")
weird = ["a b", "$(touch pwned)", "'q'", "*", "--stage"]
run("timed", "--log", log, "--stage", "args", "--", "/usr/bin/python3", "-c",
    "import sys, json; json.dump(sys.argv[2:], open(sys.argv[1], 'w'))", out, *weird)
ok(json.load(open(out)) == weird and not os.path.exists("pwned"), "the command's arguments arrive unchanged (no shell)")
ok(one_line_error(*run("timed", "--stage", "x", "--", "/bin/true")[::2]), "no --log: a usage error, exit 2")
ok(one_line_error(*run("timed", "--log", log, "--stage", "x")[::2]), "no command: a usage error, exit 2")

# 4. appends from many processes at once stay whole lines
os.remove(log)
procs = [subprocess.Popen([timed, "--log", log, "--stage", f"p{i % 7}", "--cell", "c" * (i * 9), "--", "/bin/true"])
         for i in range(60)]
codes = [p.wait() for p in procs]
lines = open(log).read().splitlines()
ok(codes == [0] * 60 and len(lines) == 60 and all(json.loads(l)["cell"] == "c" * (len(json.loads(l)["cell"])) for l in lines),
   "60 concurrent runs: 60 whole records", f"{len(lines)} lines")

# 5. report --timing: the sums per stage, computed here from the same records
os.remove(log)
rows = [("infer", 2.25, 2.0, 0.125), ("compare", 0.5, 0.25, 0.0625), ("infer", 3.5, 3.0, 0.25), ("map-eval", 1.0, 0.75, 0.0)]
with open(log, "w") as f:
    for i, (st, w, u, s) in enumerate(rows):
        f.write(json.dumps({"stage": st, "cell": "x", "start": 1000.0 + i, "wall_s": w, "user_s": u, "sys_s": s,
                            "rc": [0, 2, 1, 0][i]}) + "\n")
rc, text, err = run("report", "--timing", log)
got = {m[0]: (int(m[1]), float(m[2]), float(m[3]), float(m[4])) for m in
       re.findall(r"^  (\S+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+) %", text, re.M)}
want, tw = {}, sum(r[1] for r in rows)
for st, w, u, s in rows:
    n, ws, cs, _ = want.get(st, (0, 0, 0, 0))
    want[st] = (n + 1, ws + w, cs + u + s, 0)
want = {k: (n, ws, cs, 100 * ws / tw) for k, (n, ws, cs, _) in want.items()}
want["all"] = (len(rows), tw, sum(r[2] + r[3] for r in rows), 100.0)
close = all(k in got and got[k][0] == v[0] and all(abs(a - b) <= 0.051 for a, b in zip(got[k][1:], v[1:])) for k, v in want.items())
ok(rc == 0 and close and len(got) == len(want), "report --timing: runs, wall, CPU and share per stage and in all", text)
order = [m for m in re.findall(r"^  (\S+)\s+\d", text, re.M)]
ok(order == ["infer", "map-eval", "compare", "all"], "stages longest first", order)
elapsed = max(1000.0 + i + r[1] for i, r in enumerate(rows)) - 1000.0
ok(f"in {elapsed:.1f} s from the first start" in text and re.search(r"^  compare .*\(1 failed\)$", text, re.M)
   and not re.search(r"^  infer .*failed", text, re.M),
   f"the run's span ({elapsed:.1f} s: first start to last end); a run that exited 2 counts as failed, one that exited 1 (a check) not", text)
rc, text, _ = run("report", "--timing", os.path.join(tmp, "absent.jsonl"))
ok(rc == 0 and "no stage ran" in text, "a missing log: no stage ran", text)

# 6. a malformed log: exit 2, one line naming the file and the line
bad = {"not JSON": "{", "an array": "[1]", "no stage": '{"start": 1, "wall_s": 1, "user_s": 1, "sys_s": 0, "rc": 0}',
       "a negative time": '{"stage": "a", "start": 1, "wall_s": -1, "user_s": 1, "sys_s": 0, "rc": 0}',
       "a text rc": '{"stage": "a", "start": 1, "wall_s": 1, "user_s": 1, "sys_s": 0, "rc": "0"}',
       "an empty line": ""}
good = '{"stage": "a", "start": 1, "wall_s": 1, "user_s": 1, "sys_s": 0, "rc": 0}'
for what, line in bad.items():
    with open(log, "w") as f:
        f.write(good + "\n" + line + "\n" + good + "\n")
    rc, _, err = run("report", "--timing", log)
    ok(one_line_error(rc, err, log, "line 2"), f"{what} on line 2: exit 2 naming the file and line 2", f"rc={rc} {err!r}")
with open(log, "w") as f:
    f.writelines(json.dumps({"stage": f"s{i}", "start": 1, "wall_s": 1, "user_s": 1, "sys_s": 0, "rc": 0}) + "\n" for i in range(65))
ok(one_line_error(*run("report", "--timing", log)[::2], "line 65", "64"), "more than 64 stage names: bad input, not a hang")

# 7. plan.mk: every stage a rule runs goes through timed, every such rule has the
# reset first. The sharded form's own steps (SHARDS=N: each shard's preprocess
# and infer, the merges; docs/scale-out.md) are not timed: their array tasks
# run on other hosts, each a make run that would empty the shared log.
plan = os.path.join(tmp, "plan")
rc, _, err = run("plan", "configs/models/rtdetr.yaml", "-o", plan)
mk = open(os.path.join(plan, "plan.mk")).read() if rc == 0 else ""
recipes = [l for l in mk.splitlines() if l.startswith("\t") and "$(PARITY_BIN)/" in l
           and "/shards/" not in l and "$(PARITY_BIN)/shard " not in l]
stages = set()
untimed = []
for l in recipes:
    for m in re.finditer(r"\$\(PARITY_BIN\)/([a-z-]+)", l):
        if m.group(1) == "timed":
            continue
        before = l[:m.start()]
        if before.rstrip().endswith("--") and "$(PARITY_BIN)/timed" in before:
            stages.add(m.group(1))
        elif not re.search(r"report --(timing|verdict)", l[m.start():]):
            untimed.append(l.strip()[:120])
ok(rc == 0 and not untimed and {"preprocess", "build-engine", "infer", "compare", "map-eval", "report"} <= stages,
   "every stage plan.mk runs goes through timed (%s)" % " ".join(sorted(stages)), "\n".join(untimed) or err)
rules = re.findall(r"^(\S[^\n]*)\n((?:\t[^\n]*\n)+)", mk, re.M)
timed_rules = [h for h, body in rules if "$(PARITY_BIN)/timed" in body]
ok(timed_rules and all(h.endswith("| timing-reset-rtdetr") for h in timed_rules),
   f"each of the {len(timed_rules)} timed rules waits for timing-reset-rtdetr (order-only)")

# 8. the reset as make runs it: the log emptied once, before the first stage
reset = re.search(r"^timing-reset-rtdetr:.*\n\t(.*)\n", mk, re.M)
tiny = os.path.join(tmp, "t.mk")
with open(tiny, "w") as f:
    f.write(f"PARITY_BIN := {os.path.abspath(bindir())}\n.PHONY: timing-reset-rtdetr\n"
            f"timing-reset-rtdetr:\n\t{reset.group(1) if reset else 'false'}\n")
    for t in ("a", "b", "c"):
        f.write(f"{tmp}/{t}: | timing-reset-rtdetr\n\t@$(PARITY_BIN)/timed --log '{plan}/timing.jsonl' --stage {t} -- /bin/true\n")
    f.write(f"all: {tmp}/a {tmp}/b {tmp}/c\n")
with open(os.path.join(plan, "timing.jsonl"), "w") as f:
    f.write("left over from an interrupted run\n")
p = subprocess.run(["make", "-s", "-j3", "-f", tiny, "all"], capture_output=True, text=True)
got = [r["stage"] for r in records(os.path.join(plan, "timing.jsonl"))] if p.returncode == 0 else p.stderr
ok(sorted(got) == ["a", "b", "c"], "one make run: the earlier log is gone, this run's three records are there", got)
shutil.rmtree(tmp)
done()
