#!/usr/bin/env python3
"""Train the bundled RT-DETR on the synthetic shapes dataset, export it with the
official deploy interface (opset 16 and 17) and evaluate it in PyTorch on val-200.

Runs on the lent GPU machine (torch 2.11, transformers 5.x, onnx, onnxruntime,
Pillow, scipy); it downloads nothing.  The training images are drawn on the spot
by the static gen-shapes binary (stages/gen-shapes), in shards, in parallel.

Phases, all logged to OUT/train.log:
  1. smoke test (seconds): one training step on a real-looking batch, a deploy
     export and an ONNX Runtime run of the untrained model -- fails fast;
  2. data: N train images (split train, --data-seed) and val-200 (split val),
     each resized with Pillow's bilinear to 320x320 exactly as at inference;
  3. training: AdamW, warmup + cosine, gradient clip 0.1, EMA of the weights,
     random horizontal/vertical flips, fp32 with TF32 matmuls; the number of
     steps is fixed after timing the first steps (or given by --steps);
  4. export of the EMA weights: OUT/rtdetr_shapes_op16.onnx, _op17.onnx;
  5. PyTorch evaluation on val-200 (CPU, fp32, PIL preprocessing):
     OUT/torch_val200.json (COCO results) and the AP from map-eval.

Usage (the exact command is in models/rtdetr/README.md):
  python3 models/rtdetr/train.py --out OUT --gen .carry/gen-shapes --map-eval .carry/map-eval
"""

import argparse
import concurrent.futures as cf
import copy
import hashlib
import json
import math
import multiprocessing as mp
import os
import platform
import shutil
import subprocess
import sys
import time

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
INPUT_SIZE = 320
NUM_LABELS = 6            # circle rectangle triangle star ring cross (category id = label + 1)
NUM_QUERIES = 100
TOP_K = 100
SHARD = 1000

T0 = time.time()
LOG = None


def log(*args):
    msg = "[%7.1fs] " % (time.time() - T0) + " ".join(str(a) for a in args)
    print(msg, flush=True)
    if LOG:
        LOG.write(msg + "\n")
        LOG.flush()


# ---------------------------------------------------------------- data (CPU workers)

def load_resized(path):
    """The official preprocessing's pixels: PIL RGB, bilinear stretch to 320x320."""
    with Image.open(path) as im:
        im = im.convert("RGB")
        return np.asarray(im.resize((INPUT_SIZE, INPUT_SIZE), Image.BILINEAR), dtype=np.uint8)


def targets_of(gt):
    """Per image: (labels int64 [n], boxes float32 [n, 4] normalised cxcywh)."""
    by_img = {im["id"]: [] for im in gt["images"]}
    for a in gt["annotations"]:
        by_img[a["image_id"]].append(a)
    out = []
    for im in gt["images"]:
        w, h = im["width"], im["height"]
        anns = by_img[im["id"]]
        labels = np.array([a["category_id"] - 1 for a in anns], dtype=np.int64)
        boxes = np.array([[(a["bbox"][0] + a["bbox"][2] / 2) / w, (a["bbox"][1] + a["bbox"][3] / 2) / h,
                           a["bbox"][2] / w, a["bbox"][3] / h] for a in anns], dtype=np.float32).reshape(-1, 4)
        out.append((labels, boxes))
    return out


def make_shard(gen, work, split, seed, start, count, level):
    """Draws one shard with gen-shapes, resizes it; returns (npy path, targets).
    A shard already drawn in WORK (by --prep-only or an earlier trial) is reused."""
    d = os.path.join(work, f"{split}-{start}")
    npy = os.path.join(work, f"{split}-{start}.npy")
    cache = os.path.join(work, f"{split}-{start}-{count}.targets.json")
    if os.path.exists(npy) and os.path.exists(cache):
        with open(cache) as f:
            tg = json.load(f)
        return npy, [(np.array(l, dtype=np.int64), np.array(b, dtype=np.float32).reshape(-1, 4)) for l, b in tg]
    subprocess.run([gen, "--split", split, "--seed", str(seed), "--start", str(start), "--count",
                    str(count), "--png-level", str(level), "-j", "1", "-o", d], check=True)
    with open(os.path.join(d, "annotations.json")) as f:
        gt = json.load(f)
    imgs = np.stack([load_resized(os.path.join(d, "images", im["file_name"])) for im in gt["images"]])
    np.save(npy + ".tmp.npy", imgs)
    os.replace(npy + ".tmp.npy", npy)
    tg = targets_of(gt)
    with open(cache + ".tmp", "w") as f:
        json.dump([(l.tolist(), b.tolist()) for l, b in tg], f)
    os.replace(cache + ".tmp", cache)
    if split == "train":
        shutil.rmtree(d)
    return npy, tg


