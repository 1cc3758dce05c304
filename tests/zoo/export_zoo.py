#!/usr/bin/env python3
"""export_zoo.py -- exports the model zoo's graphs (run once, on a machine
with PyTorch, torchvision, timm and transformers; the committed graphs and
versions.txt record what it produced).

  python3 export_zoo.py OUTDIR [PART [NAME ...]]   (PART: detection, torchvision, timm, transformers, all)

Each model is built with random weights (the libraries' own initialisers),
exported with PyTorch's legacy exporter at opset 17 or the dynamo exporter at
opset 18, then every float initializer of more than 256 elements is dropped
and replaced by an external-data stub recording its mean, std, min and max
(tests/zoo/gen_weights.py fills it at test time). Masks (at most two distinct
values) and non-finite tensors are kept. Writes OUTDIR/NAME.onnx,
OUTDIR/manifest.tsv (name, library, exporter, opset, task, inputs, subset) and
OUTDIR/versions.txt; failures go to OUTDIR/failed.tsv with the error.
"""
import os, sys, time, traceback
import numpy as np
import onnx
from onnx import numpy_helper
import torch

OUT = sys.argv[1]
PART = sys.argv[2] if len(sys.argv) > 2 else "all"
ONLY = set(sys.argv[3:])
torch.set_num_threads(4)
os.makedirs(OUT, exist_ok=True)
T0 = time.time()
BUDGET = float(os.environ.get("ZOO_EXPORT_BUDGET", "420"))
torch.manual_seed(0)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from strip_weights import strip

def img(n=224, b=1):
    return torch.rand(b, 3, n, n)

def export(name, lib, task, model, args, in_specs, exporter="legacy", subset="full", out_names=None):
    if ONLY and name not in ONLY:
        return
    if time.time() - T0 > BUDGET:
        open(os.path.join(OUT, "failed.tsv"), "a").write(f"{name}\tnot exported: time budget\n")
        return
    t = time.time()
    tmp = os.path.join("/tmp/zoo_tmp", name)
    os.makedirs(tmp, exist_ok=True)
    path = os.path.join(tmp, "model.onnx")
    try:
        model.eval()
        with torch.no_grad():
            if exporter == "legacy":
                opset = 17
                torch.onnx.export(model, args, path, opset_version=17, dynamo=False,
                                  input_names=[s.split(":")[0] for s in in_specs], output_names=out_names,
                                  do_constant_folding=True)
            else:
                opset = 18
                prog = torch.onnx.export(model, args, dynamo=True, opset_version=18,
                                         input_names=[s.split(":")[0] for s in in_specs], output_names=out_names)
                prog.save(path, external_data=True)
        strip(path, os.path.join(OUT, name + ".onnx"))
        with open(os.path.join(OUT, "manifest.tsv"), "a") as f:
            f.write("\t".join([name, lib, exporter, str(opset), task, ";".join(in_specs), subset]) + "\n")
        print(f"ok {name} {time.time() - t:.1f}s", flush=True)
    except Exception as ex:
        msg = (str(ex).splitlines() or ["?"])[0][:300]
        open(os.path.join(OUT, "failed.tsv"), "a").write(f"{name}\t{type(ex).__name__}: {msg}\n")
        print(f"FAIL {name}: {msg}", flush=True)
        traceback.print_exc(limit=2)

class Wrap(torch.nn.Module):
    """A model whose forward returns a tuple/dict: keeps the tensors, in order."""
    def __init__(self, m, fn):
        super().__init__()
        self.m, self.fn = m, fn
    def forward(self, *a):
        return self.fn(self.m, *a)

IMG = "images:float32:1x3x224x224:0:1"

