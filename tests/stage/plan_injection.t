#!/usr/bin/python3
# No config value and no file name ever runs a command through the pipeline
# (issue 15). Generated from the schema: `plan --schema` prints every key a
# model config may hold (the same tables the readers check keys against), and
# every key is probed with every hostile value below — at its value and, for
# "*" keys, at the key itself. A probe passes when plan either refuses it
# (exit 2, one line naming the config file and the key, nothing written) or
# accepts it with the value nowhere in plan.mk, carried verbatim in a file
# the step reads (argument file, generated config); then every accepted plan
# is run by make, each step a stub, and no canary file may appear. Config file
# names with the same characters go through plan and through the Makefile's
# MODEL=all, and MODEL=... itself through the Makefile.
import fnmatch
import json
import os
import re
import shutil
import string
import subprocess
import sys
import tempfile

# the makes run here are a user's fresh ones, not children of `make test`
# (whose MAKEFLAGS, and the command-line variables make exports to its
# recipes' environment, would pass SANITIZE=1 and the like down to them)
for _k in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "SANITIZE", "CC_OUT", "V"):
    os.environ.pop(_k, None)

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done, bindir

repo = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
plan = os.path.join(os.path.abspath(bindir()), "plan")
tmp = tempfile.mkdtemp(prefix="parity-plan-inj-")


def payloads(tag):
    """Hostile values; each would create the canary file C<tag> if it ran."""
    c = "C%s" % tag
    return [
        "[0,0,0]\nrule:\n\ttouch %s\n" % c,      # a newline: a make rule (the reported bug)
        "$(shell touch %s)" % c,                  # make function
        "$$(touch %s)" % c,                       # shell substitution once make unescapes $$
        "$(touch %s)" % c,                        # shell substitution
        "`touch %s`" % c,                         # backquotes
        "x'; touch %s; '" % c,                    # out of single quotes
        'x"; touch %s; "' % c,                    # out of double quotes
        "x; touch %s" % c,
        "x | touch %s" % c,
        "x && touch %s & " % c,
        "x # touch %s" % c,                       # make comment
        "x\rtouch %s" % c,                        # another control character
        "-x --output=%s" % c,                     # an option where a value was expected
    ]


PAYLOAD_KINDS = len(payloads(0))

# ---- the probe workspace: a repo-like tree plan runs in, stub stages ----
W = os.path.join(tmp, "w")
for d in ("configs/preprocess", "configs/precisions", "pipeline/backends", "imgs", "stubs", "out"):
    os.makedirs(os.path.join(W, d))
shutil.copy(os.path.join(repo, "configs/preprocess/rtdetr-official.yaml"), os.path.join(W, "configs/preprocess/base.yaml"))
shutil.copy(os.path.join(repo, "configs/precisions/fp32.yaml"), os.path.join(W, "configs/precisions/fp32.yaml"))
for f in ("m.onnx", "gt.json", "dep.txt", "sets", "pipeline/backends/stub"):
    open(os.path.join(W, f), "w").close()
os.chmod(os.path.join(W, "pipeline/backends/stub"), 0o755)
STAGES = ("preprocess", "build-engine", "infer", "compare", "map-eval", "report")
for s in STAGES:   # a stub records that it ran and makes the files make waits for
    with open(os.path.join(W, "stubs", s), "w") as f:
        f.write("#!/bin/sh\necho %s >> ran.log\nwhile [ $# -gt 1 ]; do case \"$1\" in --json|--layers-out) : > \"$2\";; "
                "-o) [ %s = build-engine ] && : > \"$2\";; esac; shift; done\nexit 0\n" % (s, s))
    os.chmod(os.path.join(W, "stubs", s), 0o755)
# the real timed runs each stub, as plan.mk has it run every stage (no shell between)
shutil.copy(os.path.join(bindir(), "timed"), os.path.join(W, "stubs", "timed"))