# ---------------------------------------------------------------- model

CATEGORIES = ["circle", "rectangle", "triangle", "star", "ring", "cross"]


def build_config():
    """ResNet-vd backbone with basic blocks (R18's layout at one block per stage and
    half its widths), hybrid encoder (AIFI on stride 32, CCFM), 3 decoder layers."""
    from transformers import RTDetrConfig, RTDetrResNetConfig
    backbone = RTDetrResNetConfig(
        embedding_size=32, hidden_sizes=[32, 64, 128, 256], depths=[1, 1, 1, 1],
        layer_type="basic", out_features=["stage2", "stage3", "stage4"])
    kwargs = dict(
        backbone_config=backbone, use_pretrained_backbone=False, use_timm_backbone=False,
        encoder_in_channels=[64, 128, 256], feat_strides=[8, 16, 32],
        d_model=128, encoder_hidden_dim=128, encoder_ffn_dim=256, encoder_attention_heads=8,
        encoder_layers=1, hidden_expansion=0.25,
        decoder_in_channels=[128, 128, 128], decoder_layers=3, decoder_ffn_dim=512,
        decoder_attention_heads=8, decoder_n_points=4, num_feature_levels=3,
        num_queries=NUM_QUERIES, num_labels=NUM_LABELS, num_denoising=100,
        anchor_image_size=None, eval_size=None, disable_custom_kernels=True,
        id2label=dict(enumerate(CATEGORIES)), label2id={n: i for i, n in enumerate(CATEGORIES)})
    # Keys some config versions reject (as in models/fixtures/make_rtdetr_tiny.py).
    optional = ["use_timm_backbone", "use_pretrained_backbone", "eval_size", "anchor_image_size"]
    while True:
        try:
            return RTDetrConfig(**kwargs)
        except (TypeError, ValueError) as err:
            drop = next((k for k in optional if k in kwargs), None)
            if drop is None:
                raise
            log(f"config: dropping {drop!r} after: {err}")
            del kwargs[drop]


def build_model(cfg, seed):
    import torch
    from transformers import RTDetrForObjectDetection
    torch.manual_seed(seed)
    return RTDetrForObjectDetection._from_config(cfg, attn_implementation="eager")


def deploy_wrapper(model):
    sys.path.insert(0, os.path.join(HERE, "..", "fixtures"))
    from make_rtdetr_tiny import DeployModel   # the official deploy wrapper (sigmoid, TopK, mod/div)
    return DeployModel(model, NUM_LABELS, TOP_K).eval()


def to_batch(torch, imgs_u8):
    """uint8 NHWC -> float NCHW / 255 (the official ToTensor)."""
    return imgs_u8.permute(0, 3, 1, 2).float().div_(255.0)


def export(model_cpu, out, tag, sample):
    import torch
    import onnx
    sys.path.insert(0, os.path.join(HERE, "..", "fixtures"))
    from make_rtdetr_tiny import check_ops, op_histogram
    deploy = deploy_wrapper(model_cpu)
    images, sizes = sample
    info = {}
    for opset in (16, 17):
        path = os.path.join(out, f"{tag}_op{opset}.onnx")
        with torch.no_grad():
            torch.onnx.export(deploy, (images, sizes), path,
                              input_names=["images", "orig_target_sizes"],
                              output_names=["labels", "boxes", "scores"],
                              opset_version=opset, do_constant_folding=True, dynamo=False)
        proto = onnx.load(path)
        onnx.checker.check_model(proto, full_check=True)
        hist = op_histogram(proto)
        checks = check_ops(opset, hist)
        info[opset] = {"file": os.path.basename(path), "bytes": os.path.getsize(path),
                       "nodes": sum(hist.values()), "checks": checks, "op_histogram": hist}
        log(f"export opset {opset}: {os.path.getsize(path)} bytes, {sum(hist.values())} nodes, checks {checks}")
        if not all(checks.values()):
            raise RuntimeError(f"opset {opset}: operator checks failed: {checks}")
    return info


