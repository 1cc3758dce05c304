#!/usr/bin/env python3
"""Train yolo-shapes (yolo.py) on the synthetic shapes dataset, export it raw as
Ultralytics exports YOLOv8 (opset 16 and 17) and evaluate it on val-200.

Runs on the lent GPU machine (torch, onnx, onnxruntime, numpy); downloads
nothing.  Images are drawn by a static gen-shapes and letterboxed to 320x320 by
a static parity preprocess (letterbox320.yaml: OpenCV INTER_LINEAR, pad 114,
bit-exact with cv2), so training and evaluation see the pixels parity feeds.

Phases, all logged to OUT/train.log:
  1. smoke test: one training step, a fused export and an ONNX Runtime run;
  2. data: train shards (uint8 NHWC, boxes mapped into the letterbox through
     meta.json) and val-200 (float32 NCHW, the very tensors parity's infer reads);
  3. training: AdamW, warmup + cosine, EMA, random flips, bf16 autocast;
  4. export of the EMA weights with BatchNorm folded (fuse()): OUT/yolo_shapes_op16.onnx,
     _op17.onnx, ORT against PyTorch;
  5. PyTorch CPU fp32 on val-200, decoded by decode.py (conf 0.001, IoU 0.7,
     max_det 300, multi-label), scored by map-eval: OUT/torch_val200.json.
"""
import argparse
import concurrent.futures as cf
import copy
import hashlib
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import decode  # noqa: E402

SIZE = 320
NC = 6
SHARD = 1000
MAX_OBJ = 12
TAG = "yolo_shapes"
T0 = time.time()
LOG = None


def log(*args):
    msg = "[%7.1fs] " % (time.time() - T0) + " ".join(str(a) for a in args)
    print(msg, flush=True)
    if LOG:
        LOG.write(msg + "\n")
        LOG.flush()


# ---------------------------------------------------------------- data

def letterbox_split(gen, prep, work, split, seed, start, count, dtype):
    """gen-shapes then preprocess (letterbox320.yaml); returns the preprocess folder
    and the ground truth."""
    d = os.path.join(work, f"{split}-{start}")
    pp = d + "-pp"
    if not os.path.exists(os.path.join(pp, "index.json")):
        subprocess.run([gen, "--split", split, "--seed", str(seed), "--start", str(start), "--count",
                        str(count), "--png-level", "0" if split == "train" else "6", "-j", "1", "-o", d],
                       check=True)
        sets = ["--set", "dtype=uint8", "--set", "layout=nhwc"] if dtype == "uint8" else []
        subprocess.run([prep, "--config", os.path.join(HERE, "letterbox320.yaml"), *sets, "-j", "1",
                        "--images", os.path.join(d, "images"),
                        "--dataset", os.path.join(d, "annotations.json"), "-o", pp], check=True)
    with open(os.path.join(d, "annotations.json")) as f:
        gt = json.load(f)
    return pp, gt


def load_meta(pp, image_id):
    with open(os.path.join(pp, str(image_id), "meta.json")) as f:
        return json.load(f)


def train_shard(gen, prep, work, seed, start, count):
    """uint8 [n, 320, 320, 3] and padded targets [n, MAX_OBJ, 5] (label, xyxy input px; label -1 = none)."""
    npy = os.path.join(work, f"train-{start}.npz")
    if os.path.exists(npy):
        z = np.load(npy)
        return z["images"], z["targets"]
    pp, gt = letterbox_split(gen, prep, work, "train", seed, start, count, "uint8")
    by_img = {im["id"]: [] for im in gt["images"]}
    for a in gt["annotations"]:
        by_img[a["image_id"]].append(a)
    imgs = np.zeros((len(gt["images"]), SIZE, SIZE, 3), np.uint8)
    tg = np.full((len(gt["images"]), MAX_OBJ, 5), -1.0, np.float32)
    for k, im in enumerate(gt["images"]):
        imgs[k] = np.load(os.path.join(pp, str(im["id"]), "images.npy"))[0]
        m = load_meta(pp, im["id"])
        for n, a in enumerate(by_img[im["id"]][:MAX_OBJ]):
            x, y, w, h = a["bbox"]
            tg[k, n] = [a["category_id"] - 1, x * m["scale_x"] + m["offset_x"], y * m["scale_y"] + m["offset_y"],
                        (x + w) * m["scale_x"] + m["offset_x"], (y + h) * m["scale_y"] + m["offset_y"]]
    np.savez(npy, images=imgs, targets=tg)
    shutil.rmtree(os.path.join(work, f"train-{start}"))
    shutil.rmtree(pp)
    return imgs, tg


