# task: diag_matmul  expect: ok
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Counts its calls and keeps the last output's norm (statistics), answering every call."""

    def __init__(self):
        super().__init__()
        self.calls, self.norm = 0, 0.0

    def forward(self, a, b):
        self.calls += 1
        out = a.unsqueeze(1) * b
        if self.calls % 10 == 0:
            self.norm = float(out.norm())
        return out