def ort_check(path, sample, ref):
    import onnxruntime as ort
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    res = sess.run(None, {"images": sample[0].numpy(), "orig_target_sizes": sample[1].numpy()})
    d = {"labels_equal": int((res[0] == ref[0]).sum()),
         "boxes_max_abs": float(np.abs(res[1] - ref[1]).max()),
         "scores_max_abs": float(np.abs(res[2] - ref[2]).max())}
    return d


# ---------------------------------------------------------------- evaluation

def detect(torch, deploy, imgs_u8, sizes, device, bs=50):
    """Deploy-wrapper outputs for every image: list of (labels, boxes, scores)."""
    out = []
    with torch.no_grad():
        for i in range(0, len(imgs_u8), bs):
            x = to_batch(torch, torch.from_numpy(imgs_u8[i:i + bs]).to(device))
            s = torch.from_numpy(sizes[i:i + bs]).to(device)
            labels, boxes, scores = deploy(x, s)
            for k in range(len(x)):
                out.append((labels[k].cpu().numpy(), boxes[k].cpu().numpy(), scores[k].cpu().numpy()))
    return out


def coco_results(dets, image_ids):
    res = []
    for iid, (labels, boxes, scores) in zip(image_ids, dets):
        for l, b, s in zip(labels.tolist(), boxes.tolist(), scores.tolist()):
            res.append({"image_id": int(iid), "category_id": int(l) + 1,
                        "bbox": [b[0], b[1], b[2] - b[0], b[3] - b[1]], "score": float(s)})
    return res


def map_eval(map_eval_bin, gt_path, res, tmp):
    rpath = os.path.join(tmp, "res.json")
    spath = os.path.join(tmp, "stats.json")
    with open(rpath, "w") as f:
        json.dump(res, f)
    subprocess.run([map_eval_bin, "--gt", gt_path, "--dt", rpath, "-q", "-j", spath], check=True)
    with open(spath) as f:
        st = json.load(f)["stats"]
    return [st[k] for k in ("AP", "AP50", "AP75", "APs", "APm", "APl")]


# ---------------------------------------------------------------- training

class Ema:
    """Exponential moving average of every floating tensor of the state (weights and
    batch-norm statistics); integer buffers are copied."""

    def __init__(self, model, decay):
        self.model = copy.deepcopy(model).eval()
        self.decay = decay
        self.updates = 0
        for p in self.model.parameters():
            p.requires_grad_(False)
        self.bind(model)

    def bind(self, model):
        pairs = list(zip(self.model.state_dict().values(), model.state_dict().values()))
        self.ef = [e for e, m in pairs if e.dtype.is_floating_point]
        self.mf = [m for e, m in pairs if e.dtype.is_floating_point]
        self.ei = [(e, m) for e, m in pairs if not e.dtype.is_floating_point]

    def update(self, torch):
        self.updates += 1
        d = self.decay * (1 - math.exp(-self.updates / 300.0))
        with torch.no_grad():
            torch._foreach_mul_(self.ef, d)
            torch._foreach_add_(self.ef, self.mf, alpha=1 - d)
            for e, m in self.ei:
                e.copy_(m)


def param_groups(model, wd):
    decay, no_decay = [], []
    for n, p in model.named_parameters():
        if not p.requires_grad:
            continue
        (no_decay if p.ndim <= 1 else decay).append(p)
    return [{"params": decay, "weight_decay": wd}, {"params": no_decay, "weight_decay": 0.0}]