def torchvision_models():
    import torchvision.models as tm
    import torchvision.models.detection as td
    import torchvision.models.segmentation as ts
    # detectors with in-graph NMS (legacy exporter; 320x320 inputs, a low score threshold so NMS has work)
    det_img = "images:float32:3x320x320:0:1"
    small = dict(min_size=320, max_size=320)
    dets = [
        ("fasterrcnn_mobilenet_v3_large_320_fpn", lambda: td.fasterrcnn_mobilenet_v3_large_320_fpn(weights=None, weights_backbone=None, box_score_thresh=0.001, **small), "default"),
        ("ssdlite320_mobilenet_v3_large", lambda: td.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None, score_thresh=0.001), "default"),
        ("retinanet_resnet50_fpn", lambda: td.retinanet_resnet50_fpn(weights=None, weights_backbone=None, score_thresh=0.001, **small), "full"),
        ("fcos_resnet50_fpn", lambda: td.fcos_resnet50_fpn(weights=None, weights_backbone=None, score_thresh=0.001, **small), "full"),
        ("maskrcnn_resnet50_fpn", lambda: td.maskrcnn_resnet50_fpn(weights=None, weights_backbone=None, box_score_thresh=0.001, **small), "full"),
        ("keypointrcnn_resnet50_fpn", lambda: td.keypointrcnn_resnet50_fpn(weights=None, weights_backbone=None, box_score_thresh=0.001, **small), "full"),
    ]
    if PART in ("detection", "all"):
        for name, ctor, subset in dets:
            m = ctor()
            export(name, "torchvision", "detection", m, ([torch.rand(3, 320, 320)],), [det_img], "legacy", subset)
    if PART not in ("torchvision", "all"):
        return
    cls_legacy = [("resnet18", "default"), ("mobilenet_v3_small", "default"), ("squeezenet1_1", "default"),
                  ("shufflenet_v2_x0_5", "default"), ("mnasnet0_5", "default"), ("regnet_x_400mf", "default"),
                  ("efficientnet_b0", "full"), ("densenet121", "full"), ("googlenet", "full"),
                  ("resnext50_32x4d", "full"), ("alexnet", "full"), ("vgg11", "full"), ("mobilenet_v2", "full"),
                  ("swin_t", "full"), ("maxvit_t", "full")]
    for name, subset in cls_legacy:
        kw = {"aux_logits": False, "init_weights": True} if name == "googlenet" else {}
        m = getattr(tm, name)(weights=None, **kw)
        export(name, "torchvision", "classification", m, (img(),), [IMG], "legacy", subset)
    cls_dynamo = [("regnet_y_400mf", "default"), ("convnext_tiny", "full"), ("efficientnet_v2_s", "full"),
                  ("mobilenet_v3_large", "full"), ("swin_v2_t", "full"), ("wide_resnet50_2", "full"),
                  ("vit_b_16", "full")]
    for name, subset in cls_dynamo:
        export(name, "torchvision", "classification", getattr(tm, name)(weights=None), (img(),), [IMG], "dynamo", subset)
    seg = [("lraspp_mobilenet_v3_large", "legacy", "default"), ("deeplabv3_mobilenet_v3_large", "dynamo", "full"),
           ("fcn_resnet50", "legacy", "full")]
    for name, exp, subset in seg:
        kw = {} if name.startswith("lraspp") else {"aux_loss": False}
        m = getattr(ts, name)(weights=None, weights_backbone=None, **kw)
        export(name, "torchvision", "segmentation", Wrap(m, lambda m, x: m(x)["out"]), (img(),), [IMG], exp, subset)

def timm_models():
    import timm
    lst = [("mobilevit_xxs", "dynamo", "default"), ("convnext_atto", "dynamo", "default"),
           ("deit_tiny_patch16_224", "dynamo", "default"), ("levit_128s", "legacy", "full"),
           ("repvgg_a0", "legacy", "full"), ("ghostnet_100", "legacy", "full"), ("poolformer_s12", "dynamo", "full"),
           ("rexnet_100", "legacy", "full"), ("edgenext_xx_small", "dynamo", "full"), ("dla34", "legacy", "full"),
           ("cspresnet50", "legacy", "full"), ("tiny_vit_5m_224", "dynamo", "full"), ("fastvit_t8", "dynamo", "full"),
           ("efficientformer_l1", "legacy", "full"), ("hrnet_w18_small", "legacy", "full"),
           ("mobilenetv4_conv_small", "dynamo", "default"), ("coatnet_nano_rw_224", "dynamo", "full")]
    for name, exp, subset in lst:
        try:
            m = timm.create_model(name, pretrained=False)
        except Exception as ex:
            open(os.path.join(OUT, "failed.tsv"), "a").write(f"{name}\tcreate: {ex}\n")
            continue
        export(name, "timm", "classification", m, (img(),), [IMG], exp, subset)

