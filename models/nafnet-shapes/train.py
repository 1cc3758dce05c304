#!/usr/bin/env python3
"""Train nafnet-shapes (nafnet.py) to undo degrade.py's blur + noise on shapes
images, export it at opset 16 (LayerNorm decomposed) and 17 (LayerNormalization),
and measure what FP16 does to it.

Runs on the lent GPU machine (torch, onnx, onnxruntime, numpy, Pillow).
--input-scale says what the network's input and output pixels are: 255 (the
committed model: 0..255 pixel values in and out, as deployments that feed raw
pixels do) or 1 (0..1).  The LayerNorm that follows the intro convolution sees
activations proportional to that scale; OUT/report.json records, per LayerNorm,
the largest |x - mean| over the validation set and how many squares exceed
FP16's 65504 -- the evidence that the overflow is (or is not) there.

Phases (OUT/train.log): data (gen-shapes train images, 256x256 crops, uint8 on
the GPU; the val set by degrade.py), training (AdamW, cosine, PSNR loss, random
128x128 crops and dihedral flips, degraded on the fly by the same blur and noise
law), export, evaluation (PSNR of degraded / fp32 / fp16 against clean).
"""
import argparse
import concurrent.futures as cf
import json
import math
import os
import platform
import subprocess
import sys
import time

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "yolo-shapes"))
import degrade  # noqa: E402
import train as common  # noqa: E402  (yolo-shapes/train.py: log, sha256, onnx_export, save_npz)

TAG = "nafnet_shapes"
SHARD = 500
FP16_MAX = 65504.0


def crop_shard(gen, work, seed, start, count):
    """gen-shapes train images -> uint8 [n, 256, 256, 3], one random crop each
    (position from the image id)."""
    npy = os.path.join(work, f"crops-{start}.npy")
    if os.path.exists(npy):
        return np.load(npy)
    d = os.path.join(work, f"train-{start}")
    subprocess.run([gen, "--split", "train", "--seed", str(seed), "--start", str(start), "--count", str(count),
                    "--png-level", "0", "-j", "1", "-o", d], check=True)
    with open(os.path.join(d, "annotations.json")) as f:
        gt = json.load(f)
    out = np.zeros((len(gt["images"]), degrade.CROP, degrade.CROP, 3), np.uint8)
    for k, im in enumerate(gt["images"]):
        with Image.open(os.path.join(d, "images", im["file_name"])) as pil:
            a = np.asarray(pil.convert("RGB"))
        rng = np.random.default_rng(im["id"])
        y = int(rng.integers(0, a.shape[0] - degrade.CROP + 1))
        x = int(rng.integers(0, a.shape[1] - degrade.CROP + 1))
        out[k] = a[y:y + degrade.CROP, x:x + degrade.CROP]
    np.save(npy, out)
    subprocess.run(["rm", "-rf", d], check=True)
    return out


def val_set(gen, work, seed, count):
    d = os.path.join(work, "val-0")
    if not os.path.exists(os.path.join(d, "annotations.json")):
        subprocess.run([gen, "--split", "val", "--seed", str(seed), "--start", "0", "--count", "200",
                        "--png-level", "6", "-j", "1", "-o", d], check=True)
    vdir = os.path.join(work, "nafnet-val")
    man = degrade.make_set(os.path.join(d, "images"), os.path.join(d, "annotations.json"), vdir, count)
    load = lambda sub, e: np.asarray(Image.open(os.path.join(vdir, sub, e["file"])).convert("RGB"))  # noqa: E731
    clean = np.stack([load("clean", e) for e in man["images"]])
    bad = np.stack([load("degraded", e) for e in man["images"]])
    return man, clean, bad


