"""onnx_torch.py — runs an ONNX graph node by node with PyTorch operators, on
any device, in one float type: the PyTorch form of a bundled model, so the
GPU's cuBLAS/cuDNN compute the same layers parity emulates (issue 38).

Precision policy (what `run(..., dtype=)` does), stated because it decides
what is compared:
- float32: every float tensor float32; TF32 is the caller's switch
  (torch.backends.cuda.matmul.allow_tf32 / torch.backends.cudnn.allow_tf32).
- float16 / bfloat16: every float initializer and input is cast once; every
  layer then computes in PyTorch's own way for that type -- GEMM-class layers
  on tensor cores with FP32 accumulation, elementwise layers and reductions
  (ReduceMean, Softmax, LayerNormalization) computed internally in FP32 and
  their outputs rounded to the type -- as parity's fp16/bf16 configs model a
  strongly typed FP16 engine. Cast nodes keep their ONNX meaning, with float
  targets mapped to the run's type (a float32 Cast in an fp16 run stays
  fp16, as in parity's pure fp16 where every float layer is FP16).
Integer tensors (shapes, indices, labels) stay integer.

Only the operators of parity's bundled models are covered (the seed
reproducers and the RT-DETR exports at opsets 16 and 17); another one raises
NotImplementedError naming it.
"""
import numpy as np
import torch
import torch.nn.functional as F
from onnx import numpy_helper

ONNX_DT = {1: torch.float32, 2: torch.uint8, 3: torch.int8, 5: torch.int16, 6: torch.int32, 7: torch.int64,
           9: torch.bool, 10: torch.float16, 11: torch.float64, 16: torch.bfloat16}


def attrs_of(node):
    out = {}
    for a in node.attribute:
        if a.type == a.INT:
            out[a.name] = a.i
        elif a.type == a.FLOAT:
            out[a.name] = a.f
        elif a.type == a.INTS:
            out[a.name] = list(a.ints)
        elif a.type == a.FLOATS:
            out[a.name] = list(a.floats)
        elif a.type == a.STRING:
            out[a.name] = a.s.decode()
        elif a.type == a.TENSOR:
            out[a.name] = numpy_helper.to_array(a.t)
    return out


def ints(t):
    return [int(v) for v in t.reshape(-1).tolist()]


def bcast_axes(axes, rank):
    return [a + rank if a < 0 else a for a in axes]