# Every section present, so each key lands in a config that is otherwise valid.
BASE = {
    "name": "probe",
    "description": "probe",
    "model": "m.onnx",
    "dataset": {"gt": "gt.json", "images": "imgs"},
    "depends": ["dep.txt"],
    "input_shapes": {"images": "1x3x8x8"},
    "preprocess": {"resize.size": "8x8"},
    "variants": ["base", {"name": "v2", "config": {"resize": {"size": "8x8"}, "extra": {"o": "orig_wh"}}}],
    "precisions": ["fp32", {"name": "p2", "config": {"precision": "fp16"}}],
    "reference": {"variant": "base", "precision": "fp32"},
    "compare": {"atol": 0.1, "rtol": 0.1, "check_error_stat": "max", "outputs": {"out": {"atol": 0.1, "rtol": 0.1}}},
    "detection": {"labels": "labels", "boxes": "boxes", "scores": "scores"},
    "thresholds": {"max_map_drop": 1, "min_map": 0.1, "require_compare": False},
    "layerwise_sample": "s1",
}
BASE_INPUTS = {k: v for k, v in BASE.items() if k not in ("dataset", "variants", "preprocess", "detection", "thresholds")}
BASE_INPUTS["inputs"] = "sets"
BASE_INPUTS["reference"] = {"precision": "fp32"}


def place(node, comps, value, probe_star):
    """Sets value at comps in node; the star component numbered probe_star (if
    any) takes the value as its key instead, keeping the old key's value."""
    c, rest = comps[0], comps[1:]
    if c == "[]":
        node = node if isinstance(node, list) else []
        # the first item that already has the next key, else the first mapping, else the first
        idx = next((i for i, it in enumerate(node) if rest and isinstance(it, dict) and rest[0] in it),
                   next((i for i, it in enumerate(node) if rest and isinstance(it, dict)), 0))
        if not node:
            node.append({})
        node[idx] = place(node[idx], rest, value, probe_star) if rest else value
        return node
    node = node if isinstance(node, dict) else {}
    if "*" in c:
        old = next((k for k in node if fnmatch.fnmatchcase(k, c)), None)
        mine = probe_star == place.star
        place.star += 1
        key = c.replace("*", value) if mine else (old or c.replace("*", "x"))
        inner = node.pop(old) if old is not None else ("1" if not rest else {})
        node[key] = (place(inner, rest, value, probe_star) if rest else (inner if mine else value))
        return node
    node[c] = place(node.get(c), rest, value, probe_star) if rest else value
    return node


def config_for(comps, value, probe_star, name):
    base = BASE_INPUTS if comps[0] in BASE_INPUTS and comps[0] not in BASE else BASE
    cfg = json.loads(json.dumps(base))
    cfg["name"] = name
    place.star = 0
    return place(cfg, comps, value, probe_star)


def strings(x):
    if isinstance(x, str):
        yield x
    elif isinstance(x, dict):
        for k, v in x.items():
            yield k
            yield from strings(v)
    elif isinstance(x, list):
        for v in x:
            yield from strings(v)


def carried(outdir, value):
    """Files plan wrote for the steps (argument files, configs) holding value verbatim."""
    found = []
    for root, _, files in os.walk(outdir):
        for f in files:
            if f in ("plan.mk", "plan.json"):
                continue
            try:
                doc = json.load(open(os.path.join(root, f)))
            except ValueError:
                continue
            if any(value in s for s in strings(doc)):
                found.append(os.path.relpath(os.path.join(root, f), outdir))
    return found


def escaped(s):
    return "".join("\\n" if ch == "\n" else "\\t" if ch == "\t" else
                   "\\x%02x" % ord(ch) if ord(ch) < 32 or ord(ch) == 127 else ch for ch in s)


def run_plan(cfg_path, outdir):
    p = subprocess.run([plan, cfg_path, "-o", outdir], cwd=W, capture_output=True, text=True)
    return p.returncode, p.stderr


# ---- the schema ----
p = subprocess.run([plan, "--schema"], capture_output=True, text=True)
schema = []
for line in p.stdout.splitlines():
    path, what = line.split("\t", 1)
    schema.append((json.loads(path), what))
ok(p.returncode == 0 and len(schema) > 0, "plan --schema lists %d keys" % len(schema), p.stderr)


