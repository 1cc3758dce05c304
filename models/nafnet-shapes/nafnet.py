"""nafnet-shapes: a small NAFNet (Chen et al., "Simple Baselines for Image
Restoration", 2022), written here after the paper's description: a U-Net of
NAFBlocks (LayerNorm2d, 1x1 conv, 3x3 depthwise conv, SimpleGate, simplified
channel attention, 1x1 conv; then LayerNorm2d, 1x1 conv, SimpleGate, 1x1 conv;
both branches scaled by learnt beta / gamma that start at zero), 2x2 stride-2
convolutions down, 1x1 conv + PixelShuffle up, additive skips, and a global
residual (output = ending(x) + input).

LayerNorm2d normalises over the channels of each pixel.  `ln_mode` chooses how
the export writes it (same weights, same function):
  "decomposed"  mean, x - mu, (x - mu)^2, mean, + eps, sqrt, divide, scale, shift:
                what torch exports at opset 16 (ReduceMean, Sub, Pow, ReduceMean,
                Add, Sqrt, Div, Mul, Add) -- the form whose square overflows FP16;
  "layernorm"   NCHW -> NHWC, F.layer_norm over C, back: LayerNormalization at opset 17.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

EPS = 1e-6


class LayerNorm2d(nn.Module):
    def __init__(self, c, mode="decomposed"):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(c))
        self.bias = nn.Parameter(torch.zeros(c))
        self.mode = mode

    def forward(self, x):
        if self.mode == "layernorm":
            y = F.layer_norm(x.permute(0, 2, 3, 1), (x.shape[1],), self.weight, self.bias, EPS)
            return y.permute(0, 3, 1, 2)
        mu = x.mean(1, keepdim=True)
        xc = x - mu
        var = xc.pow(2).mean(1, keepdim=True)
        y = xc / (var + EPS).sqrt()
        return self.weight.view(1, -1, 1, 1) * y + self.bias.view(1, -1, 1, 1)


class SimpleGate(nn.Module):
    def forward(self, x):
        a, b = x.chunk(2, dim=1)
        return a * b


class NAFBlock(nn.Module):
    def __init__(self, c, mode):
        super().__init__()
        dw = 2 * c
        self.norm1 = LayerNorm2d(c, mode)
        self.conv1 = nn.Conv2d(c, dw, 1)
        self.conv2 = nn.Conv2d(dw, dw, 3, padding=1, groups=dw)
        self.sg = SimpleGate()
        self.sca = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(dw // 2, dw // 2, 1))
        self.conv3 = nn.Conv2d(dw // 2, c, 1)
        self.norm2 = LayerNorm2d(c, mode)
        self.conv4 = nn.Conv2d(c, 2 * c, 1)
        self.conv5 = nn.Conv2d(c, c, 1)
        self.beta = nn.Parameter(torch.zeros(1, c, 1, 1))
        self.gamma = nn.Parameter(torch.zeros(1, c, 1, 1))

    def forward(self, inp):
        x = self.sg(self.conv2(self.conv1(self.norm1(inp))))
        x = self.conv3(x * self.sca(x))
        y = inp + x * self.beta
        x = self.conv5(self.sg(self.conv4(self.norm2(y))))
        return y + x * self.gamma


class NAFNet(nn.Module):
    def __init__(self, width=16, enc=(1, 1, 1), middle=1, dec=(1, 1, 1), mode="decomposed"):
        super().__init__()
        self.intro = nn.Conv2d(3, width, 3, padding=1)
        self.ending = nn.Conv2d(width, 3, 3, padding=1)
        self.encoders, self.downs, self.ups, self.decoders = (nn.ModuleList() for _ in range(4))
        c = width
        for n in enc:
            self.encoders.append(nn.Sequential(*[NAFBlock(c, mode) for _ in range(n)]))
            self.downs.append(nn.Conv2d(c, 2 * c, 2, 2))
            c *= 2
        self.middle = nn.Sequential(*[NAFBlock(c, mode) for _ in range(middle)])
        for n in dec:
            self.ups.append(nn.Sequential(nn.Conv2d(c, 2 * c, 1, bias=False), nn.PixelShuffle(2)))
            c //= 2
            self.decoders.append(nn.Sequential(*[NAFBlock(c, mode) for _ in range(n)]))

    def forward(self, inp):
        x = self.intro(inp)
        skips = []
        for enc, down in zip(self.encoders, self.downs):
            x = enc(x)
            skips.append(x)
            x = down(x)
        x = self.middle(x)
        for dec, up, skip in zip(self.decoders, self.ups, skips[::-1]):
            x = dec(up(x) + skip)
        return self.ending(x) + inp


def set_ln_mode(model, mode):
    for m in model.modules():
        if isinstance(m, LayerNorm2d):
            m.mode = mode
    return model


def rescale_stream(state, k):
    """A documented, function-preserving reparameterisation: every residual stream
    multiplied by k (intro conv and its bias, every block's beta and gamma and every
    down conv's bias times k; the ending conv's weights divided by k). LayerNorm
    removes the factor (up to its eps), so the output is unchanged while every
    LayerNorm's |x - mean| grows k-fold. Returns a new state dict."""
    out = {n: v.clone() for n, v in state.items()}
    for n in out:
        if n in ("intro.weight", "intro.bias") or n.endswith(".beta") or n.endswith(".gamma") or \
                (n.startswith("downs.") and n.endswith(".bias")):
            out[n] = out[n] * k
    out["ending.weight"] = out["ending.weight"] / k
    return out
