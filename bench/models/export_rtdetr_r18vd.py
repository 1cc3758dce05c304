#!/usr/bin/env python3
"""export_rtdetr_r18vd.py -- exports the full-size benchmark RT-DETR: the
R18-vd architecture (PekingU/rtdetr_r18vd's configuration in transformers:
ResNet-18-vd backbone, 256-wide hybrid encoder, 3 decoder layers, 300
queries, 80 classes) at 640x640 with the official deploy interface, at opsets
16 and 17. Run once on a machine with PyTorch and transformers; the committed
graphs (weights dropped) and versions.txt record what it produced.

  python3 export_rtdetr_r18vd.py OUTDIR

Random weights (the library's own initialisers, seed 0): weights do not change
the speed, and bench/models/README.md says how the graph relates to the
official lyuwenyu/RT-DETR export. Each export is checked against PyTorch in
ONNX Runtime, then its weights are dropped (tests/zoo/strip_weights.py) and
tests/zoo/gen_weights.py fills them again at bench time. Writes
OUTDIR/rtdetr_r18vd_640_op{16,17}.onnx, OUTDIR/versions.txt, OUTDIR/check.json.
"""
import importlib, json, os, sys, time
import numpy as np
import onnx
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "zoo"))
sys.path.insert(0, os.path.join(ROOT, "models", "fixtures"))
from strip_weights import strip                       # noqa: E402
from make_rtdetr_tiny import DeployModel, op_histogram, check_ops   # noqa: E402

SIZE = 640
NUM_LABELS = 80
NUM_QUERIES = 300


def build_model():
    from transformers import RTDetrConfig, RTDetrForObjectDetection, RTDetrResNetConfig
    backbone = RTDetrResNetConfig(
        embedding_size=64, hidden_sizes=[64, 128, 256, 512], depths=[2, 2, 2, 2],
        layer_type="basic", downsample_in_first_stage=False, downsample_in_bottleneck=False,
        out_features=["stage2", "stage3", "stage4"])
    cfg = RTDetrConfig(
        backbone_config=backbone, use_pretrained_backbone=False, use_timm_backbone=False,
        encoder_in_channels=[128, 256, 512], feat_strides=[8, 16, 32],
        d_model=256, encoder_hidden_dim=256, encoder_ffn_dim=1024, encoder_attention_heads=8,
        encoder_layers=1, hidden_expansion=0.5,
        decoder_in_channels=[256, 256, 256], decoder_layers=3, decoder_ffn_dim=1024,
        decoder_attention_heads=8, decoder_n_points=4, num_feature_levels=3,
        num_queries=NUM_QUERIES, num_labels=NUM_LABELS, num_denoising=100,
        anchor_image_size=None, disable_custom_kernels=True)
    torch.manual_seed(0)
    return RTDetrForObjectDetection._from_config(cfg, attn_implementation="eager").eval()


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    model = build_model()
    deploy = DeployModel(model, NUM_LABELS, NUM_QUERIES).eval()
    g = torch.Generator().manual_seed(1)
    images = torch.rand(1, 3, SIZE, SIZE, generator=g)
    sizes = torch.tensor([[SIZE, SIZE]], dtype=torch.int64)
    with torch.no_grad():
        ref = [t.numpy() for t in deploy(images, sizes)]
    import onnxruntime as ort
    check = {"params": int(sum(p.numel() for p in model.parameters()))}
    for opset in (16, 17):
        tmp = os.path.join("/tmp", f"r18vd_op{opset}.onnx")
        t = time.time()
        with torch.no_grad():
            torch.onnx.export(deploy, (images, sizes), tmp,
                              input_names=["images", "orig_target_sizes"],
                              output_names=["labels", "boxes", "scores"],
                              opset_version=opset, do_constant_folding=True, dynamo=False)
        proto = onnx.load(tmp)
        hist = op_histogram(proto)
        sess = ort.InferenceSession(tmp, providers=["CPUExecutionProvider"])
        res = sess.run(None, {"images": images.numpy(), "orig_target_sizes": sizes.numpy()})
        check[f"op{opset}"] = {
            "nodes": sum(hist.values()), "op_histogram": dict(sorted(hist.items())),
            "checks": check_ops(opset, hist),
            "ort_vs_torch": {"labels_equal": int((res[0] == ref[0]).sum()),
                             "boxes_max_abs": float(np.abs(res[1] - ref[1]).max()),
                             "scores_max_abs": float(np.abs(res[2] - ref[2]).max())},
            "export_s": round(time.time() - t, 1)}
        strip(tmp, os.path.join(out, f"rtdetr_r18vd_{SIZE}_op{opset}.onnx"))
        print(f"op{opset}: {check[f'op{opset}']['nodes']} nodes, ort vs torch "
              f"{check[f'op{opset}']['ort_vs_torch']}", flush=True)
    with open(os.path.join(out, "check.json"), "w") as f:
        json.dump(check, f, indent=1)
    with open(os.path.join(out, "versions.txt"), "w") as f:
        for mod in ("torch", "transformers", "onnx", "onnxruntime", "numpy"):
            f.write(f"{mod} {importlib.import_module(mod).__version__}\n")


if __name__ == "__main__":
    main()
