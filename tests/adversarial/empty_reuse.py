# task: diag_matmul  expect: mismatch|nan
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Computes nothing: hopes torch.empty hands back the freed memory of the reference's result
    (which works when a harness runs the reference first)."""

    def forward(self, a, b):
        return torch.empty(b.shape, dtype=b.dtype, device=b.device)