def degrade_torch(torch, clean_u8, sigma):
    """The training pairs' degradation on the GPU: degrade.py's blur, Irwin-Hall
    noise of the same law (torch's generator), rounded half up, clipped."""
    import torch.nn.functional as F
    k = torch.tensor(degrade.KERNEL, dtype=torch.float32, device=clean_u8.device)
    k2 = (k[:, None] * k[None, :] / 4096.0).expand(3, 1, 7, 7)
    x = clean_u8.permute(0, 3, 1, 2).float()
    b = F.conv2d(F.pad(x, (3, 3, 3, 3), mode="reflect"), k2, groups=3)
    noise = torch.rand((12,) + b.shape, device=b.device).sum(0) - 6.0
    return torch.floor(b + sigma * noise + 0.5).clamp_(0, 255), x


def psnr_batch(out, clean):
    """Per image PSNR (dB, peak 255) of float 0..255 arrays; output clipped to 0..255."""
    o = np.clip(out.astype(np.float64), 0, 255)
    mse = ((o - clean.astype(np.float64)) ** 2).reshape(len(o), -1).mean(1)
    return 10 * np.log10(255.0 ** 2 / mse)


def run_model(torch, model, bad_u8, scale, device, dtype, bs=8):
    outs = []
    with torch.no_grad():
        for i in range(0, len(bad_u8), bs):
            x = torch.from_numpy(bad_u8[i:i + bs]).permute(0, 3, 1, 2).float().mul_(scale / 255.0)
            y = model(x.to(device, dtype)).float().cpu().numpy()
            outs.append(np.transpose(y, (0, 2, 3, 1)) * (255.0 / scale))
    return np.concatenate(outs)


