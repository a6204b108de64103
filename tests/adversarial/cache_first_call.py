# task: diag_matmul  expect: stale_output
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Computes once and returns that result forever."""

    def __init__(self):
        super().__init__()
        self.result = None

    def forward(self, a, b):
        if self.result is None:
            self.result = a.unsqueeze(1) * b
        return self.result.clone()
