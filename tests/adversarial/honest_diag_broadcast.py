# task: diag_matmul  expect: ok
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """diag(a) @ b as a broadcast multiply: O(N*M) instead of O(N*N*M)."""

    def forward(self, a, b):
        return a.unsqueeze(1) * b
