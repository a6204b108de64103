# task: big_affine  expect: ok
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """The affine map as one fused call, a fresh output every call: honest."""

    def forward(self, x):
        return torch.add(torch.ones_like(x), x, alpha=2.0)