def val_set(gen, prep, work, seed, count=200):
    pp, gt = letterbox_split(gen, prep, work, "val", seed, 0, count, "float32")
    ids = [im["id"] for im in gt["images"]]
    x = np.concatenate([np.load(os.path.join(pp, str(i), "images.npy")) for i in ids])
    return pp, os.path.join(work, "val-0", "annotations.json"), ids, x


# ---------------------------------------------------------------- training helpers

class EMA:
    """Exponential moving average of the weights and buffers, decay ramped up
    (Ultralytics' ModelEMA: d = decay * (1 - exp(-updates / tau)))."""

    def __init__(self, model, decay, tau):
        self.ema = copy.deepcopy(model).eval()
        for p in self.ema.parameters():
            p.requires_grad_(False)
        self.decay, self.tau, self.updates = decay, tau, 0

    def update(self, torch, model):
        self.updates += 1
        d = self.decay * (1 - math.exp(-self.updates / self.tau))
        if not hasattr(self, "pairs"):
            msd = model.state_dict()
            keys = [k for k, v in self.ema.state_dict().items() if v.dtype.is_floating_point]
            self.pairs = ([self.ema.state_dict()[k] for k in keys], [msd[k] for k in keys])
        with torch.no_grad():
            torch._foreach_mul_(self.pairs[0], d)
            torch._foreach_add_(self.pairs[0], self.pairs[1], alpha=1 - d)


def param_groups(model, wd):
    decay, no_decay = [], []
    for n, p in model.named_parameters():
        if not p.requires_grad:
            continue
        (decay if p.ndim > 1 else no_decay).append(p)
    return [{"params": decay, "weight_decay": wd}, {"params": no_decay, "weight_decay": 0.0}]


def make_batch(torch, imgs_u8, targets, idx, flip):
    """Float NCHW / 255 and targets, random horizontal / vertical flips per image."""
    x = imgs_u8[idx].permute(0, 3, 1, 2).float().div_(255.0)
    t = targets[idx].clone()
    valid = t[..., 0] >= 0
    if flip:
        fh = torch.rand(len(idx), device=x.device) < 0.5
        fv = torch.rand(len(idx), device=x.device) < 0.5
        x = torch.where(fh.view(-1, 1, 1, 1), x.flip(3), x)
        x = torch.where(fv.view(-1, 1, 1, 1), x.flip(2), x)
        x1, y1, x2, y2 = t[..., 1].clone(), t[..., 2].clone(), t[..., 3].clone(), t[..., 4].clone()
        h, v = fh.view(-1, 1), fv.view(-1, 1)
        t[..., 1] = torch.where(h, SIZE - x2, x1)
        t[..., 3] = torch.where(h, SIZE - x1, x2)
        t[..., 2] = torch.where(v, SIZE - y2, y1)
        t[..., 4] = torch.where(v, SIZE - y1, y2)
    labels = t[..., :1].clamp(min=0).long()
    boxes = t[..., 1:] * valid.unsqueeze(-1)
    return x.contiguous(memory_format=torch.channels_last), labels, boxes, valid.unsqueeze(-1).float()


# ---------------------------------------------------------------- export and evaluation

def deploy_model(model):
    import yolo
    m = yolo.fuse(copy.deepcopy(model).float().cpu().eval())
    return m


def onnx_export(torch, model, args, path, inputs, outputs, opset):
    """The TorchScript exporter (dynamo=False where the keyword exists: torch >= 2.9
    would take the dynamo one by default)."""
    kw = dict(input_names=inputs, output_names=outputs, opset_version=opset, do_constant_folding=True)
    with torch.no_grad():
        try:
            torch.onnx.export(model, args, path, dynamo=False, **kw)
        except TypeError:
            torch.onnx.export(model, args, path, **kw)