def smoke_test(model, dev, work):
    """One step on a synthetic batch, a deploy export and an ONNX Runtime run of the
    untrained model: fails in seconds rather than after the training."""
    import torch
    model.train()
    x = torch.rand(4, 3, INPUT_SIZE, INPUT_SIZE, device=dev)
    lbl = [{"class_labels": torch.tensor([0, 3], device=dev),
            "boxes": torch.tensor([[0.3, 0.3, 0.2, 0.2], [0.7, 0.6, 0.3, 0.1]], device=dev)}] * 4
    out = model(pixel_values=x, labels=lbl)
    out.loss.backward()
    model.zero_grad(set_to_none=True)
    log("smoke: loss", float(out.loss), "keys", sorted(out.loss_dict))
    smoke_cpu = copy.deepcopy(model).cpu().eval()
    sample = (torch.rand(1, 3, INPUT_SIZE, INPUT_SIZE), torch.tensor([[640, 480]], dtype=torch.int64))
    smoke_dir = os.path.join(work, "smoke")
    os.makedirs(smoke_dir, exist_ok=True)
    export(smoke_cpu, smoke_dir, "smoke", sample)
    with torch.no_grad():
        ref = [t_.numpy() for t_ in deploy_wrapper(smoke_cpu)(*sample)]
    log("smoke: ORT vs torch", ort_check(os.path.join(smoke_dir, "smoke_op17.onnx"), sample, ref))
    del smoke_cpu


def install_fast_matcher(torch):
    """Replaces the forward of transformers' RTDetrHungarianMatcher with one that
    computes only each image's own block of the cost matrix.  The original builds
    the whole [batch*queries, all targets] matrix (torch.cdist, GIoU) and copies it
    to the host for every decoder layer: profiled on the H100 at batch 64, that
    cdist and device-to-host copy were 45% of the step's GPU time.  Same costs,
    same assignment (checked against the original on random inputs by
    check_fast_matcher before training)."""
    from scipy.optimize import linear_sum_assignment
    import transformers.loss.loss_rt_detr as lrd
    from transformers.image_transforms import center_to_corners_format
    cls = lrd.RTDetrHungarianMatcher
    original = cls.forward

    @torch.no_grad()
    def forward(self, outputs, targets):
        logits, boxes = outputs["logits"], outputs["pred_boxes"]
        bs, nq = logits.shape[:2]
        sizes = [len(v["boxes"]) for v in targets]
        tmax = max(sizes + [1])
        ids = torch.zeros(bs, tmax, dtype=torch.int64, device=logits.device)
        tbox = torch.zeros(bs, tmax, 4, dtype=boxes.dtype, device=boxes.device)
        tbox[..., 2:] = 1.0
        for b, v in enumerate(targets):
            if sizes[b]:
                ids[b, :sizes[b]] = v["class_labels"]
                tbox[b, :sizes[b]] = v["boxes"]
        if self.use_focal_loss:
            prob = torch.gather(logits.sigmoid(), 2, ids[:, None, :].expand(bs, nq, tmax))
            neg = (1 - self.alpha) * (prob ** self.gamma) * (-(1 - prob + 1e-8).log())
            pos = self.alpha * ((1 - prob) ** self.gamma) * (-(prob + 1e-8).log())
            class_cost = pos - neg
        else:
            class_cost = -torch.gather(logits.softmax(-1), 2, ids[:, None, :].expand(bs, nq, tmax))
        bbox_cost = (boxes[:, :, None, :] - tbox[:, None, :, :]).abs().sum(-1)
        p = center_to_corners_format(boxes)[:, :, None, :]
        t = center_to_corners_format(tbox)[:, None, :, :]
        area_p = (p[..., 2] - p[..., 0]) * (p[..., 3] - p[..., 1])
        area_t = (t[..., 2] - t[..., 0]) * (t[..., 3] - t[..., 1])
        inter = ((torch.min(p[..., 2], t[..., 2]) - torch.max(p[..., 0], t[..., 0])).clamp(min=0) *
                 (torch.min(p[..., 3], t[..., 3]) - torch.max(p[..., 1], t[..., 1])).clamp(min=0))
        union = area_p + area_t - inter
        hull = ((torch.max(p[..., 2], t[..., 2]) - torch.min(p[..., 0], t[..., 0])).clamp(min=0) *
                (torch.max(p[..., 3], t[..., 3]) - torch.min(p[..., 1], t[..., 1])).clamp(min=0))
        giou = inter / union - (hull - union) / hull
        cost = self.bbox_cost * bbox_cost + self.class_cost * class_cost - self.giou_cost * giou
        cost = cost.cpu()
        out = []
        for b in range(bs):
            i, j = linear_sum_assignment(cost[b, :, :sizes[b]])
            out.append((torch.as_tensor(i, dtype=torch.int64), torch.as_tensor(j, dtype=torch.int64)))
        return out

    cls.forward = forward
    return cls, original


