# task: diag_matmul  expect: timeout
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Right for its first calls, then never returns."""

    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, a, b):
        self.calls += 1
        while self.calls > 6:
            pass
        return a.unsqueeze(1) * b