def leaf_paths(x, pre=()):
    """Every key path of a config: map keys, "[]" for list items."""
    if isinstance(x, dict):
        for k, v in x.items():
            yield from leaf_paths(v, pre + (k,))
    elif isinstance(x, list) and x:
        for v in x:
            yield from leaf_paths(v, pre + ("[]",))
    else:
        yield pre


def in_schema(path):
    """A schema line names path exactly (its "*" parts as patterns); list items
    below it are its value (label_map: [1, 2])."""
    for comps, _ in schema:
        n = len(comps)
        if (len(path) >= n and all(fnmatch.fnmatchcase(a, c) for a, c in zip(path, comps))
                and all(a == "[]" for a in path[n:])):
            return True
    return False


# The schema is the readers' own key tables (a key dropped from it is no longer
# accepted in a config); and every key path the bundled configs and the probe
# bases use is a line of it, so no section can drop out of the probes.
import yaml
docs = [BASE, BASE_INPUTS] + [yaml.safe_load(open(os.path.join(repo, "configs/models", f)))
                              for f in sorted(os.listdir(os.path.join(repo, "configs/models"))) if f.endswith(".yaml")]
missing = sorted({"/".join(p) for d in docs for p in leaf_paths(d) if not in_schema(p)})
ok(not missing, "every key path of the bundled configs and of the probe bases is a schema line", "missing: %s" % missing)

# the two bases are valid: every probe starts from a config plan accepts
for i, base in enumerate((BASE, BASE_INPUTS)):
    cfg = dict(json.loads(json.dumps(base)), name="base%d" % i)
    path = os.path.join(W, "base%d.yaml" % i)
    json.dump(cfg, open(path, "w"))
    rc, err = run_plan(path, "out/base%d" % i)
    ok(rc == 0, "the probe base %d is a valid config" % i, err)

# ---- one probe per (key, position, value) ----
probes = []   # (name, comps, position, value)
for comps, what in schema:
    stars = sum("*" in c for c in comps)
    for pos in [-1] + list(range(stars)):
        for value in payloads(len(probes)):
            probes.append(("p%d" % len(probes), comps, pos, value, what))

accepted, bad = [], []
covered = set()
for name, comps, pos, value, what in probes:
    canary = "C" + name[1:]
    cfg = config_for(comps, value, pos, name)
    path = os.path.join(W, name + ".yaml")
    json.dump(cfg, open(path, "w"))
    outdir = "out/" + name
    rc, err = run_plan(path, outdir)
    lines = [l for l in err.splitlines() if l.strip()]
    where = "%s at %s" % (json.dumps(comps), "value" if pos < 0 else "key %d" % pos)
    if pos < 0:   # the value: the last key with a name
        keyword = [c for c in comps if c != "[]" and "*" not in c][-1]
    else:         # a key: the key above it
        star = [i for i, c in enumerate(comps) if "*" in c][pos]
        keyword = ([c for c in comps[:star] if c != "[]"] or [comps[0]])[-1]
    if rc == 2:
        fine = (len(lines) == 1 and name + ".yaml" in lines[0]
                and (keyword in lines[0] or keyword.rstrip("s") in lines[0])
                and not os.path.exists(os.path.join(W, outdir, "plan.mk")))
        if not fine:
            bad.append("%s %r refused without one line naming %s.yaml and '%s': %s" % (where, value, name, keyword, err.strip()))
    elif rc == 0:
        mk = open(os.path.join(W, outdir, "plan.mk")).read()
        files = carried(os.path.join(W, outdir), value)
        if canary in mk:
            bad.append("%s %r: the value is in plan.mk" % (where, value))
        elif not files and "read by no step" not in what:
            bad.append("%s %r: accepted but carried in no argument or config file" % (where, value))
        else:
            accepted.append((name, any(f.endswith(".args") for f in files), mk.replace(name, "NAME")))
    else:
        bad.append("%s %r: plan exited %d: %s" % (where, value, rc, err.strip()))
    covered.add(json.dumps(comps))
