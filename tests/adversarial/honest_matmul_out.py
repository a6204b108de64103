# task: square_matmul  expect: ok
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """The product into a buffer of its own, allocated per call."""

    def forward(self, a, b):
        out = torch.empty(a.shape[0], b.shape[1], dtype=a.dtype, device=a.device)
        return torch.mm(a, b, out=out)