def transformers_models():
    import transformers as tf
    ids = lambda n=16, v=1000: torch.randint(0, v, (1, n))
    IDS = "input_ids:int64:1x16:0:1000"
    enc = [
        ("bert", lambda: tf.BertModel(tf.BertConfig(vocab_size=1000, hidden_size=128, num_hidden_layers=2, num_attention_heads=4, intermediate_size=256)), "legacy", "default"),
        ("distilbert", lambda: tf.DistilBertModel(tf.DistilBertConfig(vocab_size=1000, dim=128, n_layers=2, n_heads=4, hidden_dim=256)), "dynamo", "default"),
        ("roberta", lambda: tf.RobertaModel(tf.RobertaConfig(vocab_size=1000, hidden_size=128, num_hidden_layers=2, num_attention_heads=4, intermediate_size=256)), "dynamo", "full"),
        ("albert", lambda: tf.AlbertModel(tf.AlbertConfig(vocab_size=1000, hidden_size=128, embedding_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=256)), "legacy", "full"),
        ("electra", lambda: tf.ElectraModel(tf.ElectraConfig(vocab_size=1000, hidden_size=128, embedding_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=256)), "dynamo", "full"),
        ("gpt2", lambda: tf.GPT2Model(tf.GPT2Config(vocab_size=1000, n_embd=128, n_layer=2, n_head=4, n_positions=64)), "dynamo", "default"),
        ("llama", lambda: tf.LlamaModel(tf.LlamaConfig(vocab_size=1000, hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)), "dynamo", "full"),
        ("qwen2", lambda: tf.Qwen2Model(tf.Qwen2Config(vocab_size=1000, hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)), "dynamo", "full"),
    ]
    for name, ctor, exp, subset in enc:
        m = ctor()
        dec = name in ("gpt2", "llama", "qwen2")
        fn = (lambda m, x: m(input_ids=x, use_cache=False).last_hidden_state) if dec else \
             (lambda m, x: m(input_ids=x).last_hidden_state)
        export(name, "transformers", "transformer-decoder" if dec else "transformer-encoder", Wrap(m, fn),
               (ids(),), [IDS], exp, subset)
    t5 = tf.T5Model(tf.T5Config(vocab_size=1000, d_model=128, d_kv=32, d_ff=256, num_layers=2, num_heads=4))
    export("t5", "transformers", "transformer-encoder-decoder",
           Wrap(t5, lambda m, x, y: m(input_ids=x, decoder_input_ids=y, use_cache=False).last_hidden_state),
           (ids(), ids(8)), [IDS, "decoder_input_ids:int64:1x8:0:1000"], "dynamo", "full")
    bart = tf.BartModel(tf.BartConfig(vocab_size=1000, d_model=128, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=256, decoder_ffn_dim=256, max_position_embeddings=64))
    export("bart", "transformers", "transformer-encoder-decoder",
           Wrap(bart, lambda m, x, y: m(input_ids=x, decoder_input_ids=y, use_cache=False).last_hidden_state),
           (ids(), ids(8)), [IDS, "decoder_input_ids:int64:1x8:0:1000"], "legacy", "full")
    wh = tf.WhisperModel(tf.WhisperConfig(vocab_size=1000, d_model=128, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=256, decoder_ffn_dim=256, num_mel_bins=80, max_source_positions=100, max_target_positions=64, pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1))
    export("whisper_encoder", "transformers", "transformer-encoder", Wrap(wh.encoder, lambda m, x: m(x).last_hidden_state),
           (torch.randn(1, 80, 200),), ["input_features:float32:1x80x200:-1:1"], "dynamo", "full")
    vit = tf.ViTModel(tf.ViTConfig(hidden_size=128, num_hidden_layers=2, num_attention_heads=4, intermediate_size=256, image_size=224, patch_size=16))
    export("hf_vit", "transformers", "transformer-encoder", Wrap(vit, lambda m, x: m(pixel_values=x).last_hidden_state),
           (img(),), ["pixel_values:float32:1x3x224x224:0:1"], "dynamo", "full")
    seg = tf.SegformerForSemanticSegmentation(tf.SegformerConfig(num_labels=10, hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1], decoder_hidden_size=64))
    export("segformer", "transformers", "segmentation", Wrap(seg, lambda m, x: m(pixel_values=x).logits),
           (img(),), ["pixel_values:float32:1x3x224x224:0:1"], "dynamo", "default")
    detr = tf.DetrForObjectDetection(tf.DetrConfig(use_timm_backbone=False, use_pretrained_backbone=False, backbone_config=tf.ResNetConfig(depths=[1, 1, 1, 1], hidden_sizes=[32, 64, 128, 256], embedding_size=32, out_features=["stage4"]), d_model=64, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, num_queries=20, num_labels=10))
    def detr_out(m, x):
        o = m(pixel_values=x)
        return o.logits, o.pred_boxes
    export("detr", "transformers", "detection", Wrap(detr, detr_out),
           (img(),), ["pixel_values:float32:1x3x224x224:0:1"], "legacy", "full")

for part in (torchvision_models, timm_models, transformers_models):
    if PART not in ("all", "detection" if part is torchvision_models else "", part.__name__.split("_")[0]):
        continue
    try:
        part()
    except Exception as ex:
        open(os.path.join(OUT, "failed.tsv"), "a").write(f"{part.__name__}\t{type(ex).__name__}: {ex}\n")
        traceback.print_exc()

import importlib
with open(os.path.join(OUT, "versions.txt"), "w") as f:
    for mod in ("torch", "torchvision", "timm", "transformers", "onnx", "onnxscript", "onnxruntime", "numpy"):
        try:
            f.write(f"{mod} {importlib.import_module(mod).__version__}\n")
        except Exception as ex:
            f.write(f"{mod} unavailable: {ex}\n")
print(f"done in {time.time() - T0:.0f}s", flush=True)