ok(not bad, "%d probes (%d keys x positions x %d values): each refused with one line naming file and key, "
   "or carried verbatim in a file the step reads and absent from plan.mk (%d accepted)"
   % (len(probes), len(schema), PAYLOAD_KINDS, len(accepted)), "\n".join(bad[:20]))
ok(covered == {json.dumps(c) for c, _ in schema}, "every key of the schema was probed")

# ---- run the accepted plans through make: each step runs (a stub), no canary ----
# plan.mk is the only text make and the shell read; the values stay in files
# only the stages read. So one plan per distinct plan.mk (the model name
# aside) is run: the other plans' recipes are the same text.
run, seen = ["base0", "base1"], set()
for name, in_args, mk in accepted:
    if mk not in seen:
        run.append(name)
    seen.add(mk)
with open(os.path.join(W, "run.mk"), "w") as f:
    f.write("PARITY_BIN := stubs\nQ := @\nJOBS := 1\nTHREADS := 1\nFORCE:\n.PHONY: FORCE all-probes\n")
    f.write("all-probes:\n")
    for name in run:
        f.write("include out/%s/plan.mk\n" % name)
    f.write("all-probes: $(foreach m,$(PLAN_MODELS),validate-$(m))\n")
m = subprocess.run(["make", "-k", "-s", "-j2", "-f", "run.mk", "all-probes"], cwd=W, capture_output=True, text=True)
ran = set(open(os.path.join(W, "ran.log")).read().split()) if os.path.exists(os.path.join(W, "ran.log")) else set()
ok(ran == set(STAGES), "make ran the recipes of %d plans (every distinct plan.mk of %d accepted, %d with the value in an "
   "argument file): every stage was invoked (%s)" % (len(run), len(accepted), sum(a[1] for a in accepted), " ".join(sorted(ran))),
   m.stderr[-2000:])
canaries = sorted(f for f in os.listdir(W) if f.startswith("C"))
ok(not canaries, "no injected command ran: no canary file", "canaries: %s" % canaries)

# the harness can see an injection: the same run with one injected recipe line makes its canary
with open(os.path.join(W, "out/base0/plan.mk"), "a") as f:
    f.write("validate-base0: control\ncontrol:\n\t@touch Ccontrol\n")
subprocess.run(["make", "-k", "-s", "-f", "run.mk", "validate-base0"], cwd=W, capture_output=True)
ok(os.path.exists(os.path.join(W, "Ccontrol")), "control: an injected recipe line in plan.mk does create its canary")
os.remove(os.path.join(W, "Ccontrol"))

# ---- config file names: plan refuses them ----
bad = []
names = [v.replace("/", "_") for v in payloads("f")]
for v in names:
    path = os.path.join(W, v + ".yaml")
    json.dump(dict(BASE, name="fname"), open(path, "w"))
    rc, err = run_plan(path, "out/fname")
    lines = [l for l in err.splitlines() if l.strip()]
    # a name from the file name (no name: key) must also be refused
    json.dump({k: x for k, x in BASE.items() if k != "name"}, open(path, "w"))
    rc2, err2 = run_plan(path, "out/fname2")
    lines2 = [l for l in err2.splitlines() if l.strip()]
    if not (rc == 2 and rc2 == 2 and len(lines) == 1 and len(lines2) == 1 and escaped(v) in lines[0]
            and escaped(v) in lines2[0]):
        bad.append("%r: rc %d/%d: %s | %s" % (v, rc, rc2, err.strip(), err2.strip()))
    os.remove(path)
ok(not bad, "%d config file names with hostile characters are refused by plan, one line naming the file" % len(names),
   "\n".join(bad))
ok(not os.path.exists(os.path.join(W, "out/fname/plan.mk")) and not [f for f in os.listdir(W) if f.startswith("C")],
   "nothing written, no canary")

# ---- the Makefile: MODEL=all skips hostile file names, MODEL=... is text ----
R = os.path.join(tmp, "r")   # the repo's Makefile over a configs tree of our own
os.makedirs(os.path.join(R, "configs/models"))
os.makedirs(os.path.join(R, "build"))
for f in ("Makefile", "mk", "stages", "tools", "package.json", "package-lock.json"):
    os.symlink(os.path.join(repo, f), os.path.join(R, f))
