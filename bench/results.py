"""results.py — one place where a benchmark's result lands: its key in
build/bench/results.json (shared by every benchmark, merged, not overwritten)
and its Markdown table beside it, each written atomically."""
import json
import os


def _write_atomic(path, text):
    with open(path + ".tmp", "w") as fh:
        fh.write(text)
    os.replace(path + ".tmp", path)


def save(outdir, key, result, md):
    """Stores result under key in outdir/results.json and md as outdir/KEY.md."""
    os.makedirs(outdir, exist_ok=True)
    path = os.path.join(outdir, "results.json")
    try:
        allres = json.load(open(path))
        if not isinstance(allres, dict):
            allres = {}
    except (OSError, ValueError):
        allres = {}
    allres[key] = result
    _write_atomic(path, json.dumps(allres, indent=1) + "\n")
    _write_atomic(os.path.join(outdir, key + ".md"), md)
