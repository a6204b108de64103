import torch
import torch.nn as nn


class Model(nn.Module):
    """Returns a transposed view (non-contiguous strides)."""

    def forward(self, x):
        return (x * 3.0).t()


def get_inputs():
    return [torch.randn(24, 40)]


def get_init_inputs():
    return []