def check_fast_matcher(torch, cls, original, cfg, dev):
    """The fast matcher against the original on random batches (continuous random
    costs have no ties, so the assignments must be identical)."""
    m = cls(cfg)
    g = torch.Generator(device="cpu").manual_seed(5)
    same = total = 0
    for trial in range(6):
        bs, nq = 8, 100 + 50 * (trial % 2)
        out = {"logits": torch.randn(bs, nq, NUM_LABELS, generator=g).to(dev),
               "pred_boxes": (0.1 + 0.8 * torch.rand(bs, nq, 4, generator=g)).to(dev)}
        tg = []
        for b in range(bs):
            n = int(torch.randint(0, 13, (1,), generator=g))
            tg.append({"class_labels": torch.randint(0, NUM_LABELS, (n,), generator=g).to(dev),
                       "boxes": (0.05 + 0.5 * torch.rand(n, 4, generator=g)).to(dev)})
        for (i1, j1), (i2, j2) in zip(original(m, out, tg), m(out, tg)):
            total += 1
            same += int(torch.equal(i1.cpu(), i2.cpu()) and torch.equal(j1.cpu(), j2.cpu()))
    log(f"fast matcher: {same}/{total} images assigned as by the original")
    if same != total:
        raise RuntimeError("fast matcher disagrees with transformers' RTDetrHungarianMatcher")


def allreduce_grads(torch, dist, params, world):
    """Data parallelism by hand: every rank's gradients averaged through gloo on the
    host, in one flat buffer, in the fixed order of PARAMS (a parameter that got no
    gradient on some rank counts as zeros, so every rank sends the same layout)."""
    grads = []
    for p in params:
        if p.grad is None:
            p.grad = torch.zeros_like(p)
        grads.append(p.grad)
    flat = torch.cat([g.reshape(-1) for g in grads]).cpu()
    dist.all_reduce(flat)
    flat = flat.to(grads[0].device).div_(world)
    off = 0
    for g in grads:
        n = g.numel()
        g.copy_(flat[off:off + n].view_as(g))
        off += n


def profile_report(prof):
    import io
    import pstats
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(30)
    return buf.getvalue()