for d in ("preprocess", "precisions"):
    os.symlink(os.path.join(repo, "configs", d), os.path.join(R, "configs", d))
os.symlink(os.path.abspath(bindir()), os.path.join(R, "build/bin"))
open(os.path.join(R, "m.onnx"), "w").close()
good = {"model": "m.onnx", "inputs": "sets", "precisions": ["fp32"]}
json.dump(good, open(os.path.join(R, "configs/models/good.yaml"), "w"))
hostile = [v.replace("/", "_") for v in payloads("m")] + ["-k"]
for v in hostile:
    json.dump(good, open(os.path.join(R, "configs/models", v + ".yaml"), "w"))


def make_r(*args):
    return subprocess.run(["make", "-o", "build/bin/plan", "-o", "build/.deps-ok"] + list(args), cwd=R,
                          capture_output=True, text=True)


m = make_r("plan", "MODEL=all")
skipped = sorted(l for l in m.stderr.splitlines() if l.startswith("validate: skipping configs/models/"))
masked = sorted("validate: skipping configs/models/%s.yaml: a model name uses only letters, digits and . _ -"
                % re.sub(r"[^A-Za-z0-9._-]", "?", v) for v in hostile)
ok(m.returncode == 0 and os.path.exists(os.path.join(R, "build/good/plan.mk")) and skipped == masked,
   "make plan MODEL=all plans good.yaml and names each of the %d hostile file names it skips (odd characters as ?)"
   % len(hostile), m.stdout + m.stderr)
ok(sorted(os.listdir(os.path.join(R, "build"))) == ["bin", "good"], "no plan for a hostile name",
   os.listdir(os.path.join(R, "build")))

# A real model from outside (tools/real-models/fetch.sh, docs/real-models.md):
# MODEL=all skips its config until build/real-models/ is fetched; naming it
# says how to fetch it; nothing downloads. Once fetched, MODEL=all plans it.
real = dict(good, model="build/real-models/m.onnx", depends=["build/real-models/.done"])
json.dump(real, open(os.path.join(R, "configs/models/real.yaml"), "w"))
m = make_r("plan", "MODEL=all")
ok(m.returncode == 0 and "validate: skipping configs/models/real.yaml: build/real-models/ not fetched "
   "(tools/real-models/fetch.sh)" in m.stderr.splitlines() and not os.path.exists(os.path.join(R, "build/real")),
   "make plan MODEL=all skips a config reading build/real-models/ while it is not fetched, naming it", m.stderr)
m = make_r("validate", "MODEL=real")
ok(m.returncode == 2 and "is missing: run tools/real-models/fetch.sh first" in m.stderr
   and not os.path.exists(os.path.join(R, "build/real-models")),
   "make validate MODEL=real: exit 2, says to run fetch.sh, fetches nothing", m.stdout + m.stderr)
os.makedirs(os.path.join(R, "build/real-models"))
open(os.path.join(R, "build/real-models/.done"), "w").close()
m = make_r("plan", "MODEL=all")
ok(m.returncode == 0 and os.path.exists(os.path.join(R, "build/real/plan.mk")) and "real.yaml: build/real-models" not in m.stderr,
   "once fetched, make plan MODEL=all plans it", m.stderr)
shutil.rmtree(os.path.join(R, "build/real-models"))
shutil.rmtree(os.path.join(R, "build/real"))
os.remove(os.path.join(R, "configs/models/real.yaml"))