def ln_stats(torch, model, bad_u8, scale, device):
    """Per LayerNorm2d (fp32): the largest |x - mean over channels| and the count of
    squares above FP16's largest finite value."""
    import nafnet
    stats, hooks = {}, []

    def hook(name):
        def f(_m, inp):
            x = inp[0].float()
            d = (x - x.mean(1, keepdim=True)).abs()
            s = stats.setdefault(name, {"max_abs_dev": 0.0, "squares_over_65504": 0, "elements": 0})
            s["max_abs_dev"] = max(s["max_abs_dev"], float(d.max()))
            s["squares_over_65504"] += int((d.double() ** 2 > FP16_MAX).sum())
            s["elements"] += d.numel()
        return f
    for name, m in model.named_modules():
        if isinstance(m, nafnet.LayerNorm2d):
            hooks.append(m.register_forward_pre_hook(hook(name)))
    run_model(torch, model, bad_u8, scale, device, torch.float32)
    for h in hooks:
        h.remove()
    return stats


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", default="/tmp/nafnet-work")
    ap.add_argument("--gen", required=True)
    ap.add_argument("--input-scale", type=float, default=255.0)
    ap.add_argument("--train-images", type=int, default=6000)
    ap.add_argument("--train-start", type=int, default=0)
    ap.add_argument("--data-seed", type=int, default=2024)
    ap.add_argument("--val-count", type=int, default=32)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--width", type=int, default=16)
    ap.add_argument("--time-budget", type=float, default=240)
    ap.add_argument("--steps", type=int, default=0)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--patch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--no-export", action="store_true")
    ap.add_argument("--alt-k", type=float, default=1.0, help="also export the k-rescaled twin (see nafnet.rescale_stream)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.work, exist_ok=True)
    common.LOG = open(os.path.join(args.out, "train.log"), "a")
    log = common.log
    log("argv:", " ".join(sys.argv))

    pool = cf.ProcessPoolExecutor(args.jobs)
    val_f = pool.submit(val_set, args.gen, args.work, args.data_seed, args.val_count)
    shards = [pool.submit(crop_shard, args.gen, args.work, args.data_seed, s,
                          min(SHARD, args.train_start + args.train_images - s))
              for s in range(args.train_start, args.train_start + args.train_images, SHARD)]

    import torch
    import nafnet
    dev = torch.device(args.device if torch.cuda.is_available() or args.device == "cpu" else "cpu")
    versions = {"python": platform.python_version(), "torch": torch.__version__, "numpy": np.__version__,
                "gpu": torch.cuda.get_device_name(0) if dev.type == "cuda" else "cpu"}
    for mod in ("onnx", "onnxruntime", "PIL"):
        try:
            versions[mod] = __import__(mod).__version__
        except ImportError:
            versions[mod] = None
    log("versions:", json.dumps(versions))
    torch.manual_seed(args.seed)
    model = nafnet.NAFNet(args.width).to(dev)
    nparams = sum(p.numel() for p in model.parameters())
    log(f"model: {nparams} parameters, input scale 0..{args.input_scale:g}")

    t_data = time.time()
    crops = torch.from_numpy(np.concatenate([f.result() for f in shards])).to(dev)
    man, v_clean, v_bad = val_f.result()
    pool.shutdown()
    log(f"data: {len(crops)} train crops, {len(v_clean)} val pairs (degraded PSNR "
        f"{man['mean_psnr_degraded_db']:.3f} dB), waited {time.time() - t_data:.1f}s")

    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.9), weight_decay=0.0)
    g = torch.Generator(device="cpu").manual_seed(args.seed)
    steps = args.steps or 10 ** 9
    t_train, step, hist, s = time.time(), 0, [], args.input_scale
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
        idx = torch.randint(0, len(crops), (args.batch,), generator=g).to(dev)
        oy, ox = (int(v) for v in torch.randint(0, degrade.CROP - args.patch + 1, (2,), generator=g))
        t = int(torch.randint(0, 8, (1,), generator=g))
        clean = crops[idx, oy:oy + args.patch, ox:ox + args.patch]
        clean = torch.rot90(clean, t % 4, (1, 2))
        if t >= 4:
            clean = clean.flip(2)
        bad, ref = degrade_torch(torch, clean.contiguous(), degrade.SIGMA)
        out = model(bad * (s / 255.0))
        mse = ((out - ref * (s / 255.0)) / s).pow(2).mean((1, 2, 3))
        loss = (10.0 / math.log(10.0)) * torch.log(mse + 1e-8).mean()       # -PSNR (peak 1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        if step % 200 == 0 or step == 1:
            hist.append([step, round(-loss.item(), 3)])
            log(f"step {step}/{steps if steps < 10 ** 9 else '?'} train PSNR {-loss.item():.2f} dB lr {lr:.2e} "
                f"{step * args.batch / (time.time() - t_train):.0f} patches/s")
    if dev.type == "cuda":
        torch.cuda.synchronize()
    train_s = time.time() - t_train
    log(f"trained {step} steps in {train_s:.1f}s")

    model = model.float().cpu().eval()
    torch.save(model.state_dict(), os.path.join(args.out, "model.pt"))
    common.save_npz(torch, model.state_dict(), os.path.join(args.out, "model.npz"))
    report = {"versions": versions, "args": vars(args), "parameters": nparams, "steps": step,
              "train_seconds": round(train_s, 1), "loss_history": hist, "val_manifest": man}
    p_bad = psnr_batch(v_bad.astype(np.float64), v_clean)
    torch.set_num_threads(8)
    out32 = run_model(torch, model, v_bad, s, torch.device("cpu"), torch.float32)
    p32 = psnr_batch(out32, v_clean)
    report["psnr"] = {"degraded": float(p_bad.mean()), "fp32_cpu": float(p32.mean()),
                      "per_image_fp32": [round(float(v), 4) for v in p32]}
    report["ln_stats_fp32"] = ln_stats(torch, model, v_bad, s, torch.device("cpu"))
    if dev.type == "cuda":
        for mode in ("decomposed", "layernorm"):
            m16 = nafnet.set_ln_mode(nafnet.NAFNet(args.width), mode)
            m16.load_state_dict(model.state_dict())
            o16 = run_model(torch, m16.to(dev).half().eval(), v_bad, s, dev, torch.float16)
            report["psnr"][f"fp16_gpu_{mode}"] = float(np.nan_to_num(psnr_batch(np.nan_to_num(o16, nan=0.0),
                                                                                 v_clean)).mean())
    for name, st in report["ln_stats_fp32"].items():
        log(f"LN {name}: max |x-mu| {st['max_abs_dev']:.1f}, squares > 65504: {st['squares_over_65504']} "
            f"of {st['elements']}")
    if args.alt_k != 1:
        # the documented alternative if the trained scales do not overflow enough:
        # the same function with every residual stream k times larger (nafnet.rescale_stream)
        alt = nafnet.NAFNet(args.width)
        alt.load_state_dict(nafnet.rescale_stream(model.state_dict(), args.alt_k))
        alt.eval()
        common.save_npz(torch, alt.state_dict(), os.path.join(args.out, f"model_k{args.alt_k:g}.npz"))
        oa = run_model(torch, alt, v_bad, s, torch.device("cpu"), torch.float32)
        report["psnr"][f"fp32_cpu_k{args.alt_k:g}"] = float(psnr_batch(oa, v_clean).mean())
        report[f"ln_stats_fp32_k{args.alt_k:g}"] = ln_stats(torch, alt, v_bad, s, torch.device("cpu"))
        if dev.type == "cuda":
            oa = run_model(torch, alt.to(dev).half(), v_bad, s, dev, torch.float16)
            report["psnr"][f"fp16_gpu_decomposed_k{args.alt_k:g}"] = float(
                np.nan_to_num(psnr_batch(np.nan_to_num(oa, nan=0.0), v_clean)).mean())
            alt = alt.float().cpu()
        log(f"k={args.alt_k:g}:", json.dumps({k: round(v, 3) for k, v in report["psnr"].items()
                                              if k.endswith(f"k{args.alt_k:g}")}))
    log("PSNR (dB):", json.dumps({k: round(v, 3) for k, v in report["psnr"].items() if k != "per_image_fp32"}))

    if not args.no_export:
        report["export"] = {}
        x = torch.from_numpy(v_bad[:1]).permute(0, 3, 1, 2).float().mul_(s / 255.0)
        with torch.no_grad():
            ref = model(x).numpy()
        variants = [(16, "decomposed", "", model.state_dict()), (17, "layernorm", "", model.state_dict())]
        if args.alt_k != 1:
            ks = nafnet.rescale_stream(model.state_dict(), args.alt_k)
            variants += [(16, "decomposed", f"_k{args.alt_k:g}", ks), (17, "layernorm", f"_k{args.alt_k:g}", ks)]
        for opset, mode, suffix, state in variants:
            path = os.path.join(args.out, f"{TAG}{suffix}_op{opset}.onnx")
            m = nafnet.set_ln_mode(nafnet.NAFNet(args.width), mode)
            m.load_state_dict(state)
            common.onnx_export(torch, m.eval(), (x,), path, ["input"], ["output"], opset)
            import onnx
            proto = onnx.load(path)
            onnx.checker.check_model(proto, full_check=True)
            hist_ops = {}
            for n in proto.graph.node:
                hist_ops[n.op_type] = hist_ops.get(n.op_type, 0) + 1
            info = {"bytes": os.path.getsize(path), "sha256": common.sha256(path), "op_histogram": hist_ops}
            try:
                import onnxruntime as ort
                got = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"input": x.numpy()})[0]
                info["ort_vs_torch_val1_max_abs"] = float(np.abs(got - ref).max())
            except ImportError:
                pass
            report["export"][f"{opset}{suffix}"] = info
            log(f"export opset {opset}{suffix}: {info['bytes']} bytes, LayerNormalization {hist_ops.get('LayerNormalization', 0)}, "
                f"Pow {hist_ops.get('Pow', 0)}, ort {info.get('ort_vs_torch_val1_max_abs')}")
    report["wall_seconds"] = round(time.time() - common.T0, 1)
    with open(os.path.join(args.out, "report.json"), "w") as f:
        json.dump(report, f, indent=1)
    log("done")


if __name__ == "__main__":
    main()
