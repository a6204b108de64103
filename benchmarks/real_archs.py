"""Plain-PyTorch copies of the architectures that ``real_models.py`` benchmarks.

Used where torchvision / transformers are not installed (the GPU machine has neither). Each class
mirrors its library's module: the same layers, the same submodule names (a library state dict
loads into it; GPT-2's Conv1D weights need a transpose), the same ops in the same order, eps and
activations. Random weights, inference only (dropout is kept for fidelity; it is a no-op in eval).
Where the library is installed, ``real_models.py`` uses the library's module: it is the reference.

- ``ResNet18``: torchvision.models.resnet18 (BasicBlock, [2, 2, 2, 2], 1000 classes).
- ``BertLayer``: transformers' BertLayer with the "sdpa" attention (encoder, no mask).
- ``GPT2Block``: transformers' GPT2Block with the "sdpa" attention (causal, no cache). The library
  uses Conv1D (an addmm with a (in, out) weight) and ``gelu_new`` (tanh GELU written out); here
  nn.Linear and ``F.gelu(approximate="tanh")``: the same math.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


# ---------------------------------------------------------------- ResNet-18 (torchvision layout)

def conv3x3(cin: int, cout: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int = 1):
        super().__init__()
        self.conv1 = conv3x3(cin, cout, stride)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(cout, cout)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False),
                                            nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class ResNet18(nn.Module):
    def __init__(self, num_classes: int = 1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        widths, cin = (64, 128, 256, 512), 64
        for i, w in enumerate(widths):
            stride = 1 if i == 0 else 2
            setattr(self, f"layer{i + 1}", nn.Sequential(BasicBlock(cin, w, stride), BasicBlock(w, w)))
            cin = w
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512, num_classes)
        for m in self.modules():   # torchvision's initialisation
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


# ---------------------------------------------------------------- BERT encoder layer (transformers)

class BertSelfAttention(nn.Module):
    def __init__(self, hidden: int, heads: int, dropout: float):
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        shape = (*x.shape[:-1], -1, self.head_dim)
        q, k, v = (p(x).view(shape).transpose(1, 2) for p in (self.query, self.key, self.value))
        o = F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout.p if self.training else 0.0,
                                           scale=self.head_dim ** -0.5)
        return o.transpose(1, 2).contiguous().reshape(*x.shape[:-1], -1)


class BertAddNorm(nn.Module):
    """BertSelfOutput / BertOutput: dense -> dropout -> LayerNorm(. + residual)."""

    def __init__(self, cin: int, hidden: int, eps: float, dropout: float):
        super().__init__()
        self.dense = nn.Linear(cin, hidden)
        self.LayerNorm = nn.LayerNorm(hidden, eps=eps)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, residual):
        return self.LayerNorm(self.dropout(self.dense(x)) + residual)


class BertAttention(nn.Module):
    def __init__(self, hidden: int, heads: int, eps: float, dropout: float):
        super().__init__()
        self.self = BertSelfAttention(hidden, heads, dropout)
        self.output = BertAddNorm(hidden, hidden, eps, dropout)

    def forward(self, x):
        return self.output(self.self(x), x)


class BertIntermediate(nn.Module):
    def __init__(self, hidden: int, intermediate: int):
        super().__init__()
        self.dense = nn.Linear(hidden, intermediate)

    def forward(self, x):
        return F.gelu(self.dense(x))   # hidden_act="gelu": the exact (erf) GELU


class BertLayer(nn.Module):
    def __init__(self, hidden: int = 768, heads: int = 12, intermediate: int = 3072,
                 eps: float = 1e-12, dropout: float = 0.1):
        super().__init__()
        self.attention = BertAttention(hidden, heads, eps, dropout)
        self.intermediate = BertIntermediate(hidden, intermediate)
        self.output = BertAddNorm(intermediate, hidden, eps, dropout)

    def forward(self, x):
        a = self.attention(x)
        return self.output(self.intermediate(a), a)


# ---------------------------------------------------------------- GPT-2 block (transformers)

class GPT2Attention(nn.Module):
    def __init__(self, hidden: int, heads: int, dropout: float):
        super().__init__()
        self.hidden, self.head_dim = hidden, hidden // heads
        self.c_attn = nn.Linear(hidden, 3 * hidden)   # fused q, k, v
        self.c_proj = nn.Linear(hidden, hidden)
        self.attn_dropout = nn.Dropout(dropout)
        self.resid_dropout = nn.Dropout(dropout)

    def forward(self, x):
        shape = (*x.shape[:-1], -1, self.head_dim)
        q, k, v = (t.view(shape).transpose(1, 2) for t in self.c_attn(x).split(self.hidden, dim=2))
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=self.head_dim ** -0.5,
                                           dropout_p=self.attn_dropout.p if self.training else 0.0)
        o = o.transpose(1, 2).contiguous().reshape(*x.shape[:-1], -1)
        return self.resid_dropout(self.c_proj(o))


class GPT2MLP(nn.Module):
    def __init__(self, hidden: int, inner: int, dropout: float):
        super().__init__()
        self.c_fc = nn.Linear(hidden, inner)
        self.c_proj = nn.Linear(inner, hidden)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(F.gelu(self.c_fc(x), approximate="tanh")))   # gelu_new


class GPT2Block(nn.Module):
    def __init__(self, hidden: int = 768, heads: int = 12, inner: int | None = None,
                 eps: float = 1e-5, dropout: float = 0.1):
        super().__init__()
        self.ln_1 = nn.LayerNorm(hidden, eps=eps)
        self.attn = GPT2Attention(hidden, heads, dropout)
        self.ln_2 = nn.LayerNorm(hidden, eps=eps)
        self.mlp = GPT2MLP(hidden, inner or 4 * hidden, dropout)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))