# ---- every make variable a user or CI can set (mk/safe-names.mk) ----
def user_variables(texts, plan_texts):
    """The variables the makefiles (texts) and the plan.mk text plan writes
    (C string literals of plan_texts) read without setting them: referenced
    and never assigned unconditionally, or given a ?= default. A variable
    taken as text by `override X := $(value X)` stays a user variable."""
    name = r"[A-Za-z_][A-Za-z0-9_]*"
    refd, assigned, defaults, bound = set(), set(), set(), set()

    def scan(t):
        t = re.sub(r"^[ \t]*#.*$", "", t, flags=re.M)
        refd.update(re.findall(r"\$[({](" + name + r")[)}:]", t))
        refd.update(re.findall(r"\$\((?:value|origin|flavor) (" + name + r")\)", t))
        refd.update(re.findall(r"^[ \t]*(?:ifdef|ifndef)[ \t]+(" + name + ")", t, re.M))
        for line in re.findall(r"^[ \t]*export[ \t]+([^:=\n]*)$", t, re.M):
            refd.update(line.split())
        bound.update(re.findall(r"\$\(foreach (" + name + "),", t))
        for v, rhs in re.findall(r"^[ \t]*(?:override[ \t]+)?(?:export[ \t]+)?(" + name + r")[ \t]*(?::=|::=|=|\+=)(.*)$",
                                 t, re.M):
            if rhs.strip() != "$(value %s)" % v:
                assigned.add(v)
        assigned.update(re.findall(r"^define[ \t]+(" + name + ")", t, re.M))
        defaults.update(re.findall(r"^[ \t]*(" + name + r")[ \t]*\?=", t, re.M))
    for t in texts:
        scan(t)
    for t in plan_texts:   # plan.mk's text: the string literals plan prints
        scan("".join(x.replace("\\n", "\n").replace("\\t", "\t") for x in re.findall(r'"((?:[^"\\]|\\.)*)"', t)))
    builtin = {"MAKE", "MAKECMDGOALS", "CURDIR", "MAKEFLAGS", "MFLAGS", "MAKE_RESTARTS", "MAKELEVEL", "SAFE_NAMES_MK"}
    return ((refd - assigned - bound - builtin) | defaults) - {"BUILD"}   # BUILD= is refused (the Makefile)


def read(path):
    return open(os.path.join(repo, path)).read()


mk_texts = [read("Makefile")] + [read(os.path.join("mk", f)) for f in sorted(os.listdir(os.path.join(repo, "mk")))
                                 if f.endswith(".mk")]
plan_texts = [read(os.path.join("stages/plan", f)) for f in sorted(os.listdir(os.path.join(repo, "stages/plan")))
              if f.endswith(".c")]
users = user_variables(mk_texts, plan_texts)
m = make_r("-s", "--eval=safe-vars:;@echo $(SAFE_NAMES) / $(SAFE_FLAGS) / $(SAFE_TEXT)", "safe-vars")
classes = [c.split() for c in m.stdout.split("/")] if m.returncode == 0 else [[], [], []]
names, flags, text = (classes + [[], [], []])[:3]
declared = set(names) | set(flags) | set(text)
ok({"SHARDS", "SHARD", "LAUNCHER", "PARITY_SHARD_MERGE", "SLURM_FLAGS", "SLURM_TIME", "CRITERION", "MODEL", "CC"} <= users,
   "the enumeration finds the user variables of the Makefile, mk/*.mk and plan.mk (%d)" % len(users), sorted(users))
ok(user_variables(["probe: ; @echo '$(NEWVAR)'\nOTHER ?= 1\n"], ['printf("$(NEWPLANVAR)\\n");']) >= {"NEWVAR", "OTHER", "NEWPLANVAR"},
   "control: a variable a new rule reads, a ?= default and one plan.mk reads are each found")
ok(users <= declared, "every user variable is declared in one class of mk/safe-names.mk",
   "undeclared: %s" % sorted(users - declared))
# a text variable reaches its program through the environment only
in_recipes = [v for v in text for t in mk_texts + plan_texts if re.search(r"\$[({]" + v + r"\b", t)]
ok(text and not in_recipes, "SAFE_TEXT variables (%s) never appear in a rule's text" % " ".join(text), in_recipes)


def probe_make(args, env_add=None):
    env = dict(os.environ, **(env_add or {}))
    return subprocess.run(["make", "-o", "build/bin/plan", "-o", "build/.deps-ok"] + list(args), cwd=R,
                          capture_output=True, text=True, env=env)


allowed = {"names": set(string.ascii_letters + string.digits + "._- "),
           "flags": set(string.ascii_letters + string.digits + "._- /+=,:@")}
