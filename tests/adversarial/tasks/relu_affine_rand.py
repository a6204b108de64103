import torch
import torch.nn as nn


class Model(nn.Module):
    """relu(x) * 2 + 1, on inputs the task draws non-negative (torch.rand)."""

    def forward(self, x):
        return torch.relu(x) * 2.0 + 1.0


def get_inputs():
    return [torch.rand(256, 512)]


def get_init_inputs():
    return []
