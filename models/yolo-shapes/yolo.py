"""yolo-shapes: a small detector of the YOLOv8 family's shape, written here.

CSP-style backbone and PAN neck of C2f blocks with an SPPF, an anchor-free
decoupled head (separate box and class branches per stride 8/16/32) whose box
branch predicts a distribution over REG_MAX bins per side (distribution focal
loss), and the raw Ultralytics export head: [1, 4 + nc, N] with cx, cy, w, h in
input pixels decoded in the graph and sigmoid class scores, no NMS.

Training loss as the YOLOv8 recipe describes it: task-aligned assigner
(top 10, alpha 0.5, beta 6), BCE on the aligned class targets, CIoU + DFL on
the boxes (gains 7.5, 0.5, 1.5).  Needs torch only (no torchvision).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

REG_MAX = 16
STRIDES = (8, 16, 32)


class Conv(nn.Module):
    """Conv2d + BatchNorm + SiLU; fuse() folds the norm into the conv for export."""

    def __init__(self, c1, c2, k=1, s=1):
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, k // 2, bias=False)
        self.bn = nn.BatchNorm2d(c2, eps=1e-3, momentum=0.03)
        self.act = nn.SiLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)) if self.bn is not None else self.conv(x))


class Bottleneck(nn.Module):
    def __init__(self, c, shortcut=True):
        super().__init__()
        self.cv1 = Conv(c, c, 3)
        self.cv2 = Conv(c, c, 3)
        self.add = shortcut

    def forward(self, x):
        y = self.cv2(self.cv1(x))
        return x + y if self.add else y


class C2f(nn.Module):
    """CSP bottleneck with two convolutions: split, n bottlenecks on one half,
    every intermediate concatenated."""

    def __init__(self, c1, c2, n=1, shortcut=False):
        super().__init__()
        self.c = c2 // 2
        self.cv1 = Conv(c1, 2 * self.c, 1)
        self.cv2 = Conv((2 + n) * self.c, c2, 1)
        self.m = nn.ModuleList(Bottleneck(self.c, shortcut) for _ in range(n))

    def forward(self, x):
        y = list(self.cv1(x).chunk(2, 1))
        for m in self.m:
            y.append(m(y[-1]))
        return self.cv2(torch.cat(y, 1))


class SPPF(nn.Module):
    def __init__(self, c1, c2, k=5):
        super().__init__()
        c = c1 // 2
        self.cv1 = Conv(c1, c, 1)
        self.cv2 = Conv(c * 4, c2, 1)
        self.m = nn.MaxPool2d(k, 1, k // 2)

    def forward(self, x):
        y = [self.cv1(x)]
        for _ in range(3):
            y.append(self.m(y[-1]))
        return self.cv2(torch.cat(y, 1))


def make_anchors(shapes, strides, device, dtype, offset=0.5):
    """Grid-cell centres (in cells) and the stride of each, level after level."""
    points, stride_t = [], []
    for (h, w), s in zip(shapes, strides):
        sx = torch.arange(w, device=device, dtype=dtype) + offset
        sy = torch.arange(h, device=device, dtype=dtype) + offset
        yy, xx = torch.meshgrid(sy, sx, indexing="ij")
        points.append(torch.stack((xx, yy), -1).view(-1, 2))
        stride_t.append(torch.full((h * w, 1), float(s), device=device, dtype=dtype))
    return torch.cat(points), torch.cat(stride_t)


def dist2bbox(distance, anchors, xywh, dim):
    lt, rb = distance.chunk(2, dim)
    x1y1 = anchors - lt
    x2y2 = anchors + rb
    if xywh:
        return torch.cat(((x1y1 + x2y2) / 2, x2y2 - x1y1), dim)
    return torch.cat((x1y1, x2y2), dim)


class DFL(nn.Module):
    """Expected value of the per-side distribution: softmax over the bins, then a
    fixed 1x1 conv with weights 0..REG_MAX-1 (as the Ultralytics export writes it)."""

    def __init__(self, c1=REG_MAX):
        super().__init__()
        self.conv = nn.Conv2d(c1, 1, 1, bias=False).requires_grad_(False)
        self.conv.weight.data[:] = torch.arange(c1, dtype=torch.float).view(1, c1, 1, 1)
        self.c1 = c1

    def forward(self, x):
        b, _, a = x.shape
        return self.conv(x.view(b, 4, self.c1, a).transpose(2, 1).softmax(1)).view(b, 4, a)


class Detect(nn.Module):
    def __init__(self, nc, ch):
        super().__init__()
        self.nc, self.no = nc, nc + 4 * REG_MAX
        c2 = max(16, ch[0] // 4, REG_MAX * 4)
        c3 = max(ch[0], min(nc, 100))
        self.cv2 = nn.ModuleList(nn.Sequential(Conv(x, c2, 3), Conv(c2, c2, 3), nn.Conv2d(c2, 4 * REG_MAX, 1))
                                 for x in ch)
        self.cv3 = nn.ModuleList(nn.Sequential(Conv(x, c3, 3), Conv(c3, c3, 3), nn.Conv2d(c3, nc, 1))
                                 for x in ch)
        self.dfl = DFL()

    def bias_init(self, imgsz):
        for a, b, s in zip(self.cv2, self.cv3, STRIDES):
            a[-1].bias.data[:] = 1.0
            b[-1].bias.data[: self.nc] = math.log(5 / self.nc / (imgsz / s) ** 2)

    def forward(self, xs):
        feats = [torch.cat((self.cv2[i](x), self.cv3[i](x)), 1) for i, x in enumerate(xs)]
        if self.training:
            return feats
        return self.decode(feats)

    def decode(self, feats):
        """The raw export: [B, 4 + nc, N], boxes cx cy w h in input pixels."""
        b = feats[0].shape[0]
        x = torch.cat([f.view(b, self.no, -1) for f in feats], 2)
        box, cls = x.split((4 * REG_MAX, self.nc), 1)
        anchors, strides = make_anchors([f.shape[2:] for f in feats], STRIDES, x.device, x.dtype)
        dbox = dist2bbox(self.dfl(box), anchors.transpose(0, 1).unsqueeze(0), xywh=True, dim=1) \
            * strides.transpose(0, 1)
        return torch.cat((dbox, cls.sigmoid()), 1)


class YoloShapes(nn.Module):
    """Widths (16, 32, 64, 96, 128) and depths (1, 2, 2, 1): about YOLOv8n's layout
    with its two widest stages narrowed."""

    def __init__(self, nc=6, w=(16, 32, 64, 96, 128), d=(1, 2, 2, 1)):
        super().__init__()
        self.stem = Conv(3, w[0], 3, 2)                                     # /2
        self.b1 = nn.Sequential(Conv(w[0], w[1], 3, 2), C2f(w[1], w[1], d[0], True))   # /4
        self.b2 = nn.Sequential(Conv(w[1], w[2], 3, 2), C2f(w[2], w[2], d[1], True))   # /8  P3
        self.b3 = nn.Sequential(Conv(w[2], w[3], 3, 2), C2f(w[3], w[3], d[2], True))   # /16 P4
        self.b4 = nn.Sequential(Conv(w[3], w[4], 3, 2), C2f(w[4], w[4], d[3], True),
                                SPPF(w[4], w[4]))                                     # /32 P5
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.n1 = C2f(w[4] + w[3], w[3], 1)          # top-down P4
        self.n2 = C2f(w[3] + w[2], w[2], 1)          # top-down P3 (out)
        self.d1 = Conv(w[2], w[2], 3, 2)
        self.n3 = C2f(w[2] + w[3], w[3], 1)          # bottom-up P4 (out)
        self.d2 = Conv(w[3], w[3], 3, 2)
        self.n4 = C2f(w[3] + w[4], w[4], 1)          # bottom-up P5 (out)
        self.head = Detect(nc, (w[2], w[3], w[4]))

    def forward(self, x):
        p3 = self.b2(self.b1(self.stem(x)))
        p4 = self.b3(p3)
        p5 = self.b4(p4)
        t4 = self.n1(torch.cat((self.up(p5), p4), 1))
        o3 = self.n2(torch.cat((self.up(t4), p3), 1))
        o4 = self.n3(torch.cat((self.d1(o3), t4), 1))
        o5 = self.n4(torch.cat((self.d2(o4), p5), 1))
        return self.head([o3, o4, o5])


def fuse_conv_bn(conv, bn):
    """The folded weights, in float32, in an order numpy can repeat bit for bit
    (tests/stage/shapes_models.t does): scale = gamma / sqrt(var + eps)."""
    std = torch.sqrt(bn.running_var + bn.eps)
    scale = bn.weight / std
    w = conv.weight * scale.view(-1, 1, 1, 1)
    b = bn.bias - bn.running_mean * scale
    return w, b


def fuse(model):
    """Folds every Conv's BatchNorm into its convolution (as Ultralytics does before
    export); returns the model, now without BatchNorm."""
    for m in model.modules():
        if isinstance(m, Conv) and m.bn is not None:
            w, b = fuse_conv_bn(m.conv, m.bn)
            conv = nn.Conv2d(m.conv.in_channels, m.conv.out_channels, m.conv.kernel_size,
                             m.conv.stride, m.conv.padding, bias=True)
            conv.weight.data = w.detach().clone()
            conv.bias.data = b.detach().clone()
            m.conv, m.bn = conv, None
    return model


# ---------------------------------------------------------------- loss

def bbox_iou_ciou(b1, b2, eps=1e-7):
    """CIoU of xyxy boxes, broadcasting; [..., 4] -> [..., 1]."""
    b1_x1, b1_y1, b1_x2, b1_y2 = b1.chunk(4, -1)
    b2_x1, b2_y1, b2_x2, b2_y2 = b2.chunk(4, -1)
    w1, h1 = b1_x2 - b1_x1, b1_y2 - b1_y1 + eps
    w2, h2 = b2_x2 - b2_x1, b2_y2 - b2_y1 + eps
    inter = (b1_x2.minimum(b2_x2) - b1_x1.maximum(b2_x1)).clamp(0) * \
            (b1_y2.minimum(b2_y2) - b1_y1.maximum(b2_y1)).clamp(0)
    union = w1 * h1 + w2 * h2 - inter + eps
    iou = inter / union
    cw = b1_x2.maximum(b2_x2) - b1_x1.minimum(b2_x1)
    ch = b1_y2.maximum(b2_y2) - b1_y1.minimum(b2_y1)
    c2 = cw.pow(2) + ch.pow(2) + eps
    rho2 = ((b2_x1 + b2_x2 - b1_x1 - b1_x2).pow(2) + (b2_y1 + b2_y2 - b1_y1 - b1_y2).pow(2)) / 4
    v = (4 / math.pi ** 2) * (torch.atan(w2 / h2) - torch.atan(w1 / h1)).pow(2)
    with torch.no_grad():
        alpha = v / (v - iou + (1 + eps))
    return iou - (rho2 / c2 + v * alpha)


class TaskAlignedAssigner:
    def __init__(self, nc, topk=10, alpha=0.5, beta=6.0, eps=1e-9):
        self.nc, self.topk, self.alpha, self.beta, self.eps = nc, topk, alpha, beta, eps

    @torch.no_grad()
    def __call__(self, pd_scores, pd_bboxes, anc_points, gt_labels, gt_bboxes, mask_gt):
        """pd_scores [B,N,C] (sigmoid), pd_bboxes [B,N,4] xyxy, anc_points [N,2] (pixels),
        gt_labels [B,M,1] long, gt_bboxes [B,M,4] xyxy, mask_gt [B,M,1] -> target boxes
        [B,N,4], target scores [B,N,C], foreground mask [B,N]."""
        bs, n_max = gt_bboxes.shape[:2]
        na = pd_bboxes.shape[1]
        dev = pd_scores.device
        if n_max == 0:
            return (torch.zeros_like(pd_bboxes), torch.zeros_like(pd_scores),
                    torch.zeros(bs, na, dtype=torch.bool, device=dev))
        # anchors whose centre lies inside the gt box
        lt, rb = gt_bboxes.view(-1, 1, 4).chunk(2, 2)
        deltas = torch.cat((anc_points[None] - lt, rb - anc_points[None]), 2).view(bs, n_max, na, -1)
        mask_in = deltas.amin(3).gt_(self.eps)
        mask = mask_in * mask_gt                                            # [B,M,N]
        # alignment metric s^alpha * iou^beta on the candidates
        ind0 = torch.arange(bs, device=dev).view(-1, 1).expand(-1, n_max)
        scores = pd_scores[ind0, :, gt_labels.squeeze(-1).clamp(0)]        # [B,M,N]
        overlaps = bbox_iou_ciou(gt_bboxes.unsqueeze(2), pd_bboxes.unsqueeze(1)).squeeze(-1).clamp_(0)
        overlaps = overlaps * mask
        align = scores.pow(self.alpha) * overlaps.pow(self.beta) * mask
        # top-k anchors per gt
        topk_idx = align.topk(self.topk, dim=-1).indices                    # [B,M,k]
        mask_topk = torch.zeros_like(align).scatter_(-1, topk_idx, 1.0)
        mask_pos = mask_topk * mask
        # an anchor claimed by several gts goes to the one it overlaps most
        fg = mask_pos.sum(-2)
        if fg.max() > 1:
            multi = (fg.unsqueeze(1) > 1).expand(-1, n_max, -1)
            best = overlaps.argmax(1)
            is_max = torch.zeros_like(mask_pos).scatter_(1, best.unsqueeze(1), 1.0)
            mask_pos = torch.where(multi, is_max, mask_pos)
            fg = mask_pos.sum(-2)
        gt_idx = mask_pos.argmax(-2)                                        # [B,N]
        flat = gt_idx + torch.arange(bs, device=dev).view(-1, 1) * n_max
        t_labels = gt_labels.long().flatten()[flat].clamp_(0)
        t_bboxes = gt_bboxes.view(-1, 4)[flat]
        t_scores = F.one_hot(t_labels, self.nc).float() * (fg > 0).unsqueeze(-1)
        # normalise: each gt's best anchor gets the gt's best IoU
        align = align * mask_pos
        pos_align = align.amax(-1, keepdim=True)
        pos_over = (overlaps * mask_pos).amax(-1, keepdim=True)
        norm = (align * pos_over / (pos_align + self.eps)).amax(-2).unsqueeze(-1)
        return t_bboxes, t_scores * norm, fg > 0


def bbox2dist(anchor, bbox, reg_max):
    x1y1, x2y2 = bbox.chunk(2, -1)
    return torch.cat((anchor - x1y1, x2y2 - anchor), -1).clamp_(0, reg_max - 0.01)


def df_loss(pred_dist, target):
    tl = target.long()
    tr = tl + 1
    wl = tr - target
    wr = 1 - wl
    return (F.cross_entropy(pred_dist, tl.view(-1), reduction="none").view(tl.shape) * wl +
            F.cross_entropy(pred_dist, tr.view(-1), reduction="none").view(tl.shape) * wr).mean(-1, keepdim=True)


class DetectionLoss:
    def __init__(self, nc, box=7.5, cls=0.5, dfl=1.5):
        self.nc, self.gains = nc, (box, cls, dfl)
        self.assigner = TaskAlignedAssigner(nc)

    def __call__(self, feats, gt_labels, gt_bboxes, mask_gt):
        """feats: the head's training outputs; gt_* padded per image (input pixels,
        xyxy). Returns (total, (box, cls, dfl) detached)."""
        b = feats[0].shape[0]
        no = self.nc + 4 * REG_MAX
        x = torch.cat([f.view(b, no, -1) for f in feats], 2).float()
        pred_distri, pred_scores = x.split((4 * REG_MAX, self.nc), 1)
        pred_distri = pred_distri.permute(0, 2, 1).contiguous()
        pred_scores = pred_scores.permute(0, 2, 1).contiguous()
        anchors, strides = make_anchors([f.shape[2:] for f in feats], STRIDES, x.device, x.dtype)
        proj = torch.arange(REG_MAX, device=x.device, dtype=x.dtype)
        dist = pred_distri.view(b, -1, 4, REG_MAX).softmax(3).matmul(proj)
        pred_bboxes = dist2bbox(dist, anchors, xywh=False, dim=-1)          # cells
        t_bboxes, t_scores, fg = self.assigner(
            pred_scores.detach().sigmoid(), (pred_bboxes.detach() * strides).type(gt_bboxes.dtype),
            anchors * strides, gt_labels, gt_bboxes, mask_gt)
        tss = t_scores.sum().clamp(min=1)
        l_cls = F.binary_cross_entropy_with_logits(pred_scores, t_scores, reduction="sum") / tss
        l_box = torch.zeros((), device=x.device)
        l_dfl = torch.zeros((), device=x.device)
        if fg.any():
            t_cells = t_bboxes / strides
            weight = t_scores.sum(-1)[fg].unsqueeze(-1)
            iou = bbox_iou_ciou(pred_bboxes[fg], t_cells[fg])
            l_box = ((1.0 - iou) * weight).sum() / tss
            t_ltrb = bbox2dist(anchors, t_cells, REG_MAX - 1)
            l_dfl = (df_loss(pred_distri[fg].view(-1, REG_MAX), t_ltrb[fg]) * weight).sum() / tss
        g = self.gains
        total = g[0] * l_box + g[1] * l_cls + g[2] * l_dfl
        return total, torch.stack((l_box, l_cls, l_dfl)).detach()