class Runner:
    def __init__(self, model, device, dtype):
        self.g = model.graph
        self.device, self.dtype = device, dtype
        self.env = {}
        for init in self.g.initializer:
            self.env[init.name] = self.tensor(numpy_helper.to_array(init))

    def tensor(self, arr):
        t = torch.from_numpy(np.array(arr, copy=True, order="C")).to(self.device)   # 0-d stays 0-d
        return t.to(self.dtype) if t.is_floating_point() else t

    def cast_to(self, t, onnx_type):
        dt = ONNX_DT[onnx_type]
        if dt.is_floating_point:
            dt = self.dtype
        return t.to(dt)

    def run(self, feeds, probe=None):
        """probe(node, inputs, outputs): called after each node (the TF32 probe of gpu_run.py)."""
        for k, v in feeds.items():
            self.env[k] = self.tensor(v)
        for n in self.g.node:
            ins = [self.env[i] if i else None for i in n.input]
            outs = self.node(n.op_type, ins, attrs_of(n))
            if probe:
                probe(self, n, ins, outs)
            if not isinstance(outs, (list, tuple)):
                outs = [outs]
            for name, v in zip(n.output, outs):
                if name:
                    self.env[name] = v
        return {o.name: self.env[o.name] for o in self.g.output}

    # ---- operators ----
    def node(self, op, x, a):
        f = getattr(self, "op_" + op, None)
        if f is None:
            raise NotImplementedError("onnx_torch: operator %s" % op)
        return f(x, a)

    def op_Constant(self, x, a):
        return self.tensor(a["value"])

    def op_Identity(self, x, a):
        return x[0]

    def op_Cast(self, x, a):
        return self.cast_to(x[0], a["to"])

    def op_Add(self, x, a):
        return x[0] + x[1]

    def op_Sub(self, x, a):
        return x[0] - x[1]

    def op_Mul(self, x, a):
        return x[0] * x[1]

    def op_Div(self, x, a):
        if not x[0].is_floating_point():
            return torch.div(x[0], x[1], rounding_mode="trunc")
        return x[0] / x[1]

    def op_Mod(self, x, a):
        return torch.fmod(x[0], x[1]) if a.get("fmod", 0) else torch.remainder(x[0], x[1])

    def op_Pow(self, x, a):
        return torch.pow(x[0], x[1].to(x[0].dtype) if x[1].is_floating_point() else x[1])

    def op_Sqrt(self, x, a):
        return torch.sqrt(x[0])

    def op_Erf(self, x, a):
        return torch.erf(x[0])

    def op_Log(self, x, a):
        return torch.log(x[0])

    def op_Sin(self, x, a):
        return torch.sin(x[0])

    def op_Cos(self, x, a):
        return torch.cos(x[0])

    def op_Relu(self, x, a):
        return torch.relu(x[0])

    def op_Sigmoid(self, x, a):
        return torch.sigmoid(x[0])

    def op_Not(self, x, a):
        return torch.logical_not(x[0])

    def op_And(self, x, a):
        return torch.logical_and(x[0], x[1])

    def op_Equal(self, x, a):
        return x[0] == x[1]

    def op_Less(self, x, a):
        return x[0] < x[1]

    def op_Greater(self, x, a):
        return x[0] > x[1]

    def op_Where(self, x, a):
        return torch.where(x[0], x[1], x[2])

    def op_Clip(self, x, a):
        y = x[0]
        lo = x[1] if len(x) > 1 and x[1] is not None else a.get("min")
        hi = x[2] if len(x) > 2 and x[2] is not None else a.get("max")
        if lo is not None:
            y = torch.maximum(y, torch.as_tensor(lo, dtype=y.dtype, device=y.device))
        if hi is not None:
            y = torch.minimum(y, torch.as_tensor(hi, dtype=y.dtype, device=y.device))
        return y

    def op_MatMul(self, x, a):
        return torch.matmul(x[0], x[1])

    def op_Gemm(self, x, a):
        A = x[0].t() if a.get("transA", 0) else x[0]
        B = x[1].t() if a.get("transB", 0) else x[1]
        y = a.get("alpha", 1.0) * (A @ B)
        if len(x) > 2 and x[2] is not None:
            y = y + a.get("beta", 1.0) * x[2]
        return y

    def op_Einsum(self, x, a):
        return torch.einsum(a["equation"], *x)

    def op_Conv(self, x, a):
        w = x[1]
        nd = w.dim() - 2
        pads = a.get("pads", [0] * 2 * nd)
        assert a.get("auto_pad", "NOTSET") in ("NOTSET", ""), "onnx_torch: auto_pad"
        xin = x[0]
        if pads[:nd] != pads[nd:]:
            padspec = []
            for i in reversed(range(nd)):
                padspec += [pads[i], pads[i + nd]]
            xin, pad = F.pad(xin, padspec), 0
        else:
            pad = pads[:nd]
        conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[nd]
        return conv(xin, w, x[2] if len(x) > 2 else None, stride=a.get("strides", 1), padding=pad,
                    dilation=a.get("dilations", 1), groups=a.get("group", 1))

    def pool_pads(self, x, a, nd, value):
        pads = a.get("pads", [0] * 2 * nd)
        if pads[:nd] == pads[nd:]:
            return x, pads[:nd]
        spec = []
        for i in reversed(range(nd)):
            spec += [pads[i], pads[i + nd]]
        return F.pad(x, spec, value=value), 0

    def op_MaxPool(self, x, a):
        k = a["kernel_shape"]
        xin, pad = self.pool_pads(x[0], a, len(k), float("-inf"))
        return F.max_pool2d(xin, k, stride=a.get("strides", 1), padding=pad, ceil_mode=bool(a.get("ceil_mode", 0)))

    def op_AveragePool(self, x, a):
        k = a["kernel_shape"]
        xin, pad = self.pool_pads(x[0], a, len(k), 0.0)
        return F.avg_pool2d(xin, k, stride=a.get("strides", 1), padding=pad, ceil_mode=bool(a.get("ceil_mode", 0)),
                            count_include_pad=bool(a.get("count_include_pad", 0)))

    def op_GlobalAveragePool(self, x, a):
        return torch.mean(x[0], dim=list(range(2, x[0].dim())), keepdim=True)

    def axes_of(self, x, a, idx=1):
        if len(x) > idx and x[idx] is not None:
            return ints(x[idx].cpu().numpy())
        return a.get("axes")

    def reduce(self, fn, x, a):
        axes = self.axes_of(x, a)
        keep = bool(a.get("keepdims", 1))
        if axes is None or axes == []:
            axes = list(range(x[0].dim()))
        return fn(x[0], bcast_axes(axes, x[0].dim()), keep)

    def op_ReduceMean(self, x, a):
        return self.reduce(lambda t, ax, k: torch.mean(t, dim=ax, keepdim=k), x, a)

    def op_ReduceSum(self, x, a):
        return self.reduce(lambda t, ax, k: torch.sum(t, dim=ax, keepdim=k, dtype=t.dtype), x, a)

    def op_ReduceMax(self, x, a):
        return self.reduce(lambda t, ax, k: torch.amax(t, dim=ax, keepdim=k), x, a)

    def op_Softmax(self, x, a):
        return torch.softmax(x[0], dim=a.get("axis", -1))

    def op_LayerNormalization(self, x, a):
        axis = a.get("axis", -1)
        axis = axis + x[0].dim() if axis < 0 else axis
        shape = x[0].shape[axis:]
        return F.layer_norm(x[0], shape, x[1], x[2] if len(x) > 2 else None, eps=a.get("epsilon", 1e-5))

    def op_Shape(self, x, a):
        s = list(x[0].shape)[a.get("start", 0):a.get("end", None)]
        return torch.tensor(s, dtype=torch.int64, device=self.device)

    def op_Reshape(self, x, a):
        shape = ints(x[1].cpu().numpy())
        shape = [x[0].shape[i] if s == 0 and not a.get("allowzero", 0) else s for i, s in enumerate(shape)]
        return x[0].reshape(shape)

    def op_Flatten(self, x, a):
        ax = a.get("axis", 1)
        ax = ax + x[0].dim() if ax < 0 else ax
        return x[0].reshape(int(np.prod(x[0].shape[:ax])), -1)

    def op_Transpose(self, x, a):
        perm = a.get("perm", list(reversed(range(x[0].dim()))))
        return x[0].permute(perm).contiguous()

    def op_Squeeze(self, x, a):
        axes = self.axes_of(x, a)
        if axes is None:
            return x[0].squeeze()
        y = x[0]
        for ax in sorted(bcast_axes(axes, y.dim()), reverse=True):
            y = y.squeeze(ax)
        return y

    def op_Unsqueeze(self, x, a):
        axes = self.axes_of(x, a)
        rank = x[0].dim() + len(axes)
        y = x[0]
        for ax in sorted(bcast_axes(axes, rank)):
            y = y.unsqueeze(ax)
        return y

    def op_Concat(self, x, a):
        ts = [t for t in x if t is not None and t.numel() > 0] or [x[0]]
        dt = ts[0].dtype
        return torch.cat([t.to(dt) for t in ts], dim=a["axis"])

    def op_Split(self, x, a):
        axis = a.get("axis", 0)
        if len(x) > 1 and x[1] is not None:
            sizes = ints(x[1].cpu().numpy())
        elif "split" in a:
            sizes = a["split"]
        else:
            n = a.get("num_outputs")
            sizes = [x[0].shape[axis] // n] * n
        return list(torch.split(x[0], sizes, dim=axis))

    def op_Slice(self, x, a):
        starts, ends = ints(x[1].cpu().numpy()), ints(x[2].cpu().numpy())
        axes = ints(x[3].cpu().numpy()) if len(x) > 3 and x[3] is not None else list(range(len(starts)))
        steps = ints(x[4].cpu().numpy()) if len(x) > 4 and x[4] is not None else [1] * len(starts)
        y = x[0]
        for s, e, ax, st in zip(starts, ends, axes, steps):
            ax = ax + y.dim() if ax < 0 else ax
            d = y.shape[ax]
            if st > 0:
                s = max(0, min(d, s + d if s < 0 else s))
                e = max(0, min(d, e + d if e < 0 else e))
                y = y.narrow(ax, s, max(0, e - s))[(slice(None),) * ax + (slice(None, None, st),)]
            else:
                s = max(-1, min(d - 1, s + d if s < 0 else s))
                e = max(-1, min(d - 1, e + d if e < 0 else e))
                idx = torch.arange(s, e, st, device=y.device)
                y = y.index_select(ax, idx)
        return y

    def op_Gather(self, x, a):
        ax = a.get("axis", 0)
        ax = ax + x[0].dim() if ax < 0 else ax
        idx = x[1].long()
        idx = torch.where(idx < 0, idx + x[0].shape[ax], idx)
        y = x[0].index_select(ax, idx.reshape(-1))
        return y.reshape(list(x[0].shape[:ax]) + list(idx.shape) + list(x[0].shape[ax + 1:]))

    def op_GatherElements(self, x, a):
        ax = a.get("axis", 0)
        idx = x[1].long()
        idx = torch.where(idx < 0, idx + x[0].shape[ax], idx)
        return torch.gather(x[0], ax, idx)

    def op_ScatterND(self, x, a):
        y = x[0].clone()
        idx = x[1].long()
        k = idx.shape[-1]
        flat_idx = idx.reshape(-1, k)
        upd = x[2].reshape(flat_idx.shape[0], *y.shape[k:])
        for i in range(flat_idx.shape[0]):
            y[tuple(flat_idx[i].tolist())] = upd[i]
        return y

    def op_Expand(self, x, a):
        shape = ints(x[1].cpu().numpy())
        out = list(torch.broadcast_shapes(tuple(x[0].shape), tuple(shape)))
        return x[0].expand(out).contiguous()

    def op_Tile(self, x, a):
        return x[0].repeat(ints(x[1].cpu().numpy()))

    def op_ConstantOfShape(self, x, a):
        v = a.get("value", np.zeros(1, np.float32))
        t = self.tensor(np.asarray(v).reshape(-1)[:1])
        return t.reshape(()).expand(ints(x[0].cpu().numpy())).contiguous()

    def op_TopK(self, x, a):
        k = ints(x[1].cpu().numpy())[0]
        v, i = torch.topk(x[0], k, dim=a.get("axis", -1), largest=bool(a.get("largest", 1)),
                          sorted=bool(a.get("sorted", 1)))
        return [v, i.to(torch.int64)]

    def op_Resize(self, x, a):
        mode = a.get("mode", "nearest")
        ctm = a.get("coordinate_transformation_mode", "half_pixel")
        size = ints(x[3].cpu().numpy()) if len(x) > 3 and x[3] is not None and x[3].numel() else None
        scales = x[2].float().cpu().numpy().tolist() if len(x) > 2 and x[2] is not None and x[2].numel() else None
        out = size[2:] if size else [int(np.floor(d * s)) for d, s in zip(x[0].shape[2:], scales[2:])]
        if mode == "nearest":
            assert a.get("nearest_mode", "round_prefer_floor") == "floor" and ctm == "asymmetric", \
                "onnx_torch: Resize nearest is modelled for asymmetric/floor only"
            return F.interpolate(x[0], size=out, mode="nearest")
        assert mode == "linear" and ctm in ("half_pixel", "align_corners", "pytorch_half_pixel"), \
            "onnx_torch: Resize %s/%s" % (mode, ctm)
        return F.interpolate(x[0], size=out, mode="bilinear", align_corners=ctm == "align_corners")

    def op_GridSample(self, x, a):
        mode = {"linear": "bilinear", "bilinear": "bilinear", "nearest": "nearest"}[a.get("mode", "bilinear")]
        return F.grid_sample(x[0], x[1], mode=mode, padding_mode=a.get("padding_mode", "zeros"),
                             align_corners=bool(a.get("align_corners", 0)))


def run(model, feeds, device="cpu", dtype=torch.float32):
    """The graph's outputs (a dict of tensors on device) for feeds {name: numpy array}."""
    with torch.no_grad():
        return Runner(model, device, dtype).run(feeds)
