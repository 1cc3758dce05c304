#!/usr/bin/env python3
"""ort_time.py — the timing half of the onnxruntime backend for hosts that
have Python's onnxruntime but no Node.js (BENCH_ORT=python in
infer_vs_ort.py). Same session settings as pipeline/backends/onnxruntime.js
(CPU provider, intra-op threads = --threads, inter-op 1, sequential, default
optimisation level), same timing (each of --runs runs timed, load untimed),
same --stats keys. One tensor set (folder of NAME.npy) only.

  ort_time.py run --model M --input IN --output OUT --threads N --runs N --stats FILE
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np
import onnxruntime as ort

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pipeline", "backends", "lib"))
sys.dont_write_bytecode = True
from names import name_decode, name_encode  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("cmd", choices=["run"])
for a in ("--model", "--input", "--output", "--stats"):
    ap.add_argument(a, required=True)
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--runs", type=int, default=1)
o = ap.parse_args()

so = ort.SessionOptions()
so.intra_op_num_threads = o.threads
so.inter_op_num_threads = 1
so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
so.log_severity_level = 3
sess = ort.InferenceSession(o.model, so, providers=["CPUExecutionProvider"])
feeds = {name_decode(f[:-4]): np.load(os.path.join(o.input, f)) for f in sorted(os.listdir(o.input))
         if f.endswith(".npy")}
times = []
for _ in range(o.runs):
    t0 = time.perf_counter()
    outs = sess.run(None, feeds)
    times.append((time.perf_counter() - t0) * 1e3)
os.makedirs(o.output, exist_ok=True)
for meta, a in zip(sess.get_outputs(), outs):
    np.save(os.path.join(o.output, name_encode(meta.name) + ".npy"), a)
stats = {"threads": o.threads, "samples": [{"min_ms": min(times), "median_ms": statistics.median(times),
                                            "max_ms": max(times), "runs": len(times), "sample": "."}]}
with open(o.stats, "w") as f:
    json.dump(stats, f, indent=1)
