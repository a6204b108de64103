# task: cumprod  expect: ok
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """The same products through logarithms: another order of float32 arithmetic, every
    element within a few ulps times its position."""

    def forward(self, x):
        return torch.exp(torch.cumsum(x.abs().log(), dim=1)) * torch.cumprod(x.sign(), dim=1)
