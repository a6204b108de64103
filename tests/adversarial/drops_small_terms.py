# task: row_sum  expect: mismatch
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Row sums that skip the terms below 3e-3 in magnitude (a quarter percent of them), as a
    kernel skipping near-zero blocks would."""

    def forward(self, x):
        return torch.where(x.abs() < 3e-3, torch.zeros((), dtype=x.dtype), x).sum(1)