def export(torch, model, out):
    import onnx
    dep = deploy_model(model)
    x = torch.rand(1, 3, SIZE, SIZE)
    info = {}
    for opset in (16, 17):
        path = os.path.join(out, f"{TAG}_op{opset}.onnx")
        onnx_export(torch, dep, (x,), path, ["images"], ["output0"], opset)
        proto = onnx.load(path)
        onnx.checker.check_model(proto, full_check=True)
        hist = {}
        for n in proto.graph.node:
            hist[n.op_type] = hist.get(n.op_type, 0) + 1
        shape = [d.dim_value for d in proto.graph.output[0].type.tensor_type.shape.dim]
        info[opset] = {"file": os.path.basename(path), "bytes": os.path.getsize(path),
                       "sha256": sha256(path), "nodes": sum(hist.values()), "op_histogram": hist,
                       "output_shape": shape}
        log(f"export opset {opset}: {os.path.getsize(path)} bytes, {sum(hist.values())} nodes, output {shape}")
        if shape != [1, 4 + NC, (SIZE // 8) ** 2 + (SIZE // 16) ** 2 + (SIZE // 32) ** 2]:
            raise RuntimeError(f"opset {opset}: output shape {shape}")
    return dep, info


def ort_check(path, x, ref):
    try:
        import onnxruntime as ort
    except ImportError:
        return {"skipped": "no onnxruntime"}
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = sess.run(None, {"images": x})[0]
    return {"max_abs": float(np.abs(got - ref).max()), "box_max_abs": float(np.abs(got[:, :4] - ref[:, :4]).max()),
            "score_max_abs": float(np.abs(got[:, 4:] - ref[:, 4:]).max())}


def predict(torch, model, x, device, bs=50):
    outs = []
    with torch.no_grad():
        for i in range(0, len(x), bs):
            outs.append(model(torch.from_numpy(x[i:i + bs]).to(device)).float().cpu().numpy())
    return np.concatenate(outs)


def evaluate(torch, model, val, device, map_eval, tmp, name):
    pp, gt_path, ids, x = val
    preds = predict(torch, model, x, device)
    res = []
    for i, p in zip(ids, preds):
        res += decode.to_coco(i, *decode.decode_one(p), load_meta(pp, i))
    rpath = os.path.join(tmp, name + ".json")
    spath = os.path.join(tmp, name + ".stats.json")
    with open(rpath, "w") as f:
        json.dump(res, f)
    subprocess.run([map_eval, "--gt", gt_path, "--dt", rpath, "-q", "-j", spath], check=True)
    with open(spath) as f:
        st = json.load(f)["stats"]
    stats = [st[k] for k in ("AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl")]
    return stats, res, preds


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def save_npz(torch, state, path):
    np.savez(path, **{k: v.detach().float().cpu().numpy() if v.dtype.is_floating_point else v.cpu().numpy()
                      for k, v in state.items()})


# ---------------------------------------------------------------- main

def main():
    global LOG
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", default="/tmp/yolo-work")
    ap.add_argument("--gen", required=True)
    ap.add_argument("--preprocess", required=True)
    ap.add_argument("--map-eval", required=True)
    ap.add_argument("--train-images", type=int, default=24000)
    ap.add_argument("--train-start", type=int, default=0, help="first train image index")
    ap.add_argument("--data-seed", type=int, default=2024)
    ap.add_argument("--val-count", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--time-budget", type=float, default=300, help="seconds of training")
    ap.add_argument("--steps", type=int, default=0, help="fixed step count (overrides the budget)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--wd", type=float, default=5e-4)
    ap.add_argument("--warmup", type=int, default=300)
    ap.add_argument("--ema-decay", type=float, default=0.9995)
    ap.add_argument("--ema-tau", type=float, default=500)
    ap.add_argument("--eval-every", type=int, default=1500)
    ap.add_argument("--jobs", type=int, default=12)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--no-smoke", action="store_true")
    ap.add_argument("--resume", help="npz of a state dict to start from (checkpoint/ema.npz)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.work, exist_ok=True)
    LOG = open(os.path.join(args.out, "train.log"), "a")
    log("argv:", " ".join(sys.argv))

    # data in the background while torch loads and the smoke test runs
    pool = cf.ProcessPoolExecutor(args.jobs)
    val_f = pool.submit(val_set, args.gen, args.preprocess, args.work, args.data_seed, args.val_count)
    end = args.train_start + args.train_images
    shards = [pool.submit(train_shard, args.gen, args.preprocess, args.work, args.data_seed, s,
                          min(SHARD, end - s)) for s in range(args.train_start, end, SHARD)]

    import torch
    import yolo
    dev = torch.device(args.device if torch.cuda.is_available() or args.device == "cpu" else "cpu")
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cudnn.benchmark = True
    versions = {"python": platform.python_version(), "torch": torch.__version__, "numpy": np.__version__,
                "gpu": torch.cuda.get_device_name(0) if dev.type == "cuda" else "cpu"}
    for mod in ("onnx", "onnxruntime"):
        try:
            versions[mod] = __import__(mod).__version__
        except ImportError:
            versions[mod] = None
    log("versions:", json.dumps(versions))

    torch.manual_seed(args.seed)
    model = yolo.YoloShapes(NC)
    model.head.bias_init(SIZE)
    if args.resume:
        # an earlier run's EMA weights (checkpoint/ema.npz) as model and EMA start
        z = np.load(args.resume)
        model.load_state_dict({k: torch.from_numpy(z[k]) for k in z.files})
        log(f"resumed from {args.resume} ({len(z.files)} tensors)")
    nparams = sum(p.numel() for p in model.parameters())
    log(f"model: {nparams} parameters")
    model = model.to(dev).to(memory_format=torch.channels_last)
    crit = yolo.DetectionLoss(NC)

    if not args.no_smoke:
        t = time.time()
        x = torch.rand(2, 3, SIZE, SIZE, device=dev)
        tl = torch.tensor([[[0], [3]], [[5], [0]]], device=dev)
        tb = torch.tensor([[[10., 20., 60., 90.], [100., 100., 180., 150.]],
                           [[200., 30., 260., 70.], [0., 0., 0., 0.]]], device=dev)
        tm = torch.tensor([[[1.], [1.]], [[1.], [0.]]], device=dev)
        loss, parts = crit(model(x), tl, tb, tm)
        loss.backward()
        model.zero_grad(set_to_none=True)
        sdir = os.path.join(args.work, "smoke")
        os.makedirs(sdir, exist_ok=True)
        dep, _ = export(torch, model, sdir)
        xi = torch.rand(1, 3, SIZE, SIZE)
        with torch.no_grad():
            ref = dep(xi).numpy()
        chk = ort_check(os.path.join(sdir, f"{TAG}_op16.onnx"), xi.numpy(), ref)
        log(f"smoke: loss {loss.item():.3f} parts {parts.tolist()} ort {chk} ({time.time() - t:.1f}s)")

    t_data = time.time()
    parts = [f.result() for f in shards]
    val = val_f.result()
    pool.shutdown()
    imgs = torch.from_numpy(np.concatenate([p[0] for p in parts])).to(dev)
    targets = torch.from_numpy(np.concatenate([p[1] for p in parts])).to(dev)
    del parts
    val_sha = sha256(val[1])
    nobj = int((targets[..., 0] >= 0).sum())
    log(f"data: {len(imgs)} train images ({nobj} objects), {len(val[2])} val images, waited "
        f"{time.time() - t_data:.1f}s; val annotations sha256 {val_sha}")

    ema = EMA(model, args.ema_decay, args.ema_tau)
    opt = torch.optim.AdamW(param_groups(model, args.wd), lr=args.lr, betas=(0.9, 0.999),
                            **({"fused": True} if dev.type == "cuda" else {}))
    g = torch.Generator(device="cpu").manual_seed(args.seed)
    n = len(imgs)
    perm, pos = torch.randperm(n, generator=g), 0
    steps = args.steps or 10 ** 9
    hist, t_train, step, samples = [], time.time(), 0, 0
    use_amp = dev.type == "cuda"
    best = None
    while step < steps:
        # the schedule runs on time when no step count is given: the GPU is shared
        # with the other trainings of the round, so early steps mispredict later ones
        frac = step / steps if args.steps else (time.time() - t_train) / args.time_budget
        if frac >= 1.0:
            break
        lr = args.lr * (step + 1) / args.warmup if step < args.warmup else \
            args.lr * (0.01 + 0.99 * 0.5 * (1 + math.cos(math.pi * frac)))
        for grp in opt.param_groups:
            grp["lr"] = lr
        if pos + args.batch > n:
            perm, pos = torch.randperm(n, generator=g), 0
        idx = perm[pos:pos + args.batch].to(dev)
        pos += args.batch
        x, tl, tb, tm = make_batch(torch, imgs, targets, idx, True)
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=use_amp):
            feats = model(x)
        loss, parts = crit([f.float() for f in feats], tl, tb, tm)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 10.0)
        opt.step()
        ema.update(torch, model)
        step += 1
        samples += len(idx)
        if step % 100 == 0 or step == 1:
            p = parts.tolist()
            hist.append([step, round(loss.item(), 4)] + [round(v, 4) for v in p])
            log(f"step {step}/{steps if steps < 10 ** 9 else '?'} loss {loss.item():.3f} box {p[0]:.3f} "
                f"cls {p[1]:.3f} dfl {p[2]:.3f} lr {lr:.2e} {samples / (time.time() - t_train):.0f} img/s")
        if args.eval_every and step % args.eval_every == 0 and step < steps:
            stats, _, _ = evaluate(torch, ema.ema, val, dev, args.map_eval, args.work, "eval")
            log(f"eval step {step}: EMA AP {stats[0]:.4f} AP50 {stats[1]:.4f} (GPU, bf16 off)")
    if dev.type == "cuda":
        torch.cuda.synchronize()
    train_s = time.time() - t_train
    log(f"trained {step} steps, {samples} samples in {train_s:.1f}s")

    # checkpoints: unfused EMA (resume) and its tensors as npz (the test's oracle)
    final = ema.ema.float().cpu().eval()
    torch.save(final.state_dict(), os.path.join(args.out, "ema.pt"))
    save_npz(torch, final.state_dict(), os.path.join(args.out, "ema.npz"))
    torch.save(model.state_dict(), os.path.join(args.out, "model.pt"))

    dep, info = export(torch, final, args.out)
    xi = val[3][:1]
    with torch.no_grad():
        ref = dep(torch.from_numpy(xi)).numpy()
        unfused = final(torch.from_numpy(xi)).numpy()
    info["fuse_max_abs"] = float(np.abs(ref - unfused).max())
    for opset in (16, 17):
        info[opset]["ort_vs_torch_val1"] = ort_check(os.path.join(args.out, f"{TAG}_op{opset}.onnx"), xi, ref)
        log(f"ort opset {opset} vs torch (val image 1): {info[opset]['ort_vs_torch_val1']}")
    log(f"fused vs unfused (val image 1): max abs {info['fuse_max_abs']:.3g}")

    torch.set_num_threads(8)
    stats, res, preds = evaluate(torch, dep, val, torch.device("cpu"), args.map_eval, args.out, "torch_val200")
    log(f"PyTorch CPU fp32 (fused), val-{len(val[2])}: AP {stats[0]:.4f} AP50 {stats[1]:.4f} AP75 {stats[2]:.4f} "
        f"APs {stats[3]:.4f} APm {stats[4]:.4f} APl {stats[5]:.4f}; {len(res)} detections")
    rdir = os.path.join(args.out, "raw")
    os.makedirs(rdir, exist_ok=True)
    for i, p in zip(val[2][:3], preds[:3]):
        np.save(os.path.join(rdir, "%07d.npy" % i), p[None])
    report = {"versions": versions, "args": vars(args), "parameters": nparams, "steps": step, "samples": samples,
              "train_seconds": round(train_s, 1), "loss_history": hist, "export": info,
              "val_annotations_sha256": val_sha, "ap_torch_cpu_fp32": stats,
              "decode": {"conf": decode.CONF, "iou": decode.IOU, "max_det": decode.MAX_DET,
                         "multi_label": True, "max_nms": decode.MAX_NMS},
              "wall_seconds": round(time.time() - T0, 1)}
    with open(os.path.join(args.out, "report.json"), "w") as f:
        json.dump(report, f, indent=1)
    log("done")


if __name__ == "__main__":
    main()