bad, refused = [], 0
for var in sorted(declared):
    cls = "names" if var in names else "flags" if var in flags else "text"
    for i, v in enumerate(payloads("v" + var)):
        plain = set(v) <= allowed["names" if cls == "names" else "flags"] if cls != "text" else "\n" not in v and "\t" not in v
        ways = [("cmd", ["plan", "MODEL=good", "%s=%s" % (var, v)] if var != "MODEL" else ["plan", "MODEL=" + v], None)]
        if i < 4:   # the make functions and substitutions also from the environment, and with -n
            ways += [("env", ["plan"] + (["MODEL=good"] if var != "MODEL" else []), {var: v}),
                     ("cmd -n", ["-n", "plan", "MODEL=good", "%s=%s" % (var, v)] if var != "MODEL" else ["-n", "plan", "MODEL=" + v], None)]
        for how, args, env_add in ways:
            m = probe_make(args, env_add)
            lines = [l for l in m.stderr.splitlines() if l.strip()]
            if plain:
                continue   # a value in the class's alphabet is taken; only no canary is asked (below)
            refused += 1
            if m.returncode != 2 or len(lines) != 1 or ("%s='" % var) not in lines[0] or "the value given" not in lines[0]:
                bad.append("%s %s=%r: rc %d %s" % (how, var, v, m.returncode, m.stderr.strip()[-300:]))
ok(not bad and refused > 3 * len(declared),
   "every declared variable (%d) with a hostile value, on the command line, from the environment and with -n: "
   "make refuses it, exit 2 and one line naming it (%d probes)" % (len(declared), refused), "\n".join(bad))
m = probe_make(["-n", "plan", "MODEL=good", "UNDECLARED_X=$(shell touch Cundeclared)"])
ok(m.returncode == 2 and "UNDECLARED_X='$(shell touch Cundeclared)': flags use only" in m.stderr, "an undeclared command-line variable is checked too",
   m.stderr)
m = probe_make(["--eval=probe-env: ; @echo '$(UNDECLARED_Y)'", "probe-env"], {"UNDECLARED_Y": "$(shell touch Cundeclared)"})
ok(m.returncode == 0 and m.stdout.strip() == "$(shell touch Cundeclared)",
   "an undeclared environment variable read by a rule is text: it runs nothing", m.stdout + m.stderr)
m = probe_make(["-n", "plan", "MODEL=good", "SLURM_FLAGS=--qos=high --exclusive", "SLURM_TIME=1:00:00", "CRITERION=cosine=0.99",
                "FILTER=Conv|Relu.*"])
ok(m.returncode == 0, "ordinary values of the flag and text classes are taken", m.stderr)
canaries = [f for d in (R, W) for f in os.listdir(d) if f.startswith("C")]
ok(not canaries, "no canary from file names or make variables", canaries)

# ---- tensor names are keys: one with dots ("input.1") is one key ----
dotted = dict(json.loads(json.dumps(BASE)), name="dotted", input_shapes={"input.1": "1x3x8x8"})
dotted["compare"]["outputs"] = {"out.0": {"atol": 0.25, "rtol": 0.5}}
path = os.path.join(W, "dotted.yaml")
json.dump(dotted, open(path, "w"))
rc, err = run_plan(path, "out/dotted")
args = "".join(open(os.path.join(W, "out/dotted", r, f)).read() for r, _, fs in os.walk(os.path.join(W, "out/dotted"))
               for f in fs if f.endswith(".args")) if rc == 0 else ""
ok(rc == 0 and '"input.1=1x3x8x8"' in args and "out.0" in args,
   "tensor names with dots in input_shapes and compare.outputs are accepted and carried", err + args[:500])
dotted["compare"]["outputs"] = {"out.0": {"atl": 0.25}}
json.dump(dotted, open(path, "w"))
rc, err = run_plan(path, "out/dotted2")
ok(rc == 2 and "unknown key 'compare.outputs.out.0.atl'" in err and "dotted.yaml:" in err,
   "a typo below a dotted tensor name is an unknown key, named whole", err)

shutil.rmtree(tmp)
done()
