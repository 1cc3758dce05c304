#!/usr/bin/python3
# plan's reading of the task keys (task:, dataset ground truth, metric:,
# thresholds.max_metric_drop / min_metric / max_metric): a valid config
# gives task-eval's argument file and the checks in plan.json; each mistake
# is refused with exit 2 and one line naming the file and the key.
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from tap import ok, done, run, one_line_error

tmp = tempfile.mkdtemp(prefix="plan-task.")
BASE = "model: m.onnx\ninputs: sets\nprecisions: [fp32, fp16]\n"


def plan(text, name="c"):
    path = os.path.join(tmp, name + ".yaml")
    open(path, "w").write(BASE + text)
    out = os.path.join(tmp, name + ".out")
    rc, o, err = run("plan", path, "-o", out)
    return rc, err, out, path


rc, err, out, _ = plan("task: restoration\ndataset: {clean: gt/clean}\nmetric: {output: restored, convention: basicsr, "
                       "crop_border: 4, y_channel: true, round: false, output_max: 255}\nthresholds:\n  max_metric_drop: {psnr: 1.0, ssim: 0.01}\n"
                       "  min_metric: {psnr: 30}\n")
if ok(rc == 0, "a restoration config plans", err):
    args = json.load(open(os.path.join(out, "task.args")))
    ok(args == ["--task", "restoration", "--clean", "gt/clean", "--output", "restored", "--convention", "basicsr",
                "--crop-border", "4", "--y-channel", "--no-round", "--output-max", "255"], "task-eval's arguments come from the config", args)
    pj = json.load(open(os.path.join(out, "plan.json")))
    c = {x["name"]: x for x in pj["cells"]}
    ok(pj["task"] == "restoration" and pj["task_metric"] == "psnr" and pj["thresholds"]["max_metric_drop"] == {"psnr": 1.0, "ssim": 0.01}
       and "metric_drop" in c["inputs__fp16"]["checks"] and "min_metric" in c["inputs__fp32"]["checks"]
       and c["inputs__fp16"]["task"].endswith("cells/inputs__fp16/task.json"), "plan.json names the task, its checks and files", pj)
    tasks = [l for l in open(os.path.join(out, "plan.mk")).read().splitlines() if "task-eval @'" in l]
    ok(len(tasks) == 2 and not any("--ref " in l for l in tasks), "plan.mk runs task-eval per cell (no --ref outside classification)", tasks)

rc, err, out, _ = plan("task: classification\ndataset: {labels: l.json, classes: c.txt}\n")
tasks = [l for l in open(os.path.join(out, "plan.mk")).read().splitlines() if "task-eval @'" in l] if rc == 0 else []
ok(len(tasks) == 2 and all("--ref '%s/cells/inputs__fp32/out'" % out in l for l in tasks),
   "a classifier's cells (the reference too) count flips against the reference's outputs", err or tasks)

BAD = [
    ("task: regression\n", "task", "regression"),
    ("task: restoration\n", "dataset.clean", "needs"),
    ("task: restoration\ndataset: {clean: c, labels: l.json}\n", "dataset.labels", "not a ground truth"),
    ("task: restoration\ndataset: {clean: c}\nthresholds: {max_metric_drop: {miou: 1}}\n", "max_metric_drop.miou", "not a metric"),
    ("task: matting\ndataset: {label_maps: m}\nthresholds: {min_metric: {mae: 0.1}}\n", "min_metric.mae", "max_metric"),
    ("task: classification\ndataset: {labels: l.json}\nmetric: {crop_border: 4}\n", "metric.crop_border", "restoration"),
    ("task: restoration\ndataset: {clean: c}\nmetric: {convention: matlab}\n", "metric.convention", "matlab"),
    ("task: restoration\ndataset: {clean: c}\nmetric: {output_max: 0}\n", "metric.output_max", "[1, 65535]"),
    ("task: segmentation\ndataset: {label_maps: m}\nmetric: {output_max: 255}\n", "metric.output_max", "restoration"),
    ("task: detection\n", "task", "detection:"),
    ("metric: {output: x}\n", "metric.output", "needs a task"),
    ("thresholds: {max_metric_drop: {psnr: 1}}\n", "max_metric_drop", "task"),
    ("task: restoration\ndataset: {clean: 'a b'}\n", "dataset.clean", "not allowed"),
]
for i, (text, key, word) in enumerate(BAD):
    rc, err, out, path = plan(text, "bad%d" % i)
    ok(one_line_error(rc, err, path, key, word) and not os.path.exists(os.path.join(out, "plan.mk")),
       "refused: %s" % text.strip().replace("\n", " | "), err)

shutil.rmtree(tmp)
done()
