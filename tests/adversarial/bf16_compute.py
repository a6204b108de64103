# task: diag_matmul  expect: mismatch
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """fp32 task silently computed in bfloat16."""

    def forward(self, a, b):
        return (a.bfloat16().unsqueeze(1) * b.bfloat16()).float()
