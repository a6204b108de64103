# task: cumprod_f64  expect: mismatch
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """partial_tail.py in float64: the first 96 columns only, zeros for the ~1000 more that
    float64's normal range holds (its norm-relative error, ~1e-17, is far under float64's 1e-9)."""

    def forward(self, x):
        out = torch.zeros_like(x)
        torch.cumprod(x[:, :96], dim=1, out=out[:, :96])
        return out
