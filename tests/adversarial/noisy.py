# task: diag_matmul  expect: nondeterministic
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Right on some runs and wrong on others (how a race or uninitialised scratch memory shows):
    every second call corrupts part of its result."""

    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, a, b):
        self.calls += 1
        out = a.unsqueeze(1) * b
        if self.calls % 2 == 0:
            out[: out.shape[0] // 4] *= 1.5
        return out
