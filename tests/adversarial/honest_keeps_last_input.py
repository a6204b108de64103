# task: diag_matmul  expect: ok
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Keeps the previous call's input (to skip a check when the shape repeats) and only reads
    it: holding a caller's tensor is no harm, writing it would be."""

    def __init__(self):
        super().__init__()
        self.prev = None

    def forward(self, a, b):
        same = self.prev is not None and self.prev.shape == b.shape
        self.prev = b
        if not same:
            assert a.shape[0] == b.shape[0]
        return a.unsqueeze(1) * b
