# task: cumprod_bf16  expect: mismatch
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """partial_tail.py in bfloat16: the first 96 columns only. bf16 keeps the products in its
    normal range (float32's exponents) for about 140 columns, far below the output's rms and
    under its rms-scaled bounds, though bf16 determines each to a rounding or two."""

    def forward(self, x):
        out = torch.zeros_like(x)
        torch.cumprod(x[:, :96], dim=1, out=out[:, :96])
        return out
