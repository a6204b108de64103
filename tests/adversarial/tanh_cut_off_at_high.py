# task: tanh_rows  expect: mismatch
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """tanh inside |x| < 6 only, judged at float32 precision "high" (TF32 products allowed):
    the reference at that precision holds on inputs 64 times as wide, so the candidate must."""

    def forward(self, x):
        return torch.where(x.abs() < 6, torch.tanh(x), torch.zeros((), dtype=x.dtype))