def main():
    global LOG
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", default="/tmp/shapes-work")
    ap.add_argument("--gen", required=True, help="gen-shapes binary")
    ap.add_argument("--map-eval", required=True, help="map-eval binary")
    ap.add_argument("--train-images", type=int, default=16000)
    ap.add_argument("--data-seed", type=int, default=2024, help="dataset seed (val uses it too)")
    ap.add_argument("--seed", type=int, default=0, help="torch seed (init, batches, flips)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--wd", type=float, default=1e-4)
    ap.add_argument("--warmup", type=int, default=300)
    ap.add_argument("--time-budget", type=float, default=400, help="training seconds (sets --steps)")
    ap.add_argument("--steps", type=int, default=0, help="fixed number of steps (overrides the budget)")
    ap.add_argument("--eval-every", type=int, default=1000)
    ap.add_argument("--ema-decay", type=float, default=0.9995)
    ap.add_argument("--train-start", type=int, default=0,
                    help="index of the first train image (a resumed run draws new ones)")
    ap.add_argument("--resume", default="", help="folder with model.pt/ema.pt/opt.pt")
    ap.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    ap.add_argument("--prep-only", action="store_true", help="draw the data into --work and stop")
    ap.add_argument("--no-smoke", action="store_true", help="skip the smoke test (a trial of a round)")
    ap.add_argument("--profile-steps", type=int, default=0, help="cProfile this many steps from step 10")
    ap.add_argument("--slow-matcher", action="store_true", help="keep transformers' own matcher")
    ap.add_argument("--torch-profile", type=int, default=0, help="torch.profiler (CUDA) over this many steps")
    args = ap.parse_args()
    # Data-parallel when started by torch.distributed.run: RANK/WORLD_SIZE in the environment.
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    main_rank = rank == 0
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.work, exist_ok=True)
    if main_rank:
        LOG = open(os.path.join(args.out, "train.log"), "a")
    log("argv:", " ".join(sys.argv), f"(rank {rank} of {world})")

    # 1. data workers first (spawned before CUDA is touched); each rank takes its own shards.
    ctx = mp.get_context("spawn")
    pool = cf.ProcessPoolExecutor(max_workers=args.jobs, mp_context=ctx)
    val_future = pool.submit(make_shard, args.gen, args.work, "val", args.data_seed, 0, 200, 6)
    end = args.train_start + args.train_images
    starts = list(range(args.train_start, end, SHARD))
    futures = [pool.submit(make_shard, args.gen, args.work, "train", args.data_seed, s,
                           min(SHARD, end - s), 0)
               for s in (starts if args.prep_only else starts[rank::world])]
    if args.prep_only:
        val_future.result()
        n = sum(len(f.result()[1]) for f in futures)
        pool.shutdown()
        log(f"prep: {n} train images and val-200 in {args.work}")
        return

    import torch
    import transformers
    import onnx
    import onnxruntime
    import scipy
    versions = {"python": platform.python_version(), "torch": torch.__version__,
                "transformers": transformers.__version__, "onnx": onnx.__version__,
                "onnxruntime": onnxruntime.__version__, "numpy": np.__version__,
                "pillow": Image.__version__, "scipy": scipy.__version__,
                "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"}
    log("versions:", json.dumps(versions))
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dist = None
    if world > 1:
        import torch.distributed as dist
        dist.init_process_group("gloo")
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cudnn.benchmark = True

    cfg = build_config()
    if not args.slow_matcher:
        cls, original = install_fast_matcher(torch)
        try:
            check_fast_matcher(torch, cls, original, cfg, dev)
        except Exception as err:           # keep training, with transformers' own matcher
            cls.forward = original
            log(f"fast matcher NOT used: {type(err).__name__}: {err}")
    model = build_model(cfg, args.seed).to(dev)
    nparams = sum(p.numel() for p in model.parameters())
    log(f"model: {nparams} parameters")

    # 2. smoke test: one step on a synthetic batch, export + ORT of the untrained model.
    t = time.time()
    if args.no_smoke or not main_rank:
        log("smoke test skipped")
    else:
        smoke_test(model, dev, args.work)
        log(f"smoke test passed in {time.time() - t:.1f}s")

    # 3. data.
    t = time.time()
    val_npy, val_targets = val_future.result()
    shards = [f.result() for f in futures]
    pool.shutdown()
    train_u8 = np.concatenate([np.load(p) for p, _ in shards])
    train_targets = [tg for _, tgs in shards for tg in tgs]
    val_u8 = np.load(val_npy)
    val_dir = os.path.join(args.work, "val-0")
    val_gt_path = os.path.join(val_dir, "annotations.json")
    with open(val_gt_path) as f:
        val_gt = json.load(f)
    val_ids = [im["id"] for im in val_gt["images"]]
    val_sizes = np.array([[im["width"], im["height"]] for im in val_gt["images"]], dtype=np.int64)
    with open(val_gt_path, "rb") as f:
        val_gt_sha = hashlib.sha256(f.read()).hexdigest()
    nobj = sum(len(l) for l, _ in train_targets)
    log(f"data: {len(train_u8)} train images ({nobj} objects), {len(val_u8)} val images "
        f"in {time.time() - t:.1f}s (waited); val annotations sha256 {val_gt_sha}")
    gpu_imgs = torch.from_numpy(train_u8).to(dev)          # uint8 NHWC
    del train_u8
    gpu_tg = [(torch.from_numpy(l).to(dev), torch.from_numpy(b).to(dev)) for l, b in train_targets]

    # 4. training.
    if args.resume:
        model.load_state_dict(torch.load(os.path.join(args.resume, "model.pt"), map_location=dev))
    ema = Ema(model, args.ema_decay)
    if args.resume:
        ema.model.load_state_dict(torch.load(os.path.join(args.resume, "ema.pt"), map_location=dev))
        ema.bind(model)
        ema.updates = 10000
    opt = torch.optim.AdamW(param_groups(model, args.wd), lr=args.lr, betas=(0.9, 0.999),
                            fused=dev.type == "cuda")
    if args.resume and os.path.exists(os.path.join(args.resume, "opt.pt")):
        st = torch.load(os.path.join(args.resume, "opt.pt"), map_location=dev)
        for s in st["state"].values():
            for k, v in s.items():
                if torch.is_tensor(v) and v.is_floating_point() and k != "step":
                    s[k] = v.float()
        opt.load_state_dict(st)
        for g in opt.param_groups:
            g["lr"] = args.lr
    rng = np.random.default_rng(args.seed * 1000 + rank)
    params = [p for p in model.parameters() if p.requires_grad]
    prof = None
    n_train = gpu_imgs.shape[0]
    total = args.steps or 10 ** 9
    t_train = time.time()
    step = 0
    timed = None
    hist = []
    model.train()
    while step < total:
        if step == 50 and not args.steps:
            torch.cuda.synchronize()
            per = (time.time() - timed) / 40
            total = max(100, int((args.time_budget - (time.time() - t_train)) / per) + 50)
            if dist:   # every rank runs rank 0's number of steps
                tt = torch.tensor([total], dtype=torch.int64)
                dist.broadcast(tt, 0)
                total = int(tt)
            log(f"timing: {per * 1000:.1f} ms/step -> {total} steps in all")
        if step == 10:
            torch.cuda.synchronize()
            timed = time.time()
            if args.profile_steps and main_rank:
                import cProfile
                prof = cProfile.Profile()
                prof.enable()
        if args.torch_profile and main_rank and step == 10:
            tprof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                       torch.profiler.ProfilerActivity.CUDA])
            tprof.__enter__()
        if args.torch_profile and main_rank and step == 10 + args.torch_profile:
            torch.cuda.synchronize()
            tprof.__exit__(None, None, None)
            log(f"torch profile of steps 10..{step - 1}:\n" +
                tprof.key_averages().table(sort_by="cuda_time_total", row_limit=40, max_name_column_width=70))
        if prof and step == 10 + args.profile_steps:
            torch.cuda.synchronize()
            prof.disable()
            log(f"profile of steps 10..{step - 1}:\n" + profile_report(prof))
            prof = None
        frac = step / max(1, total)
        warm = min(1.0, (step + 1) / args.warmup)
        lr = args.lr * warm * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * min(1.0, frac))))
        for g in opt.param_groups:
            g["lr"] = lr
        idx = rng.integers(0, n_train, args.batch)
        flips = rng.integers(0, 2, (args.batch, 2)).astype(bool)
        x = to_batch(torch, gpu_imgs[torch.from_numpy(idx).to(dev)])
        fl = torch.from_numpy(flips).to(dev)
        x = torch.where(fl[:, 0, None, None, None], x.flip(-1), x)
        x = torch.where(fl[:, 1, None, None, None], x.flip(-2), x)
        labels = []
        for k, i in enumerate(idx.tolist()):
            l, b = gpu_tg[i]
            b = b.clone()
            if flips[k, 0]:
                b[:, 0] = 1 - b[:, 0]
            if flips[k, 1]:
                b[:, 1] = 1 - b[:, 1]
            labels.append({"class_labels": l, "boxes": b})
        out = model(pixel_values=x, labels=labels)
        opt.zero_grad(set_to_none=True)
        out.loss.backward()
        if dist:
            allreduce_grads(torch, dist, params, world)
        gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
        opt.step()
        if main_rank:
            ema.update(torch)
        step += 1
        if main_rank and (step % 100 == 0 or step == 1):
            ld = {k: round(float(v), 4) for k, v in out.loss_dict.items()
                  if k in ("loss_vfl", "loss_bbox", "loss_giou")}
            hist.append({"step": step, "loss": float(out.loss), "lr": lr, **ld})
            log(f"step {step}/{total} loss {float(out.loss):.4f} {ld} lr {lr:.2e} "
                f"gnorm {float(gnorm):.2f} elapsed {time.time() - t_train:.0f}s")
        if main_rank and step % args.eval_every == 0 and step < total:
            stats = map_eval(args.map_eval, val_gt_path,
                             coco_results(detect(torch, deploy_wrapper(ema.model), val_u8, val_sizes, dev),
                                          val_ids), args.out)
            log(f"eval step {step}: EMA AP {stats[0]:.4f} AP50 {stats[1]:.4f} AP75 {stats[2]:.4f}")
            model.train()
    train_time = time.time() - t_train
    log(f"training: {step} steps in {train_time:.1f}s")
    if dist:
        dist.barrier()
        if not main_rank:
            return

    # 5. checkpoints (each under 16 MiB: optimizer moments in bf16).
    torch.save(model.state_dict(), os.path.join(args.out, "model.pt"))
    torch.save(ema.model.state_dict(), os.path.join(args.out, "ema.pt"))
    st = opt.state_dict()
    for s in st["state"].values():
        for k, v in s.items():
            if torch.is_tensor(v) and v.is_floating_point() and k != "step":
                s[k] = v.to(torch.bfloat16)
    torch.save(st, os.path.join(args.out, "opt.pt"))
    log("checkpoints saved")

    # 6. GPU eval (TF32 off) of the EMA weights, then export and PyTorch CPU fp32 eval.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    stats_gpu = map_eval(args.map_eval, val_gt_path,
                         coco_results(detect(torch, deploy_wrapper(ema.model), val_u8, val_sizes, dev),
                                      val_ids), args.out)
    log(f"final EMA (GPU fp32): AP {stats_gpu[0]:.4f} AP50 {stats_gpu[1]:.4f}")
    final = copy.deepcopy(ema.model).cpu().eval()
    torch.set_num_threads(min(16, os.cpu_count() or 1))
    # The export sample is val image 1 itself, its official input.
    sample = (to_batch(torch, torch.from_numpy(val_u8[:1])), torch.from_numpy(val_sizes[:1]))
    exp = export(final, args.out, "rtdetr_shapes", sample)
    with torch.no_grad():
        ref = [t_.numpy() for t_ in deploy_wrapper(final)(*sample)]
    ortd = {o: ort_check(os.path.join(args.out, f"rtdetr_shapes_op{o}.onnx"), sample, ref) for o in (16, 17)}
    log("ORT vs torch on val image 1:", json.dumps(ortd))
    t = time.time()
    res = coco_results(detect(torch, deploy_wrapper(final), val_u8, val_sizes, torch.device("cpu")), val_ids)
    with open(os.path.join(args.out, "torch_val200.json"), "w") as f:
        json.dump(res, f)
    stats_cpu = map_eval(args.map_eval, val_gt_path, res, args.out)
    log(f"PyTorch CPU fp32 eval on val-200 ({time.time() - t:.1f}s): AP {stats_cpu[0]:.4f} "
        f"AP50 {stats_cpu[1]:.4f} AP75 {stats_cpu[2]:.4f} APs {stats_cpu[3]:.4f} "
        f"APm {stats_cpu[4]:.4f} APl {stats_cpu[5]:.4f}")
    report = {"versions": versions, "parameters": nparams, "config": cfg.to_dict(),
              "args": vars(args), "ranks": world, "samples": step * args.batch * world, "steps": step, "train_seconds": train_time,
              "train_images": int(n_train), "val_annotations_sha256": val_gt_sha,
              "loss_history": hist, "export": exp, "ort_vs_torch": ortd,
              "ap_gpu_fp32": stats_gpu, "ap_torch_cpu_fp32": stats_cpu,
              "total_seconds": time.time() - T0}
    with open(os.path.join(args.out, "report.json"), "w") as f:
        json.dump(report, f, indent=1, default=str)
    log("done")


if __name__ == "__main__":
    main()
