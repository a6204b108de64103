# task: diag_matmul  expect: input_mutated
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Saves an allocation by writing the result into its input."""

    def forward(self, a, b):
        return b.mul_(a.unsqueeze(1))
